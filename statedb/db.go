// Package statedb is the WEBAPP's persistent state: settings, the run queue
// of lorries, jobs and their output, upstream hosts and minions, in one
// SQLite database. Every SQL statement of the project lives in this package.
package statedb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"

	"lorrycontroller/clock"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Errors callers tell apart. They are wrapped with context; test with
// errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is the state database. Writes go through a single connection so they
// are serialized inside the process; every write transaction starts with
// BEGIN IMMEDIATE so they are serialized against other processes too, and a
// read-then-write never meets SQLITE_BUSY half-way.
type DB struct {
	write       *sql.DB
	read        *sql.DB
	clock       clock.Clock
	path        string
	outputLimit int64
}

// Options tune a DB. The zero value is the real clock and the default
// output cap.
type Options struct {
	Clock       clock.Clock
	OutputLimit int64 // bytes of output kept per job
}

// Open opens (creating if needed) the database at path and migrates it to
// the newest schema.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	clk := opts.Clock
	if clk == nil {
		clk = clock.System{}
	}
	limit := opts.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	base := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	write, err := sql.Open("sqlite", base+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	db := &DB{write: write, clock: clk, path: path, outputLimit: limit}
	if err := db.migrate(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	read, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	read.SetMaxOpenConns(4)
	read.SetMaxIdleConns(4)
	db.read = read
	return db, nil
}

// Close closes the database.
func (db *DB) Close() error {
	return errors.Join(db.read.Close(), db.write.Close())
}

// Path is the file the database lives in.
func (db *DB) Path() string { return db.path }

// Now is the current time of the injected clock, in Unix seconds.
func (db *DB) Now() int64 { return db.clock.Now().Unix() }

// Ping checks that the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return db.read.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
}

// SchemaVersion is the number of the newest migration applied.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := db.read.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v)
	return v, err
}

func (db *DB) migrate(ctx context.Context) error {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return err
	}
	type step struct {
		n    int
		name string
	}
	var steps []step
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			return fmt.Errorf("migration %s: name must start with a number", e.Name())
		}
		steps = append(steps, step{n, e.Name()})
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].n < steps[j].n })

	conn, err := db.write.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var have int
	if err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&have); err != nil {
		return err
	}
	if len(steps) > 0 && have > steps[len(steps)-1].n {
		return fmt.Errorf("database schema %d is newer than this program knows (%d)", have, steps[len(steps)-1].n)
	}
	for _, s := range steps {
		if s.n <= have {
			continue
		}
		body, err := fs.ReadFile(migrations, path.Join("migrations", s.name))
		if err != nil {
			return err
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", s.name, err)
		}
		// PRAGMA takes no bound parameters; s.n is our own integer.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, s.n)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %s: %w", s.name, err)
		}
	}
	return nil
}

// Tx is the only handle a transaction callback may use. Now is fixed for the
// whole transaction so everything it writes agrees on the time.
type Tx struct {
	tx          *sql.Tx
	Now         int64
	outputLimit int64
}

// Update runs fn in a write transaction (BEGIN IMMEDIATE), committing if it
// returns nil.
func (db *DB) Update(ctx context.Context, fn func(*Tx) error) error {
	return db.runTx(ctx, db.write, fn)
}

// View runs fn in a read-only transaction, which sees one consistent
// snapshot.
func (db *DB) View(ctx context.Context, fn func(*Tx) error) error {
	return db.runTx(ctx, db.read, fn)
}

func (db *DB) runTx(ctx context.Context, pool *sql.DB, fn func(*Tx) error) error {
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(&Tx{tx: tx, Now: db.Now(), outputLimit: db.outputLimit}); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return tx.tx.ExecContext(ctx, query, args...)
}

func (tx *Tx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return tx.tx.QueryRowContext(ctx, query, args...)
}

func (tx *Tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return tx.tx.QueryContext(ctx, query, args...)
}

// nullInt turns a nullable column into a pointer.
func nullInt(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Int64
	return &v
}

// Size is the space the database files take on disk, WAL included.
func (db *DB) Size(ctx context.Context) (int64, error) {
	var pages, size int64
	if err := db.read.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		return 0, err
	}
	if err := db.read.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&size); err != nil {
		return 0, err
	}
	return pages * size, nil
}
