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
type dialectSQL struct {
	// The statements whose text differs: SQLite's query-planner hints
	// (INDEXED BY, NOT INDEXED), its MIN and MAX of several values
	// (PostgreSQL's LEAST and GREATEST), its LIKE, blind to the case of
	// ASCII letters only, and its json_each.
	aheadSchedules             string
	claimDeliveries            string
	countFailing               string
	countMatching              string
	dueDeliveries              string
	dueSchedules               string
	failingLorries             string
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
	queueDue                   string
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
// share.
type pgDriver struct{}

func (pgDriver) sql() *dialectSQL { return &postgresSQL }
