package rules

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBackoffDelay(t *testing.T) {
	tests := []struct {
		name               string
		interval, max, n   int64
		wantMin, wantMax   int64
		wantExactlyAtLimit bool
	}{
		{name: "first failure waits the interval", interval: 100, max: 86400, n: 1, wantMin: 100, wantMax: 100},
		{name: "second doubles", interval: 100, max: 86400, n: 2, wantMin: 180, wantMax: 220},
		{name: "third quadruples", interval: 100, max: 86400, n: 3, wantMin: 360, wantMax: 440},
		{name: "tenth", interval: 100, max: 86400, n: 10, wantMin: 46080, wantMax: 56320},
		{name: "capped at max-backoff", interval: 3600, max: 86400, n: 13, wantMin: 86400, wantMax: 86400},
		{name: "an interval over max-backoff is never shortened", interval: 7200, max: 3600, n: 5, wantMin: 7200, wantMax: 7200},
		{name: "huge counts do not overflow", interval: 3600, max: 86400, n: 1000, wantMin: 86400, wantMax: 86400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"a", "b/c", "delta/linux", "x"} {
				got := BackoffDelay(path, tt.interval, tt.max, tt.n)
				if got < tt.wantMin || got > tt.wantMax {
					t.Errorf("BackoffDelay(%q, %d, %d, %d) = %d; want in [%d, %d]",
						path, tt.interval, tt.max, tt.n, got, tt.wantMin, tt.wantMax)
				}
				if again := BackoffDelay(path, tt.interval, tt.max, tt.n); again != got {
					t.Errorf("BackoffDelay(%q, ...) = %d, then %d; want the same", path, got, again)
				}
			}
		})
	}
	// The jitter spreads lorries that fail together.
	seen := map[int64]bool{}
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		seen[BackoffDelay(p, 1000, 86400, 3)] = true
	}
	if len(seen) < 2 {
		t.Errorf("eight lorries backed off by %v; want different delays", seen)
	}
}

// backoffCases are intervals, max-backoffs and paths to try every rule
// on: the usual ones, the extremes of int64, and random ones of every
// size.
func backoffCases() (intervals, maxes []int64, paths []string) {
	intervals = []int64{1, 2, 60, 100, 3600, 86400, 7 * 86400, 1 << 31, 1 << 40, math.MaxInt64 / 1000,
		math.MaxInt64/2 - 1, math.MaxInt64 / 2, math.MaxInt64/2 + 1, math.MaxInt64 - 1, math.MaxInt64}
	maxes = append([]int64{0, 1, DefaultMaxBackoff}, intervals...)
	r := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		intervals = append(intervals, r.Int64N(math.MaxInt64>>r.IntN(63))+1)
		maxes = append(maxes, r.Int64N(math.MaxInt64>>r.IntN(63))+1)
	}
	return intervals, maxes, []string{"a", "b/c", "delta/linux", "x", "\x00", "é/ü"}
}

// TestBackoffDelayBounds tries every interval and max-backoff of
// backoffCases, with streaks from 1 to 200: the delay is never more than
// max(max-backoff, interval), never less than the interval, never
// shorter than for a shorter streak, and a first failure waits the
// interval.
func TestBackoffDelayBounds(t *testing.T) {
	intervals, maxes, paths := backoffCases()
	for _, interval := range intervals {
		for _, maxBackoff := range maxes {
			for _, path := range paths {
				limit := max(interval, maxBackoff)
				if got := BackoffDelay(path, interval, maxBackoff, 1); got != interval {
					t.Fatalf("BackoffDelay(%q, %d, %d, 1) = %d; want the interval", path, interval, maxBackoff, got)
				}
				prev := interval
				for n := int64(2); n <= 200; n++ {
					got := BackoffDelay(path, interval, maxBackoff, n)
					if got > limit || got < interval {
						t.Fatalf("BackoffDelay(%q, %d, %d, %d) = %d; want in [%d, %d]", path, interval, maxBackoff, n, got, interval, limit)
					}
					if got < prev {
						t.Fatalf("BackoffDelay(%q, %d, %d, %d) = %d, shorter than %d for a streak of %d",
							path, interval, maxBackoff, n, got, prev, n-1)
					}
					prev = got
				}
				if prev != limit {
					t.Fatalf("BackoffDelay(%q, %d, %d, 200) = %d; want the limit %d", path, interval, maxBackoff, prev, limit)
				}
			}
		}
	}
}

