package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL as the STATEDB: any number of WEBAPPs may share one database.
// The connection's password comes from Options.Password, from the
// address, or from libpq's password file (PGPASSFILE, ~/.pgpass); it is
// never shown (Path leaves it out).

// pgWriteLock is the key of the advisory lock that every write
// transaction but a job report's takes (see pgBeginWrite), pgReportLock
// the one that every write transaction but a hand-out's takes (a
// hand-out takes it, second, for a minion that owns a live job:
// holdReports), and pgMigrateLock the one that migrating takes.
const (
	pgWriteLock   = `1819435881`
	pgMigrateLock = `1819435882`
	pgReportLock  = `1819435883`
)

// pgConns is how many connections a DB may have open to a PostgreSQL
// database: the sessions hold theirs, and the others serve a session
// renewed after its connection broke.
const pgConns = 3 + readSessions + 2

func openPostgres(ctx context.Context, addr string, opts Options) (*DB, error) {
	shown := Redact(addr)
	cfg, err := pgxpool.ParseConfig(pgConnString(addr))
	if err != nil {
		// pgx's message may quote the address.
		return nil, fmt.Errorf("open %s: not a PostgreSQL address", shown)
	}
	if opts.Password != "" {
		cfg.ConnConfig.Password = opts.Password
	}
	if opts.ApplicationName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = opts.ApplicationName
	}
	cfg.MaxConns = pgConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", shown, err)
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	sqlDB.SetMaxOpenConns(pgConns)
	sqlDB.SetMaxIdleConns(pgConns)
	db := newDB(sqlDB, shown, opts)
	db.pg, db.drv = true, pgDriver{}
	db.pgAddr, db.pgPassword, db.pgBackupAddr = addr, opts.Password, opts.BackupAddress
	db.unprepared = unprepared(cfg.ConnConfig)
	db.stuck = opts.StuckTransaction
	db.closePool = pool.Close
	db.connTries = pgConns + 1
	return db.start(ctx)
}

// A session prepares each of its statements once on its connection, as
// pgx does by default (default_query_exec_mode=cache_statement): the
// server then parses and plans it once for the session. Behind a pooler
// in transaction mode (pgbouncer's pool_mode = transaction) a client's
// connection is served by a different server session in each
// transaction, which has not got the client's statements (SQLSTATE
// 26000) or has another client's of the same name (42P05). An address
// that names another default_query_exec_mode (cache_describe,
// describe_exec, exec, simple_protocol) is served in that mode: the
// sessions prepare nothing, and pgx sends each statement's text with its
// arguments, in one round trip once it knows the statement's types
// (cache_describe). Nothing else of a session outlives its transaction:
// its locks are advisory locks of the transaction
// (pg_advisory_xact_lock), and it keeps no temporary table or setting.

// unprepared says whether the sessions of a connection so configured
// must not keep prepared statements.
func unprepared(cfg *pgx.ConnConfig) bool {
	return cfg.DefaultQueryExecMode != pgx.QueryExecModeCacheStatement
}

// pgPreparedHint is err, the failure to prepare a statement, with what
// to do if a pooler in transaction mode is the cause.
func pgPreparedHint(err error) error {
	if code := pgCode(err); code == pgDuplicatePrepared || strings.HasPrefix(code, pgNoPrepared) {
		return fmt.Errorf("%w (behind a pooler in transaction mode, add default_query_exec_mode=cache_describe to the address)", err)
	}
	return err
}

