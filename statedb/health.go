package statedb

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// writeFresh is how long the outcome of a write transaction stands for
// whether the database takes writes; after that, Healthy writes to find
// out.
const writeFresh = 10 * time.Second

// writeOutcome is how the last write transaction ended.
type writeOutcome struct {
	at  time.Time
	err error // nil: committed
}

// CheckWrites checks that the database takes writes. The last write
// transaction tells, if it committed less than writeFresh ago; otherwise,
// or if it failed, a small write of CheckWrites' own, unless a write is
// under way, whose outcome will tell the next check. A SQLite database
// whose disk has no room left fails first, before any write has failed
// and though the last committed a moment ago (diskRoom). So a database
// that filled up is seen at once.
//
// A real write that failed for lack of space is the answer until a real
// write commits: the probe is small, and finds room in the free pages
// and in the write-ahead log's reused frames where a job's output does
// not, so its success says nothing of whether the work gets done.
func (db *DB) CheckWrites(ctx context.Context) error {
	if full := db.outOfSpace.Load(); full != nil {
		return full.err
	}
	if err := db.diskRoom(); err != nil {
		return err
	}
	last := db.lastWrite.Load()
	if last != nil && last.err == nil && time.Since(last.at) < writeFresh {
		return nil
	}
	if !db.write.mu.TryLock() {
		if last != nil && last.err != nil {
			return last.err
		}
		return nil
	}
	defer db.write.mu.Unlock()
	err := db.runTx(ctx, db.write, func(tx *Tx) error {
		// A row larger than a page needs new pages, as appending output
		// does; the probe leaves nothing behind.
		if _, err := tx.exec(ctx, `INSERT INTO settings (key, value) VALUES ('write_probe', $1)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, writeProbe); err != nil {
			return fmt.Errorf("write probe: %w", err)
		}
		if err := tx.deleteSetting(ctx, "write_probe"); err != nil {
			return fmt.Errorf("write probe: %w", err)
		}
		return nil
	})
	// The probe's outcome stands for the next checks as a real write's
	// does, but it never clears a real write's lack of space.
	switch {
	case err == nil:
		db.lastWrite.Store(&writeOutcome{at: time.Now()})
	case storageFailure(err):
		db.lastWrite.Store(&writeOutcome{at: time.Now(), err: err})
	}
	return err
}

// Ping checks that the database answers a query: a statement with an
// argument, run as every transaction runs its statements, on a session
// kept for it, so that readers holding every read session (slow clients
// of long answers) never make it wait. The health check's own statement
// may find what others' do not (behind a pooler, each transaction has a
// server session of its own), so a transaction of the process that the
// database failed to serve (unserved) in the last writeFresh is the
// answer too, until another is served, or, if it lost its connection,
// until the check's own is served after it.
func (db *DB) Ping(ctx context.Context) error {
	var s *session
	select {
	case s = <-db.health:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { db.health <- s }()
	start := time.Now()
	err := db.runRead(ctx, s, func(tx *Tx) error {
		var n int
		return tx.queryRow(ctx, `SELECT COUNT(*) FROM settings WHERE key = $1`, settingConfigPart).Scan(&n)
	})
	if err != nil {
		return err
	}
	last := db.unserved.Load()
	if last == nil || time.Since(last.at) >= writeFresh {
		return nil
	}
	// A connection lost (the server away, restarting) before this check
	// began is the server's to answer, and it just did: the check's own
	// connection would have been lost too. Statements lost behind a
	// pooler are what only the others' transactions find.
	if connLost(last.err) && last.at.Before(start) {
		db.unserved.CompareAndSwap(last, nil)
		return nil
	}
	return fmt.Errorf("a transaction failed: %w", last.err)
}

// served notes how a transaction on s ended, for Ping: one the database
// failed to serve is kept, and one served forgets it, unless it was
// Ping's own.
func (db *DB) served(s *session, err error) {
	switch {
	case unserved(err):
		db.unserved.Store(&writeOutcome{at: time.Now(), err: err})
	case err == nil && !s.probe && db.unserved.Load() != nil:
		db.unserved.Store(nil)
	}
}

// unserved says whether err is the database's failure to serve a
// transaction, rather than what the transaction decided or its caller
// gave up: its connection lost or refused (connLost), or its statements
// not found where they were prepared (behind a pooler in transaction
// mode, sessions that prepare them).
func unserved(err error) bool {
	return connLost(err) || pgPreparedLost(err)
}

// connLost says whether err is the loss of the connection a transaction
// ran on, or the failure to make one: its server away, restarting or
// ending the session, or the connection broken.
func connLost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, sqldriver.ErrBadConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return pgConnLost(err)
}

// unavailable is err, wrapped in ErrUnavailable if it is the loss of a
// connection.
func unavailable(err error) error {
	if connLost(err) && !errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// diskRoom fails when the disk of a SQLite database has less room
// left, for the database's user, than CheckWrites' own probe would take:
// a write that grows the database or its log cannot be made there. The
// disk of a PostgreSQL database is its server's, which the server's
// errors tell of.
func (db *DB) diskRoom() error {
	dir := db.DiskDir()
	if dir == "" {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		// The writes will tell.
		return nil
	}
	if free := st.Bavail * uint64(st.Bsize); free < uint64(len(writeProbe)) {
		return fmt.Errorf("database or disk is full: %d bytes free on the disk of %s", free, db.path)
	}
	return nil
}

// writeProbe is what CheckWrites writes: larger than a page.
var writeProbe = strings.Repeat("0", 16384)

// runWrite runs fn as Update does, the write session already held, and
// records whether the database took the write.
func (db *DB) runWrite(ctx context.Context, fn func(*Tx) error) error {
	err := db.runTx(ctx, db.write, fn)
	db.recordWrite(err)
	return err
}

// recordWrite notes how a real write transaction ended, for CheckWrites:
// a commit, or a failure of the storage. One that failed for lack of
// space is kept apart until a real write commits.
func (db *DB) recordWrite(err error) {
	switch {
	case err == nil:
		db.lastWrite.Store(&writeOutcome{at: time.Now()})
		db.outOfSpace.Store(nil)
	case storageFailure(err):
		o := &writeOutcome{at: time.Now(), err: err}
		db.lastWrite.Store(o)
		if noSpace(err) {
			db.outOfSpace.Store(o)
		}
	}
}

// noSpace says whether err is a write's failure for lack of space:
// SQLite's "database or disk is full", which it answers for ENOSPC.
func noSpace(err error) bool {
	var se interface{ Code() int }
	if errors.As(err, &se) && se.Code()&0xff == sqliteFull {
		return true
	}
	if pgCode(err) == pgDiskFull {
		return true
	}
	return errors.Is(err, syscall.ENOSPC)
}

// storageFailure tells an error of the database's storage (a full disk,
// an I/O error, a database locked by another process for too long) from
// what a transaction decided, such as ErrNotFound.
func storageFailure(err error) bool {
	if pgStorageFailure(err) {
		return true
	}
	var se interface{ Code() int }
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqliteBusy, sqliteLocked, sqliteNoMem, sqliteReadOnly, sqliteIOErr, sqliteCorrupt,
		sqliteFull, sqliteCantOpen, sqliteNotADB:
		return true
	}
	return false
}

// constraintFailed says whether err is SQLite's refusal of a write that
// breaks a constraint, such as a unique key already taken.
func constraintFailed(err error) bool {
	var se interface{ Code() int }
	return errors.As(err, &se) && se.Code()&0xff == sqliteConstraint ||
		strings.HasPrefix(pgCode(err), pgIntegrity)
}

// sqliteConstraint is SQLite's primary result code of a constraint broken.
const sqliteConstraint = 19

// SQLite's primary result codes that say the database cannot be written.
const (
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteNoMem    = 7
	sqliteReadOnly = 8
	sqliteIOErr    = 10
	sqliteCorrupt  = 11
	sqliteFull     = 13
	sqliteCantOpen = 14
	sqliteNotADB   = 26
)

// LimitSize caps the database file at about bytes, as a full disk would:
// writes that need it to grow fail with "database or disk is full".
// Zero lifts the cap. Tests use it to fill the database.
func (db *DB) LimitSize(ctx context.Context, bytes int64) error {
	db.write.mu.Lock()
	defer db.write.mu.Unlock()
	var pageSize int64
	if err := db.write.conn.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
		return fmt.Errorf("limit size: %w", err)
	}
	pages := int64(0xfffffffe) // SQLite's own limit
	if bytes > 0 {
		pages = max(1, bytes/pageSize)
	}
	// PRAGMA takes no bound parameters; pages is our own integer.
	var got int64
	if err := db.write.conn.QueryRowContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)).Scan(&got); err != nil {
		return fmt.Errorf("limit size: %w", err)
	}
	return nil
}
