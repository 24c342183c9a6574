package statedb

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"lorrycontroller.dev/lc/rules"
)

// events reads the outbox's events, oldest first, and the payloads of the
// lorry-hard-failed and lorry-recovered ones.
func (f *fixture) events(t *testing.T) (events []string, hard []LorryHardFailed, recovered []LorryRecovered) {
	t.Helper()
	ds := f.outbox(t)
	for i := len(ds) - 1; i >= 0; i-- {
		events = append(events, ds[i].Event)
		switch ds[i].Event {
		case EventLorryHardFailed:
			var p LorryHardFailed
			if err := json.Unmarshal([]byte(ds[i].Payload), &p); err != nil {
				t.Fatal(err)
			}
			hard = append(hard, p)
		case EventLorryRecovered:
			var p LorryRecovered
			if err := json.Unmarshal([]byte(ds[i].Payload), &p); err != nil {
				t.Fatal(err)
			}
			recovered = append(recovered, p)
		}
	}
	return events, hard, recovered
}

func count(events []string, event string) int {
	n := 0
	for _, e := range events {
		if e == event {
			n++
		}
	}
	return n
}

// run hands out the lorry's job at the current time, with the clock at
// the lorry's next_due, and ends it with exit and class.
func (f *fixture) run(t *testing.T, path string, exitCode int64, class string) Lorry {
	t.Helper()
	l := f.lorry(t, path)
	if l.NextDue > f.clock.Now().Unix() {
		f.clock.Set(l.NextDue)
	}
	a := f.mustGive(t, m1)
	if a.Lorry.Path != path {
		t.Fatalf("handed out %q; want %q", a.Lorry.Path, path)
	}
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: exit(exitCode), ErrorClass: class}); err != nil {
		t.Fatal(err)
	}
	return f.lorry(t, path)
}

// TestBackoffGrowsThenHardFails fails a lorry again and again: its delay
// doubles from the interval, within the jitter, and at hard-fail-after
// failures it is hard-failed, never due however late, notified once.
func TestBackoffGrowsThenHardFails(t *testing.T) {
	f := newFixture(t, Options{Notify: allEvents()})
	f.lorries(t, "a")
	for n := int64(1); n < DefaultHardFailAfter; n++ {
		started := f.clock.Now().Unix()
		if l := f.lorry(t, "a"); l.NextDue > started {
			started = l.NextDue
		}
		l := f.run(t, "a", 1, "network")
		if l.ConsecutiveFailures != n {
			t.Fatalf("after failure %d: consecutive_failures %d", n, l.ConsecutiveFailures)
		}
		want := rules.BackoffDelay("a", 100, DefaultMaxBackoff, n)
		if got := l.NextDue - started; got != want {
			t.Errorf("after failure %d: due %ds after the start; want %d", n, got, want)
		}
		wantState := StateBackingOff
		if n == 1 {
			wantState = StateFailing
		}
		if l.State != wantState || l.LastErrorClass != "network" {
			t.Errorf("after failure %d: state %q, class %q; want %q, network", n, l.State, l.LastErrorClass, wantState)
		}
		// Not due a second before.
		f.clock.Set(l.NextDue - 1)
		f.idle(t, m1, "no lorry is due")
	}
	l := f.run(t, "a", 1, "network")
	if l.State != StateHardFailed || l.ConsecutiveFailures != DefaultHardFailAfter {
		t.Fatalf("after %d failures: state %q, %d failures; want hard-failed", DefaultHardFailAfter, l.State, l.ConsecutiveFailures)
	}
	f.clock.Set(f.clock.Now().Unix() + 100*365*86400)
	f.idle(t, m1, "no lorry is due")
	var c LorryCounts
	f.update(t, func(tx *Tx) (err error) { c, err = tx.CountLorries(context.Background()); return err })
	if c.Due != 0 {
		t.Errorf("a hard-failed lorry counts as due: %+v", c)
	}

	events, hard, _ := f.events(t)
	if n := count(events, EventJobFailed); n != DefaultHardFailAfter {
		t.Errorf("%d job-failed; want one per failure, %d", n, DefaultHardFailAfter)
	}
	if len(hard) != 1 || hard[0].Lorry != "a" || hard[0].Failures != DefaultHardFailAfter || hard[0].ErrorClass != "network" {
		t.Errorf("lorry-hard-failed: %+v; want one for a after %d failures", hard, DefaultHardFailAfter)
	}
	jobs := f.jobsOf(t, "a")
	if got := f.job(t, jobs[0]); got.LorryState != StateHardFailed || got.ErrorClass != "network" {
		t.Errorf("last job: lorry_state %q, error_class %q; want hard-failed, network", got.LorryState, got.ErrorClass)
	}
	if got := f.job(t, jobs[len(jobs)-1]); got.LorryState != StateFailing {
		t.Errorf("first job: lorry_state %q; want failing", got.LorryState)
	}
}

