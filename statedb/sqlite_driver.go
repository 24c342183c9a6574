package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
)

// The SQLite driver's methods: what a DB on a SQLite file does its own way.

// openSQLite opens the SQLite file at path, created if needed.
func openSQLite(ctx context.Context, path string, opts Options) (*DB, error) {
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
	return newDB(pool, path, sqliteDriver{}, opts).start(ctx)
}

// On SQLite a write transaction takes the database's write lock at once
// (BEGIN IMMEDIATE), so that a read-then-write never meets SQLITE_BUSY
// half-way; a read sees one snapshot (WAL).
const (
	sqliteBeginWrite = `BEGIN IMMEDIATE`
	sqliteBeginRead  = `BEGIN`
)

func (sqliteDriver) prepareSession(ctx context.Context, conn *sql.Conn, readOnly bool) (string, error) {
	if !readOnly {
		return sqliteBeginWrite, nil
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA query_only = 1`); err != nil {
		return "", err
	}
	return sqliteBeginRead, nil
}

// startWriters: the shared calls and the reports run on the write
// session, as every write does; leases are renewed in Update.
func (sqliteDriver) startWriters(ctx context.Context, db *DB) error {
	// The write session keeps its temporary tables and its savepoints'
	// copies of pages in memory: every call of a shared transaction runs
	// under a savepoint, and a file would cost two system calls for each
	// page a call changes. (It is set before the temporary table is
	// made: setting it drops the temporary tables.)
	if _, err := db.write.conn.ExecContext(ctx, `PRAGMA temp_store = MEMORY`); err != nil {
		return err
	}
	if _, err := db.write.conn.ExecContext(ctx, touchedQueues); err != nil {
		return err
	}
	db.shared = db.startSharedWriter(db.write, db.write.begin)
	db.reports = db.shared
	return nil
}

// args: SQLite's driver binds a bool as 0 or 1.
func (sqliteDriver) args(args []any) []any { return args }

// connBroken: a SQLite connection is a file opened, which does not break.
func (sqliteDriver) connBroken(context.Context, *sql.Conn) bool { return false }

// endBegun: a BEGIN that failed began nothing.
func (sqliteDriver) endBegun(context.Context, *sql.Conn) {}

// runWhole: a savepoint is a call into the library, which costs less than
// running a batch again.
func (sqliteDriver) runWhole(context.Context, *DB, *sharedWrites, []*sharedWrite, func(error)) (done, undone bool) {
	return false, false
}

// sqliteSavepoints make each call's savepoint before the call and release
// it after: each is a call into the library.
type sqliteSavepoints struct {
	s         *session
	beginWith string
}

func (sqliteDriver) savepoints(s *session, beginWith string) savepointer {
	return &sqliteSavepoints{s: s, beginWith: beginWith}
}

func (sp *sqliteSavepoints) begin(ctx context.Context) error {
	_, err := sp.s.conn.ExecContext(ctx, sp.beginWith)
	return err
}

func (sp *sqliteSavepoints) mark(ctx context.Context, tx *Tx) error {
	_, err := tx.exec(ctx, `SAVEPOINT shared`)
	return err
}

func (sp *sqliteSavepoints) keep(ctx context.Context, tx *Tx) error {
	_, err := tx.exec(ctx, `RELEASE shared`)
	return err
}

func (sp *sqliteSavepoints) undo(ctx context.Context, tx *Tx) error {
	_, err := tx.exec(ctx, `ROLLBACK TO shared`)
	if err == nil {
		_, err = tx.exec(ctx, `RELEASE shared`)
	}
	return err
}

// queues keeps the list while PRAGMA data_version says that no other
// connection committed.
func (sqliteDriver) queues(ctx context.Context, tx *Tx) ([]Queue, error) {
	c := &tx.s.cache
	var version int64
	if err := tx.queryRow(ctx, `PRAGMA data_version`).Scan(&version); err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	if c.queues != nil && c.queuesVersion == version {
		return c.queues, nil
	}
	// Another connection's commit may have changed anything.
	c.forget()
	qs, err := tx.readQueues(ctx)
	if err != nil {
		return nil, err
	}
	c.queues, c.queuesVersion = qs, version
	return qs, nil
}

func (d sqliteDriver) queuesAt(ctx context.Context, tx *Tx, _ handOutState) ([]Queue, error) {
	return d.queues(ctx, tx)
}

// keptHeads drops the choices of the queues that temp.touched_queues
// names, which it empties.
func (sqliteDriver) keptHeads(ctx context.Context, tx *Tx, kind string, n int) (map[string]sql.NullInt64, error) {
	rows, err := tx.query(ctx, `DELETE FROM temp.touched_queues RETURNING queue`)
	if err != nil {
		return nil, fmt.Errorf("read the queues changed: %w", err)
	}
	var touched []string
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the queues changed: %w", err)
		}
		touched = append(touched, q)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the queues changed: %w", err)
	}
	c := &tx.s.cache
	if c.heads == nil || c.headsAt != tx.Now {
		c.heads, c.headsAt = map[string]map[string]sql.NullInt64{}, tx.Now
	}
	for _, heads := range c.heads {
		for _, q := range touched {
			delete(heads, q)
		}
	}
	if c.heads[kind] == nil {
		c.heads[kind] = make(map[string]sql.NullInt64, n)
	}
	return c.heads[kind], nil
}

// handOutState reads the settings and the minion's row in one statement,
// which costs no round trip.
func (sqliteDriver) handOutState(ctx context.Context, tx *Tx, m MinionID) (st handOutState, err error) {
	var run, limit sql.NullString
	var hostMax sql.NullInt64
	var due sql.NullBool
	var retire int64
	err = tx.queryRow(ctx, handOutStateQuery, settingRunningQueue, settingMaxJobs, m.Host, tx.Now, m.Name).
		Scan(&run, &limit, &hostMax, &due, &retire, &st.owns)
	if err != nil {
		return handOutState{}, fmt.Errorf("read the hand-out's settings: %w", err)
	}
	st.running, st.hostMax, st.anyDue = !run.Valid || run.String == "1", nullInt(hostMax), due.Valid && due.Bool
	st.retired, st.minionKnown = retire != retireNo, true
	if st.max, err = maxJobsValue(limit); err != nil {
		return handOutState{}, err
	}
	return st, nil
}

// makeConfigSeen makes the write session's temporary table.
func (sqliteDriver) makeConfigSeen(ctx context.Context, tx *Tx) error {
	_, err := tx.exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS config_seen (path TEXT PRIMARY KEY) WITHOUT ROWID`)
	return err
}

