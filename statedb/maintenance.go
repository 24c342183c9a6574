package statedb

import (
	"context"
	"fmt"
)

// Usage is the space the state database takes.
type Usage struct {
	// FileBytes is the size of the database file and its write-ahead log
	// on disk; on PostgreSQL, the database's size on the server's disk.
	FileBytes int64
	// FreeBytes is the part of the database file that deleted rows left
	// free: SQLite reuses it, and Reclaim gives it back. On PostgreSQL it
	// is the space its statistics estimate the dead rows, which VACUUM
	// makes reusable, take.
	FreeBytes int64
}

// Usage measures the database's files and free pages.
func (db *DB) Usage(ctx context.Context) (Usage, error) {
	return db.drv.usage(ctx, db)
}

// Values of PRAGMA auto_vacuum.
const (
	autoVacuumNone        = 0
	autoVacuumFull        = 1
	autoVacuumIncremental = 2
)

// smallDatabase is the size below which converting the database to
// incremental vacuuming is done at once rather than when much is free: a
// VACUUM of a few megabytes takes moments.
const smallDatabase = 64 << 20

// Reclaim gives the pages that deleted rows left free back to the file
// system, and empties the write-ahead log, so that the database file
// shrinks after old jobs and their output are removed instead of keeping
// the high-water mark of every burst of output it ever held.
//
// A database in incremental auto-vacuum mode frees its pages in moments. A
// database not yet in that mode is converted by one VACUUM, which rewrites
// the whole file and holds up writers meanwhile; so it is converted only
// when it is small or when a quarter of it is free, and until then its
// free pages are reused by new rows.
func (db *DB) Reclaim(ctx context.Context) (before, after Usage, err error) {
	if before, err = db.Usage(ctx); err != nil {
		return before, before, err
	}
	if err := db.reclaim(ctx, before); err != nil {
		return before, before, fmt.Errorf("reclaim database space: %w", err)
	}
	after, err = db.Usage(ctx)
	return before, after, err
}

func (db *DB) reclaim(ctx context.Context, u Usage) error {
	return db.drv.reclaim(ctx, db, u)
}
