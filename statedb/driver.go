package statedb

import (
	"context"
	"database/sql"
	"os"
	"time"
)

// A DB runs on one of two backends, SQLite and PostgreSQL, each a driver:
// the code of this package outside the drivers' own files
// (sqlite*.go, pg*.go and postgres*.go) is the same for both and never
// asks which one it runs on. What differs is a method of the driver,
// named for what it does, or a statement of the driver's own, in the
// driver's dialect (dialectSQL). The SQL written in the shared files is
// what both dialects read alike; no statement is rewritten when it is
// prepared (TestEveryStatementPrepares checks each on its database).
// Which driver serves a database is decided from its place, here
// (driverOpen and the functions beside it), and nowhere else
// (TestSharedFilesAskNoBackend).
type driver interface {
	// sql is the driver's own statements.
	sql() *dialectSQL

	// claimDue hands minion m the first due entry of the open queues
	// of q, within the limits, or says in Idle why there is none;
	// touched says that the claim recorded the minion as seen.
	claimDue(ctx context.Context, tx *Tx, m MinionID, q openSet) (a Assignment, touched bool, err error)
	// idleAfterClaims is why a hand-out found no open queue: idle, or
	// that no lorry is due if the claims made earlier in the
	// transaction took the last due entries.
	idleAfterClaims(ctx context.Context, tx *Tx, idle string) (string, error)
	// holdReports keeps the job reports out of a hand-out that is to
	// write its minion's live job (see the PostgreSQL driver's).
	holdReports(ctx context.Context, tx *Tx) error
	// saveProgress writes what a report of the live job j changed, and
	// records its minion heard.
	saveProgress(ctx context.Context, tx *Tx, j Job) error
	// endRun ends job j, which its lorry l runs, as e says: the run on
	// the lorry (lorryRun), the job's end and its minion freed.
	endRun(ctx context.Context, tx *Tx, l Lorry, j Job, e jobEnd, lastErr string) error
	// recordEnd writes the end e of job j and the state it left its
	// lorry in, and frees its minion.
	recordEnd(ctx context.Context, tx *Tx, j Job, e jobEnd, lorryState string) error
	// lastOutputLines is Tx.LastOutputLines.
	lastOutputLines(ctx context.Context, tx *Tx, ids []int64) (map[int64]string, error)

	// prepareSession readies a new session's connection, read-only or
	// not, and says how its transactions begin.
	prepareSession(ctx context.Context, conn *sql.Conn, readOnly bool) (begin string, err error)
	// startWriters readies the write session and starts the shared
	// writers (UpdateShared, UpdateReports) and the lease renewals' session.
	startWriters(ctx context.Context, db *DB) error
	// args are a statement's arguments as the driver binds them.
	args(args []any) []any
	// connBroken says whether the session's connection broke (the
	// server restarted, or ended it) and a new one may serve.
	connBroken(ctx context.Context, conn *sql.Conn) bool
	// endBegun rolls back what a begin that failed half-way began.
	endBegun(ctx context.Context, conn *sql.Conn)
	// runWhole runs a shared batch, begun by runShared, with no
	// savepoint per call, where that saves round trips, and says whether
	// the batch is done, or was run and undone (a call failed); unless
	// done, runShared runs it under savepoints.
	runWhole(ctx context.Context, db *DB, sw *sharedWrites, batch []*sharedWrite, fail func(error)) (done, undone bool)
	// savepoints puts the calls of a shared transaction, on s, begun
	// with beginWith, each under a savepoint of its own.
	savepoints(s *session, beginWith string) savepointer

	// queues is Tx.queues: the queue list, kept between transactions
	// while it is known not to have changed (cache.go).
	queues(ctx context.Context, tx *Tx) ([]Queue, error)
	// queuesAt is Tx.queuesAt: queues for a hand-out that read st.
	queuesAt(ctx context.Context, tx *Tx, st handOutState) ([]Queue, error)
	// keptHeads is Tx.keptHeads: the queues' choices kept for a hand-out.
	keptHeads(ctx context.Context, tx *Tx, kind string, n int) (map[string]sql.NullInt64, error)
	// handOutState is Tx.handOutState: what a hand-out to m reads first.
	handOutState(ctx context.Context, tx *Tx, m MinionID) (handOutState, error)
	// makeConfigSeen makes config_seen ready for an apply of the
	// configuration, where it is the session's own.
	makeConfigSeen(ctx context.Context, tx *Tx) error

	// migrationsDir is the directory of the driver's migrations, in
	// migrationFiles.
	migrationsDir() string
	// migrate applies the steps not yet applied, newest being the last.
	migrate(ctx context.Context, db *DB, steps []migration, newest int) error
	// schemaVersion is the newest migration applied.
	schemaVersion(ctx context.Context, tx *Tx) (int, error)
	// size is DB.Size.
	size(ctx context.Context, tx *Tx) (int64, error)
	// usage is DB.Usage.
	usage(ctx context.Context, db *DB) (Usage, error)
	// reclaim gives back the space of deleted rows, as DB.Reclaim says.
	reclaim(ctx context.Context, db *DB, u Usage) error
	// diskDir is DB.DiskDir.
	diskDir(db *DB) string
	// backup is DB.Backup, and backupSuffix DB.BackupSuffix.
	backup(ctx context.Context, db *DB, file string) (BackupResult, error)
	backupSuffix() string
}

