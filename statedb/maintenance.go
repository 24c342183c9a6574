package statedb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
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
	if db.pg {
		return db.pgUsage(ctx)
	}
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

// pgUsage is Usage on PostgreSQL: the database's size, and the space of
// the dead rows of each table, estimated as its share of the table's rows
// in the statistics.
func (db *DB) pgUsage(ctx context.Context) (Usage, error) {
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

func (db *DB) reclaim(ctx context.Context, u Usage) error {
	if db.pg {
		// Autovacuum makes the space of deleted rows reusable as it
		// goes; giving it back to the file system (VACUUM FULL) would
		// lock each table while it is rewritten.
		return nil
	}
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
