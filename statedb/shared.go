package statedb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// sharedWrites are the UpdateShared calls waiting for the write session.
type sharedWrites struct {
	mu      sync.Mutex
	waiting []*sharedWrite
}

type sharedWrite struct {
	ctx  context.Context
	fn   func(*Tx) error
	err  error
	done chan struct{}
}

// UpdateShared runs fn as Update does, but in a transaction it may share
// with the other UpdateShared calls waiting at the same time: the first of
// them to get the write session runs them all, each under its own
// savepoint, and commits once. An error of fn undoes fn's work alone; a
// commit that fails fails them all. With many minions asking at once, this
// spends one commit (its log writes and its checkpoints) on many jobs. fn
// must be as for Update: its effects outside the database wait until
// UpdateShared returns nil.
func (db *DB) UpdateShared(ctx context.Context, fn func(*Tx) error) error {
	w := &sharedWrite{ctx: ctx, fn: fn, done: make(chan struct{})}
	db.shared.mu.Lock()
	db.shared.waiting = append(db.shared.waiting, w)
	db.shared.mu.Unlock()

	db.write.mu.Lock()
	defer db.write.mu.Unlock()
	select {
	case <-w.done:
		return w.err // run by the call that had the session before
	default:
	}
	db.shared.mu.Lock()
	batch := db.shared.waiting
	db.shared.waiting = nil
	db.shared.mu.Unlock()
	db.runShared(batch)
	return w.err
}

// runShared runs batch in one write transaction, setting each one's err
// and closing its done.
func (db *DB) runShared(batch []*sharedWrite) {
	defer func() {
		for _, w := range batch {
			close(w.done)
		}
	}()
	ctx := context.Background()
	s := db.write
	fail := func(err error) {
		for _, w := range batch {
			if w.err == nil {
				w.err = err
			}
		}
		if storageFailure(err) {
			db.lastWrite.Store(&writeOutcome{at: time.Now(), err: err})
		}
	}
	if _, err := s.conn.ExecContext(ctx, s.begin); err != nil {
		fail(fmt.Errorf("begin: %w", err))
		return
	}
	tx := &Tx{s: s, shared: true, Now: db.Now(), outputLimit: db.outputLimit, notify: db.notify}
	// A call that the storage failed (a full disk, say) is what the
	// health check reports, even if the others' work was committed.
	var storageErr error
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			continue
		}
		if _, err := tx.exec(ctx, `SAVEPOINT shared`); err != nil {
			s.conn.ExecContext(ctx, `ROLLBACK`)
			s.forget()
			fail(fmt.Errorf("savepoint: %w", err))
			return
		}
		w.err = w.fn(tx)
		if storageFailure(w.err) {
			storageErr = w.err
		}
		var err error
		if w.err != nil {
			s.forget()
			_, err = tx.exec(ctx, `ROLLBACK TO shared`)
		}
		if err == nil {
			_, err = tx.exec(ctx, `RELEASE shared`)
		}
		// SQLite ends the whole transaction on some errors (an
		// interrupted write among them); the savepoint is gone then,
		// and so is the work of the calls before: none of it may be
		// reported done.
		if err != nil {
			s.conn.ExecContext(ctx, `ROLLBACK`)
			s.forget()
			for _, v := range batch {
				v.err = nil
			}
			fail(fmt.Errorf("the shared transaction ended early: %w", errors.Join(storageErr, err)))
			return
		}
	}
	if _, err := s.conn.ExecContext(ctx, `COMMIT`); err != nil {
		s.conn.ExecContext(ctx, `ROLLBACK`)
		s.forget()
		for _, v := range batch {
			v.err = nil
		}
		fail(fmt.Errorf("commit: %w", err))
		return
	}
	db.lastWrite.Store(&writeOutcome{at: time.Now(), err: storageErr})
}
