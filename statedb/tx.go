package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Tx is the only handle a transaction callback may use. Now is fixed for the
// whole transaction so everything it writes agrees on the time.
type Tx struct {
	s *session
	// shared says that the transaction is shared by several calls
	// (UpdateShared), whose statements no call's context may interrupt.
	shared bool
	// drv is the DB's driver, and q its own statements.
	drv         driver
	q           *dialectSQL
	Now         int64
	outputLimit int64
	notify      map[string]bool
	// handOut is the state the transaction's first hand-out read on
	// PostgreSQL, for the others (pgHandOut).
	handOut *pgHandOut
}

// Update runs fn in a write transaction (BEGIN IMMEDIATE), committing if it
// returns nil.
func (db *DB) Update(ctx context.Context, fn func(*Tx) error) error {
	db.write.mu.Lock()
	defer db.write.mu.Unlock()
	return db.runWrite(ctx, fn)
}

// View runs fn in a read-only transaction, which sees one consistent
// snapshot. fn may run more than once, on PostgreSQL: a read whose
// connection broke under it runs again on a new one (runRead). So fn must
// set what it tells its caller, never add to it.
func (db *DB) View(ctx context.Context, fn func(*Tx) error) error {
	var s *session
	select {
	case s = <-db.reads:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { db.reads <- s }()
	return db.runRead(ctx, s, fn)
}

// runTx brackets fn with BEGIN and COMMIT on the session's own connection,
// so that the statements prepared on it serve every transaction.
func (db *DB) runTx(ctx context.Context, s *session, fn func(*Tx) error) error {
	err := db.runTxOnce(ctx, s, fn)
	db.served(s, err)
	return unavailable(err)
}

func (db *DB) runTxOnce(ctx context.Context, s *session, fn func(*Tx) error) error {
	// A context that has ended is the answer. PostgreSQL's driver would
	// answer it as a bad connection, which hides why and costs the
	// session its connection and its prepared statements.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := db.begin(ctx, s, s.begin); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(db.newTx(s)); err != nil {
		s.cache.forget()
		// The rollback must happen even if ctx is what failed.
		if _, rerr := s.conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`); rerr != nil {
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return err
	}
	if _, err := s.conn.ExecContext(context.WithoutCancel(ctx), `COMMIT`); err != nil {
		s.conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		s.cache.forget()
		db.renew(ctx, s)
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (db *DB) newTx(s *session) *Tx {
	return &Tx{s: s, drv: db.drv, q: db.drv.sql(), Now: db.Now(), outputLimit: db.outputLimit, notify: db.notify}
}

// The helpers below run constant query strings through the session's
// prepared statements.

func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = tx.stmtContext(ctx)
	args = tx.drv.args(args)
	st, err := tx.s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (tx *Tx) queryRow(ctx context.Context, query string, args ...any) scanner {
	ctx = tx.stmtContext(ctx)
	args = tx.drv.args(args)
	st, err := tx.s.stmt(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

func (tx *Tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = tx.stmtContext(ctx)
	args = tx.drv.args(args)
	st, err := tx.s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// stmtContext is the context a statement of tx runs under. A shared
// transaction's statements run to their end whatever the context of the
// call they serve: SQLite ends the whole transaction on an interrupted
// write, losing the work of every call that shares it. The call's context
// is checked before its work starts. (It also spares each statement the
// goroutine that the driver starts to watch a context that can end.)
func (tx *Tx) stmtContext(ctx context.Context) context.Context {
	if tx.shared {
		return context.Background()
	}
	return ctx
}

// errRow is a row whose Scan reports an earlier failure.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
