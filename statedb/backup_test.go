package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupCopiesAndRestores backs up a database with a finished job
// and a running one, while writes go on, and opens the copy as a WEBAPP
// would: the finished job is there with its output, the running one ends
// as lost at once, and its lorry is handed out again.
func TestBackupCopiesAndRestores(t *testing.T) {
	sqliteOnly(t)
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b")
	done := f.mustGive(t, m1)
	if _, err := f.report(t, JobUpdate{ID: done.Job.ID, Minion: m1, Stdout: []byte("mirrored\n"), Exit: exit(0)}); err != nil {
		t.Fatal(err)
	}
	m2 := MinionID{Name: "m2", Host: "h", PID: 2}
	running := f.mustGive(t, m2)
	if _, err := f.report(t, JobUpdate{ID: running.Job.ID, Minion: m2, Stdout: []byte("half way\n")}); err != nil {
		t.Fatal(err)
	}
	// A read transaction held open beside the backup, as the pages do,
	// and a write after it, as hand-out does.
	err := f.db.View(ctx, func(tx *Tx) error {
		_, err := tx.Job(ctx, done.Job.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(t.TempDir(), "backup.sqlite")
	res, err := f.db.Backup(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.report(t, JobUpdate{ID: running.Job.ID, Minion: m2, Stdout: []byte("after the backup\n")}); err != nil {
		t.Fatal(err)
	}
	version, err := f.db.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if res.File != file || res.Size != info.Size() || res.Size == 0 || res.Integrity != "ok" || res.SchemaVersion != version || res.Taken != 1000 {
		t.Errorf("Backup = %+v; want file %s of %d bytes, integrity ok, schema %d, taken at 1000", res, file, info.Size(), version)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("backup has mode %v; want 0600", mode)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), "*"))
	if len(left) != 1 {
		t.Errorf("the backup's directory holds %q; want only the backup", left)
	}
	if _, err := f.db.Backup(ctx, file); !errors.Is(err, ErrConflict) {
		t.Errorf("a second backup to %s: %v; want a conflict", file, err)
	}

	f.clock.Set(1100)
	restored, err := Open(ctx, file, Options{Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	r := &fixture{db: restored, clock: f.clock, path: file}
	var ids []int64
	var taken int64
	r.update(t, func(tx *Tx) error {
		var err error
		ids, taken, err = tx.EndRestoredJobs(ctx)
		return err
	})
	if len(ids) != 1 || ids[0] != running.Job.ID || taken != 1000 {
		t.Errorf("EndRestoredJobs = %v, %d; want [%d], 1000", ids, taken, running.Job.ID)
	}
	if j := r.job(t, done.Job.ID); j.Status != StatusSucceeded {
		t.Errorf("finished job is %s in the backup; want %s", j.Status, StatusSucceeded)
	}
	output := func(id int64) string {
		var out string
		r.view(t, func(tx *Tx) error {
			var err error
			out, err = tx.Output(ctx, id)
			return err
		})
		return out
	}
	if out := output(done.Job.ID); out != "mirrored\n" {
		t.Errorf("finished job's output in the backup = %q; want %q", out, "mirrored\n")
	}
	if j := r.job(t, running.Job.ID); j.Status != StatusLost {
		t.Errorf("running job is %s after the restore; want lost", j.Status)
	}
	if out := output(running.Job.ID); !strings.HasPrefix(out, "half way\n") || !strings.Contains(out, "restored from a backup") || strings.Contains(out, "after the backup") {
		t.Errorf("running job's output after the restore = %q; want what it had, and why it ended", out)
	}
	// The lorry of the lost job is free again, and is handed out when
	// due.
	if l := r.lorry(t, running.Lorry.Path); l.RunningJob != nil {
		t.Errorf("the lost job's lorry still has running job %d", *l.RunningJob)
	}
	f.clock.Set(100000)
	got := map[string]bool{}
	for i := range 2 {
		got[r.mustGive(t, MinionID{Name: fmt.Sprintf("m%d", 3+i), Host: "h", PID: int64(3 + i)}).Lorry.Path] = true
	}
	if !got["a"] || !got["b"] {
		t.Errorf("handed out %v after the restore; want a and b", got)
	}
	// Only the first start ends jobs.
	r.update(t, func(tx *Tx) error {
		var err error
		ids, taken, err = tx.EndRestoredJobs(ctx)
		return err
	})
	if len(ids) != 0 || taken != 0 {
		t.Errorf("EndRestoredJobs again = %v, %d; want nothing", ids, taken)
	}
	// The database itself was never marked.
	f.update(t, func(tx *Tx) error {
		var err error
		ids, taken, err = tx.EndRestoredJobs(ctx)
		return err
	})
	if len(ids) != 0 || taken != 0 {
		t.Errorf("EndRestoredJobs on the original = %v, %d; want nothing", ids, taken)
	}
}

func TestBackupRefuses(t *testing.T) {
	sqliteOnly(t)
	ctx := context.Background()
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists")
	if err := os.WriteFile(exists, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	notDB := filepath.Join(dir, "other.sqlite")
	if err := withConn(ctx, notDB, "mode=rwc", func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `CREATE TABLE t (x)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, src, dst, want string
	}{
		{"existing file", notDB, exists, "exists"},
		{"no database", filepath.Join(dir, "missing.db"), filepath.Join(dir, "b1"), "no such file"},
		{"not a state database", notDB, filepath.Join(dir, "b2"), "state database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BackupFile(ctx, tc.src, tc.dst, 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("BackupFile(%s, %s) = %v; want an error saying %q", tc.src, tc.dst, err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("backing up a missing database created it")
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 2 {
		t.Errorf("left %q; want only the two files made by the test", left)
	}
}
