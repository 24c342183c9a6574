package control

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"lorrycontroller.dev/lc/statedb"
)

// ErrNoBackupDirectory is Backup's error when the WEBAPP has nowhere to
// write backups.
var ErrNoBackupDirectory = fmt.Errorf("no backup directory: the WEBAPP was started without --backup-directory: %w", statedb.ErrConflict)

// backupName matches the names Backup gives its files, and only them:
// keeping the last few never removes a file the WEBAPP did not make. The
// suffix says the backend's kind (statedb's BackupSuffix).
var backupName = regexp.MustCompile(`^statedb-[0-9]{8}T[0-9]{6}Z(\.sqlite|\.pgdump)$`)

// BackupResult is what Backup wrote and removed.
type BackupResult struct {
	statedb.BackupResult
	// Name is the backup's name in the backup directory.
	Name string
	// Removed names the older backups removed to keep the last few.
	Removed []string
}

// Backup writes a backup of the state database into BackupDirectory, as
// statedb-<UTC time>.sqlite (a SQLite file) or .pgdump (pg_dump's custom
// format, of a PostgreSQL database), and, if keep is positive, then
// removes the oldest backups of that kind there beyond the newest keep,
// this one among them: the backups of the other kind, from before a move
// to PostgreSQL, say, stay for the operator to remove. The time in the
// name is the wall clock's, whatever clock the queue keeps, as it is for
// the operator; two backups in one second are one too many, and the second
// is refused.
func (a *App) Backup(ctx context.Context, keep int) (BackupResult, error) {
	res := BackupResult{Removed: []string{}}
	if a.BackupDirectory == "" {
		return res, ErrNoBackupDirectory
	}
	if keep < 0 {
		return res, fmt.Errorf("keep %d is negative: %w", keep, statedb.ErrInvalid)
	}
	res.Name = "statedb-" + time.Now().UTC().Format("20060102T150405Z") + a.DB.BackupSuffix()
	b, err := a.DB.Backup(ctx, filepath.Join(a.BackupDirectory, res.Name))
	if errors.Is(err, statedb.ErrConflict) && !errors.Is(err, statedb.ErrBackupThroughPooler) {
		return res, fmt.Errorf("%s exists already; try again in a second: %w", res.Name, statedb.ErrConflict)
	}
	if err != nil {
		return res, err
	}
	res.BackupResult = b
	a.Log.Info("backup written", "file", b.File, "size", b.Size, "schema_version", b.SchemaVersion, "integrity", b.Integrity)
	if keep > 0 {
		res.Removed, err = pruneBackups(a.BackupDirectory, res.Name, keep)
		if len(res.Removed) > 0 {
			a.Log.Info("old backups removed", "removed", res.Removed, "keep", keep)
		}
		if err != nil {
			return res, fmt.Errorf("remove old backups: %w", err)
		}
	}
	return res, nil
}

// pruneBackups removes the backups in dir of the kind of made, the one
// just made, but the newest keep, made and keep-1 others by name, which
// sorts by time, and returns their names. made is kept whatever its name
// says, so that a clock set back removes no backup just made.
func pruneBackups(dir, made string, keep int) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	kind := filepath.Ext(made)
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && backupName.MatchString(n) && filepath.Ext(n) == kind && n != made {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if len(names) <= keep-1 {
		return []string{}, nil
	}
	removed := []string{}
	var errs []error
	for _, n := range names[:len(names)-(keep-1)] {
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, n)
	}
	return removed, errors.Join(errs...)
}

// EndRestoredJobs ends as lost the jobs that were live in a backup the
// WEBAPP starts on for the first time (statedb's EndRestoredJobs). It is
// called at start, before any minion is heard.
func (a *App) EndRestoredJobs(ctx context.Context) error {
	var ids []int64
	var taken int64
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error {
		var err error
		ids, taken, err = tx.EndRestoredJobs(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("end the jobs of a restored backup: %w", err)
	}
	if taken != 0 {
		a.Log.Warn("started on a restored backup; its live jobs ended as lost",
			"taken", time.Unix(taken, 0).UTC().Format(time.RFC3339), "job_ids", ids)
	}
	return nil
}
