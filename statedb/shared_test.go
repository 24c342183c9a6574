package statedb

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// sharedWaiting returns once n UpdateShared calls wait for db's writer.
func sharedWaiting(db *DB, n int) {
	for {
		db.shared.mu.Lock()
		k := len(db.shared.waiting)
		db.shared.mu.Unlock()
		if k == n {
			return
		}
		runtime.Gosched()
	}
}

// sharedFixture has a table t for the calls to write to, and starts n
// UpdateShared calls while the write session is held, so that they all
// wait and then share one transaction. fn(i) is the i-th call's work.
func sharedFixture(t *testing.T, n int, fn func(i int, tx *Tx) error) (errs []error, txs []*Tx, rows []int) {
	t.Helper()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.update(t, func(tx *Tx) error {
		_, err := tx.exec(ctx, `CREATE TABLE t (x INTEGER)`)
		return err
	})
	errs, txs = make([]error, n), make([]*Tx, n)
	hold, held := make(chan struct{}), make(chan struct{})
	go f.db.Update(ctx, func(*Tx) error { close(held); <-hold; return nil })
	<-held
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = f.db.UpdateShared(ctx, func(tx *Tx) error {
				txs[i] = tx
				if _, err := tx.exec(ctx, `INSERT INTO t (x) VALUES ($1)`, i); err != nil {
					return err
				}
				return fn(i, tx)
			})
		})
	}
	// Every call is waiting before the session is let go.
	sharedWaiting(f.db, n)
	close(hold)
	wg.Wait()
	f.view(t, func(tx *Tx) error {
		r, err := tx.query(ctx, `SELECT x FROM t ORDER BY x`)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var x int
			if err := r.Scan(&x); err != nil {
				return err
			}
			rows = append(rows, x)
		}
		return r.Err()
	})
	return errs, txs, rows
}

// TestUpdateSharedUndoesOnlyTheFailedCall checks that calls waiting
// together share one transaction, and that one call's error undoes its
// own work and no other's.
func TestUpdateSharedUndoesOnlyTheFailedCall(t *testing.T) {
	bad := errors.New("refused")
	errs, txs, rows := sharedFixture(t, 5, func(i int, tx *Tx) error {
		if i%2 == 1 {
			return fmt.Errorf("call %d: %w", i, bad)
		}
		return nil
	})
	for i, err := range errs {
		if (i%2 == 1) != errors.Is(err, bad) {
			t.Errorf("call %d: err %v", i, err)
		}
		if txs[i] != txs[0] {
			t.Errorf("call %d ran in another transaction than call 0", i)
		}
	}
	if fmt.Sprint(rows) != "[0 2 4]" {
		t.Errorf("rows = %v; want the work of calls 0, 2 and 4", rows)
	}
}

// TestUpdateSharedTransactionLost checks that when the shared transaction
// ends under a call (as SQLite ends it on an interrupted write), no call
// of the batch is reported done, and none of their work is kept.
func TestUpdateSharedTransactionLost(t *testing.T) {
	errs, _, rows := sharedFixture(t, 4, func(i int, tx *Tx) error {
		if i == 2 {
			_, err := tx.exec(context.Background(), `ROLLBACK`)
			return err
		}
		return nil
	})
	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d: no error; want the lost transaction's", i)
		}
	}
	if len(rows) != 0 {
		t.Errorf("rows = %v; want none", rows)
	}
}

