// Package statedb is the WEBAPP's persistent state: settings, the run queue
// of lorries, jobs and their output, upstream hosts and minions, in one
// SQLite database, or one PostgreSQL database that several WEBAPPs may
// share (postgres.go; dialect.go says how one SQL serves both). Every SQL
// statement of the project lives in this package.
//
// # Many writers
//
// Any number of WEBAPP processes may share one database. The rules that
// keep its data right are stated in its SQL, not left to there being one
// writer:
//
//   - A guarded write restates in its WHERE what the transaction read and
//     decided on, and checks RowsAffected: a lorry is handed out only if
//     it has no live job (markRunning); a job ends once, and is written
//     only as it was read (holdJob, recordEnd, saveProgress; each chunk of
//     its output has a unique place, counted from the job as read); a run
//     is recorded on the failure streak it was counted from (recordRun); a
//     run asked for after a job, or at once, needs the lorry running, or
//     idle. A guard that finds the row changed fails the call with
//     ErrTaken (which is an ErrConflict too), and the transaction, or in
//     UpdateShared the call's savepoint, is undone.
//   - A place in the run queue is worked out in the statement that takes
//     it (MAX(queue_pos) + 1, MIN(queue_pos) - 1), and the unique index on
//     queue_pos keeps two entries from sharing one: a clash is an error,
//     never two lorries in one place.
//   - A notification is delivered by the deliverer that claimed it
//     (ClaimDeliveries), and its attempt recorded under that claim.
//   - Work that one process at a time must do holds a lease row of its
//     kind, with an owner, an expiry and a fencing token (TakeLease,
//     ReleaseLease). A round of the work takes the lease, in a write
//     transaction, and does the work only if it got it; each of its
//     transactions checks that the lease is still its under the token it
//     took (CheckLease), and it renews the lease beside them
//     (RenewLease), well within the term; a check or renewal that finds
//     the lease another's ends the round; it releases the lease when
//     done. A process that dies leaves its leases to expire. The owner
//     names the process uniquely (host, pid and a random part).
//
// On SQLite every write transaction starts with BEGIN IMMEDIATE, and on
// PostgreSQL it takes advisory locks, so write transactions of all
// processes run one at a time, and what one reads
// stays as read until it commits: there a guard fires only on what its
// caller read in an earlier transaction, and the guards state the rules
// for a database whose transactions run side by side. The one exception
// is PostgreSQL's job reports, which run beside the hand-outs, each under
// a lock of its own (pgBeginClaims and pgBeginReports say how).
//
// One assumption of one writer remains, and the lease is its answer: a
// configuration is applied in steps, several transactions long
// (BeginConfigLorries to EndConfigLorries), with the paths it defines
// kept in config_seen, so one process at a time may apply one; the process that does so must hold the lease of
// that work (as must the listing of an upstream host, whose lorries
// SetHostLorries replaces from a listing made outside any transaction).
// The WEBAPP's work (package control) holds these leases:
//
//   - "read-configuration": reading CONFGIT and applying it, renewed in
//     each of its transactions. ConfigPartial tells every process that a
//     configuration was begun and not applied whole, so that none takes
//     the lorries for a commit's while they are part another's.
//   - "ls-troves": listing the upstream hosts, renewed before each host
//     and in the transaction that applies its listing.
//   - "tick": ticking the schedules and ending unconfirmed claims, renewed
//     in each of its transactions. The time of the last tick is kept in
//     the database (LastTick), so that any process's tick finds the clock
//     set back behind another's.
//
// The sweeps of ghost and old jobs, the hand-out and the job reports need
// no lease: their guards are their rules.
// The caches each session keeps between transactions (cache.go) are
// dropped whenever another connection commits.
package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"lorrycontroller.dev/lc/clock"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Errors callers tell apart. They are wrapped with context; test with
// errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
	// ErrTaken is a write that a guard in its SQL refused: the row is no
	// longer as the transaction read it, because another writer changed
	// it first (another process, or another WEBAPP on the same
	// database). It is an ErrConflict too.
	ErrTaken = fmt.Errorf("taken by another writer: %w", ErrConflict)
	// ErrUnavailable is a transaction that the database could not serve
	// for want of a connection: the server is away (restarting, say),
	// or ended the connection during the transaction, and no new one
	// could be had, or the transaction was a write, which is not run
	// again once begun. Asking again later may succeed.
	ErrUnavailable = errors.New("state database unavailable")
)

// taken is ErrTaken for a guarded write whose result is res: nil if it
// changed a row, else ErrTaken wrapped with what.
func taken(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, ErrTaken)
	}
	return nil
}

