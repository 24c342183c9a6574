package cron

import (
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/clock"
)

// Reading is the clocks at one moment.
type Reading struct {
	// Wall is the wall clock, in Unix seconds.
	Wall int64
	// Mono is CLOCK_BOOTTIME in nanoseconds: it counts suspended time
	// too, never jumps, and starts again from zero at boot.
	Mono int64
	// Boot is the kernel's boot id. Mono readings compare only under the
	// same one; an empty Boot compares with nothing, for a fake clock.
	Boot string
}

// bootIDPath is where Linux gives the id of the current boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// ReadClocks reads wall time from c and the monotonic clock and boot id of
// the machine. Where those cannot be read (not Linux), Boot is empty and
// Advance goes by the wall clock alone, as it does across a reboot.
func ReadClocks(c clock.Clock) Reading {
	r := Reading{Wall: c.Now().Unix()}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return r
	}
	id, err := os.ReadFile(bootIDPath)
	if err != nil {
		return r
	}
	r.Mono = ts.Nano()
	r.Boot = strings.TrimSpace(string(id))
	return r
}

// State is what the caller keeps per schedule between ticks: the clocks at
// the last tick, and the instant up to which events have been dealt with
// (fired, or skipped as too old). The zero State is a schedule never
// looked at.
type State struct {
	Wall int64
	Mono int64
	Boot string
	// Handled is the instant, in Unix seconds, at or before which every
	// event has been dealt with. It runs ahead of Wall while the clock
	// is behind, after being set back, so that nothing fires twice.
	Handled int64
}

// maxCounted bounds the counting of skipped events, so that a clock set a
// year forward costs as little as a minute's delay.
const maxCounted = 100

// Report says what Advance saw, for the log. Its zero value is an ordinary
// tick with nothing to say.
type Report struct {
	// First is set when the schedule had no state: nothing fires, and
	// events count from now.
	First bool
	// Event is the event that fired: the latest one due. Older ones due
	// within the limit fire with it, as one.
	Event int64
	// Skipped counts events more than the limit late that did not fire,
	// up to maxCounted; SkippedMore says there were more than that.
	Skipped     int
	SkippedMore bool
	// FirstSkipped and LastSkipped are the first and last of them.
	FirstSkipped, LastSkipped int64
	// Behind is how far, in seconds, the wall clock is behind Handled:
	// events in between already happened and will not fire again.
	Behind int64
	// Rewound is how far the wall clock went back beyond the limit: the
	// events after it will fire again as it catches up.
	Rewound int64
	// MonoKnown says that Elapsed and Jump are known: the same boot, on
	// real clocks.
	MonoKnown bool
	// Elapsed is the time that really passed since the last tick, and
	// Jump how far the wall clock was set (forward if positive) beyond
	// that. A long Elapsed is a stopped or suspended process.
	Elapsed, Jump time.Duration
	// Steps is the search work Advance did. It stays small whatever the
	// gap, for tests and benchmarks.
	Steps int
}

// Notable says whether the report is worth a log line: something was
// skipped, held back or rewound, or the wall clock jumped.
func (r Report) Notable() bool {
	return r.Skipped > 0 || r.Behind > 0 || r.Rewound > 0 || r.Jump >= time.Minute || r.Jump <= -time.Minute
}

// LogValue makes a report one slog group of its non-zero parts.
func (r Report) LogValue() slog.Value {
	var as []slog.Attr
	add := func(ok bool, a slog.Attr) {
		if ok {
			as = append(as, a)
		}
	}
	add(r.First, slog.Bool("first", true))
	add(r.Event != 0, slog.Time("event", time.Unix(r.Event, 0)))
	add(r.Skipped > 0, slog.Int("skipped", r.Skipped))
	add(r.SkippedMore, slog.Bool("skipped_more", true))
	add(r.Skipped > 0, slog.Time("first_skipped", time.Unix(r.FirstSkipped, 0)))
	add(r.Skipped > 0, slog.Time("last_skipped", time.Unix(r.LastSkipped, 0)))
	add(r.Behind > 0, slog.Int64("behind_seconds", r.Behind))
	add(r.Rewound > 0, slog.Int64("rewound_seconds", r.Rewound))
	add(r.MonoKnown, slog.Duration("elapsed", r.Elapsed))
	add(r.MonoKnown, slog.Duration("clock_jump", r.Jump))
	return slog.GroupValue(as...)
}

