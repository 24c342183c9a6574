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
	// path is the SQLite file, or the PostgreSQL database's address
	// without its password.
	path string
	// drv is the backend (driver.go).
	drv driver
	// unprepared says that the sessions may not keep prepared
	// statements (postgres.go).
	unprepared bool
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
	var size int64
	err := db.View(ctx, func(tx *Tx) error {
		var err error
		size, err = tx.drv.size(ctx, tx)
		return err
	})
	return size, err
}

// DiskDir is the directory on whose file system the database lives, on
// this machine: a SQLite file's; "" for a PostgreSQL database, whose disk
// is its server's.
func (db *DB) DiskDir() string { return db.drv.diskDir(db) }