// TestBackoffDelayNoInterval: an entry with no interval runs again at
// once, however long its streak.
func TestBackoffDelayNoInterval(t *testing.T) {
	for _, interval := range []int64{0, -1, math.MinInt64} {
		for _, n := range []int64{math.MinInt64, 0, 1, 2, 50, math.MaxInt64} {
			if got := BackoffDelay("a", interval, DefaultMaxBackoff, n); got != 0 {
				t.Errorf("BackoffDelay(a, %d, max, %d) = %d; want 0", interval, n, got)
			}
		}
	}
}

// TestAfterRunHardFailsAtThreshold fails a lorry again and again, for
// every hard-fail-after from 1 to 20 and every class: it hard-fails
// exactly at the failure that reaches the threshold (3 at most for auth
// and gone), says so once, and is never due after; before it, it waits at
// least its interval, and its streak counts every failure.
func TestAfterRunHardFailsAtThreshold(t *testing.T) {
	for _, class := range []string{"", ClassAuth, ClassGone, ClassInternal, ClassDownstream, "network"} {
		for limit := int64(1); limit <= 20; limit++ {
			threshold := limit
			if (class == ClassAuth || class == ClassGone) && limit > HardFailAfterAuthGone {
				threshold = HardFailAfterAuthGone
			}
			for _, status := range []string{StatusFailed, StatusTimedOut, StatusLost} {
				l := Lorry{Path: "a", Interval: 100, MaxBackoff: 1000, HardFailAfter: limit, Streak: Streak{State: StateOK}}
				for n := int64(1); n <= threshold+2; n++ {
					started := 1000 * n
					o := AfterRun(l, End{Started: started, Status: status, Class: class})
					if o.Streak.Failures != n || o.Streak.ErrorClass != class {
						t.Fatalf("%s %s, limit %d, failure %d: streak %+v; want %d failures of class %q",
							status, class, limit, n, o.Streak, n, class)
					}
					hard := n >= threshold
					if got := o.Streak.State == StateHardFailed; got != hard {
						t.Fatalf("%s %s, limit %d, failure %d: state %s; want hard-failed %v", status, class, limit, n, o.Streak.State, hard)
					}
					if o.HardFailed != (n == threshold) {
						t.Errorf("%s %s, limit %d, failure %d: HardFailed %v; want it at failure %d only",
							status, class, limit, n, o.HardFailed, threshold)
					}
					if hard && o.Next != Never {
						t.Errorf("%s %s, limit %d, failure %d: next %d; want Never", status, class, limit, n, o.Next)
					}
					if !hard && (o.Next < started+l.Interval || o.Next > started+max(l.Interval, l.MaxBackoff)) {
						t.Errorf("%s %s, limit %d, failure %d: next %d; want in [%d, %d]", status, class, limit, n, o.Next,
							started+l.Interval, started+l.MaxBackoff)
					}
					repeated := (class == ClassAuth || class == ClassGone) && n > 1
					if o.NotifyFailure == repeated {
						t.Errorf("%s %s, failure %d: NotifyFailure %v; want %v", status, class, n, o.NotifyFailure, !repeated)
					}
					l.Streak = o.Streak
				}
			}
		}
	}
}

// TestAfterRunNeverHardFails: a hard-fail-after of 0 never hard-fails,
// and the delay settles at max-backoff.
func TestAfterRunNeverHardFails(t *testing.T) {
	l := Lorry{Path: "a", Interval: 100, MaxBackoff: 1000}
	var o Outcome
	for n := int64(1); n <= 100; n++ {
		o = AfterRun(l, End{Started: 0, Status: StatusFailed})
		if o.Streak.State == StateHardFailed {
			t.Fatalf("failure %d hard-failed with no hard-fail-after", n)
		}
		l.Streak = o.Streak
	}
	if o.Next != 1000 || o.Streak.State != StateBackingOff {
		t.Errorf("after 100 failures: next %d, state %s; want 1000, %s", o.Next, o.Streak.State, StateBackingOff)
	}
}

