package statedb

import (
	"context"
	"database/sql"
	"fmt"
)

// The PostgreSQL driver's methods: what a DB on a PostgreSQL database does
// its own way.

// Write and read transactions begin so on PostgreSQL. A write transaction
// takes the advisory locks of the transaction that the hand-outs and the
// job reports take (below), so that it runs alone, across processes, and
// what it reads stays as read until it commits; a read sees one snapshot.
const (
	pgBeginWrite = `BEGIN; SELECT pg_advisory_xact_lock(` + pgWriteLock + `); SELECT pg_advisory_xact_lock(` + pgReportLock + `)`
	pgBeginRead  = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
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

func (d *pgDriver) prepareSession(_ context.Context, _ *sql.Conn, readOnly bool) (string, error) {
	if readOnly {
		return d.pgBegin(pgBeginRead), nil
	}
	return d.pgBegin(pgBeginWrite), nil
}

// startWriters: the hand-outs run on the write session, the reports on a
// session of their own, each under their own lock, and the leases are
// renewed on a third.
func (d *pgDriver) startWriters(ctx context.Context, db *DB) error {
	db.shared = db.startSharedWriter(db.write, d.pgBegin(pgBeginClaims))
	db.reports = db.shared
	rs, err := db.newSession(ctx, false)
	if err != nil {
		return err
	}
	db.reports = db.startSharedWriter(rs, d.pgBegin(pgBeginReports))
	if db.leases, err = db.newSession(ctx, false); err != nil {
		return err
	}
	db.leases.begin = d.pgBegin(pgBeginLease)
	return nil
}

func (*pgDriver) args(args []any) []any { return pgArgs(args) }

func (*pgDriver) connBroken(ctx context.Context, conn *sql.Conn) bool {
	return conn.PingContext(context.WithoutCancel(ctx)) != nil
}

// endBegun: a session left in a transaction (its lock was waited for
// past its context, say) would fail every statement of its next one.
func (*pgDriver) endBegun(ctx context.Context, conn *sql.Conn) {
	if pgInTransaction(conn) == nil {
		conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
	}
}

// runWhole runs batch as runShared does, in the transaction runShared
// began, but without a savepoint for each call: on PostgreSQL each
// savepoint is a round trip of its own. If
// every call succeeds, the transaction commits (fail reports a commit
// that fails) and done is true. If a call fails, the whole transaction is
// rolled back, every call's error cleared, and undone is true: runShared
// then runs the batch again under savepoints, so that the failed call's
// error undoes its own work alone. The calls' effects outside the
// database wait for UpdateShared to return, so running them again is
// safe; a failed call is rare (a report of a job another replica ended,
// say), and costs its batch a second run.
func (*pgDriver) runWhole(ctx context.Context, db *DB, sw *sharedWrites, batch []*sharedWrite, fail func(error)) (done, undone bool) {
	s := sw.s
	undo := func() (bool, bool) {
		s.conn.ExecContext(ctx, `ROLLBACK`)
		s.cache.forget()
		for _, w := range batch {
			w.err = nil
		}
		return false, true
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
		return true, false
	}
	db.recordWrite(nil)
	db.served(s, nil)
	return true, false
}

// pgSavepoints make each savepoint in the round trip of the BEGIN, and
// afterwards in that of the previous one's RELEASE; COMMIT releases the
// last one. Each statement is a round trip to the server, which costs
// more than the statement.
type pgSavepoints struct {
	s         *session
	beginWith string
	// made says that a savepoint is made and no call has run under it;
	// open that one was kept and is to be released.
	made, open bool
}

func (*pgDriver) savepoints(s *session, beginWith string) savepointer {
	return &pgSavepoints{s: s, beginWith: beginWith}
}

func (sp *pgSavepoints) begin(ctx context.Context) error {
	_, err := sp.s.conn.ExecContext(ctx, sp.beginWith+`; SAVEPOINT shared`)
	sp.made = err == nil
	return err
}

func (sp *pgSavepoints) mark(ctx context.Context, _ *Tx) error {
	var err error
	switch {
	case sp.made:
	case sp.open:
		_, err = sp.s.conn.ExecContext(ctx, `RELEASE shared; SAVEPOINT shared`)
	default:
		_, err = sp.s.conn.ExecContext(ctx, `SAVEPOINT shared`)
	}
	sp.made, sp.open = false, false
	return err
}

// keep: the release waits for the next round trip, so the connection's
// own state says whether the call ended the transaction: a COMMIT or
// RELEASE outside one is only a warning here.
func (sp *pgSavepoints) keep(context.Context, *Tx) error {
	if err := pgInTransaction(sp.s.conn); err != nil {
		return err
	}
	sp.open = true
	return nil
}

func (sp *pgSavepoints) undo(ctx context.Context, _ *Tx) error {
	if err := pgInTransaction(sp.s.conn); err != nil {
		return err
	}
	_, err := sp.s.conn.ExecContext(ctx, `ROLLBACK TO shared; RELEASE shared`)
	return err
}

// queues: PostgreSQL tells a session nothing of other sessions' commits,
// so the list is read in each transaction.
func (*pgDriver) queues(ctx context.Context, tx *Tx) ([]Queue, error) {
	tx.s.cache.forget()
	return tx.readQueues(ctx)
}

// queuesAt keeps the list while the count of changes to the queues,
// which the hand-out read (handOutState), stays.
func (*pgDriver) queuesAt(ctx context.Context, tx *Tx, st handOutState) ([]Queue, error) {
	c := &tx.s.cache
	if c.queues != nil && c.queuesVersion == st.queuesVersion {
		return c.queues, nil
	}
	qs, err := tx.readQueues(ctx)
	if err != nil {
		c.forget()
		return nil, err
	}
	c.queues, c.queuesVersion = qs, st.queuesVersion
	return qs, nil
}

// keptHeads: PostgreSQL has no temporary triggers, so nothing is kept.
func (*pgDriver) keptHeads(_ context.Context, _ *Tx, _ string, n int) (map[string]sql.NullInt64, error) {
	return make(map[string]sql.NullInt64, n), nil
}

func (*pgDriver) handOutState(ctx context.Context, tx *Tx, m MinionID) (handOutState, error) {
	return tx.pgHandOutState(ctx, m)
}

// makeConfigSeen: config_seen is a table of the schema, as the
// transactions of an apply may each have another server session.
func (*pgDriver) makeConfigSeen(context.Context, *Tx) error { return nil }

func (*pgDriver) migrationsDir() string { return "migrations/postgres" }

func (*pgDriver) migrate(ctx context.Context, db *DB, steps []migration, newest int) error {
	return db.migratePostgres(ctx, steps, newest)
}

func (*pgDriver) schemaVersion(ctx context.Context, tx *Tx) (int, error) {
	var v int
	err := tx.queryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v)
	return v, err
}

