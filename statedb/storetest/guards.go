package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"lorrycontroller.dev/lc/statedb"
)

func (s suite) guardStopAndRemoveJob(t *testing.T) {
	ctx := context.Background()
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "a")
	m := statedb.MinionID{Name: "m", Host: "h", PID: 1}
	a := f.mustGive(t, m)
	other := f.second(t, statedb.Options{})
	err := other.Update(ctx, func(tx *statedb.Tx) error { return tx.RemoveJob(ctx, a.Job.ID) })
	if !errors.Is(err, statedb.ErrConflict) {
		t.Errorf("removing a live job: %v; want ErrConflict", err)
	}
	if _, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m, Exit: exit(0)}); err != nil {
		t.Fatal(err)
	}
	err = other.Update(ctx, func(tx *statedb.Tx) error { return tx.StopJob(ctx, a.Job.ID) })
	if !errors.Is(err, statedb.ErrConflict) {
		t.Errorf("stopping a job that ended: %v; want ErrConflict", err)
	}
	if got := f.job(t, a.Job.ID); got.Kill {
		t.Errorf("a job that ended was marked killed")
	}
	if err := other.Update(ctx, func(tx *statedb.Tx) error { return tx.RemoveJob(ctx, a.Job.ID) }); err != nil {
		t.Fatal(err)
	}
	err = f.db.Update(ctx, func(tx *statedb.Tx) error { return tx.RemoveJob(ctx, a.Job.ID) })
	if !errors.Is(err, statedb.ErrNotFound) {
		t.Errorf("removing a job removed meanwhile: %v; want ErrNotFound", err)
	}
}

// twoHandlesHandOutEachLorryOnce has two WEBAPPs' handles on one file
// hand out at once, through the shared writes as the routes do: each of
// the 20 lorries goes to one minion, and none has two live jobs.
func (s suite) twoHandlesHandOutEachLorryOnce(t *testing.T) {
	ctx := context.Background()
	f := s.newFixture(t, statedb.Options{})
	var paths []string
	for i := range 20 {
		paths = append(paths, fmt.Sprintf("p/%02d", i))
	}
	f.lorries(t, paths...)
	dbs := []*statedb.DB{f.db, f.second(t, statedb.Options{})}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a statedb.Assignment
			err := dbs[i%2].UpdateShared(ctx, func(tx *statedb.Tx) error {
				var err error
				a, err = tx.GiveMeJob(ctx, statedb.MinionID{Name: fmt.Sprint("m", i), Host: "h", PID: 1})
				return err
			})
			if err != nil {
				t.Error(err)
				return
			}
			if a.Idle == "" {
				mu.Lock()
				got[a.Lorry.Path]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != 20 {
		t.Errorf("%d lorries handed out; want 20", len(got))
	}
	for p, n := range got {
		if n != 1 {
			t.Errorf("lorry %s handed out %d times; want once", p, n)
		}
	}
	var live []statedb.Job
	f.view(t, func(tx *statedb.Tx) error {
		var err error
		live, err = tx.RunningJobs(ctx)
		return err
	})
	twice := map[string]int{}
	for _, j := range live {
		if twice[j.Path]++; twice[j.Path] == 2 {
			t.Errorf("lorry %s has two live jobs; want one at most", j.Path)
		}
	}
	if len(live) != 20 {
		t.Errorf("%d live jobs; want 20", len(live))
	}
}

func (s suite) updateJobErrors(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	ctx := context.Background()
	f.lorries(t, "a")
	a := f.mustGive(t, m1)
	if _, err := f.report(t, statedb.JobUpdate{ID: 999, Minion: m1}); !errors.Is(err, statedb.ErrNotFound) {
		t.Errorf("unknown job: %v; want ErrNotFound", err)
	}
	if _, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: statedb.MinionID{Name: "other", Host: "h", PID: 1}}); !errors.Is(err, statedb.ErrConflict) {
		t.Errorf("other minion: %v; want ErrConflict", err)
	}
	f.update(t, func(tx *statedb.Tx) error {
		if err := tx.RemoveJob(ctx, a.Job.ID); !errors.Is(err, statedb.ErrConflict) {
			t.Errorf("RemoveJob(running) = %v; want ErrConflict", err)
		}
		if err := tx.RemoveJob(ctx, 999); !errors.Is(err, statedb.ErrNotFound) {
			t.Errorf("RemoveJob(999) = %v; want ErrNotFound", err)
		}
		return nil
	})
	f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(1)})
	f.update(t, func(tx *statedb.Tx) error {
		if err := tx.StopJob(ctx, a.Job.ID); !errors.Is(err, statedb.ErrConflict) {
			t.Errorf("StopJob(finished) = %v; want ErrConflict", err)
		}
		return tx.RemoveJob(ctx, a.Job.ID)
	})
	f.db.View(ctx, func(tx *statedb.Tx) error {
		if _, err := tx.Job(ctx, a.Job.ID); !errors.Is(err, statedb.ErrNotFound) {
			t.Errorf("removed job: %v; want ErrNotFound", err)
		}
		return nil
	})
}