func (f *fixture) jobsOf(t *testing.T, path string) []int64 {
	t.Helper()
	var ids []int64
	f.update(t, func(tx *Tx) (err error) { ids, err = tx.JobsOfLorry(context.Background(), path, 100); return err })
	return ids
}

// TestAuthAndGoneHardFailAfterThree: failures a retry seldom mends
// hard-fail after three, with one job-failed for the streak rather than
// one per run.
func TestAuthAndGoneHardFailAfterThree(t *testing.T) {
	for _, class := range []string{ClassAuth, ClassGone} {
		t.Run(class, func(t *testing.T) {
			f := newFixture(t, Options{Notify: allEvents()})
			f.lorries(t, "a")
			f.run(t, "a", 1, class)
			if l := f.run(t, "a", 1, class); l.State != StateBackingOff {
				t.Fatalf("after 2 failures: %q; want backing-off", l.State)
			}
			if l := f.run(t, "a", 1, class); l.State != StateHardFailed {
				t.Fatalf("after 3 failures: %q; want hard-failed", l.State)
			}
			events, hard, _ := f.events(t)
			want := []string{EventJobFailed, EventLorryHardFailed}
			if len(events) != len(want) || events[0] != want[0] || events[1] != want[1] {
				t.Errorf("events %v; want %v", events, want)
			}
			if len(hard) == 1 && (hard[0].Failures != 3 || hard[0].ErrorClass != class) {
				t.Errorf("lorry-hard-failed %+v; want 3 failures of class %s", hard[0], class)
			}
		})
	}
}

// TestRetryLorry: Retry now makes a hard-failed lorry due at once with a
// fresh streak; a success after failures is notified as a recovery.
func TestRetryLorry(t *testing.T) {
	f := newFixture(t, Options{Notify: allEvents()})
	f.lorries(t, "a")
	for range 3 {
		f.run(t, "a", 1, ClassAuth)
	}
	f.idle(t, m1, "no lorry is due")
	f.update(t, func(tx *Tx) error { return tx.RetryLorry(context.Background(), "a") })
	l := f.lorry(t, "a")
	if l.State != StateOK || l.ConsecutiveFailures != 0 || l.NextDue != f.clock.Now().Unix() {
		t.Fatalf("after retry: state %q, %d failures, due %d; want ok, 0, now %d", l.State, l.ConsecutiveFailures, l.NextDue, f.clock.Now().Unix())
	}
	// The retry fails the same way: that is notified again, once.
	l = f.run(t, "a", 1, ClassAuth)
	if l.State != StateFailing {
		t.Fatalf("after retry and failure: %q; want failing", l.State)
	}
	started := f.lorry(t, "a").NextDue
	l = f.run(t, "a", 0, "")
	if l.State != StateOK || l.ConsecutiveFailures != 0 || l.LastSuccess == nil || *l.LastSuccess != started ||
		l.LastErrorClass != "" || l.NextDue != started+100 {
		t.Errorf("after success: %+v; want ok, last_success %d, due after the interval", l, started)
	}
	events, _, recovered := f.events(t)
	if n := count(events, EventJobFailed); n != 2 {
		t.Errorf("%d job-failed; want 2, the first of each streak", n)
	}
	if len(recovered) != 1 || recovered[0].Failures != 1 {
		t.Errorf("lorry-recovered %+v; want one after 1 failure", recovered)
	}

	err := f.db.Update(context.Background(), func(tx *Tx) error { return tx.RetryLorry(context.Background(), "nope") })
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("retry of no lorry: %v; want ErrNotFound", err)
	}
}