func (*pgDriver) size(ctx context.Context, tx *Tx) (int64, error) {
	var size int64
	err := tx.queryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&size)
	return size, err
}

// usage is the database's size, and the space of the dead rows of each
// table, estimated as its share of the table's rows in the statistics.
func (*pgDriver) usage(ctx context.Context, db *DB) (Usage, error) {
	var u Usage
	err := db.View(ctx, func(tx *Tx) error {
		return tx.queryRow(ctx, `SELECT pg_database_size(current_database()),
			COALESCE(SUM(pg_table_size(relid) * n_dead_tup / NULLIF(n_live_tup + n_dead_tup, 0)), 0)::bigint
			FROM pg_stat_user_tables`).Scan(&u.FileBytes, &u.FreeBytes)
	})
	if err != nil {
		return u, fmt.Errorf("database usage: %w", err)
	}
	return u, nil
}

// reclaim: autovacuum makes the space of deleted rows reusable as it goes;
// giving it back to the file system (VACUUM FULL) would lock each table
// while it is rewritten.
func (*pgDriver) reclaim(context.Context, *DB, Usage) error { return nil }

// diskDir: the database's disk is its server's, which the server's errors
// tell of.
func (*pgDriver) diskDir(*DB) string { return "" }

// backup is pg_dump's (pgdump.go).
func (d *pgDriver) backup(ctx context.Context, db *DB, file string) (BackupResult, error) {
	addr, err := DumpAddress(d.addr, d.backupAddr)
	if err != nil {
		return BackupResult{File: file, Taken: db.Now()}, fmt.Errorf("back up %s to %s: %w", db.path, file, err)
	}
	return BackupPostgres(ctx, addr, d.password, file, db.Now())
}

func (*pgDriver) backupSuffix() string { return ".pgdump" }
