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
	if s.pg && began {
		if db.runWhole(ctx, sw, batch, fail) {
			return
		}
		began = false // rolled back, to run again under savepoints
	}
	sp := savepoints{s: s, pg: s.pg, beginWith: sw.begin}
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

// runWhole runs batch as runShared does, in the transaction runShared
// began, but without a savepoint for each call: on PostgreSQL each
// savepoint is a round trip of its own. If
// every call succeeds, the transaction commits (fail reports a commit
// that fails) and done is true. If a call fails, the whole transaction is
// rolled back, every call's error cleared, and done is false: runShared
// then runs the batch again under savepoints, so that the failed call's
// error undoes its own work alone. The calls' effects outside the
// database wait for UpdateShared to return, so running them again is
// safe; a failed call is rare (a report of a job another replica ended,
// say), and costs its batch a second run.
func (db *DB) runWhole(ctx context.Context, sw *sharedWrites, batch []*sharedWrite, fail func(error)) (done bool) {
	s := sw.s
	undo := func() bool {
		s.conn.ExecContext(ctx, `ROLLBACK`)
		s.cache.forget()
		for _, w := range batch {
			w.err = nil
		}
		return false
	}
	tx := db.newTx(s)
	tx.shared = true
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			continue
		}
		// A call that ended the transaction would leave the next ones
		// to commit statement by statement: it is caught at once.
		if err := runCall(w.fn, tx); err != nil || pgInTransaction(s.conn) != nil {
			return undo()
		}
	}
	if _, err := s.conn.ExecContext(ctx, `COMMIT`); err != nil {
		s.conn.ExecContext(ctx, `ROLLBACK`)
		s.cache.forget()
		db.renew(ctx, s)
		fail(fmt.Errorf("commit: %w", err))
		return true
	}
	db.recordWrite(nil)
	db.served(s, nil)
	return true
}

// savepoints put each call of a shared transaction under a savepoint of
// its own. On SQLite each statement is a call into the library: the
// savepoint is made before the call and released after it. On PostgreSQL
// each is a round trip to the server, which costs more than the
// statement: the savepoint is made in the round trip of the BEGIN, and
// afterwards in that of the previous one's RELEASE, and COMMIT releases
// the last one.
type savepoints struct {
	s  *session
	pg bool
	// beginWith is how the transaction begins.
	beginWith string
	// made says that a savepoint is made and no call has run under it;
	// open that one was kept and is to be released.
	made, open bool
}

func (sp *savepoints) begin(ctx context.Context) error {
	if !sp.pg {
		_, err := sp.s.conn.ExecContext(ctx, sp.beginWith)
		return err
	}
	_, err := sp.s.conn.ExecContext(ctx, sp.beginWith+`; SAVEPOINT shared`)
	sp.made = err == nil
	return err
}

// mark makes the savepoint of the next call.
func (sp *savepoints) mark(ctx context.Context, tx *Tx) error {
	var err error
	switch {
	case !sp.pg:
		_, err = tx.exec(ctx, `SAVEPOINT shared`)
	case sp.made:
	case sp.open:
		_, err = sp.s.conn.ExecContext(ctx, `RELEASE shared; SAVEPOINT shared`)
	default:
		_, err = sp.s.conn.ExecContext(ctx, `SAVEPOINT shared`)
	}
	sp.made, sp.open = false, false
	return err
}

// keep keeps the work of the call under the savepoint. On PostgreSQL,
// where the release waits for the next round trip, the connection's own
// state says whether the call ended the transaction: a COMMIT or RELEASE
// outside one is only a warning there.
func (sp *savepoints) keep(ctx context.Context, tx *Tx) error {
	if sp.pg {
		if err := pgInTransaction(sp.s.conn); err != nil {
			return err
		}
		sp.open = true
		return nil
	}
	_, err := tx.exec(ctx, `RELEASE shared`)
	return err
}

// undo undoes the work of the call under the savepoint.
func (sp *savepoints) undo(ctx context.Context, tx *Tx) error {
	if sp.pg {
		if err := pgInTransaction(sp.s.conn); err != nil {
			return err
		}
		_, err := sp.s.conn.ExecContext(ctx, `ROLLBACK TO shared; RELEASE shared`)
		return err
	}
	_, err := tx.exec(ctx, `ROLLBACK TO shared`)
	if err == nil {
		_, err = tx.exec(ctx, `RELEASE shared`)
	}
	return err
}
