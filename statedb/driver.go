package statedb

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
}

// dialectSQL holds the statements that each driver writes in its own
// dialect: one field per statement, the same in both drivers' values
// (sqliteSQL, postgresSQL).
type dialectSQL struct{}

// sqliteDriver is the SQLite backend: one file, one writer at a time.
type sqliteDriver struct{}

func (sqliteDriver) sql() *dialectSQL { return &sqliteSQL }

// pgDriver is the PostgreSQL backend: one database that several WEBAPPs
// share.
type pgDriver struct{}

func (pgDriver) sql() *dialectSQL { return &postgresSQL }

// sqliteSQL and postgresSQL are the drivers' own statements.
var (
	sqliteSQL   = dialectSQL{}
	postgresSQL = dialectSQL{}
)
