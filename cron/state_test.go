package cron

import (
	"encoding/json"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
)

// day0 is 2024-05-01 00:00 UTC, a day without DST anywhere near.
var day0 = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).Unix()

// machine is a fake pair of clocks: the wall clock can be set anywhere,
// the monotonic one only moves forward, and a reboot changes the boot id
// and starts it again.
type machine struct {
	wall, mono int64 // seconds
	boot       string
}

func (m *machine) reading() Reading {
	return Reading{Wall: m.wall, Mono: m.mono * int64(time.Second), Boot: m.boot}
}

// pass lets d seconds go by on both clocks.
func (m *machine) pass(d int64) { m.wall += d; m.mono += d }

// webapp keeps one schedule's state as the WEBAPP would, through JSON as if
// in the state database.
type webapp struct {
	t     *testing.T
	it    *Item
	state []byte
}

func (w *webapp) tick(m *machine) (bool, Report) {
	w.t.Helper()
	var prev State
	if w.state != nil {
		if err := json.Unmarshal(w.state, &prev); err != nil {
			w.t.Fatal(err)
		}
	}
	fire, next, r := w.it.Advance(prev, m.reading())
	b, err := json.Marshal(next)
	if err != nil {
		w.t.Fatal(err)
	}
	w.state = b
	return fire, r
}

func started(t *testing.T, it *Item, m *machine) *webapp {
	t.Helper()
	w := &webapp{t: t, it: it}
	if fire, r := w.tick(m); fire || !r.First {
		t.Fatalf("first tick: fire %v, report %+v; want no fire and First", fire, r)
	}
	return w
}

const (
	dailyAt3  = `{"minute": 0, "hour": 3, "dst_fixes": ["unskip", "repeat_use_only_early"], "timezone": "UTC", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`
	every5Min = `{"minute": {"period": 5}, "dst_fixes": ["skip", "repeat_use_both"], "timezone": "UTC", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`
)

func TestAdvanceOnTime(t *testing.T) {
	m := &machine{wall: day0 + 2*3600 + 59*60, mono: 1000, boot: "b1"}
	w := started(t, mustParse(t, dailyAt3), m)
	m.pass(50)
	if fire, _ := w.tick(m); fire {
		t.Errorf("02:59:50: fired before 03:00")
	}
	m.pass(20)
	fire, r := w.tick(m)
	if !fire || r.Event != day0+3*3600 || r.Skipped != 0 {
		t.Errorf("03:00:10: fire %v, report %+v; want the 03:00 event", fire, r)
	}
	if r.Notable() {
		t.Errorf("an ordinary tick is notable: %+v", r)
	}
	m.pass(30)
	if fire, _ := w.tick(m); fire {
		t.Errorf("03:00:40: fired again")
	}
}

func TestAdvanceCatchUpAfterRestart(t *testing.T) {
	cases := []struct {
		name      string
		down      int64 // seconds the WEBAPP is stopped, from 02:55
		fire      bool
		skipped   int
		firstSkip int64
	}{
		{"missed by 10 minutes fires", 20 * 60, true, 0, 0},
		{"missed by 59 minutes fires", 64 * 60, true, 0, 0},
		{"missed by 2 hours is skipped", 125 * 60, false, 1, day0 + 3*3600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &machine{wall: day0 + 2*3600 + 55*60, mono: 5000, boot: "b1"}
			w := started(t, mustParse(t, dailyAt3), m)
			m.pass(c.down)
			fire, r := w.tick(m)
			if fire != c.fire || r.Skipped != c.skipped || r.FirstSkipped != c.firstSkip || r.LastSkipped != c.firstSkip {
				t.Errorf("fire %v, report %+v; want fire %v, %d skipped at %d", fire, r, c.fire, c.skipped, c.firstSkip)
			}
			if !r.MonoKnown || r.Elapsed != time.Duration(c.down)*time.Second || r.Jump != 0 {
				t.Errorf("report %+v: want %ds elapsed and no clock jump", r, c.down)
			}
			m.pass(60)
			if fire, _ := w.tick(m); fire {
				t.Errorf("fired again on the next tick")
			}
		})
	}
}

func TestAdvanceNeverFloods(t *testing.T) {
	// Every 5 minutes, stopped for 3 hours: one run, and the events more
	// than an hour old reported, not fired.
	m := &machine{wall: day0 + 12*3600 + 60, mono: 77, boot: "b1"}
	w := started(t, mustParse(t, every5Min), m)
	m.pass(3 * 3600)
	fire, r := w.tick(m)
	wantEvent := day0 + 15*3600
	if !fire || r.Event != wantEvent {
		t.Errorf("fire %v, event %d; want the 15:00 event %d", fire, r.Event, wantEvent)
	}
	// Skipped: 12:05 up to 13:55, as 14:00:00 is 1h00m60s old... at
	// 15:01 the cut is 14:01, so 14:00 is too old as well.
	if r.Skipped != 24 || r.FirstSkipped != day0+12*3600+300 || r.LastSkipped != day0+14*3600 || r.SkippedMore {
		t.Errorf("report %+v: want 24 skipped from 12:05 to 14:00", r)
	}
	if !r.Notable() {
		t.Errorf("skipping is not notable")
	}
}

