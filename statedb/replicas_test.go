package statedb

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReplicas records two replicas, gives one a lease, and forgets the
// one not seen for long.
func TestReplicas(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.update(t, func(tx *Tx) error {
		if err := tx.SeeReplica(ctx, Replica{Name: "r1", URL: "http://a", Owner: "r1/1/x", Started: 900}); err != nil {
			return err
		}
		return tx.SeeReplica(ctx, Replica{Name: "r2", URL: "http://b", Owner: "r2/2/y", Started: 950})
	})
	if _, ok, err := f.db.TakeLease(ctx, "tick", "r2/2/y", 15*time.Second); !ok || err != nil {
		t.Fatalf("TakeLease = %v, %v", ok, err)
	}
	f.clock.Set(2000)
	f.update(t, func(tx *Tx) error {
		// r1 started again: a new owner, a new start.
		return tx.SeeReplica(ctx, Replica{Name: "r1", URL: "http://a2", Owner: "r1/3/z", Started: 1990})
	})
	var got []Replica
	f.view(t, func(tx *Tx) error {
		var err error
		got, err = tx.Replicas(ctx)
		return err
	})
	if len(got) != 2 || got[0].Name != "r1" || got[0].URL != "http://a2" || got[0].Started != 1990 || got[0].LastSeen != 2000 ||
		got[1].Name != "r2" || got[1].LastSeen != 1000 || len(got[1].Leases) != 0 {
		t.Errorf("replicas = %+v", got)
	}
	f.clock.Set(1005)
	f.view(t, func(tx *Tx) error {
		got, _ = tx.Replicas(ctx)
		return nil
	})
	if len(got) != 2 || len(got[1].Leases) != 1 || got[1].Leases[0] != "tick" {
		t.Errorf("r2's leases = %+v; want [tick]", got)
	}
	f.update(t, func(tx *Tx) error { return tx.ForgetReplicas(ctx, 1500) })
	f.view(t, func(tx *Tx) error {
		got, _ = tx.Replicas(ctx)
		return nil
	})
	if len(got) != 1 || got[0].Name != "r1" {
		t.Errorf("after forgetting: %+v; want r1 alone", got)
	}
}

// TestHandOutsAndReportsRace has minions on two handles of one database
// (two WEBAPPs) ask for jobs and report their ends, each end through the
// other handle, while an auditor reads the live jobs over and over: no
// committed state may hold two live jobs of one lorry or exceed a limit
// (max_jobs, a queue's threads, a host's max_jobs), and at the end the
// kept counts of live jobs must match the jobs. On PostgreSQL the reports
// run beside the hand-outs (UpdateReports), and a hand-out's transaction
// keeps what its first hand-out read (pgHandOut).
func TestHandOutsAndReportsRace(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	var want []NewLorry
	lorryQueue := map[string]string{}
	for i := range 30 {
		p := fmt.Sprintf("race/%02d", i)
		// Due again as soon as its job ends.
		want = append(want, NewLorry{Path: p, Text: `{"` + p + `":{"type":"git"}}`, Kind: "lorry", Interval: 0, Timeout: 50})
		lorryQueue[p] = []string{"one", "two", "any"}[i%3]
	}
	f.update(t, func(tx *Tx) error {
		if _, err := tx.SetConfigLorries(ctx, want, Kept{}); err != nil {
			return err
		}
		one, two := int64(1), int64(2)
		err := tx.SetConfigQueues(ctx, QueueConfig{Queues: []Queue{{Name: "one", Threads: &one},
			{Name: "two", Threads: &two}, {Name: "any"}}, Lorries: lorryQueue})
		if err != nil {
			return err
		}
		maxJobs, hostMax := int64(5), int64(2)
		if err := tx.SetMaxJobs(ctx, &maxJobs); err != nil {
			return err
		}
		return tx.SetHostMaxJobs(ctx, "h1", &hostMax)
	})
	dbs := []*DB{f.db, f.second(t, Options{})}
	limits := map[string]int64{"one": 1, "two": 2}

	done := make(chan struct{})
	audits := make(chan int, 1)
	go func() {
		n := 0
		defer func() { audits <- n }()
		for {
			select {
			case <-done:
				return
			default:
			}
			err := f.db.View(ctx, func(tx *Tx) error {
				rows, err := tx.query(ctx, `SELECT path, queue, host FROM jobs WHERE `+liveStatus)
				if err != nil {
					return err
				}
				defer rows.Close()
				paths, queues, hosts, all := map[string]int{}, map[string]int64{}, map[string]int64{}, int64(0)
				for rows.Next() {
					var p, q, h string
					if err := rows.Scan(&p, &q, &h); err != nil {
						return err
					}
					paths[p]++
					queues[q]++
					hosts[h]++
					all++
				}
				for p, k := range paths {
					if k > 1 {
						t.Errorf("lorry %s has %d live jobs", p, k)
					}
				}
				for q, k := range queues {
					if l, ok := limits[q]; ok && k > l {
						t.Errorf("queue %s runs %d jobs; its threads are %d", q, k, l)
					}
				}
				if hosts["h1"] > 2 || all > 5 {
					t.Errorf("%d jobs on h1 (max_jobs 2), %d in all (max_jobs 5)", hosts["h1"], all)
				}
				return rows.Err()
			})
			if err != nil {
				t.Error(err)
				return
			}
			n++
		}
	}()

	var wg sync.WaitGroup
	var jobs atomic.Int64
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := MinionID{Name: fmt.Sprint("race-", i), Host: fmt.Sprint("h", 1+i%2), PID: 1}
			for range 20 {
				var a Assignment
				err := dbs[i%2].UpdateShared(ctx, func(tx *Tx) error {
					var err error
					a, err = tx.GiveMeJob(ctx, m)
					return err
				})
				if err != nil {
					t.Errorf("minion %s: give-me-job: %v", m.Name, err)
					return
				}
				if a.Idle != "" {
					time.Sleep(time.Millisecond)
					continue
				}
				err = dbs[(i+1)%2].UpdateReports(ctx, func(tx *Tx) error {
					_, err := tx.UpdateJob(ctx, JobUpdate{ID: a.Job.ID, Minion: m, Exit: new(int64), Stdout: []byte("done\n")})
					return err
				})
				if err != nil {
					t.Errorf("minion %s: job-update of job %d: %v", m.Name, a.Job.ID, err)
					return
				}
				jobs.Add(1)
			}
		}()
	}
	wg.Wait()
	close(done)
	t.Logf("%d jobs, %d audits", jobs.Load(), <-audits)
	if jobs.Load() == 0 {
		t.Fatal("no job ran")
	}
	f.view(t, func(tx *Tx) error {
		var kept, real int64
		if err := tx.queryRow(ctx, `SELECT COALESCE(SUM(n), 0) FROM live_counts`).Scan(&kept); err != nil {
			return err
		}
		if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM jobs WHERE `+liveStatus).Scan(&real); err != nil {
			return err
		}
		if kept != 0 || real != 0 {
			t.Errorf("after every job ended: kept count %d, live jobs %d; want 0 and 0", kept, real)
		}
		return nil
	})
}
