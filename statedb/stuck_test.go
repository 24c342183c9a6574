package statedb

import (
	"context"
	"testing"
	"time"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// TestStuckTransactionEnded: a process stops inside a write transaction
// (frozen, or swapped out) on PostgreSQL. The server ends its session
// after Options.StuckTransaction, and with it the write lock, so that
// another process's write goes through while the first is still stopped;
// the first, going on, finds its transaction gone, and nothing of it was
// written.
func TestStuckTransactionEnded(t *testing.T) {
	ctx := context.Background()
	addr := dbtest.Database(t)
	open := func() *DB {
		db, err := Open(ctx, addr, Options{StuckTransaction: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	stuck, other := open(), open()
	entered, release := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- stuck.Update(ctx, func(tx *Tx) error {
			if err := tx.setSetting(ctx, "stuck_test", "stuck"); err != nil {
				return err
			}
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := other.Update(wctx, func(tx *Tx) error { return tx.setSetting(wctx, "stuck_test_other", "written") }); err != nil {
		t.Errorf("another process's write while one is stopped in its transaction: %v", err)
	}
	close(release)
	if err := <-errc; err == nil {
		t.Errorf("the stopped transaction committed after its session was ended")
	}
	err := other.View(ctx, func(tx *Tx) error {
		if v, ok, err := tx.setting(ctx, "stuck_test"); err != nil || ok {
			t.Errorf("the stopped transaction's write: %q, %v, %v; want none", v, ok, err)
		}
		if v, ok, err := tx.setting(ctx, "stuck_test_other"); err != nil || !ok || v != "written" {
			t.Errorf("the other's write: %q, %v, %v; want written", v, ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The stopped process's next transactions go through, on a new
	// connection.
	if err := stuck.Update(ctx, func(tx *Tx) error { return tx.setSetting(ctx, "stuck_test", "again") }); err != nil {
		t.Errorf("the stopped process's next write: %v", err)
	}
}
