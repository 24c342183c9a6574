package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// session is one connection with the statements prepared on it.
type session struct {
	mu    sync.Mutex // the write session is shared; a read session is held by one reader
	conn  *sql.Conn
	stmts map[string]*stmt
	begin string
	// drv is the DB's driver.
	drv driver
	// prepare says that the connection keeps the statements prepared on
	// it; see unprepared in postgres.go.
	prepare bool
	// cache is what the session keeps between transactions (cache.go).
	cache sessionCache
	// probe says that the session is the health check's.
	probe bool
}

func (db *DB) newSession(ctx context.Context, readOnly bool) (*session, error) {
	conn, err := db.pool.Conn(ctx)
	if err != nil {
		return nil, err
	}
	begin, err := db.drv.prepareSession(ctx, conn, readOnly)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &session{conn: conn, stmts: map[string]*stmt{}, begin: begin, drv: db.drv, prepare: !db.unprepared}, nil
}

// stmt is a statement of a session: prepared on its connection, or, on a
// connection that may not keep it (unprepared), its text, sent each time.
type stmt struct {
	s        *session
	text     string
	prepared *sql.Stmt
}

func (s *session) stmt(ctx context.Context, query string) (*stmt, error) {
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st := &stmt{s: s, text: query}
	if s.prepare {
		var err error
		if st.prepared, err = s.conn.PrepareContext(ctx, st.text); err != nil {
			return nil, fmt.Errorf("prepare: %w", pgPreparedHint(err))
		}
	}
	s.stmts[query] = st
	return st, nil
}

func (st *stmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	if st.prepared != nil {
		return st.prepared.ExecContext(ctx, args...)
	}
	return st.s.conn.ExecContext(ctx, st.text, args...)
}

func (st *stmt) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	if st.prepared != nil {
		return st.prepared.QueryContext(ctx, args...)
	}
	return st.s.conn.QueryContext(ctx, st.text, args...)
}

func (st *stmt) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	if st.prepared != nil {
		return st.prepared.QueryRowContext(ctx, args...)
	}
	return st.s.conn.QueryRowContext(ctx, st.text, args...)
}

func (st *stmt) close() error {
	if st.prepared != nil {
		return st.prepared.Close()
	}
	return nil
}

func (s *session) close() error {
	errs := []error{s.closeStmts()}
	if err := s.conn.Close(); !errors.Is(err, sql.ErrConnDone) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// closeStmts closes the session's statements, unless database/sql has
// already closed its connection: it does so when a statement finds the
// connection bad (on PostgreSQL, one whose context ended before it was
// sent), and does not close the statements prepared on a *sql.Conn with
// it. Their connection is gone then, and with it what they held; pgx's
// pool may still be tearing it down on a goroutine of its own, which
// closing a statement, as it deallocates on that connection, would race.
func (s *session) closeStmts() error {
	var errs []error
	if s.conn.Raw(func(any) error { return nil }) == nil {
		for _, st := range s.stmts {
			errs = append(errs, st.close())
		}
	}
	s.stmts = map[string]*stmt{}
	return errors.Join(errs...)
}

// begin begins a transaction on s with the statements begin. A session's
// connection is found broken when it is next used, which is at the
// begin: the server restarted, or ended the session, since its last
// transaction. Nothing of the transaction ran then, so it begins again on
// a new connection, rather than failing once for each session of the
// process; and again, up to connTries times in all, should the new one
// be found broken too (the server ended it meanwhile). It stops as soon
// as no new connection can be had: the server is away.
func (db *DB) begin(ctx context.Context, s *session, begin string) error {
	_, err := s.conn.ExecContext(ctx, begin)
	for try := 1; err != nil; try++ {
		db.endBegun(ctx, s)
		if try >= db.connTries || !db.renew(ctx, s) {
			return err
		}
		_, err = s.conn.ExecContext(ctx, begin)
	}
	return nil
}

// runRead runs fn as runTx does, on a read session, and runs it again,
// whole, on a new connection while the one it ran on is lost (connLost)
// and a new one can be had: a read changes nothing, so it is safe to
// repeat, and its caller would otherwise be failed for a connection that
// broke before or during its transaction (the server restarted, or ended
// the session) though another would serve it. It tries connTries times
// at most, as many as the pool has connections and one more, so that a
// pool whose every connection broke still serves it. A write is not run
// again once its transaction began: what it did before the connection
// broke may have been committed, for all its caller knows.
func (db *DB) runRead(ctx context.Context, s *session, fn func(*Tx) error) error {
	err := db.runTxOnce(ctx, s, fn)
	for try := 1; try < db.connTries && connLost(err) && ctx.Err() == nil; try++ {
		if !db.renew(ctx, s) {
			break
		}
		if !pause(ctx, try) {
			break
		}
		err = db.runTxOnce(ctx, s, fn)
	}
	db.served(s, err)
	return unavailable(err)
}

// pause waits before the try-th attempt of a read on a new connection:
// not before the first, whose connection is new, and a few milliseconds,
// jittered, before each of the next, so that the reads of several
// processes that a server's restart failed at once do not come back in
// step. It says whether ctx is still live.
func pause(ctx context.Context, try int) bool {
	if try <= 1 {
		return true
	}
	t := time.NewTimer(rand.N(time.Duration(try) * 5 * time.Millisecond))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// endBegun rolls back what a begin that failed half-way began (on
// PostgreSQL its lock was waited for past its context, say): a session
// left in a transaction would fail every statement of its next one.
func (db *DB) endBegun(ctx context.Context, s *session) {
	db.drv.endBegun(ctx, s.conn)
}

// renew gives s a new connection if its own broke (the server restarted,
// or ended it), so that the next transaction finds one that works, and
// says whether it did.
func (db *DB) renew(ctx context.Context, s *session) bool {
	if !db.drv.connBroken(ctx, s.conn) {
		return false
	}
	s.closeStmts()
	s.conn.Close()
	s.cache = sessionCache{}
	conn, err := db.pool.Conn(ctx)
	if err != nil {
		// The next transaction fails on the broken one and tries again.
		return false
	}
	s.conn = conn
	return true
}
