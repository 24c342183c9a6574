// Package storetest is the state database's conformance suite: the
// store's behaviour (its guards, leases, limits, hand-out order, reports
// and ends), written once against statedb's API and run by Exercise on
// whatever database a driver opens, so that every backend is held to the
// same behaviour.
package storetest

import (
	"context"
	"encoding/json"
	"testing"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/statedb"
)

// Exercise runs the suite, each test on a new database at the address
// place gives (the first argument of statedb.Open), which the suite opens
// with a fake clock of its own, and opens again where a test has two
// processes share it. The tests run in parallel, as each has a database
// and a clock of its own.
func Exercise(t *testing.T, place func(t testing.TB) string) {
	s := suite{place: place}
	for _, g := range []struct {
		name  string
		tests []test
	}{
		{"guards", []test{
			{"stop-and-remove-job", s.guardStopAndRemoveJob},
			{"two-handles-hand-out-each-lorry-once", s.twoHandlesHandOutEachLorryOnce},
			{"job-ended-elsewhere-takes-no-report", s.jobEndedElsewhereTakesNoReport},
			{"update-job-errors", s.updateJobErrors},
			{"orphan-claimed-jobs", s.orphanClaimedJobs},
			{"remove-ghost-jobs", s.removeGhostJobs},
		}},
		{"leases", []test{
			{"take", s.takeLease},
			{"fenced", s.fencedLease},
		}},
		{"limits", []test{
			{"queue-threads", s.queueThreads},
			{"queue-threads-zero-and-global-max", s.queueThreadsZeroAndGlobalMax},
			{"threads-schedule", s.threadsSchedule},
			{"host-max-jobs", s.hostMaxJobs},
			{"stopped-queue-and-max-jobs", s.gatesStoppedQueueAndMaxJobs},
			{"claimed-until-confirmed", s.claimedUntilConfirmed},
			{"minion-queues", s.minionQueues},
			{"queues-changed-elsewhere", s.handOutSeesQueuesChangedElsewhere},
		}},
		{"order", []test{
			{"queue-order-and-moves", s.queueOrderAndMoves},
			{"sort-orders", s.queueSortOrders},
			{"kinds", s.giveMeJobKinds},
			{"kind-choices-kept-apart", s.kindChoicesKeptApart},
			{"due-after-interval", s.dueAfterInterval},
			{"same-minion-again-and-restart", s.sameMinionAgainAndRestart},
			{"restarted-minion-gets-what-its-lost-job-left-due", s.restartedMinionGetsWhatItsLostJobLeftDue},
		}},
		{"reports", []test{
			{"lifecycle", s.updateJobLifecycle},
			{"sent-again", s.reportSentAgain},
			{"gap", s.reportGap},
			{"final-sent-again", s.finalReportSentAgain},
			{"run-now-idle", s.runLorryNowIdle},
			{"run-now-while-running-coalesces", s.runLorryNowWhileRunningCoalesces},
		}},
	} {
		t.Run(g.name, func(t *testing.T) {
			for _, tt := range g.tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					tt.run(t)
				})
			}
		})
	}
}

type test struct {
	name string
	run  func(t *testing.T)
}

type suite struct {
	place func(t testing.TB) string
}

// fixture is a test's database, opened with a fake clock at 1000.
type fixture struct {
	db    *statedb.DB
	clock *clock.Fake
	path  string
}

func (s suite) newFixture(t *testing.T, opts statedb.Options) *fixture {
	t.Helper()
	f := &fixture{clock: &clock.Fake{}, path: s.place(t)}
	f.clock.Set(1000)
	f.db = f.second(t, opts)
	return f
}

