package statedb

import (
	"context"
	"database/sql"
	"fmt"

	"lorrycontroller.dev/lc/clock"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// readSessions is how many reads can run at once.
const readSessions = 4

// Open opens the database at place and migrates it to the newest schema:
// a SQLite file, created if needed, or a PostgreSQL database named by a
// postgres:// URL (see postgres.go).
func Open(ctx context.Context, place string, opts Options) (*DB, error) {
	return driverOpen(ctx, place, opts)
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

func newDB(pool *sql.DB, path string, drv driver, opts Options) *DB {
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
	return &DB{pool: pool, drv: drv, clock: clk, path: path, outputLimit: limit, notify: opts.Notify,
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
	if err := db.drv.startWriters(ctx, db); err != nil {
		return fail(err)
	}
	if _, err := db.SyncClock(ctx); err != nil {
		return fail(err)
	}
	return db, nil
}