// TestUpdateSharedCallContextEndsMidway checks that a call whose context
// ends while the shared transaction runs its work interrupts nothing: an
// interrupted write would make SQLite end the transaction that the other
// calls share. The call's work and every other call's are kept.
func TestUpdateSharedCallContextEndsMidway(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	errs, _, rows := sharedFixture(t, 3, func(i int, tx *Tx) error {
		if i != 1 {
			return nil
		}
		cancel()
		_, err := tx.exec(ctx, `INSERT INTO t (x) VALUES (10)`)
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if fmt.Sprint(rows) != "[0 1 2 10]" {
		t.Errorf("rows = %v; want every call's work", rows)
	}
}

// TestUpdateSharedCallReturnsWhileTheNextBatchRuns checks that the calls
// of a committed batch return at once, while the next batch holds the
// write session.
func TestUpdateSharedCallReturnsWhileTheNextBatchRuns(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	hold, held := make(chan struct{}), make(chan struct{})
	go f.db.Update(ctx, func(*Tx) error { close(held); <-hold; return nil })
	<-held

	// The first batch is two calls; while it runs, the first of them makes
	// a third call, the next batch, which holds the session until both
	// calls of the first batch have returned.
	var first, next sync.WaitGroup
	var nextErr error
	firstDone := make(chan struct{})
	for i := range 2 {
		first.Go(func() {
			err := f.db.UpdateShared(ctx, func(*Tx) error {
				if i == 0 {
					next.Go(func() {
						nextErr = f.db.UpdateShared(ctx, func(*Tx) error {
							select {
							case <-firstDone:
								return nil
							case <-time.After(10 * time.Second):
								return errors.New("the first batch's calls did not return while the next batch ran")
							}
						})
					})
					sharedWaiting(f.db, 1)
				}
				return nil
			})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		})
	}
	sharedWaiting(f.db, 2)
	close(hold)
	first.Wait()
	close(firstDone)
	next.Wait()
	if nextErr != nil {
		t.Error(nextErr)
	}
}

// TestUpdateSharedAfterClose checks that a shared write asked of a closed
// database fails rather than waiting for ever.
func TestUpdateSharedAfterClose(t *testing.T) {
	f := newFixture(t, Options{})
	f.db.Close()
	err := f.db.UpdateShared(context.Background(), func(*Tx) error { return nil })
	if !errors.Is(err, errClosed) {
		t.Errorf("UpdateShared after Close = %v; want %v", err, errClosed)
	}
}

// TestWriteSessionKeepsTemporaryDataInMemory checks the write session's
// temp_store: with a file, each page a shared call changes would cost two
// system calls to copy under its savepoint.
func TestWriteSessionKeepsTemporaryDataInMemory(t *testing.T) {
	sqliteOnly(t)
	f := newFixture(t, Options{})
	f.update(t, func(tx *Tx) error {
		var v int
		if err := tx.queryRow(context.Background(), `PRAGMA temp_store`).Scan(&v); err != nil {
			return err
		}
		if v != 2 {
			t.Errorf("temp_store = %d; want 2 (memory)", v)
		}
		return nil
	})
}

// TestUpdateSharedCallPanics checks that a call that panics fails alone,
// as an error, and that the writer goes on: it runs on the writer's
// goroutine, where nothing else would recover it.
func TestUpdateSharedCallPanics(t *testing.T) {
	errs, _, rows := sharedFixture(t, 3, func(i int, tx *Tx) error {
		if i == 1 {
			panic("boom")
		}
		return nil
	})
	if errs[0] != nil || errs[2] != nil || errs[1] == nil || !strings.Contains(errs[1].Error(), "panic in a shared write: boom") {
		t.Errorf("errors = %v; want only call 1's, saying it panicked", errs)
	}
	if fmt.Sprint(rows) != "[0 2]" {
		t.Errorf("rows = %v; want the work of calls 0 and 2", rows)
	}
}

// TestReportsBesideHandOuts checks that on PostgreSQL a job report runs
// while a hand-out's transaction is under way, and that any other write
// waits for both.
func TestReportsBesideHandOuts(t *testing.T) {
	f := newFixture(t, Options{})
	if !onPostgres(f.db) {
		t.Skip("on SQLite the reports share the hand-outs' transactions")
	}
	ctx := context.Background()
	hold, held := make(chan struct{}), make(chan struct{})
	handOut := make(chan error, 1)
	go func() {
		handOut <- f.db.UpdateShared(ctx, func(*Tx) error { close(held); <-hold; return nil })
	}()
	<-held
	// The report ends before the hand-out does.
	report := make(chan error, 1)
	go func() { report <- f.db.UpdateReports(ctx, func(*Tx) error { return nil }) }()
	select {
	case err := <-report:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a report waited for a hand-out's transaction")
	}
	// Another WEBAPP's write waits for the hand-out's write lock, and
	// for a report's lock.
	other := f.second(t, Options{})
	writeWaits := func(what string, release func() error) {
		t.Helper()
		wrote := make(chan error, 1)
		go func() { wrote <- other.Update(ctx, func(*Tx) error { return nil }) }()
		select {
		case err := <-wrote:
			t.Fatalf("a write ran beside %s: %v", what, err)
		case <-time.After(200 * time.Millisecond):
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
	}
	writeWaits("a hand-out", func() error { close(hold); return <-handOut })
	hold, held = make(chan struct{}), make(chan struct{})
	go func() {
		report <- f.db.UpdateReports(ctx, func(*Tx) error { close(held); <-hold; return nil })
	}()
	<-held
	writeWaits("a report", func() error { close(hold); return <-report })
}