// DB is the state database. Each connection is a session that keeps its
// prepared statements: SQLite spends more time parsing SQL than running the
// small statements of the job protocol. There is one write session, so
// writes are serialized inside the process; every write transaction starts
// with BEGIN IMMEDIATE, so they are serialized against other processes too
// and a read-then-write never meets SQLITE_BUSY half-way. Reads share a few
// read-only sessions and never wait for writes (WAL).
type DB struct {
	pool      *sql.DB
	write     *session
	reads     chan *session
	health    chan *session
	lastWrite atomic.Pointer[writeOutcome]
	// unserved is the last transaction that the database failed to
	// serve (unserved), nil once one is served; see Ping.
	unserved atomic.Pointer[writeOutcome]
	// outOfSpace is the last real write that failed for lack of space,
	// nil once a real write commits; see CheckWrites.
	outOfSpace atomic.Pointer[writeOutcome]
	// shared runs the UpdateShared calls on the write session, and
	// reports the UpdateReports calls: on SQLite the same, on
	// PostgreSQL on a session of their own.
	shared, reports *sharedWrites
	// leases is the session that renews leases on PostgreSQL (RenewLease),
	// nil on SQLite.
	leases *session
	clock  clock.Clock
	path   string
	pg     bool
	// drv is the backend (driver.go).
	drv driver
	// pgAddr and pgPassword are how a PostgreSQL database is reached,
	// path being its address without the password; pgBackupAddr is
	// Options.BackupAddress.
	pgAddr, pgPassword, pgBackupAddr string
	// unprepared says that the sessions may not keep prepared
	// statements (postgres.go).
	unprepared bool
	// stuck is Options.StuckTransaction.
	stuck time.Duration
	// connTries is how many connections a transaction may be begun on,
	// and a read run on, one after another while each is found broken
	// (begin, runRead): one more than the pool may hold, so that a pool
	// whose every connection broke still serves it. 0 on SQLite, whose
	// connections do not break.
	connTries   int
	closePool   func()
	outputLimit int64
	notify      map[string]bool
}

// Options tune a DB. The zero value is the real clock and the default
// output cap.
type Options struct {
	Clock       clock.Clock
	OutputLimit int64 // bytes of output kept per job
	// Notify names the events that Tx.Notify puts into the outbox; the
	// others it drops. Nil notifies of nothing.
	Notify map[string]bool
	// Password is a PostgreSQL database's password, when not in its
	// address or a password file.
	Password string
	// ApplicationName names the connections to a PostgreSQL database,
	// in pg_stat_activity.
	ApplicationName string
	// BackupAddress is the address at which pg_dump reaches a
	// PostgreSQL database on its server itself, when the database's own
	// address goes through a pooler; "" for that address (see
	// DumpAddress).
	BackupAddress string
	// StuckTransaction, if not 0, is how long a PostgreSQL session may
	// sit idle inside a transaction before the server ends it: a process
	// frozen (stopped, swapped out) inside a write transaction holds the
	// write lock of every process until then, and no longer.
	StuckTransaction time.Duration
	// ServerClock makes the DB tell the time by Clock corrected by the
	// offset of the database server's clock (serverclock.go), so that
	// every process sharing the database keeps its times on one clock.
	ServerClock bool
}

// readSessions is how many reads can run at once.
const readSessions = 4

// Open opens the database at place and migrates it to the newest schema:
// a SQLite file, created if needed, or a PostgreSQL database named by a
// postgres:// URL (see postgres.go).
func Open(ctx context.Context, place string, opts Options) (*DB, error) {
	if IsPostgres(place) {
		return openPostgres(ctx, place, opts)
	}
	path := place
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	pool, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	pool.SetMaxOpenConns(2 + readSessions)
	pool.SetMaxIdleConns(2 + readSessions)
	pool.SetConnMaxLifetime(0)
	pool.SetConnMaxIdleTime(0)
	return newDB(pool, path, opts).start(ctx)
}

// Migrate opens the database at place, migrating it to the newest
// schema, and closes it.
func Migrate(ctx context.Context, place string) error {
	db, err := Open(ctx, place, Options{})
	if err != nil {
		return err
	}
	return db.Close()
}

func newDB(pool *sql.DB, path string, opts Options) *DB {
	clk := opts.Clock
	if clk == nil {
		clk = clock.System{}
	}
	limit := opts.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	if opts.ServerClock {
		clk = &serverClock{local: clk}
	}
	return &DB{pool: pool, drv: sqliteDriver{}, clock: clk, path: path, outputLimit: limit, notify: opts.Notify,
		reads: make(chan *session, readSessions), health: make(chan *session, 1)}
}

