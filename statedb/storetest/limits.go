package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"lorrycontroller.dev/lc/statedb"
)

func (s suite) queueThreads(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "h1", "h2", "h3", "s1", "s2")
	f.queues(t, []statedb.Queue{{Name: "heavy", Threads: exit(2)}},
		map[string]string{"h1": "heavy", "h2": "heavy", "h3": "heavy"})
	if got := f.lorry(t, "h1").Queue; got != "heavy" {
		t.Errorf("h1 is in queue %q; want heavy", got)
	}
	if got := f.lorry(t, "s1").Queue; got != statedb.DefaultQueue {
		t.Errorf("s1 is in queue %q; want %s", got, statedb.DefaultQueue)
	}
	var got []string
	var first statedb.Assignment
	for i := range 4 {
		a := f.mustGive(t, minion(fmt.Sprint("m", i), "h"))
		if i == 0 {
			first = a
		}
		if a.Job.Path != a.Lorry.Path {
			t.Fatalf("job path %q, lorry %q", a.Job.Path, a.Lorry.Path)
		}
		got = append(got, a.Lorry.Path)
	}
	// The third heavy one waits while the small ones flow.
	want := []string{"h1", "h2", "s1", "s2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("handed out %v; want %v", got, want)
	}
	f.idle(t, minion("m9", "h"), "heavy full, nothing else due")
	f.finish(t, first)
	if a := f.mustGive(t, minion("m9", "h")); a.Lorry.Path != "h3" {
		t.Errorf("after a heavy job ended got %q; want h3", a.Lorry.Path)
	}
}

func (s suite) queueThreadsZeroAndGlobalMax(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b", "c", "d")
	f.queues(t, []statedb.Queue{{Name: "off", Threads: exit(0)}}, map[string]string{"a": "off"})
	f.update(t, func(tx *statedb.Tx) error { return tx.SetMaxJobs(ctx, exit(2)) })
	if a := f.mustGive(t, minion("m1", "h")); a.Lorry.Path != "b" {
		t.Errorf("got %q; want b, as queue off has threads 0", a.Lorry.Path)
	}
	f.mustGive(t, minion("m2", "h"))
	f.idle(t, minion("m3", "h"), "max_jobs 2 with 2 running, whatever the queues")
}

func (s suite) threadsSchedule(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	night := `{"cron": "0 22 * * *", "dst_fixes": ["skip", "repeat_use_only_early"], "timezone": "UTC",
		"max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`
	day := `{"cron": "0 6 * * *", "dst_fixes": ["skip", "repeat_use_only_early"], "timezone": "UTC",
		"max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`
	sched := `[{"schedule": ` + night + `, "threads": 3}, {"schedule": ` + day + `, "threads": 1}]`
	var paths []string
	in := map[string]string{}
	for i := range 5 {
		p := fmt.Sprint("h", i)
		paths = append(paths, p)
		in[p] = "heavy"
	}
	f.lorries(t, paths...)
	f.queues(t, []statedb.Queue{{Name: "heavy", Threads: exit(2), Schedule: sched}}, in)

	noon := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC).Unix()
	f.clock.Set(noon)
	var states []statedb.QueueState
	f.db.View(context.Background(), func(tx *statedb.Tx) error {
		var err error
		states, err = tx.QueueStates(context.Background())
		return err
	})
	for _, st := range states {
		if st.Name == "heavy" && (st.Now == nil || *st.Now != 1 || st.Active != 1 || st.Due != 5) {
			t.Errorf("heavy at noon: now %v, active %d, due %d; want 1, 1, 5", st.Now, st.Active, st.Due)
		}
	}
	f.mustGive(t, minion("m0", "h"))
	f.idle(t, minion("m1", "h"), "by day one heavy job at a time")

	f.clock.Set(noon + 10*3600) // 22:00
	f.mustGive(t, minion("m1", "h"))
	f.mustGive(t, minion("m2", "h"))
	f.idle(t, minion("m3", "h"), "by night three heavy jobs at a time")

	f.clock.Set(noon + 18*3600) // 06:00 the next day
	f.idle(t, minion("m3", "h"), "by day again, three running over the limit of one")
}

func (s suite) hostMaxJobs(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b", "c", "d")
	f.update(t, func(tx *statedb.Tx) error { return tx.SetHostMaxJobs(ctx, "build", exit(1)) })
	f.mustGive(t, minion("build-1", "build"))
	f.idle(t, minion("build-2", "build"), "host build at its max_jobs 1")
	f.mustGive(t, minion("other-1", "other"))
	var got *int64
	f.update(t, func(tx *statedb.Tx) error {
		var err error
		got, err = tx.HostMaxJobs(ctx, "build")
		return err
	})
	if got == nil || *got != 1 {
		t.Errorf("HostMaxJobs(build) = %v; want 1", got)
	}
	f.update(t, func(tx *statedb.Tx) error { return tx.SetHostMaxJobs(ctx, "build", nil) })
	f.mustGive(t, minion("build-2", "build"))
	if err := f.db.Update(ctx, func(tx *statedb.Tx) error { return tx.SetHostMaxJobs(ctx, "build", exit(-1)) }); err == nil {
		t.Error("negative max_jobs accepted")
	}
}

