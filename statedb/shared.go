package statedb

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// sharedWrites are the shared calls waiting for a write session, and the
// goroutine that runs them (sharedWriter): UpdateShared's on the write
// session, UpdateReports' on PostgreSQL on a session of their own.
type sharedWrites struct {
	// s is the session the calls run on, and begin how their
	// transactions begin.
	s       *session
	begin   string
	mu      sync.Mutex
	waiting []*sharedWrite
	closed  bool
	// kick wakes the writer when a call waits; stop ends it, and
	// stopped is closed when it has.
	kick     chan struct{}
	stop     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
}

type sharedWrite struct {
	ctx  context.Context
	fn   func(*Tx) error
	err  error
	done chan struct{}
}

// errClosed is the error of a write asked of a closed DB.
var errClosed = errors.New("the state database is closed")

// UpdateShared runs fn as Update does, but in a transaction it may share
// with the other UpdateShared calls waiting at the same time: one
// goroutine (sharedWriter) runs all the calls waiting when it gets the
// write session, each under its own savepoint, and commits once. An
// error of fn undoes fn's work alone; a commit that fails fails them all.
// With many minions asking at once, this spends one commit (its log
// writes and its checkpoints) on many jobs. fn must be as for Update: its
// effects outside the database wait until UpdateShared returns nil. On
// PostgreSQL fn may run twice, its first run undone (runWhole): it must
// set what it tells its caller, never add to it.
func (db *DB) UpdateShared(ctx context.Context, fn func(*Tx) error) error {
	return db.shared.run(ctx, fn)
}

// UpdateReports is UpdateShared for the minions' job reports. On
// PostgreSQL they run beside the hand-outs, in transactions of their own
// on a session of their own (pgBeginReports says how the two keep out
// of each other's way): fn may end or update a running job and its
// lorry, but must not hand out a job nor change the queues. On SQLite,
// which writes one transaction at a time, it is UpdateShared.
func (db *DB) UpdateReports(ctx context.Context, fn func(*Tx) error) error {
	return db.reports.run(ctx, fn)
}

// run has the writer run fn, and waits for it.
func (sw *sharedWrites) run(ctx context.Context, fn func(*Tx) error) error {
	w := &sharedWrite{ctx: ctx, fn: fn, done: make(chan struct{})}
	sw.mu.Lock()
	if sw.closed {
		sw.mu.Unlock()
		return errClosed
	}
	sw.waiting = append(sw.waiting, w)
	sw.mu.Unlock()
	select {
	case sw.kick <- struct{}{}:
	default: // the writer is kicked already
	}
	<-w.done
	return unavailable(w.err)
}

// startSharedWriter starts the goroutine that runs shared calls on s, in
// transactions that begin so.
func (db *DB) startSharedWriter(s *session, begin string) *sharedWrites {
	sw := &sharedWrites{s: s, begin: begin, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	go db.sharedWriter(sw)
	return sw
}

// sharedWriter runs the waiting calls of sw, all those waiting once it
// holds its session in one transaction, until stopped. A call whose
// batch is done returns at once, without waiting for the session: the
// session goes straight from one batch to the next.
func (db *DB) sharedWriter(sw *sharedWrites) {
	defer close(sw.stopped)
	for {
		select {
		case <-sw.kick:
		case <-sw.stop:
			sw.mu.Lock()
			batch := sw.waiting
			sw.waiting, sw.closed = nil, true
			sw.mu.Unlock()
			for _, w := range batch {
				w.err = errClosed
				close(w.done)
			}
			return
		}
		for {
			sw.s.mu.Lock()
			sw.mu.Lock()
			n := len(sw.waiting)
			sw.mu.Unlock()
			if n > 0 {
				db.runShared(sw)
			}
			sw.s.mu.Unlock()
			if n == 0 {
				break
			}
		}
	}
}

// close ends the writer; calls still waiting fail with errClosed, as do
// calls made after.
func (sw *sharedWrites) close() {
	sw.stopOnce.Do(func() { close(sw.stop) })
	<-sw.stopped
}

// runCall runs fn on tx, making a panic of fn its error: fn runs on the
// writer's goroutine, where a panic would end the process, and under its
// savepoint, which the error undoes.
func runCall(fn func(*Tx) error, tx *Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in a shared write: %v\n%s", r, debug.Stack())
		}
	}()
	return fn(tx)
}

// runShared runs the calls waiting in one write transaction, setting
// each one's err and closing its done. The transaction begins before the
// calls are taken: where its begin waits for the database's lock (held
// by another WEBAPP, or another process on SQLite), the calls that come
// meanwhile join it.
func (db *DB) runShared(sw *sharedWrites) {
	ctx := context.Background()
	s := sw.s
	_, beginErr := s.conn.ExecContext(ctx, sw.begin)
	sw.mu.Lock()
	batch := sw.waiting
	sw.waiting = nil
	sw.mu.Unlock()
	defer func() {
		for _, w := range batch {
			close(w.done)
		}
	}()
	fail := func(err error) {
		for _, w := range batch {
			if w.err == nil {
				w.err = err
			}
		}
		db.recordWrite(err)
		db.served(s, err)
	}
	began := beginErr == nil
	if !began {
		// The connection may have broken: the next begin is on a new one.
		db.renew(ctx, s)
	}
	if began {
		done, undone := db.drv.runWhole(ctx, db, sw, batch, fail)
		if done {
			return
		}
		// A batch run whole and undone runs again under savepoints,
		// in a transaction begun again.
		began = !undone
	}
	sp := db.drv.savepoints(s, sw.begin)
	if !began {
		if err := sp.begin(ctx); err != nil {
			db.renew(ctx, s)
			fail(fmt.Errorf("begin: %w", err))
			return
		}
	}
	tx := db.newTx(s)
	tx.shared = true
	// A call that the storage failed (a full disk, say) is what the
	// health check reports, even if the others' work was committed.
	var storageErr error
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			continue
		}
		if err := sp.mark(ctx, tx); err != nil {
			s.conn.ExecContext(ctx, `ROLLBACK`)
			s.cache.forget()
			fail(fmt.Errorf("savepoint: %w", err))
			return
		}
		w.err = runCall(w.fn, tx)
		if storageFailure(w.err) {
			storageErr = w.err
		}
		var err error
		if w.err != nil {
			s.cache.forget()
			err = sp.undo(ctx, tx)
		} else {
			err = sp.keep(ctx, tx)
		}
		// SQLite ends the whole transaction on some errors (an
		// interrupted write among them); the savepoint is gone then,
		// and so is the work of the calls before: none of it may be
		// reported done.
		if err != nil {
			s.conn.ExecContext(ctx, `ROLLBACK`)
			s.cache.forget()
			for _, v := range batch {
				v.err = nil
			}
			fail(fmt.Errorf("the shared transaction ended early: %w", errors.Join(storageErr, err)))
			return
		}
	}
	if _, err := s.conn.ExecContext(ctx, `COMMIT`); err != nil {
		s.conn.ExecContext(ctx, `ROLLBACK`)
		s.cache.forget()
		db.renew(ctx, s)
		for _, v := range batch {
			v.err = nil
		}
		fail(fmt.Errorf("commit: %w", err))
		return
	}
	db.recordWrite(storageErr)
	db.served(s, nil)
}
