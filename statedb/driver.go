package statedb

import "context"

// A DB runs on one of two backends, SQLite and PostgreSQL, each a driver:
// the code of this package outside the drivers' own files
// (sqlite*.go, pg*.go and postgres*.go) is the same for both and never
// asks which one it runs on. What differs is a method of the driver,
// named for what it does, or a statement of the driver's own, in the
// driver's dialect (dialectSQL). The SQL written in the shared files is
// what both dialects read alike; no statement is rewritten when it is
// prepared (TestEveryStatementPrepares checks each on its database).
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
}

// dialectSQL holds the statements that each driver writes in its own
// dialect: one field per statement, the same in both drivers' values
// (sqliteSQL, postgresSQL).
type dialectSQL struct {
	// freeOrphanedLorry frees the lorry $2 of its orphaned job $3,
	// due again at $1, or a scheduled one at the instant its schedule
	// was last dealt with if that is earlier.
	freeOrphanedLorry string
}

// sqliteDriver is the SQLite backend: one file, one writer at a time.
type sqliteDriver struct{}

func (sqliteDriver) sql() *dialectSQL { return &sqliteSQL }

// pgDriver is the PostgreSQL backend: one database that several WEBAPPs
// share.
type pgDriver struct{}

func (pgDriver) sql() *dialectSQL { return &postgresSQL }