func (s suite) gatesStoppedQueueAndMaxJobs(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b", "c")
	f.update(t, func(tx *statedb.Tx) error { return tx.SetRunningQueue(ctx, false) })
	f.idle(t, m1, "stopped queue")
	f.update(t, func(tx *statedb.Tx) error {
		if err := tx.SetRunningQueue(ctx, true); err != nil {
			return err
		}
		return tx.SetMaxJobs(ctx, exit(2))
	})
	f.mustGive(t, statedb.MinionID{Name: "x", Host: "h", PID: 1})
	f.mustGive(t, statedb.MinionID{Name: "y", Host: "h", PID: 1})
	f.idle(t, statedb.MinionID{Name: "z", Host: "h", PID: 1}, "max_jobs 2 with 2 running")
}

func (s suite) claimedUntilConfirmed(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "a", "b")
	f.update(t, func(tx *statedb.Tx) error { return tx.SetMaxJobs(context.Background(), exit(1)) })
	m := statedb.MinionID{Name: "m", Host: "h", PID: 1}
	a := f.mustGive(t, m)
	if got := f.job(t, a.Job.ID).Status; got != statedb.StatusClaimed {
		t.Fatalf("handed out: status %q; want %q", got, statedb.StatusClaimed)
	}
	// A claimed job is live: it counts against max_jobs and is listed.
	f.idle(t, statedb.MinionID{Name: "n", Host: "h", PID: 2}, "1 jobs running, max_jobs is 1")
	var live []int64
	f.update(t, func(tx *statedb.Tx) error {
		var err error
		live, err = tx.RunningJobIDs(context.Background())
		return err
	})
	if len(live) != 1 || live[0] != a.Job.ID {
		t.Errorf("running jobs %v; want [%d]", live, a.Job.ID)
	}
	if _, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m}); err != nil {
		t.Fatal(err)
	}
	if got := f.job(t, a.Job.ID).Status; got != statedb.StatusRunning {
		t.Errorf("after the first update: status %q; want %q", got, statedb.StatusRunning)
	}
}

func (s suite) minionQueues(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "a", "b", "c")
	f.queues(t, []statedb.Queue{{Name: "x"}, {Name: "y"}}, map[string]string{"a": "x", "b": "y"})
	only := statedb.MinionID{Name: "only", Host: "h", PID: 1, Queues: []string{"y"}}
	if a := f.mustGive(t, only); a.Lorry.Path != "b" {
		t.Errorf("--queues y got %q; want b", a.Lorry.Path)
	}
	ignore := statedb.MinionID{Name: "ignore", Host: "h", PID: 1, IgnoreQueues: []string{"x"}}
	if a := f.mustGive(t, ignore); a.Lorry.Path != "c" {
		t.Errorf("--ignore-queues x got %q; want c", a.Lorry.Path)
	}
	both := statedb.MinionID{Name: "both", Host: "h", PID: 1, Queues: []string{"x"}, IgnoreQueues: []string{"x"}}
	if a := f.mustGive(t, both); a.Lorry.Path != "a" {
		t.Errorf("--queues x --ignore-queues x got %q; want a, as --queues wins", a.Lorry.Path)
	}
	f.idle(t, statedb.MinionID{Name: "none", Host: "h", PID: 1, Queues: []string{"nosuch"}}, "a queue that does not exist")
}

// handOutSeesQueuesChangedElsewhere checks that a hand-out follows a
// change to the queues committed by another connection (another WEBAPP
// sharing the database), though each session keeps the queue list
// between its transactions.
func (s suite) handOutSeesQueuesChangedElsewhere(t *testing.T) {
	ctx := context.Background()
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "a", "b", "c")
	setThreads := func(db *statedb.DB, n int64) {
		t.Helper()
		err := db.Update(ctx, func(tx *statedb.Tx) error {
			return tx.SetConfigQueues(ctx, statedb.QueueConfig{Queues: []statedb.Queue{{Name: "q", Threads: &n}},
				Lorries: map[string]string{"a": "q", "b": "q", "c": "q"}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setThreads(f.db, 1)
	f.mustGive(t, statedb.MinionID{Name: "m1", Host: "h", PID: 1})
	f.idle(t, statedb.MinionID{Name: "m2", Host: "h", PID: 2}, "queues full: q")

	other := f.second(t, statedb.Options{})
	setThreads(other, 2)
	f.mustGive(t, statedb.MinionID{Name: "m2", Host: "h", PID: 2})
	f.idle(t, statedb.MinionID{Name: "m3", Host: "h", PID: 3}, "queues full: q")
}