// migratePostgres applies the steps not yet applied, in one transaction
// under an advisory lock, so that WEBAPPs starting together migrate once.
func (db *DB) migratePostgres(ctx context.Context, steps []migration, newest int) error {
	conn := db.write.conn
	if _, err := conn.ExecContext(ctx, `BEGIN; SELECT pg_advisory_xact_lock(`+pgMigrateLock+`);
		CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	apply := func() error {
		var have int
		if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
			return err
		}
		if err := checkVersion(have, newest); err != nil {
			return err
		}
		for _, s := range steps {
			if have >= s.n {
				continue
			}
			if _, err := conn.ExecContext(ctx, s.body); err != nil {
				return fmt.Errorf("migration %s: %w", s.name, err)
			}
			if _, err := conn.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
				return err
			}
			if _, err := conn.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, s.n); err != nil {
				return err
			}
		}
		return nil
	}
	if err := apply(); err != nil {
		conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		return err
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
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

// endBegun rolls back what a begin that failed half-way began on
// PostgreSQL (its lock was waited for past its context, say): a session
// left in a transaction would fail every statement of its next one.
func (db *DB) endBegun(ctx context.Context, s *session) {
	if db.pg && pgInTransaction(s.conn) == nil {
		s.conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
	}
}

// renew gives s a new connection if its own broke (the server restarted,
// or ended it), so that the next transaction finds one that works, and
// says whether it did.
func (db *DB) renew(ctx context.Context, s *session) bool {
	if !db.pg || s.conn.PingContext(context.WithoutCancel(ctx)) == nil {
		return false
	}
	for _, st := range s.stmts {
		st.close()
	}
	s.conn.Close()
	s.stmts = map[string]*stmt{}
	s.cache = sessionCache{}
	conn, err := db.pool.Conn(ctx)
	if err != nil {
		// The next transaction fails on the broken one and tries again.
		return false
	}
	s.conn = conn
	return true
}

// pgArgs are args as PostgreSQL takes them: the schema keeps truth values
// in integer columns, as SQLite does, and SQLite's driver binds a bool
// as 0 or 1.
func pgArgs(args []any) []any {
	for i, a := range args {
		switch v := a.(type) {
		case bool:
			args[i] = boolInt(v)
		case *bool:
			if v != nil {
				args[i] = boolInt(*v)
			}
		}
	}
	return args
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// PostgreSQL's error classes and codes (SQLSTATE) that the health check
// and the guards tell apart.
const (
	pgIntegrity   = "23"    // integrity constraint violation
	pgDiskFull    = "53100" // disk full
	pgResources   = "53"    // insufficient resources
	pgConnection  = "08"    // connection exception
	pgShutdown    = "57P"   // operator intervention: the server shut down or ended the session
	pgUnavailable = "58"    // system error: I/O
	// The server ended a session idle in a transaction for longer than
	// idle_in_transaction_session_timeout (pgBegin).
	pgIdleInTransaction = "25P03"
	// A prepared statement of that name is there already, or is not:
	// a pooler in transaction mode that changes a client's server
	// session.
	pgDuplicatePrepared = "42P05"
	pgNoPrepared        = "26"
)

// pgCode is err's SQLSTATE, "" if it is not PostgreSQL's.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// pgStorageFailure says whether err is PostgreSQL's failure to store or a
// lost connection, not what a transaction decided.
func pgStorageFailure(err error) bool {
	code := pgCode(err)
	for _, class := range []string{pgResources, pgConnection, pgShutdown, pgUnavailable} {
		if strings.HasPrefix(code, class) {
			return true
		}
	}
	return code == "" && pgconn.Timeout(err)
}

// pgConnLost says whether err is PostgreSQL's loss of a connection: one
// not made, or lost (SQLSTATE class 08), or ended by the server, shutting
// down, starting up or ending the session (57P), its own or for sitting
// idle in a transaction (25P03), or one that pgx found closed before it
// sent anything on it.
func pgConnLost(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	code := pgCode(err)
	if code == "" {
		return pgconn.SafeToRetry(err)
	}
	return strings.HasPrefix(code, pgConnection) || strings.HasPrefix(code, pgShutdown) ||
		code == pgIdleInTransaction
}

// pgPreparedLost says whether err is a prepared statement missing or
// already there: a pooler in transaction mode that changes a client's
// server session.
func pgPreparedLost(err error) bool {
	code := pgCode(err)
	return code == pgDuplicatePrepared || strings.HasPrefix(code, pgNoPrepared)
}

// pgInTransaction says, without a round trip, whether the PostgreSQL
// connection c is in a transaction, which may have failed: an error if
// it is not.
func pgInTransaction(c *sql.Conn) error {
	var status byte
	err := c.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("not a PostgreSQL connection: %T", dc)
		}
		status = sc.Conn().PgConn().TxStatus()
		return nil
	})
	if err != nil {
		return err
	}
	if status != 'T' && status != 'E' {
		return errors.New("the transaction ended")
	}
	return nil
}

// pgBegin is begin, a PostgreSQL transaction's first statements, with the
// server told to end the session if it sits idle in the transaction for
// longer than Options.StuckTransaction: its locks, the write lock of
// every WEBAPP among them, are let go then, and the process, if it wakes,
// finds its transaction gone and writes nothing of it. The setting is the
// transaction's own (SET LOCAL), so that behind a pooler in transaction
// mode it is left on no server session; its value, a number of
// milliseconds, is the one part of the text not written here.
func (db *DB) pgBegin(begin string) string {
	if db.stuck <= 0 {
		return begin
	}
	ms := max(db.stuck.Milliseconds(), 1)
	return begin + "; SET LOCAL idle_in_transaction_session_timeout = " + strconv.FormatInt(ms, 10)
}
