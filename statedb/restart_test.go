package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// everySession runs a transaction of every kind, on every session: the
// reads, the health check, the writes, the shared writes and the
// reports. Each must answer at its first try.
func everySession(t *testing.T, db *DB, when string) {
	t.Helper()
	ctx := context.Background()
	for i := range 2 * readSessions {
		err := db.View(ctx, func(tx *Tx) error {
			_, err := tx.ConfigPartial(ctx)
			return err
		})
		if err != nil {
			t.Errorf("%s: read %d: %v", when, i+1, err)
		}
	}
	if err := db.Ping(ctx); err != nil {
		t.Errorf("%s: health check: %v", when, err)
	}
	write := func(tx *Tx) error { return tx.setSetting(ctx, "restart_test", when) }
	if err := db.Update(ctx, write); err != nil {
		t.Errorf("%s: write: %v", when, err)
	}
	if err := db.UpdateShared(ctx, write); err != nil {
		t.Errorf("%s: shared write: %v", when, err)
	}
	if err := db.UpdateReports(ctx, write); err != nil {
		t.Errorf("%s: report: %v", when, err)
	}
	db.lastWrite.Store(nil)
	if err := db.CheckWrites(ctx); err != nil {
		t.Errorf("%s: write check: %v", when, err)
	}
}

// TestServerRestart restarts the PostgreSQL server under an open DB:
// while it is away, the health check says so, and a read fails as
// ErrUnavailable; once it is back, the health check says so, and every
// transaction answers at once, on a new connection where its session's
// broke, rather than failing once for each session.
func TestServerRestart(t *testing.T) {
	cl := dbtest.NewCluster(t)
	ctx := context.Background()
	db, err := Open(ctx, cl.Database(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	everySession(t, db, "before the restart")

	cl.Stop()
	away, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.Ping(away); err == nil {
		t.Errorf("health check with the server away: nil; want an error")
	}
	// A pooler holds a read waiting for the server (its
	// query_wait_timeout) until its context ends.
	err = db.View(away, func(tx *Tx) error { _, err := tx.ConfigPartial(ctx); return err })
	if !errors.Is(err, ErrUnavailable) && !(dbtest.Bouncer() && errors.Is(err, context.DeadlineExceeded)) {
		t.Errorf("read with the server away: %v; want ErrUnavailable", err)
	}
	cl.Start(t)
	// The read that failed while the server was away is past: the
	// health check, first to run, says the server is back.
	if err := db.Ping(ctx); err != nil {
		t.Errorf("health check once the server is back: %v", err)
	}
	everySession(t, db, "after the restart")
}

// TestSessionsEnded ends every server session of an open DB
// (pg_terminate_backend), as an administrator or a pooler's timeout
// may: the next transactions answer at once, on new connections.
func TestSessionsEnded(t *testing.T) {
	cl := dbtest.NewCluster(t)
	ctx := context.Background()
	const app = "lc-sessions-ended"
	db, err := Open(ctx, cl.Database(t), Options{ApplicationName: app})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	everySession(t, db, "before the sessions ended")

	admin, err := sql.Open("pgx", cl.Admin())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var ended int
	err = admin.QueryRow(`SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&ended)
	if err != nil {
		t.Fatal(err)
	}
	if ended == 0 {
		t.Fatalf("no server session of %s to end", app)
	}
	// pg_terminate_backend only asks: the sessions are gone once no
	// server process of them is left.
	for {
		var n int
		err := admin.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	everySession(t, db, fmt.Sprintf("after %d sessions ended", ended))
}

// endOwnSession ends the server session that tx runs on, from admin, as
// an administrator or a restart of the server would, and returns once it
// is gone.
func endOwnSession(ctx context.Context, t *testing.T, tx *Tx, admin *sql.DB) {
	t.Helper()
	var pid int64
	if err := tx.queryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatalf("read the session's server process: %v", err)
	}
	var ended bool
	if err := admin.QueryRowContext(ctx, `SELECT pg_terminate_backend($1, 60000)`, pid).Scan(&ended); err != nil || !ended {
		t.Fatalf("end session %d: %v, %v", pid, ended, err)
	}
}

// TestReadRunsAgainOnNewConnection ends the server session of a read
// transaction inside it, once, twice, and on every try: a read runs
// again, whole, on a new connection, as long as the pool has one to give,
// and answers; one whose every try lost its connection fails as
// ErrUnavailable. A write whose session ended inside it is not run again:
// it fails as ErrUnavailable, and the next write answers.
func TestReadRunsAgainOnNewConnection(t *testing.T) {
	ctx := context.Background()
	addr := dbtest.DatabaseOrSkip(t)
	db, err := Open(ctx, addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	admin, err := sql.Open("pgx", dbtest.Direct(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	for _, ends := range []int{1, 2, db.connTries - 1, db.connTries} {
		t.Run(fmt.Sprintf("%d sessions ended", ends), func(t *testing.T) {
			// Every read session, so that each has its connection
			// ended in turn.
			for range readSessions {
				runs := 0
				err := db.View(ctx, func(tx *Tx) error {
					runs++
					if runs <= ends {
						endOwnSession(ctx, t, tx, admin)
					}
					_, err := tx.ConfigPartial(ctx)
					return err
				})
				switch {
				case ends < db.connTries && (err != nil || runs != ends+1):
					t.Fatalf("read: %v after %d runs; want nil after %d", err, runs, ends+1)
				case ends == db.connTries && (!errors.Is(err, ErrUnavailable) || runs != ends):
					t.Fatalf("read: %v after %d runs; want ErrUnavailable after %d", err, runs, ends)
				}
			}
		})
	}

	runs := 0
	err = db.Update(ctx, func(tx *Tx) error {
		runs++
		endOwnSession(ctx, t, tx, admin)
		return tx.setSetting(ctx, "restart_test", "lost")
	})
	if !errors.Is(err, ErrUnavailable) || runs != 1 {
		t.Errorf("write whose session ended: %v after %d runs; want ErrUnavailable after 1", err, runs)
	}
	everySession(t, db, "after the sessions ended")
}

// TestCloseAfterCancelledStatement closes a DB whose write session's
// connection was closed under it: a statement whose context ended before
// it ran (as a WEBAPP's shutdown ends its ticks') makes the connection
// bad, and
// database/sql closes it, while the statements prepared on it are still
// the session's. (pgx answers a statement whose context ended before it
// was sent as a bad connection, and its pool tears down a connection
// left in a transaction on a goroutine of its own.) Closing them then
// would reach into that connection as it is torn down: the race detector
// saw it.
func TestCloseAfterCancelledStatement(t *testing.T) {
	cancelled := func(db *DB) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		return db.Update(ctx, func(tx *Tx) error {
			if err := tx.setSetting(ctx, "close_test", "1"); err != nil {
				return err
			}
			cancel()
			return tx.setSetting(ctx, "close_test", "2")
		})
	}
	write := func(tx *Tx) error { return tx.setSetting(context.Background(), "close_test", "3") }
	for i := range 3 {
		db, err := Open(context.Background(), dbtest.DatabaseOrSkip(t), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cancelled(db); err == nil {
			t.Fatalf("try %d: a statement whose context ended: nil error", i+1)
		}
		// The next write finds the connection gone, and renews it.
		if err := db.Update(context.Background(), write); err != nil {
			t.Errorf("try %d: the write after: %v", i+1, err)
		}
		cancelled(db)
		if err := db.Close(); err != nil {
			t.Errorf("try %d: close: %v", i+1, err)
		}
	}
}