// TestSpecChangeEndsStreak: a changed definition may have mended what
// failed; a change of the backoff settings alone has not.
func TestSpecChangeEndsStreak(t *testing.T) {
	f := newFixture(t, Options{})
	set := func(text string, hardFail int64) {
		want := []NewLorry{{Path: "a", Text: text, Kind: "lorry", Interval: 100, Timeout: 50, HardFailAfter: hardFail}}
		f.update(t, func(tx *Tx) error { _, err := tx.SetConfigLorries(context.Background(), want, Kept{}); return err })
	}
	set(`{"a":{"type":"git","url":"old"}}`, 2)
	f.run(t, "a", 1, "")
	if l := f.run(t, "a", 1, ""); l.State != StateHardFailed || l.HardFailAfter != 2 {
		t.Fatalf("state %q, hard-fail-after %d; want hard-failed after 2", l.State, l.HardFailAfter)
	}
	set(`{"a":{"type":"git","url":"old"}}`, 5)
	if l := f.lorry(t, "a"); l.State != StateHardFailed || l.HardFailAfter != 5 {
		t.Fatalf("after a new hard-fail-after: state %q, hard-fail-after %d; want hard-failed, 5", l.State, l.HardFailAfter)
	}
	set(`{"a":{"type":"git","url":"new"}}`, 5)
	l := f.lorry(t, "a")
	if l.State != StateOK || l.ConsecutiveFailures != 0 || l.NextDue != *l.LastRun+100 {
		t.Fatalf("after a new spec: %+v; want ok, due at last run + interval", l)
	}
	f.clock.Set(l.NextDue)
	f.mustGive(t, m1)
}

// TestWhatCountsAsFailure: timed-out and lost runs count, a kill by an
// operator and an orphaned claim do not.
func TestWhatCountsAsFailure(t *testing.T) {
	f := newFixture(t, Options{})
	f.lorries(t, "a")
	f.run(t, "a", 1, "")

	a := f.mustGiveAt(t, "a")
	f.update(t, func(tx *Tx) error { return tx.StopJob(context.Background(), a.Job.ID) })
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: exit(-15)}); err != nil {
		t.Fatal(err)
	}
	if l := f.lorry(t, "a"); l.ConsecutiveFailures != 1 || f.job(t, a.Job.ID).Status != StatusKilled {
		t.Fatalf("after a kill: %d failures; want 1", l.ConsecutiveFailures)
	}

	a = f.mustGiveAt(t, "a")
	f.update(t, func(tx *Tx) error { _, err := tx.OrphanClaimedJobs(context.Background(), -1); return err })
	if l := f.lorry(t, "a"); l.ConsecutiveFailures != 1 || f.job(t, a.Job.ID).Status != StatusOrphaned {
		t.Fatalf("after an orphaned claim: %d failures; want 1", l.ConsecutiveFailures)
	}

	a = f.mustGiveAt(t, "a")
	f.clock.Set(f.clock.Now().Unix() + 1000)
	f.update(t, func(tx *Tx) error { _, err := tx.RemoveGhostJobs(context.Background(), 10); return err })
	if l := f.lorry(t, "a"); l.ConsecutiveFailures != 2 || l.LastErrorClass != "" {
		t.Fatalf("after a lost job: %d failures, class %q; want 2, none", l.ConsecutiveFailures, l.LastErrorClass)
	}

	a = f.mustGiveAt(t, "a")
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: exit(1)}); err != nil {
		t.Fatal(err)
	}
	if l := f.lorry(t, "a"); l.ConsecutiveFailures != 3 || l.LastErrorClass != ClassInternal {
		t.Fatalf("after a failure of no class: %d failures, class %q; want 3, internal", l.ConsecutiveFailures, l.LastErrorClass)
	}
}

// mustGiveAt hands out the lorry at path once it is due.
func (f *fixture) mustGiveAt(t *testing.T, path string) Assignment {
	t.Helper()
	if l := f.lorry(t, path); l.NextDue > f.clock.Now().Unix() {
		f.clock.Set(l.NextDue)
	}
	return f.mustGive(t, m1)
}
