package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

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
	d := &pgDriver{addr: addr, password: opts.Password, backupAddr: opts.BackupAddress, stuck: opts.StuckTransaction}
	db := newDB(sqlDB, shown, d, opts)
	db.unprepared = unprepared(cfg.ConnConfig)
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
func (d *pgDriver) pgBegin(begin string) string {
	if d.stuck <= 0 {
		return begin
	}
	ms := max(d.stuck.Milliseconds(), 1)
	return begin + "; SET LOCAL idle_in_transaction_session_timeout = " + strconv.FormatInt(ms, 10)
}
