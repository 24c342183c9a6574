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
	"strconv"
	"strings"
	"time"
)

// Backups. A backup is a copy of a SQLite state database made while the
// WEBAPP runs: VACUUM INTO reads the database in one read transaction, so
// the copy is the database as one commit left it, and writers, hand-out
// among them, go on beside it (WAL). The copy is written under a
// temporary name in the directory of the backup, marked as a backup
// (settingRestored), checked with PRAGMA integrity_check on a read-only
// connection, flushed to disk, and only then given its name, which it
// never takes from a file already there. So a file of that name is always
// a whole, checked backup.
//
// A WEBAPP started on a backup ends the jobs the backup shows live
// (EndRestoredJobs): what their minions did after the copy was made is
// not in it, and they have long since been told the jobs are not theirs.
//
// A PostgreSQL database is backed up with pg_dump instead (pgdump.go).

// settingRestored is set in a backup, and only there, to the time the
// backup was taken (Unix seconds); the first WEBAPP started on it clears
// it.
const settingRestored = "restored_backup"

// BackupResult says what a backup wrote.
type BackupResult struct {
	// File is the backup's path, as given.
	File string
	// Size is its size in bytes.
	Size int64
	// SchemaVersion is the newest migration applied to it.
	SchemaVersion int
	// Integrity is what PRAGMA integrity_check said of it: "ok".
	Integrity string
	// Taken is when the copy was made, in Unix seconds of the clock.
	Taken int64
}

// Backup copies the database, as it is at the time of the call, to file,
// which must not exist, and checks the copy; see above. The copy has mode
// 0600, as it holds what the database does.
func (db *DB) Backup(ctx context.Context, file string) (BackupResult, error) {
	return db.drv.backup(ctx, db, file)
}

// BackupSuffix is how the name of a backup of the database ends: .sqlite
// for a SQLite file, .pgdump for pg_dump's custom format.
func (db *DB) BackupSuffix() string { return db.drv.backupSuffix() }

// BackupFile is Backup of the database at src, which a WEBAPP may be
// using, or not: it is opened for reading only, never created or
// migrated. now is the time to record as the time of the backup.
func BackupFile(ctx context.Context, src, file string, now int64) (BackupResult, error) {
	res := BackupResult{File: file, Taken: now}
	fail := func(err error) (BackupResult, error) {
		return res, fmt.Errorf("back up %s to %s: %w", src, file, err)
	}
	if _, err := os.Lstat(file); err == nil {
		return fail(fmt.Errorf("%s exists; a backup never replaces a file: %w", file, ErrConflict))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	if _, err := os.Stat(src); err != nil {
		return fail(fmt.Errorf("state database: %w", err))
	}
	// VACUUM INTO writes into the empty file and keeps its mode.
	tmpName, err := emptyBeside(file)
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmpName)
	if err := vacuumInto(ctx, src, tmpName); err != nil {
		return fail(err)
	}
	if err := markBackup(ctx, tmpName, now); err != nil {
		return fail(err)
	}
	if res.Integrity, res.SchemaVersion, err = CheckBackup(ctx, tmpName); err != nil {
		return fail(err)
	}
	if res.Integrity != "ok" {
		return fail(fmt.Errorf("the copy fails its integrity check, so the database may be damaged: %s", res.Integrity))
	}
	if err := publish(tmpName, file); err != nil {
		return fail(err)
	}
	info, err := os.Stat(file)
	if err != nil {
		return fail(err)
	}
	res.Size = info.Size()
	return res, nil
}

// publish flushes the whole backup at tmp to disk and gives it its name,
// file, in the same directory, unless a file of that name is there.
func publish(tmp, file string) error {
	if err := syncFile(tmp); err != nil {
		return err
	}
	// A link, unlike a rename, never replaces a file that appeared since.
	if err := os.Link(tmp, file); err != nil {
		if errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("%s exists; a backup never replaces a file: %w", file, ErrConflict)
		}
		return err
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	return syncFile(filepath.Dir(file))
}

