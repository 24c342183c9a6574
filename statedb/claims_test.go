package statedb

import (
	"context"
	"testing"
)

func TestClaimedUntilConfirmed(t *testing.T) {
	f := newFixture(t, Options{})
	f.lorries(t, "a", "b")
	f.update(t, func(tx *Tx) error { return tx.SetMaxJobs(context.Background(), exit(1)) })
	m := MinionID{Name: "m", Host: "h", PID: 1}
	a := f.mustGive(t, m)
	if got := f.job(t, a.Job.ID).Status; got != StatusClaimed {
		t.Fatalf("handed out: status %q; want %q", got, StatusClaimed)
	}
	// A claimed job is live: it counts against max_jobs and is listed.
	f.idle(t, MinionID{Name: "n", Host: "h", PID: 2}, "1 jobs running, max_jobs is 1")
	var live []int64
	f.update(t, func(tx *Tx) error {
		var err error
		live, err = tx.RunningJobIDs(context.Background())
		return err
	})
	if len(live) != 1 || live[0] != a.Job.ID {
		t.Errorf("running jobs %v; want [%d]", live, a.Job.ID)
	}
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m}); err != nil {
		t.Fatal(err)
	}
	if got := f.job(t, a.Job.ID).Status; got != StatusRunning {
		t.Errorf("after the first update: status %q; want %q", got, StatusRunning)
	}
}

func TestOrphanClaimedJobs(t *testing.T) {
	f := newFixture(t, Options{})
	f.lorries(t, "a")
	m := MinionID{Name: "m", Host: "h", PID: 1}
	first := f.mustGive(t, m)
	if _, err := f.report(t, JobUpdate{ID: first.Job.ID, Minion: m, Exit: exit(0)}); err != nil {
		t.Fatal(err)
	}
	lastRun := f.lorry(t, "a").LastRun
	f.clock.Set(1000 + 100) // the interval: due again
	a := f.mustGive(t, m)
	orphan := func() []int64 {
		var ids []int64
		f.update(t, func(tx *Tx) error {
			var err error
			ids, err = tx.OrphanClaimedJobs(context.Background(), 60)
			return err
		})
		return ids
	}
	f.clock.Set(1100 + 60)
	if ids := orphan(); len(ids) != 0 {
		t.Fatalf("orphaned %v at the claim timeout; want none before it has passed", ids)
	}
	f.clock.Set(1100 + 61)
	if ids := orphan(); len(ids) != 1 || ids[0] != a.Job.ID {
		t.Fatalf("orphaned %v; want [%d]", ids, a.Job.ID)
	}
	j := f.job(t, a.Job.ID)
	if j.Status != StatusOrphaned || j.Ended == nil || j.Exit != nil {
		t.Errorf("job is %q ended %v exit %v; want orphaned, ended, no exit", j.Status, j.Ended, j.Exit)
	}
	l := f.lorry(t, "a")
	if l.RunningJob != nil || l.NextDue != 1161 || *l.LastRun != *lastRun {
		t.Errorf("lorry running_job %v next_due %d last_run %d; want none, 1161 (due at once), %d (unchanged)",
			l.RunningJob, l.NextDue, *l.LastRun, *lastRun)
	}
	// A late confirmation is refused, and the lorry goes to the next
	// minion that asks.
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m}); err == nil {
		t.Error("confirming an orphaned job succeeded; want a conflict")
	}
	if b := f.mustGive(t, MinionID{Name: "n", Host: "h", PID: 2}); b.Job.Path != "a" {
		t.Errorf("handed out %q; want a", b.Job.Path)
	}
}