// TestAfterRunStatuses: a success ends the streak; a kill or a job that
// never ran leaves it as it was; a scheduled lorry is due at its next
// event, or when its backoff ends if later.
func TestAfterRunStatuses(t *testing.T) {
	failing := Streak{Failures: 4, State: StateBackingOff, BackoffUntil: 900, ErrorClass: "network"}
	tests := []struct {
		name          string
		l             Lorry
		e             End
		want          Streak
		next          int64
		notify, recov bool
	}{
		{name: "success ends a streak", l: Lorry{Interval: 100, Streak: failing}, e: End{Started: 50, Status: StatusSucceeded},
			want: Streak{State: StateOK, LastSuccess: ptr(50)}, next: 150, recov: true},
		{name: "success after success", l: Lorry{Interval: 100, Streak: Streak{State: StateOK}}, e: End{Started: 50, Status: StatusSucceeded},
			want: Streak{State: StateOK, LastSuccess: ptr(50)}, next: 150},
		{name: "a kill is no failure", l: Lorry{Interval: 100, Streak: failing}, e: End{Started: 50, Status: StatusKilled},
			want: failing, next: 900, notify: true},
		{name: "an orphan is no failure", l: Lorry{Interval: 100, Streak: failing}, e: End{Started: 50, Status: StatusOrphaned},
			want: failing, next: 900, notify: true},
		{name: "first failure waits the interval", l: Lorry{Interval: 100, MaxBackoff: 1000}, e: End{Started: 50, Status: StatusFailed, Class: "network"},
			want: Streak{Failures: 1, State: StateFailing, BackoffUntil: 150, ErrorClass: "network"}, next: 150, notify: true},
		{name: "scheduled: due at the next event", l: Lorry{Interval: 100, Scheduled: true, CronNext: 5000}, e: End{Started: 50, Status: StatusSucceeded},
			want: Streak{State: StateOK, LastSuccess: ptr(50)}, next: 5000},
		{name: "scheduled: a failure backs off from the time to the next event",
			l:    Lorry{Path: "a", Interval: 100, MaxBackoff: 1 << 20, Scheduled: true, CronNext: 1050, Streak: Streak{Failures: 1, State: StateFailing}},
			e:    End{Started: 50, Status: StatusFailed, Class: "x"},
			want: Streak{Failures: 2, State: StateBackingOff, BackoffUntil: 50 + BackoffDelay("a", 1000, 1<<20, 2), ErrorClass: "x"},
			next: 50 + BackoffDelay("a", 1000, 1<<20, 2), notify: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := AfterRun(tt.l, tt.e)
			if !sameStreak(o.Streak, tt.want) || o.Next != tt.next || o.NotifyFailure != tt.notify || o.Recovered != tt.recov || o.HardFailed {
				t.Errorf("AfterRun = %+v (last success %v); want streak %+v, next %d, notify %v, recovered %v",
					o, o.Streak.LastSuccess, tt.want, tt.next, tt.notify, tt.recov)
			}
		})
	}
}

func ptr(n int64) *int64 { return &n }

func sameStreak(a, b Streak) bool {
	as, bs := a.LastSuccess, b.LastSuccess
	a.LastSuccess, b.LastSuccess = nil, nil
	return a == b && (as == nil) == (bs == nil) && (as == nil || *as == *bs)
}

// TestAfterRunFarFuture: a streak's times saturate at Never rather than
// wrap into the past.
func TestAfterRunFarFuture(t *testing.T) {
	l := Lorry{Path: "a", Interval: math.MaxInt64 / 2, MaxBackoff: math.MaxInt64, Streak: Streak{Failures: 60, State: StateBackingOff}}
	o := AfterRun(l, End{Started: 1 << 40, Status: StatusFailed})
	if o.Next < 1<<40 || o.Streak.BackoffUntil < 1<<40 {
		t.Errorf("AfterRun far off: next %d, backoff until %d; want after the start", o.Next, o.Streak.BackoffUntil)
	}
}