func (sqliteDriver) migrationsDir() string { return "migrations/sqlite" }

// sqliteMigrations are the steps of the SQLite schema, in order.
func sqliteMigrations() ([]migration, error) { return migrations(sqliteDriver{}) }

// migrate applies each step in a write transaction of its own, which
// checks the version (PRAGMA user_version) first, so that two processes
// opening a new database do not both migrate it.
func (sqliteDriver) migrate(ctx context.Context, db *DB, steps []migration, newest int) error {
	conn := db.write.conn
	for _, s := range steps {
		if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			return err
		}
		apply := func() error {
			var have int
			if err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&have); err != nil {
				return err
			}
			if err := checkVersion(have, newest); err != nil || have >= s.n {
				return err
			}
			if _, err := conn.ExecContext(ctx, s.body); err != nil {
				return fmt.Errorf("migration %s: %w", s.name, err)
			}
			// PRAGMA takes no bound parameters; s.n is our own integer.
			_, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, s.n))
			return err
		}
		if err := apply(); err != nil {
			conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
			return err
		}
		if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
			conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
			return fmt.Errorf("migration %s: %w", s.name, err)
		}
	}
	return nil
}

func (sqliteDriver) schemaVersion(ctx context.Context, tx *Tx) (int, error) {
	var v int
	err := tx.queryRow(ctx, `PRAGMA user_version`).Scan(&v)
	return v, err
}

// size is the file's pages, WAL included.
func (sqliteDriver) size(ctx context.Context, tx *Tx) (int64, error) {
	var pages, size int64
	if err := tx.queryRow(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		return 0, err
	}
	if err := tx.queryRow(ctx, `PRAGMA page_size`).Scan(&size); err != nil {
		return 0, err
	}
	return pages * size, nil
}

// usage measures the database's files and its free pages.
func (sqliteDriver) usage(ctx context.Context, db *DB) (Usage, error) {
	var u Usage
	for _, p := range []string{db.path, db.path + "-wal"} {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return u, fmt.Errorf("database usage: %w", err)
		}
		u.FileBytes += info.Size()
	}
	err := db.View(ctx, func(tx *Tx) error {
		var free, size int64
		if err := tx.queryRow(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil {
			return err
		}
		if err := tx.queryRow(ctx, `PRAGMA page_size`).Scan(&size); err != nil {
			return err
		}
		u.FreeBytes = free * size
		return nil
	})
	if err != nil {
		return u, fmt.Errorf("database usage: %w", err)
	}
	return u, nil
}

// reclaim: see DB.Reclaim.
func (sqliteDriver) reclaim(ctx context.Context, db *DB, u Usage) error {
	// VACUUM and the auto_vacuum pragmas run outside any transaction, on
	// the write connection, while no write transaction can start.
	db.write.mu.Lock()
	defer db.write.mu.Unlock()
	conn := db.write.conn
	var mode int
	if err := conn.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
		return err
	}
	switch {
	case mode == autoVacuumIncremental:
		// The pragma frees one page per step: it must be read to the end.
		rows, err := conn.QueryContext(ctx, `PRAGMA incremental_vacuum`)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	case mode == autoVacuumNone && (u.FileBytes < smallDatabase || u.FreeBytes*4 >= u.FileBytes):
		if _, err := conn.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, `VACUUM`); err != nil {
			return err
		}
	}
	// Readers may keep part of the log for a while; what is left is
	// emptied by a later call or by SQLite's own checkpoints.
	var busy, logPages, done int
	return conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &done)
}

// diskDir is the directory of the file.
func (sqliteDriver) diskDir(db *DB) string { return filepath.Dir(db.path) }

// backup copies the file with VACUUM INTO (backup.go).
func (sqliteDriver) backup(ctx context.Context, db *DB, file string) (BackupResult, error) {
	return BackupFile(ctx, db.path, file, db.Now())
}

func (sqliteDriver) backupSuffix() string { return ".sqlite" }