func TestAdvanceClockJumps(t *testing.T) {
	it := mustParse(t, every5Min)
	t.Run("forward within the limit fires what it jumped over, once", func(t *testing.T) {
		m := &machine{wall: day0 + 60, mono: 1, boot: "b1"}
		w := started(t, it, m)
		m.wall += 30 * 60 // the clock is set 30 minutes forward
		m.pass(10)
		fire, r := w.tick(m)
		if !fire || r.Event != day0+30*60 || r.Skipped != 0 {
			t.Errorf("fire %v, report %+v; want the 00:30 event and nothing skipped", fire, r)
		}
		if r.Jump != 30*time.Minute || r.Elapsed != 10*time.Second {
			t.Errorf("jump %v, elapsed %v; want 30m and 10s", r.Jump, r.Elapsed)
		}
	})
	t.Run("forward beyond the limit skips the oldest", func(t *testing.T) {
		m := &machine{wall: day0 + 60, mono: 1, boot: "b1"}
		w := started(t, it, m)
		m.wall += 2 * 3600
		fire, r := w.tick(m)
		if !fire || r.Event != day0+2*3600 || r.Skipped != 12 || r.FirstSkipped != day0+300 || r.LastSkipped != day0+3600 {
			t.Errorf("fire %v, report %+v; want 02:00 fired, 00:05 to 01:00 skipped", fire, r)
		}
	})
	t.Run("backward within the limit repeats nothing", func(t *testing.T) {
		m := &machine{wall: day0 + 3600 + 60, mono: 1, boot: "b1"}
		w := started(t, it, m)
		m.wall -= 40 * 60 // back to 00:21
		fire, r := w.tick(m)
		if fire || r.Behind != 40*60 || r.Rewound != 0 || r.Jump != -40*time.Minute {
			t.Errorf("fire %v, report %+v; want nothing fired, 40 minutes behind", fire, r)
		}
		// The clock runs through 00:25 ... 01:00 again: nothing fires.
		for range 40 {
			m.pass(60)
			if fire, r := w.tick(m); fire {
				t.Fatalf("at %s: fired event %d again", time.Unix(m.wall, 0).UTC(), r.Event)
			}
		}
		// Past where it was, the schedule goes on.
		m.pass(4 * 60)
		if fire, r := w.tick(m); !fire || r.Event != day0+3600+300 {
			t.Errorf("at 01:05: fire %v, report %+v; want the 01:05 event", fire, r)
		}
	})
	t.Run("backward beyond the limit repeats", func(t *testing.T) {
		m := &machine{wall: day0 + 3*3600 + 60, mono: 1, boot: "b1"}
		w := started(t, it, m)
		m.wall -= 2 * 3600 // back to 01:01
		fire, r := w.tick(m)
		if fire || r.Rewound != 2*3600 {
			t.Errorf("fire %v, report %+v; want nothing fired, rewound 2h", fire, r)
		}
		m.pass(4 * 60)
		if fire, r := w.tick(m); !fire || r.Event != day0+3600+300 {
			t.Errorf("at 01:05: fire %v, report %+v; want the 01:05 event again", fire, r)
		}
	})
	t.Run("suspended while the clock is set back as much: nothing happened", func(t *testing.T) {
		m := &machine{wall: day0 + 3600 + 60, mono: 1, boot: "b1"}
		w := started(t, it, m)
		m.pass(3600)
		m.wall -= 3600
		fire, r := w.tick(m)
		if fire || r.Behind != 0 || r.Rewound != 0 || r.Elapsed != time.Hour || r.Jump != -time.Hour {
			t.Errorf("fire %v, report %+v; want nothing, an hour elapsed and the clock an hour back", fire, r)
		}
	})
}

// TestAdvanceNTP ticks every minute for a day on a 5-minute schedule while
// the clock is nudged by a few seconds either way: every event fires
// exactly once, within a tick of its time.
func TestAdvanceNTP(t *testing.T) {
	m := &machine{wall: day0 + 30, mono: 1, boot: "b1"}
	w := started(t, mustParse(t, every5Min), m)
	nudges := []int64{0, 2, -3, 1, -1, 3, -2, 0, 4, -4}
	fired := map[int64]int{}
	for i := range 24 * 60 {
		m.pass(60)
		m.wall += nudges[i%len(nudges)]
		fire, r := w.tick(m)
		if fire {
			fired[r.Event]++
			if m.wall-r.Event > 70 {
				t.Errorf("event %d fired %ds late", r.Event, m.wall-r.Event)
			}
		}
		if r.Skipped > 0 || r.Rewound > 0 {
			t.Fatalf("tick %d: report %+v; want no skip and no rewind", i, r)
		}
	}
	if len(fired) != 24*12 {
		t.Errorf("%d events fired, want %d", len(fired), 24*12)
	}
	for e, n := range fired {
		if n != 1 || e%300 != 0 {
			t.Errorf("event %d fired %d times", e, n)
		}
	}
}

