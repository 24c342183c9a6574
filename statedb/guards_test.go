package statedb

import (
	"context"
	"errors"
	"testing"
)

// second opens the fixture's database file again, as another WEBAPP
// sharing it would, with the same clock.
func (f *fixture) second(t *testing.T, opts Options) *DB {
	t.Helper()
	opts.Clock = f.clock
	db, err := Open(context.Background(), f.path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// wantTaken fails the test unless err is ErrTaken, which is an
// ErrConflict too.
func wantTaken(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrTaken) || !errors.Is(err, ErrConflict) {
		t.Errorf("%s: got %v; want ErrTaken (an ErrConflict)", what, err)
	}
}

// Each guard below is met by a writer that read the row before another
// writer, here the second handle on the same file, changed it: what the
// one writer in a process never sees, and any number of processes would.

func TestGuardHandOutFindsTheLorryRunning(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.lorries(t, "a")
	stale := f.lorry(t, "a")
	a := f.mustGive(t, MinionID{Name: "m", Host: "h", PID: 1})
	other := f.second(t, Options{})
	err := other.Update(ctx, func(tx *Tx) error {
		_, err := tx.claimLorry(ctx, MinionID{Name: "m2", Host: "h", PID: 2}, stale)
		return err
	})
	wantTaken(t, "a second hand-out of a running lorry", err)
	if got := f.lorry(t, "a"); got.RunningJob == nil || *got.RunningJob != a.Job.ID {
		t.Errorf("after the refused hand-out: running job %v; want %d", got.RunningJob, a.Job.ID)
	}
	var jobs int
	f.view(t, func(tx *Tx) error { return tx.queryRow(ctx, `SELECT COUNT(*) FROM jobs`).Scan(&jobs) })
	if jobs != 1 {
		t.Errorf("%d jobs after the refused hand-out; want 1: its job undone", jobs)
	}
}

// TestGuardClaimForABusyMinion checks the claim that on PostgreSQL
// finds and claims the first due entry for a minion whose own state was
// not read: it makes nothing for a minion with a live job or retired.
func TestGuardClaimForABusyMinion(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	if !onPostgres(f.db) {
		t.Skip("on SQLite a hand-out reads the minion's state first")
	}
	f.lorries(t, "a", "b")
	m := MinionID{Name: "m", Host: "h", PID: 1}
	f.mustGive(t, m)
	b := f.lorry(t, "b")
	claim := func(m MinionID) Assignment {
		var a Assignment
		err := f.db.Update(ctx, func(tx *Tx) error {
			if _, err := tx.handOutState(ctx, m); err != nil {
				return err
			}
			var err error
			a, _, err = tx.claimFirst(ctx, m, openSet{open: map[string]string{DefaultQueue: SortQueueOrder}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := claim(m); a.Idle != idleNotFree {
		t.Errorf("a claim for a minion with a live job: %+v; want %q", a, idleNotFree)
	}
	f.update(t, func(tx *Tx) error {
		_, err := tx.exec(ctx, `INSERT INTO minions (name, host, pid, last_seen, retire) VALUES ('r', 'h', 2, 0, 1)`)
		return err
	})
	if a := claim(MinionID{Name: "r", Host: "h", PID: 2}); a.Idle != idleNotFree {
		t.Errorf("a claim for a retired minion: %+v; want %q", a, idleNotFree)
	}
	if got := f.lorry(t, "b"); got.RunningJob != nil || got.QueuePos != b.QueuePos {
		t.Errorf("lorry b running %v at %d after the refused claims; want idle at %d", got.RunningJob, got.QueuePos, b.QueuePos)
	}
	// The giveMeJob above them finds why, and answers as it should.
	a := f.mustGive(t, m)
	if !a.Again {
		t.Errorf("the minion asking again got %+v; want its job again", a)
	}
}

func TestGuardJobEndsOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.lorries(t, "a")
	m := MinionID{Name: "m", Host: "h", PID: 1}
	a := f.mustGive(t, m)
	stale := f.job(t, a.Job.ID)
	// Another WEBAPP ends the job as a ghost while this one holds the
	// job as it read it.
	other := f.second(t, Options{})
	f.clock.Set(2000)
	if err := other.Update(ctx, func(tx *Tx) error { _, err := tx.RemoveGhostJobs(ctx, 10); return err }); err != nil {
		t.Fatal(err)
	}
	err := f.db.Update(ctx, func(tx *Tx) error {
		return tx.endReadJob(ctx, stale, jobEnd{status: StatusFailed, exit: exit(1), heard: true})
	})
	wantTaken(t, "ending a job ended meanwhile", err)
	if got := f.job(t, a.Job.ID); got.Status != StatusLost {
		t.Errorf("status %q; want the first end, %q, kept", got.Status, StatusLost)
	}
	err = f.db.Update(ctx, func(tx *Tx) error { return tx.drv.saveProgress(ctx, tx, stale) })
	wantTaken(t, "saving the progress of a job ended meanwhile", err)
	err = f.db.Update(ctx, func(tx *Tx) error { return tx.confirmJob(ctx, &stale) })
	wantTaken(t, "confirming a job ended meanwhile", err)
}

func TestGuardJobEndSeesAReportMeanwhile(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.lorries(t, "a")
	m := MinionID{Name: "m", Host: "h", PID: 1}
	a := f.mustGive(t, m)
	stale := f.job(t, a.Job.ID)
	f.clock.Set(1005)
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m, Stdout: []byte("working\n")}); err != nil {
		t.Fatal(err)
	}
	err := f.db.Update(ctx, func(tx *Tx) error {
		return tx.endReadJob(ctx, stale, jobEnd{status: StatusLost, why: "presumed dead"})
	})
	wantTaken(t, "ending a job as read before a report", err)
	err = f.db.Update(ctx, func(tx *Tx) error { return tx.drv.saveProgress(ctx, tx, stale) })
	wantTaken(t, "saving progress counted from before a report", err)
	err = f.db.Update(ctx, func(tx *Tx) error { return tx.appendOutput(ctx, &stale, []byte("more\n")) })
	wantTaken(t, "appending output counted from before a report", err)
	if got := f.job(t, a.Job.ID); got.Status != StatusRunning || got.OutputBytes != int64(len("working\n")) {
		t.Errorf("job %s with %d bytes; want running with the report's 8", got.Status, got.OutputBytes)
	}
}

func TestGuardRunRecordedOnTheStreakRead(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.lorries(t, "a")
	m := MinionID{Name: "m", Host: "h", PID: 1}
	a := f.mustGive(t, m)
	l := f.lorry(t, "a")
	j := f.job(t, a.Job.ID)
	// Another writer counts a failure of the lorry meanwhile.
	other := f.second(t, Options{})
	err := other.Update(ctx, func(tx *Tx) error {
		_, err := tx.exec(ctx, `UPDATE lorries SET consecutive_failures = 3, state = 'backing-off' WHERE path = 'a'`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = f.db.Update(ctx, func(tx *Tx) error {
		_, _, err := tx.recordRun(ctx, l, j, jobEnd{status: StatusFailed, exit: exit(1)}, "failed")
		return err
	})
	wantTaken(t, "recording a run on a streak changed meanwhile", err)
	// A job's end with the lorry as read (a final report's), which on
	// PostgreSQL records the run and the end in one statement.
	err = f.db.Update(ctx, func(tx *Tx) error {
		return tx.endJob(ctx, j, jobEnd{status: StatusFailed, exit: exit(1), heard: true, lorry: &l})
	})
	wantTaken(t, "ending a job on a streak changed meanwhile", err)
	if got := f.lorry(t, "a"); got.ConsecutiveFailures != 3 || got.RunningJob == nil {
		t.Errorf("lorry %d failures, running %v; want the other writer's 3, still running", got.ConsecutiveFailures, got.RunningJob)
	}
	if got := f.job(t, a.Job.ID); got.Status != StatusRunning && got.Status != StatusClaimed {
		t.Errorf("job %s; want it live still", got.Status)
	}
}

func TestGuardRunAgainAndDueNow(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.lorries(t, "a", "b")
	f.mustGive(t, MinionID{Name: "m", Host: "h", PID: 1}) // a runs; b is idle
	other := f.second(t, Options{})
	err := other.Update(ctx, func(tx *Tx) error { return tx.runAgain(ctx, "b") })
	wantTaken(t, "asking a run after the job of an idle lorry", err)
	err = other.Update(ctx, func(tx *Tx) error { return tx.makeDueNow(ctx, "a") })
	wantTaken(t, "making a running lorry due now", err)
	if got := f.queue(t); len(got) != 2 || got[0] != "b" || got[1] != "a" {
		t.Errorf("queue %v; want [b a] as the hand-out left it", got)
	}
}