// start opens the sessions and migrates the database.
func (db *DB) start(ctx context.Context) (*DB, error) {
	fail := func(err error) (*DB, error) {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", db.path, err)
	}
	var err error
	if db.write, err = db.newSession(ctx, false); err != nil {
		return fail(err)
	}
	if err := db.migrate(ctx); err != nil {
		return fail(fmt.Errorf("migrate: %w", err))
	}
	if !db.pg {
		// The write session keeps its temporary tables and its
		// savepoints' copies of pages in memory: every call of a shared
		// transaction runs under a savepoint, and a file would cost two
		// system calls for each page a call changes. (It is set before
		// the temporary table is made: setting it drops the temporary
		// tables.)
		if _, err := db.write.conn.ExecContext(ctx, `PRAGMA temp_store = MEMORY`); err != nil {
			return fail(err)
		}
		if _, err := db.write.conn.ExecContext(ctx, touchedQueues); err != nil {
			return fail(err)
		}
	}
	for range readSessions {
		s, err := db.newSession(ctx, true)
		if err != nil {
			return fail(err)
		}
		db.reads <- s
	}
	s, err := db.newSession(ctx, true)
	if err != nil {
		return fail(err)
	}
	s.probe = true
	db.health <- s
	begin := db.write.begin
	if db.pg {
		begin = db.pgBegin(pgBeginClaims)
	}
	db.shared = db.startSharedWriter(db.write, begin)
	db.reports = db.shared
	if db.pg {
		rs, err := db.newSession(ctx, false)
		if err != nil {
			return fail(err)
		}
		db.reports = db.startSharedWriter(rs, db.pgBegin(pgBeginReports))
		if db.leases, err = db.newSession(ctx, false); err != nil {
			return fail(err)
		}
		db.leases.begin = db.pgBegin(pgBeginLease)
	}
	if _, err := db.SyncClock(ctx); err != nil {
		return fail(err)
	}
	return db, nil
}

// Close closes the database. It must not be called while transactions run.
func (db *DB) Close() error {
	var errs []error
	if db.reports != nil && db.reports != db.shared {
		db.reports.close()
		errs = append(errs, db.reports.s.close())
	}
	if db.shared != nil {
		db.shared.close()
	}
	if db.write != nil {
		errs = append(errs, db.write.close())
	}
	if db.leases != nil {
		errs = append(errs, db.leases.close())
	}
	for len(db.reads) > 0 {
		errs = append(errs, (<-db.reads).close())
	}
	for len(db.health) > 0 {
		errs = append(errs, (<-db.health).close())
	}
	errs = append(errs, db.pool.Close())
	if db.closePool != nil {
		db.closePool()
	}
	return errors.Join(errs...)
}

// Path is the file the database lives in, or the address of a PostgreSQL
// database without its password.
func (db *DB) Path() string { return db.path }

// Now is the current time of the injected clock, in Unix seconds.
func (db *DB) Now() int64 { return db.clock.Now().Unix() }

// session is one connection with the statements prepared on it.
type session struct {
	mu    sync.Mutex // the write session is shared; a read session is held by one reader
	conn  *sql.Conn
	stmts map[string]*stmt
	begin string
	pg    bool
	// prepare says that the connection keeps the statements prepared on
	// it; see unprepared in postgres.go.
	prepare bool
	// cache is what the session keeps between transactions (cache.go).
	cache sessionCache
	// probe says that the session is the health check's.
	probe bool
}

// Write and read transactions begin so. On SQLite a write transaction
// takes the database's write lock at once (BEGIN IMMEDIATE). On
// PostgreSQL it takes the advisory locks of the transaction that the
// hand-outs and the job reports take (below), so that there too it runs
// alone, across processes, and what it reads stays as read until it
// commits; a read sees one snapshot.
const (
	sqliteBeginWrite = `BEGIN IMMEDIATE`
	sqliteBeginRead  = `BEGIN`
	pgBeginWrite     = `BEGIN; SELECT pg_advisory_xact_lock(` + pgWriteLock + `); SELECT pg_advisory_xact_lock(` + pgReportLock + `)`
	pgBeginRead      = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
	// pgBeginLease begins a renewal of a lease (RenewLease), which takes
	// no lock but its lease's row, so that it never waits behind the
	// transactions of the lease's own work, which hold the write lock.
	pgBeginLease = `BEGIN`
)