// second opens the fixture's database again, as another WEBAPP sharing
// it would, with the same clock.
func (f *fixture) second(t *testing.T, opts statedb.Options) *statedb.DB {
	t.Helper()
	opts.Clock = f.clock
	db, err := statedb.Open(context.Background(), f.path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (f *fixture) update(t *testing.T, fn func(*statedb.Tx) error) {
	t.Helper()
	if err := f.db.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// view runs fn in a read transaction and fails the test on its error.
func (f *fixture) view(t *testing.T, fn func(*statedb.Tx) error) {
	t.Helper()
	if err := f.db.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// lorries configures lorries at paths, in that queue order, and no other.
func (f *fixture) lorries(t *testing.T, paths ...string) {
	t.Helper()
	f.setLorries(t, newLorries(paths...))
}

func newLorries(paths ...string) []statedb.NewLorry {
	var want []statedb.NewLorry
	for _, p := range paths {
		want = append(want, statedb.NewLorry{Path: p, Text: `{"` + p + `":{"type":"git"}}`, Kind: "lorry", Interval: 100, Timeout: 50})
	}
	return want
}

func (f *fixture) setLorries(t *testing.T, want []statedb.NewLorry) {
	t.Helper()
	f.update(t, func(tx *statedb.Tx) error {
		_, err := tx.SetConfigLorries(context.Background(), want, statedb.Kept{})
		return err
	})
}

// lorriesDue configures the lorries of want, in that order, each due from
// the time that due gives it: a lorry never run is due from when it was
// added.
func (f *fixture) lorriesDue(t *testing.T, want []statedb.NewLorry, due map[string]int64) {
	t.Helper()
	now := f.clock.Now().Unix()
	var added []statedb.NewLorry
	for len(added) < len(want) {
		next := -1
		for i, l := range want {
			if !containsPath(added, l.Path) && (next < 0 || due[l.Path] < due[want[next].Path]) {
				next = i
			}
		}
		f.clock.Set(due[want[next].Path])
		added = append(added, want[next])
		f.setLorries(t, added)
	}
	f.clock.Set(now)
	// Added in the order they fell due: put them back in want's.
	for i := len(want) - 1; i >= 0; i-- {
		f.update(t, func(tx *statedb.Tx) error { return tx.MoveToTop(context.Background(), want[i].Path) })
	}
	for _, l := range want {
		if got := f.lorry(t, l.Path).NextDue; got != due[l.Path] {
			t.Fatalf("%s due at %d; want %d", l.Path, got, due[l.Path])
		}
	}
}

func containsPath(ls []statedb.NewLorry, path string) bool {
	for _, l := range ls {
		if l.Path == path {
			return true
		}
	}
	return false
}

// queues configures the queues and which lorry is in which.
func (f *fixture) queues(t *testing.T, qs []statedb.Queue, lorries map[string]string) {
	t.Helper()
	f.update(t, func(tx *statedb.Tx) error {
		return tx.SetConfigQueues(context.Background(), statedb.QueueConfig{Queues: qs, Lorries: lorries})
	})
}

func (f *fixture) give(t *testing.T, m statedb.MinionID) (statedb.Assignment, error) {
	t.Helper()
	var a statedb.Assignment
	err := f.db.Update(context.Background(), func(tx *statedb.Tx) error {
		var err error
		a, err = tx.GiveMeJob(context.Background(), m)
		return err
	})
	return a, err
}

func (f *fixture) mustGive(t *testing.T, m statedb.MinionID) statedb.Assignment {
	t.Helper()
	a, err := f.give(t, m)
	if err != nil {
		t.Fatalf("GiveMeJob(%v): %v", m, err)
	}
	if a.Idle != "" {
		t.Fatalf("GiveMeJob(%v): no job (%s); want one", m, a.Idle)
	}
	return a
}

// idle asks for a job on behalf of m and fails unless there is none.
func (f *fixture) idle(t *testing.T, m statedb.MinionID, why string) {
	t.Helper()
	a, err := f.give(t, m)
	if err != nil {
		t.Fatalf("GiveMeJob(%v): %v", m, err)
	}
	if a.Idle == "" {
		t.Errorf("%s: got job %d for %s; want none", why, a.Job.ID, a.Lorry.Path)
	}
}

func (f *fixture) report(t *testing.T, u statedb.JobUpdate) (bool, error) {
	t.Helper()
	var kill bool
	err := f.db.Update(context.Background(), func(tx *statedb.Tx) error {
		r, err := tx.UpdateJob(context.Background(), u)
		kill = r.Kill
		return err
	})
	return kill, err
}

func (f *fixture) finish(t *testing.T, a statedb.Assignment) {
	t.Helper()
	if _, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Exit: exit(0)}); err != nil {
		t.Fatalf("finish job %d: %v", a.Job.ID, err)
	}
}

func (f *fixture) job(t *testing.T, id int64) statedb.Job {
	t.Helper()
	var j statedb.Job
	f.view(t, func(tx *statedb.Tx) error {
		var err error
		j, err = tx.Job(context.Background(), id)
		return err
	})
	return j
}

func (f *fixture) lorry(t *testing.T, path string) statedb.Lorry {
	t.Helper()
	var l statedb.Lorry
	f.view(t, func(tx *statedb.Tx) error {
		var err error
		l, err = tx.Lorry(context.Background(), path)
		return err
	})
	return l
}

func (f *fixture) queue(t *testing.T) []string {
	t.Helper()
	var q []string
	f.view(t, func(tx *statedb.Tx) error {
		var err error
		q, err = tx.QueuePaths(context.Background())
		return err
	})
	return q
}

// output is job id's output as stored.
func (f *fixture) output(t *testing.T, id int64) string {
	t.Helper()
	var out string
	f.view(t, func(tx *statedb.Tx) error {
		var err error
		out, err = tx.Output(context.Background(), id)
		return err
	})
	return out
}

func (f *fixture) runNow(t *testing.T, path string) statedb.RunNow {
	t.Helper()
	var r statedb.RunNow
	f.update(t, func(tx *statedb.Tx) error {
		var err error
		r, err = tx.RunLorryNow(context.Background(), path)
		return err
	})
	return r
}

// jobsFailed is the job-failed notifications in the outbox, oldest first;
// it fails the test on any other event.
func (f *fixture) jobsFailed(t *testing.T) []statedb.JobFailed {
	t.Helper()
	var ds []statedb.Delivery
	f.view(t, func(tx *statedb.Tx) error {
		var err error
		ds, err = tx.Deliveries(context.Background(), 100)
		return err
	})
	var out []statedb.JobFailed
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].Event != statedb.EventJobFailed {
			t.Fatalf("delivery %+v; want only job-failed", ds[i])
		}
		var p statedb.JobFailed
		if err := json.Unmarshal([]byte(ds[i].Payload), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func allEvents() map[string]bool {
	m := map[string]bool{}
	for _, e := range statedb.Events {
		m[e] = true
	}
	return m
}

func exit(n int64) *int64 { return &n }

func offset(n int) *int64 {
	v := int64(n)
	return &v
}

func minion(name, host string) statedb.MinionID {
	return statedb.MinionID{Name: name, Host: host, PID: 1}
}

var m1 = statedb.MinionID{Name: "m1", Host: "h", PID: 1}