// sqliteURI is the URI that opens the SQLite file at path with params.
func sqliteURI(path, params string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + params
}

// withConn runs fn on a connection of its own to the SQLite file at path,
// opened with params, and closes it.
func withConn(ctx context.Context, path, params string, fn func(*sql.Conn) error) error {
	pool, err := sql.Open("sqlite", sqliteURI(path, params))
	if err != nil {
		return err
	}
	defer pool.Close()
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(conn)
}

// vacuumInto copies the database at src into the empty file dst in one
// read transaction. The source is opened as it is, never created, and
// waits for a writer's lock as the WEBAPP's sessions do.
func vacuumInto(ctx context.Context, src, dst string) error {
	return withConn(ctx, src, "mode=rw&_pragma=busy_timeout(10000)", func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `VACUUM INTO $1`, dst); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		return nil
	})
}

// markBackup makes the copy at path one file, with no write-ahead log
// beside it to lose, and marks it as a backup taken at now.
func markBackup(ctx context.Context, path string, now int64) error {
	return withConn(ctx, path, "mode=rw", func(c *sql.Conn) error {
		var mode string
		if err := c.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode); err != nil {
			return fmt.Errorf("journal mode of the copy: %w", err)
		}
		_, err := c.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, settingRestored, strconv.FormatInt(now, 10))
		if err != nil {
			return fmt.Errorf("mark the copy as a backup (is the source a state database$1): %w", err)
		}
		return nil
	})
}

// CheckBackup opens the backup at path read-only and returns what PRAGMA
// integrity_check says of it ("ok", or its findings, one a line) and its
// schema version.
func CheckBackup(ctx context.Context, path string) (integrity string, version int, err error) {
	if _, err := os.Stat(path); err != nil {
		return "", 0, err
	}
	err = withConn(ctx, path, "mode=ro", func(c *sql.Conn) error {
		rows, err := c.QueryContext(ctx, `PRAGMA integrity_check`)
		if err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		var found []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				rows.Close()
				return fmt.Errorf("integrity check: %w", err)
			}
			found = append(found, s)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		integrity = strings.Join(found, "\n")
		return c.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version)
	})
	return integrity, version, err
}

// syncFile flushes the file or directory at path to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// EndRestoredJobs ends as lost the live jobs of a database that is a
// backup never started on (see settingRestored), and marks it started on.
// It returns their ids and when the backup was taken; on any other
// database it does nothing and returns 0.
func (tx *Tx) EndRestoredJobs(ctx context.Context) (ids []int64, taken int64, err error) {
	v, ok, err := tx.setting(ctx, settingRestored)
	if err != nil || !ok {
		return nil, 0, err
	}
	if taken, err = strconv.ParseInt(v, 10, 64); err != nil {
		return nil, 0, fmt.Errorf("setting %s holds %q: %w", settingRestored, v, err)
	}
	rows, err := tx.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE `+liveStatus+` ORDER BY id`)
	if err != nil {
		return nil, 0, fmt.Errorf("find the jobs of the backup: %w", err)
	}
	var live []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		live = append(live, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	when := time.Unix(taken, 0).UTC().Format(time.RFC3339)
	ids = []int64{}
	for _, j := range live {
		msg := fmt.Sprintf("the state database was restored from a backup taken at %s, while the job ran; what it did after that is lost", when)
		if err := tx.endReadJob(ctx, j, jobEnd{status: StatusLost, why: msg}); err != nil {
			return nil, 0, err
		}
		ids = append(ids, j.ID)
	}
	return ids, taken, tx.deleteSetting(ctx, settingRestored)
}

// emptyBeside makes an empty file of mode 0600 in file's directory, named
// after it, for a backup to be written into and then renamed to file
// once checked; the caller removes it if it is left.
func emptyBeside(file string) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}