// Advance is one tick of a schedule: prev is the state the last tick left,
// now the clocks. It says whether the schedule fires and returns the state
// to keep. It reads no clock itself, so it is a pure function of its
// arguments.
//
// The rules, with L the item's max_shift_seconds_for_unskip_and_do_not_repeat:
//
//   - The events due are those after prev.Handled up to now.Wall. If the
//     latest of them is at most L old, the schedule fires, once, whether
//     one or many are due: a run catches up with all of them. Those more
//     than L old are skipped and reported (how many, the first and the
//     last). This one rule covers a tick a little late, a WEBAPP that was
//     stopped, a suspended machine and a wall clock set forward, however
//     far: the events are found from their ends, never one by one.
//   - If the wall clock is behind prev.Handled by at most L, it was set
//     back a little (NTP, or by hand): events already dealt with do not
//     fire again, and Handled stays until the clock passes it. Set back
//     by more, the past is forgotten and events fire again as they come.
//   - The decision rests on the wall clock against Handled, so a process
//     suspended for an hour while the clock is set back an hour sees
//     nothing happen, as it should. The monotonic clock tells a stopped
//     process from a clock change for the report; across a reboot (a new
//     boot id) it cannot, and the report says so.
func (it *Item) Advance(prev State, now Reading) (fire bool, next State, r Report) {
	next = State{Wall: now.Wall, Mono: now.Mono, Boot: now.Boot, Handled: prev.Handled}
	if prev == (State{}) {
		next.Handled = now.Wall
		r.First = true
		return false, next, r
	}
	if prev.Boot != "" && prev.Boot == now.Boot {
		r.MonoKnown = true
		r.Elapsed = time.Duration(now.Mono - prev.Mono)
		r.Jump = time.Duration(now.Wall-prev.Wall)*time.Second - r.Elapsed
	}
	h := prev.Handled
	if now.Wall <= h {
		if back := h - now.Wall; back > it.maxShift {
			next.Handled = now.Wall
			r.Rewound = back
		} else {
			r.Behind = back
		}
		return false, next, r
	}
	next.Handled = now.Wall
	e, ok := it.firstMatch(h+1, &r.Steps)
	if !ok || e > now.Wall {
		// Most ticks: nothing due yet.
		return false, next, r
	}
	last := e
	if e2, ok := it.firstMatch(e+1, &r.Steps); ok && e2 <= now.Wall {
		last, _ = it.lastMatch(now.Wall, &r.Steps)
	}
	cut := now.Wall - it.maxShift // events before cut are too late
	if last >= cut {
		fire = true
		r.Event = last
	}
	if e >= cut {
		return fire, next, r
	}
	r.FirstSkipped = e
	for ok && e < cut && r.Skipped < maxCounted {
		r.Skipped++
		r.LastSkipped = e
		e, ok = it.firstMatch(e+1, &r.Steps)
	}
	if ok && e < cut {
		r.SkippedMore = true
		r.LastSkipped, _ = it.lastMatch(cut-1, &r.Steps)
	}
	return fire, next, r
}

// NextDue is the first event that the state has not dealt with: when the
// schedule fires next, for display. It is false when there is none within
// 50 years.
func (it *Item) NextDue(st State) (int64, bool) {
	return it.FirstMatch(st.Handled + 1)
}

// NextDueFrom is NextDue(next), for next the state Advance returned from
// prev, knowing prevNext, NextDue(prev) (prevOK false: there was none).
// It searches only what prevNext does not tell already: nothing when the
// tick dealt with no event, the span the clock went back when it was set
// back beyond the item's limit, and from next.Handled on only when the
// tick dealt with prevNext. So a schedule whose next event is 50 years
// away costs no more to tick than one due tomorrow. steps is the search
// work, for tests.
func (it *Item) NextDueFrom(prev State, prevNext int64, prevOK bool, next State) (due int64, ok bool, steps int) {
	switch {
	case prev == (State{}):
		// A state never looked at tells nothing.
	case next.Handled == prev.Handled:
		return prevNext, prevOK, 0
	case next.Handled < prev.Handled:
		// Events after next.Handled fire again as they come: the first
		// of them up to prev.Handled, or else prevNext.
		if e, ok := it.firstMatchBefore(next.Handled+1, prev.Handled+1, &steps); ok {
			return e, true, steps
		}
		return prevNext, prevOK, steps
	case prevOK && prevNext > next.Handled:
		// No event between prev.Handled and next.Handled.
		return prevNext, true, 0
	}
	e, ok := it.firstMatch(next.Handled+1, &steps)
	return e, ok, steps
}
