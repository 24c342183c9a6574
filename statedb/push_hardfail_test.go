package statedb

import (
	"context"
	"testing"
)

// A hard-failed lorry is not made due by a push or run-now, nor by a run
// asked for while its last, failing, run went on: only Retry now, a change
// of spec or a success end a hard-fail.
func TestRunNowLeavesHardFailedAlone(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a")
	f.update(t, func(tx *Tx) error {
		_, err := tx.exec(ctx, `UPDATE lorries SET hard_fail_after = 1`)
		return err
	})
	a := f.mustGive(t, m1)
	var res RunNow
	f.update(t, func(tx *Tx) error {
		var err error
		res, err = tx.RunLorryNow(ctx, "a")
		return err
	})
	if !res.QueuedAfterCurrentRun {
		t.Fatalf("run-now during the run = %+v; want queued after it", res)
	}
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(1)}); err != nil {
		t.Fatal(err)
	}
	l := f.lorry(t, "a")
	if l.State != StateHardFailed || l.NextDue != hardFailedDue {
		t.Fatalf("after its failing run, with a run asked for: state %s, next_due %d; want hard-failed and never due", l.State, l.NextDue)
	}
	f.update(t, func(tx *Tx) error {
		var err error
		res, err = tx.RunLorryNow(ctx, "a")
		return err
	})
	if !res.HardFailed || res.Due {
		t.Errorf("run-now of a hard-failed lorry = %+v; want HardFailed and nothing done", res)
	}
	if l := f.lorry(t, "a"); l.NextDue != hardFailedDue {
		t.Errorf("next_due after run-now = %d; want it never due", l.NextDue)
	}
}