// savepointer puts each call of a shared transaction under a savepoint.
type savepointer interface {
	// begin begins the transaction, with the first call's savepoint
	// where that saves a round trip.
	begin(ctx context.Context) error
	// mark makes the savepoint of the next call.
	mark(ctx context.Context, tx *Tx) error
	// keep keeps the work of the call under the savepoint, and undo
	// undoes it.
	keep(ctx context.Context, tx *Tx) error
	undo(ctx context.Context, tx *Tx) error
}

// dialectSQL holds the statements that each driver writes in its own
// dialect: one field per statement, the same in both drivers' values
// (sqliteSQL, postgresSQL).
type dialectSQL struct {
	// The statements whose text differs: SQLite's query-planner hints
	// (INDEXED BY, NOT INDEXED), its MIN and MAX of several values
	// (PostgreSQL's LEAST and GREATEST), its LIKE, blind to the case of
	// ASCII letters only, and its json_each.
	aheadSchedules  string
	claimDeliveries string
	countFailing    string
	countLorries    string
	countMatching   string
	dueDeliveries   string
	dueSchedules    string
	failingLorries  string
	// freeOrphanedLorry frees the lorry $2 of its orphaned job $3,
	// due again at $1, or a scheduled one at the instant its schedule
	// was last dealt with if that is earlier.
	freeOrphanedLorry          string
	heads                      string
	headsOfKind                string
	jobsAfter                  string
	jobsBefore                 string
	jobsNewer                  string
	jobsOlder                  string
	jobsPerHour                string
	lastJobID                  string
	lorriesAfter               string
	lorriesByUpstream          string
	lorryPage                  string
	lorryPageFiltered          string
	makeDueNow                 string
	moveHostsOfRemovedQueues   string
	moveLorriesOfRemovedQueues string
	orphanedJobs               string
	queuesDue                  string
	queuePosition              string
	seeConfigLorries           string
	seenTwice                  string
	serverNow                  string
	setSchedule                string
	storedConfigLorries        string
	tickSchedule               string
	unqueuedConfigLorries      string
	unstageLorries             string
	updateConfigLorry          string
}

// sqliteDriver is the SQLite backend: one file, one writer at a time.
type sqliteDriver struct{}

func (sqliteDriver) sql() *dialectSQL { return &sqliteSQL }

// pgDriver is the PostgreSQL backend: one database that several WEBAPPs
// share. It holds how the database is reached.
type pgDriver struct {
	// addr and password reach the database, backupAddr is
	// Options.BackupAddress.
	addr, password, backupAddr string
	// stuck is Options.StuckTransaction.
	stuck time.Duration
}

func (*pgDriver) sql() *dialectSQL { return &postgresSQL }

// driverOpen opens the database at place with the driver that serves it:
// a PostgreSQL database named by its address, or a SQLite file.
func driverOpen(ctx context.Context, place string, opts Options) (*DB, error) {
	if IsPostgres(place) {
		return openPostgres(ctx, place, opts)
	}
	return openSQLite(ctx, place, opts)
}

// Backup copies the database at place, which a WEBAPP may be using, or
// not, to file, as DB.Backup does, without opening it as a DB: a SQLite
// file as BackupFile copies it, a PostgreSQL database as BackupPostgres
// dumps it, at DumpAddress(place, backupAddr), with password if the
// address has none. now is the time to record as the time of the backup.
func Backup(ctx context.Context, place, backupAddr, password, file string, now int64) (BackupResult, error) {
	if !IsPostgres(place) {
		return BackupFile(ctx, place, file, now)
	}
	addr, err := DumpAddress(place, backupAddr)
	if err != nil {
		return BackupResult{File: file, Taken: now}, err
	}
	return BackupPostgres(ctx, addr, password, file, now)
}

// CheckBackups is why a backup of the database at place, with
// backupAddr the address to dump it from (Options.BackupAddress), would
// fail before it began, nil if nothing says it would: a SQLite file is
// copied where it is; a PostgreSQL database needs an address that
// pg_dump can use (DumpAddress).
func CheckBackups(place, backupAddr string) error {
	if !IsPostgres(place) {
		return nil
	}
	_, err := DumpAddress(place, backupAddr)
	return err
}

// CheckExists fails if the database at place is a SQLite file that is not
// there, for a command that must not create one (Open would): a typo
// should not leave an empty database behind. A PostgreSQL database is
// made by its server's operator, and Open tells if it is missing.
func CheckExists(place string) error {
	if IsPostgres(place) {
		return nil
	}
	_, err := os.Stat(place)
	return err
}
