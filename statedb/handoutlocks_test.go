package statedb

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lockWaits waits until a session of db's database waits for a lock of
// the kinds that wait says (pg_stat_activity's wait_event, "" for any),
// or until done is closed, and says which came first.
func lockWaits(t *testing.T, db *DB, wait func(event string) bool, done <-chan struct{}) bool {
	t.Helper()
	for {
		select {
		case <-done:
			return false
		default:
		}
		var events []string
		err := db.View(context.Background(), func(tx *Tx) error {
			rows, err := tx.query(context.Background(), `SELECT wait_event FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var e string
				if err := rows.Scan(&e); err != nil {
					return err
				}
				events = append(events, e)
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if wait(e) {
				return true
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHandOutOfOwnedJobsBesideReports has two WEBAPPs (two handles on
// one PostgreSQL database) hand out and report at once on the jobs of
// the same two minions, in the order that turns the rows they write into
// a cycle: a report ends minion x's job and waits, a hand-out to minion
// y, come back with a new pid, ends y's job as lost, the report then
// ends y's job, and the hand-out then turns to x, come back too. A
// hand-out that deals with a job its minion owns runs after the reports
// under way, never beside them: both transactions run once and succeed,
// with no deadlock for the server to break, and each job ends as its
// report says.
func TestHandOutOfOwnedJobsBesideReports(t *testing.T) {
	f := newFixture(t, Options{})
	if !onPostgres(f.db) {
		t.Skip("on SQLite a write transaction runs alone: reports and hand-outs never interleave")
	}
	ctx := context.Background()
	f.lorries(t, "a", "b")
	x, y := MinionID{Name: "x", Host: "h", PID: 1}, MinionID{Name: "y", Host: "h", PID: 2}
	ja, jb := f.mustGive(t, x).Job.ID, f.mustGive(t, y).Job.ID
	other := f.second(t, Options{})
	zero := int64(0)

	// The report, on the first WEBAPP: x's job, then, once let go, y's.
	var reportRuns, handOutRuns atomic.Int32
	reportedX, endY := make(chan struct{}), make(chan struct{})
	var reportedXOnce sync.Once
	reported := make(chan struct{})
	var reportErr error
	go func() {
		defer close(reported)
		reportErr = f.db.UpdateReports(ctx, func(tx *Tx) error {
			reportRuns.Add(1)
			if _, err := tx.UpdateJob(ctx, JobUpdate{ID: ja, Minion: x, Exit: &zero, Stdout: []byte("done\n")}); err != nil {
				return err
			}
			reportedXOnce.Do(func() { close(reportedX) })
			<-endY
			_, err := tx.UpdateJob(ctx, JobUpdate{ID: jb, Minion: y, Exit: &zero, Stdout: []byte("done\n")})
			return err
		})
	}()
	<-reportedX

	// The hand-out, on the second WEBAPP: to y with a new pid, then, once
	// let go, to x with a new pid.
	handedY, toX := make(chan struct{}), make(chan struct{})
	var handedYOnce sync.Once
	handedOut := make(chan struct{})
	var handOutErr error
	go func() {
		defer close(handedOut)
		handOutErr = other.UpdateShared(ctx, func(tx *Tx) error {
			handOutRuns.Add(1)
			if _, err := tx.GiveMeJob(ctx, MinionID{Name: "y", Host: "h", PID: 22}); err != nil {
				return err
			}
			handedYOnce.Do(func() { close(handedY) })
			<-toX
			_, err := tx.GiveMeJob(ctx, MinionID{Name: "x", Host: "h", PID: 11})
			return err
		})
	}()
	// The hand-out to y has written, or waits for the reports: either way
	// the report goes on to y's job, and has ended it or waits for a row
	// the hand-out wrote; then the hand-out goes on to x.
	lockWaits(t, f.db, func(string) bool { return true }, handedY)
	close(endY)
	lockWaits(t, f.db, func(e string) bool { return e != "advisory" }, reported)
	close(toX)
	<-reported
	<-handedOut

	if reportErr != nil {
		t.Errorf("the report: %v; want it done", reportErr)
	}
	if handOutErr != nil {
		t.Errorf("the hand-out: %v; want it done", handOutErr)
	}
	if n := reportRuns.Load(); n != 1 {
		t.Errorf("the report's transaction ran %d times; want once", n)
	}
	if n := handOutRuns.Load(); n != 1 {
		t.Errorf("the hand-out's transaction ran %d times; want once", n)
	}
	for _, id := range []int64{ja, jb} {
		if j := f.job(t, id); j.Status != StatusSucceeded {
			t.Errorf("job %d is %s; want %s, as its report said", id, j.Status, StatusSucceeded)
		}
	}
}