// TestAdvanceYearJump sets the clock a year forward under a 5-minute
// schedule: about 105,000 events passed, and Advance must not walk them.
func TestAdvanceYearJump(t *testing.T) {
	for _, text := range []string{every5Min, `{"epoch": {"period": 300}, "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`} {
		it := mustParse(t, text)
		m := &machine{wall: day0 + 60, mono: 1, boot: "b1"}
		w := started(t, it, m)
		m.wall += 365 * 86400
		fire, r := w.tick(m)
		now := m.wall
		if !fire || r.Event != now-60 {
			t.Errorf("%s: fire %v, event %d; want %d", text, fire, r.Event, now-60)
		}
		if r.Skipped != maxCounted || !r.SkippedMore || r.FirstSkipped != day0+300 || r.LastSkipped != now-60-3600 {
			t.Errorf("%s: report %+v; want %d+ skipped from %d to %d", text, r, maxCounted, day0+300, now-60-3600)
		}
		t.Logf("%s: %d search steps", text, r.Steps)
		if r.Steps > 2000 {
			t.Errorf("%s: %d search steps for a year's jump; want it independent of the events passed", text, r.Steps)
		}
	}
}

func TestAdvanceReboot(t *testing.T) {
	m := &machine{wall: day0 + 2*3600 + 55*60, mono: 900000, boot: "b1"}
	w := started(t, mustParse(t, dailyAt3), m)
	// The machine reboots: the monotonic clock starts again, smaller
	// than before, under a new boot id. Only the wall clock counts.
	m.wall += 10 * 60
	m.mono, m.boot = 30, "b2"
	fire, r := w.tick(m)
	if !fire || r.Event != day0+3*3600 {
		t.Errorf("fire %v, report %+v; want the 03:00 event", fire, r)
	}
	if r.MonoKnown || r.Jump != 0 || r.Elapsed != 0 {
		t.Errorf("report %+v: compared monotonic times across boots", r)
	}
	// Without a boot id (a fake clock), the same.
	prev := State{Wall: day0, Handled: day0}
	fire, _, r = mustParse(t, dailyAt3).Advance(prev, Reading{Wall: day0 + 3*3600 + 60})
	if !fire || r.MonoKnown {
		t.Errorf("no boot id: fire %v, report %+v; want a fire by the wall clock", fire, r)
	}
}

func TestNextDue(t *testing.T) {
	it := mustParse(t, dailyAt3)
	st := State{Wall: day0 + 3*3600, Handled: day0 + 3*3600}
	if got, ok := it.NextDue(st); !ok || got != day0+86400+3*3600 {
		t.Errorf("after 03:00 was handled: got %d %v, want the next day's", got, ok)
	}
	st.Handled--
	if got, _ := it.NextDue(st); got != day0+3*3600 {
		t.Errorf("before 03:00 was handled: got %d, want %d", got, day0+3*3600)
	}
}

func TestReadClocks(t *testing.T) {
	var fake clock.Fake
	fake.Set(day0)
	a := ReadClocks(&fake)
	b := ReadClocks(&fake)
	if a.Wall != day0 || b.Wall != day0 {
		t.Errorf("wall: got %d and %d, want %d", a.Wall, b.Wall, day0)
	}
	if a.Boot == "" {
		t.Skip("no boot id here: the wall clock alone is used")
	}
	if a.Boot != b.Boot || b.Mono < a.Mono || a.Mono <= 0 {
		t.Errorf("readings %+v then %+v: want the same boot and a monotonic clock", a, b)
	}
}

// TestNextDueFrom ticks schedules through a clock that moves forward,
// jumps, and is set back a little and a lot, and checks that NextDueFrom,
// which searches only what the last next event does not tell, always
// agrees with NextDue.
func TestNextDueFrom(t *testing.T) {
	items := []string{
		`{"minute": 30, "hour": 1, "dst_fixes": ["skip", "repeat_use_only_early"], "timezone": "US/Pacific", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`,
		`{"minute": {"period": 10}, "dst_fixes": ["unskip", "repeat_use_both"], "timezone": "Europe/London", "max_shift_seconds_for_unskip_and_do_not_repeat": 120}`,
		`{"epoch": [1383000000, 1383470000], "max_shift_seconds_for_unskip_and_do_not_repeat": 600}`,
	}
	// Steps of the wall clock around the US/Pacific repeat of 3 November 2013.
	moves := []int64{10, 600, 3600, -300, 1, 5400, -7200, 86400, 59, -90000, 3 * 86400, 7, -1, 600, 3600 * 5}
	for _, text := range items {
		it := mustParse(t, text)
		var st State
		next, ok := it.NextDue(st)
		wall := int64(1383400000)
		for i := range 200 {
			wall += moves[i%len(moves)]
			_, st2, _ := it.Advance(st, Reading{Wall: wall})
			got, gotOK, _ := it.NextDueFrom(st, next, ok, st2)
			want, wantOK := it.NextDue(st2)
			if got != want || gotOK != wantOK {
				t.Fatalf("%s: tick %d at %d from %+v to %+v: NextDueFrom = %d %v; NextDue = %d %v",
					text, i, wall, st, st2, got, gotOK, want, wantOK)
			}
			st, next, ok = st2, got, gotOK
		}
	}
}
