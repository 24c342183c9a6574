package rules

import (
	"hash/fnv"
	"math"
	"strconv"
)

// The states of a lorry's failure streak.
const (
	// StateOK: the last run did not fail (or none ran yet).
	StateOK = "ok"
	// StateFailing: the last run failed, and the next runs at the
	// normal interval.
	StateFailing = "failing"
	// StateBackingOff: runs failed in a row, and the delay before the
	// next has grown beyond the interval.
	StateBackingOff = "backing-off"
	// StateHardFailed: hard-fail-after runs failed in a row; the lorry
	// is not run again until Retry now, a change of its spec, or a
	// success of a run started otherwise.
	StateHardFailed = "hard-failed"
)

// States are the states in the order the pages and metrics give them.
var States = []string{StateOK, StateFailing, StateBackingOff, StateHardFailed}

// Defaults of the max-backoff and hard-fail-after keys, in seconds and
// runs.
const (
	DefaultMaxBackoff    = 24 * 60 * 60
	DefaultHardFailAfter = 14
	// HardFailAfterAuthGone is hard-fail-after for failures of class
	// auth or gone, which a retry seldom mends: credentials or a
	// repository that went away need an operator.
	HardFailAfterAuthGone = 3
)

// Never is a due time later than any clock: that of a hard-failed lorry,
// and the next event of a schedule that has none left. The indexes on
// due times never find an entry due then.
const Never int64 = 1 << 62

// jitterPermille bounds the jitter of a backoff delay: ±10%.
const jitterPermille = 100

// BackoffDelay is how long after the start of its failures'th failed run
// in a row a lorry of the given interval runs again: interval ×
// 2^(failures−1), then ±10% of jitter, then at most max(maxBackoff,
// interval). The jitter is the same for the same path and failures, so
// that lorries that fail together spread out, and a test can predict it.
// A first failure waits just the interval. No count or limit, however
// large, makes it overflow: it never exceeds the limit and never shrinks
// as the streak grows.
func BackoffDelay(path string, interval, maxBackoff, failures int64) int64 {
	if interval <= 0 || failures <= 1 {
		return max(interval, 0)
	}
	limit := max(maxBackoff, interval)
	// From twice the limit on, the jitter cannot take the delay below
	// it; a limit too large to double stops the doubling at itself.
	stop := limit
	if stop <= math.MaxInt64/2 {
		stop *= 2
	}
	delay := interval
	for i := int64(1); i < failures && delay < stop; i++ {
		if delay > stop/2 {
			delay = stop
		} else {
			delay *= 2
		}
	}
	if delay >= stop {
		return limit
	}
	h := fnv.New64a()
	h.Write([]byte(path + "\x00" + strconv.FormatInt(failures, 10)))
	j := int64(h.Sum64()%(2*jitterPermille+1)) - jitterPermille
	// This is delay*j/1000 without the product's overflow, and the sum
	// is not made if it would pass the limit, where it could overflow.
	jitter := delay/1000*j + delay%1000*j/1000
	if jitter > limit-delay {
		return limit
	}
	return delay + jitter
}

// HardFailAfter is how many failures in a row hard-fail a lorry whose
// hard-fail-after is limit, when the last was of class: auth and gone
// hard-fail sooner. 0 is never.
func HardFailAfter(limit int64, class string) int64 {
	if (class == ClassAuth || class == ClassGone) && limit > HardFailAfterAuthGone {
		return HardFailAfterAuthGone
	}
	return limit
}

// Streak is a lorry's failure streak as kept with it.
type Streak struct {
	Failures     int64
	State        string
	BackoffUntil int64
	LastSuccess  *int64
	ErrorClass   string
}

// Lorry is what the rules read of a lorry whose run ended.
type Lorry struct {
	Path string
	// Interval, MaxBackoff and HardFailAfter are its keys, in seconds
	// and runs.
	Interval, MaxBackoff, HardFailAfter int64
	// Scheduled says it runs by a schedule; CronNext is then the first
	// event of its schedule not dealt with.
	Scheduled bool
	CronNext  int64
	Streak    Streak
}

// End is how a run ended: when it started, its status and error class.
type End struct {
	Started       int64
	Status, Class string
}

// Outcome is what the end of a run makes of its lorry.
type Outcome struct {
	Streak Streak
	// Next is when the lorry is due next; Never once hard-failed.
	Next int64
	// NotifyFailure says whether the failure is notified: one of class
	// auth or gone is, only when it begins a streak of that class.
	NotifyFailure bool
	// HardFailed and Recovered say that the lorry became hard-failed, or
	// succeeded after failures, with this run.
	HardFailed, Recovered bool
}

// AfterRun is what the end e of a run of l makes of l: its streak and
// when it is due next. A failure backs off from the interval, or for a
// scheduled lorry from the time between the run's start and the next
// event of its schedule; a scheduled lorry is due at the first event its
// schedule has not dealt with, or when its backoff ends if that is later.
func AfterRun(l Lorry, e End) Outcome {
	base := l.Interval
	if l.Scheduled && l.CronNext > e.Started {
		base = l.CronNext - e.Started
	}
	var o Outcome
	o.Streak = nextStreak(l, e, base, &o)
	o.Next = max(addSat(e.Started, l.Interval), o.Streak.BackoffUntil)
	if l.Scheduled {
		o.Next = max(l.CronNext, o.Streak.BackoffUntil)
	}
	if o.Streak.State == StateHardFailed {
		o.Next = Never
	}
	return o
}

// nextStreak is l's streak after the run e ended; it sets o's
// notifications. base is what a failure backs off from.
func nextStreak(l Lorry, e End, base int64, o *Outcome) Streak {
	s := l.Streak
	o.NotifyFailure = e.Status != StatusSucceeded
	switch {
	case e.Status == StatusSucceeded:
		started := e.Started
		o.Recovered = s.Failures > 0
		return Streak{State: StateOK, LastSuccess: &started}
	case CountsAsFailure(e.Status):
		repeated := (e.Class == ClassAuth || e.Class == ClassGone) && s.Failures > 0 && s.ErrorClass == e.Class
		o.NotifyFailure = !repeated
		s.Failures++
		s.ErrorClass = e.Class
		if limit := HardFailAfter(l.HardFailAfter, e.Class); limit > 0 && s.Failures >= limit {
			o.HardFailed = l.Streak.State != StateHardFailed
			s.State, s.BackoffUntil = StateHardFailed, 0
			return s
		}
		delay := BackoffDelay(l.Path, base, l.MaxBackoff, s.Failures)
		s.BackoffUntil = addSat(e.Started, delay)
		s.State = StateFailing
		if delay > base {
			s.State = StateBackingOff
		}
	}
	return s
}

// addSat is a+b for b >= 0, at most Never: a time so far off is never.
func addSat(a, b int64) int64 {
	if b > Never-a {
		return Never
	}
	return a + b
}