// On PostgreSQL the job reports and the hand-outs, the job protocol's two
// shared transactions (UpdateReports, UpdateShared), run side by side,
// each under a lock of its own, and every other write transaction takes
// both (pgBeginWrite), in that order, before it touches a row:
//
//   - A hand-out takes the write lock, so that hand-outs, on every
//     WEBAPP, run one at a time, and the running jobs it counts are
//     counted up by no one else meanwhile. It first takes the jobs that
//     reports ended off those counts (pgFoldEnded).
//   - A report takes the report lock. It only ends or updates a job that
//     runs, whose lorry no hand-out may claim: the rows the two write
//     are others', but for a job's end, which adds a row to
//     live_jobs_ended rather than count down the hand-outs' row of
//     live_jobs. A count a hand-out reads while a report's transaction
//     runs is too high, never too low, until that report commits.
//   - What a hand-out and a report might both write (the job of a minion
//     that asks while it owns a live job, ended as lost by its hand-out
//     while its report is under way, and that minion's row) the hand-out
//     writes holding the report lock too, taken after the write lock
//     (holdReports): the two never wait for each other's rows, which,
//     with several calls in each transaction, would be a deadlock for the
//     server to break by failing one of them.
const (
	pgBeginClaims  = `BEGIN; SELECT pg_advisory_xact_lock(` + pgWriteLock + `); ` + pgFoldEnded
	pgBeginReports = `BEGIN; SELECT pg_advisory_xact_lock(` + pgReportLock + `)`
	// pgFoldEnded takes the jobs ended since off the counts of live
	// jobs; the ends of reports that have not committed stay, to be
	// taken off next time.
	pgFoldEnded = `WITH gone AS (DELETE FROM live_jobs_ended RETURNING queue, host),
		ended AS (SELECT queue, host, COUNT(*) AS n FROM gone GROUP BY queue, host)
	UPDATE live_jobs SET n = live_jobs.n - ended.n FROM ended
	WHERE live_jobs.queue = ended.queue AND live_jobs.host = ended.host`
)

func (db *DB) newSession(ctx context.Context, readOnly bool) (*session, error) {
	conn, err := db.pool.Conn(ctx)
	if err != nil {
		return nil, err
	}
	s := &session{conn: conn, stmts: map[string]*stmt{}, begin: sqliteBeginWrite, pg: db.pg, prepare: !db.unprepared}
	switch {
	case db.pg && readOnly:
		s.begin = db.pgBegin(pgBeginRead)
	case db.pg:
		s.begin = db.pgBegin(pgBeginWrite)
	case readOnly:
		s.begin = sqliteBeginRead
		if _, err := conn.ExecContext(ctx, `PRAGMA query_only = 1`); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return s, nil
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
	if s.pg {
		st.text = pgSQL(query)
	}
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
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.close())
	}
	return errors.Join(append(errs, s.conn.Close())...)
}

// Tx is the only handle a transaction callback may use. Now is fixed for the
// whole transaction so everything it writes agrees on the time.
type Tx struct {
	s *session
	// shared says that the transaction is shared by several calls
	// (UpdateShared), whose statements no call's context may interrupt.
	shared bool
	// pg says the transaction is on PostgreSQL, for the statements
	// written for each backend.
	pg bool
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
	return &Tx{s: s, pg: s.pg, drv: db.drv, q: db.drv.sql(), Now: db.Now(), outputLimit: db.outputLimit, notify: db.notify}
}

// The helpers below run constant query strings through the session's
// prepared statements.

func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = tx.stmtContext(ctx)
	if tx.pg {
		args = pgArgs(args)
	}
	st, err := tx.s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (tx *Tx) queryRow(ctx context.Context, query string, args ...any) scanner {
	ctx = tx.stmtContext(ctx)
	if tx.pg {
		args = pgArgs(args)
	}
	st, err := tx.s.stmt(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

func (tx *Tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = tx.stmtContext(ctx)
	if tx.pg {
		args = pgArgs(args)
	}
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

// nullInt turns a nullable column into a pointer.
func nullInt(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Int64
	return &v
}

// Size is the space the database takes on disk: SQLite's files, WAL
// included, or the PostgreSQL database's.
func (db *DB) Size(ctx context.Context) (int64, error) {
	var pages, size int64
	err := db.View(ctx, func(tx *Tx) error {
		if tx.pg {
			pages = 1
			return tx.queryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&size)
		}
		if err := tx.queryRow(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
			return err
		}
		return tx.queryRow(ctx, `PRAGMA page_size`).Scan(&size)
	})
	return pages * size, err
}