func (s suite) orphanClaimedJobs(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "a")
	m := statedb.MinionID{Name: "m", Host: "h", PID: 1}
	first := f.mustGive(t, m)
	if _, err := f.report(t, statedb.JobUpdate{ID: first.Job.ID, Minion: m, Exit: exit(0)}); err != nil {
		t.Fatal(err)
	}
	lastRun := f.lorry(t, "a").LastRun
	f.clock.Set(1000 + 100) // the interval: due again
	a := f.mustGive(t, m)
	orphan := func() []int64 {
		var ids []int64
		f.update(t, func(tx *statedb.Tx) error {
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
	if j.Status != statedb.StatusOrphaned || j.Ended == nil || j.Exit != nil {
		t.Errorf("job is %q ended %v exit %v; want orphaned, ended, no exit", j.Status, j.Ended, j.Exit)
	}
	l := f.lorry(t, "a")
	if l.RunningJob != nil || l.NextDue != 1161 || *l.LastRun != *lastRun {
		t.Errorf("lorry running_job %v next_due %d last_run %d; want none, 1161 (due at once), %d (unchanged)",
			l.RunningJob, l.NextDue, *l.LastRun, *lastRun)
	}
	// A late confirmation is refused, and the lorry goes to the next
	// minion that asks.
	if _, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m}); err == nil {
		t.Error("confirming an orphaned job succeeded; want a conflict")
	}
	if b := f.mustGive(t, statedb.MinionID{Name: "n", Host: "h", PID: 2}); b.Job.Path != "a" {
		t.Errorf("handed out %q; want a", b.Job.Path)
	}
}

func (s suite) removeGhostJobs(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b")
	ghost := f.mustGive(t, m1)
	live := f.mustGive(t, statedb.MinionID{Name: "m2", Host: "h", PID: 1})
	f.clock.Set(1100)
	f.report(t, statedb.JobUpdate{ID: live.Job.ID, Minion: statedb.MinionID{Name: "m2", Host: "h", PID: 1}})
	f.clock.Set(1150)
	var removed []int64
	f.update(t, func(tx *statedb.Tx) error {
		var err error
		removed, err = tx.RemoveGhostJobs(ctx, 100)
		return err
	})
	if len(removed) != 1 || removed[0] != ghost.Job.ID {
		t.Errorf("removed = %v; want [%d]", removed, ghost.Job.ID)
	}
	if j := f.job(t, ghost.Job.ID); j.Status != statedb.StatusLost {
		t.Errorf("ghost status = %s; want lost", j.Status)
	}
	if l := f.lorry(t, ghost.Lorry.Path); l.RunningJob != nil {
		t.Errorf("ghost's lorry still has running job %d", *l.RunningJob)
	}
	if j := f.job(t, live.Job.ID); j.Status != statedb.StatusRunning {
		t.Errorf("live job status = %s; want running", j.Status)
	}
}

// jobEndedElsewhereTakesNoReport has another WEBAPP end a job as a ghost
// while its minion still reports: neither a progress report nor the final
// one is taken, and the job and its lorry stay as that first end left
// them.
func (s suite) jobEndedElsewhereTakesNoReport(t *testing.T) {
	ctx := context.Background()
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "a")
	m := statedb.MinionID{Name: "m", Host: "h", PID: 1}
	a := f.mustGive(t, m)
	other := f.second(t, statedb.Options{})
	f.clock.Set(2000)
	if err := other.Update(ctx, func(tx *statedb.Tx) error { _, err := tx.RemoveGhostJobs(ctx, 10); return err }); err != nil {
		t.Fatal(err)
	}
	ended, free := f.job(t, a.Job.ID), f.lorry(t, "a")
	if ended.Status != statedb.StatusLost || free.RunningJob != nil {
		t.Fatalf("after the ghost's end: job %s, lorry running %v; want lost, free", ended.Status, free.RunningJob)
	}
	f.clock.Set(2001)
	for _, u := range []struct {
		name string
		u    statedb.JobUpdate
	}{
		{"progress", statedb.JobUpdate{ID: a.Job.ID, Minion: m, Stdout: []byte("late\n")}},
		{"final", statedb.JobUpdate{ID: a.Job.ID, Minion: m, Stdout: []byte("late\n"), Exit: exit(1)}},
		{"final with offsets", statedb.JobUpdate{ID: a.Job.ID, Minion: m, StdoutOffset: offset(0), StderrOffset: offset(0), Exit: exit(0)}},
	} {
		if _, err := f.report(t, u.u); !errors.Is(err, statedb.ErrConflict) {
			t.Errorf("%s report of a job ended elsewhere: %v; want ErrConflict", u.name, err)
		}
	}
	if got := f.job(t, a.Job.ID); !reflect.DeepEqual(got, ended) {
		t.Errorf("job after the refused reports:\n%+v\nwant it as its first end left it:\n%+v", got, ended)
	}
	if got := f.lorry(t, "a"); !reflect.DeepEqual(got, free) {
		t.Errorf("lorry after the refused reports:\n%+v\nwant it as the job's first end left it:\n%+v", got, free)
	}
}
