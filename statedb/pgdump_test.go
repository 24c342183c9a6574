package statedb

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// TestBackupPostgresRestores backs up a PostgreSQL STATEDB that needs a
// password, with a job ended and one running, and restores the dump as
// docs/operations.md says, into a database of its own: the restored
// database opens, and has the jobs, their output and the lorries as the
// dump found them, not what came after.
func TestBackupPostgresRestores(t *testing.T) {
	addr, password := dbtest.PasswordDatabase(t)
	ctx := context.Background()
	clk := &clock.Fake{}
	clk.Set(1000)
	db, err := Open(ctx, addr, Options{Clock: clk, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := &fixture{db: db, clock: clk, path: addr}
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

	dir := t.TempDir()
	file := filepath.Join(dir, "backup.pgdump")
	res, err := db.Backup(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.report(t, JobUpdate{ID: running.Job.ID, Minion: m2, Stdout: []byte("after the backup\n")}); err != nil {
		t.Fatal(err)
	}
	version, err := db.SchemaVersion(ctx)
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
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 1 {
		t.Errorf("the backup's directory holds %q; want only the backup", left)
	}
	if _, err := db.Backup(ctx, file); !errors.Is(err, ErrConflict) {
		t.Errorf("a second backup to %s: %v; want a conflict", file, err)
	}
	if db.BackupSuffix() != ".pgdump" {
		t.Errorf("BackupSuffix = %q; want .pgdump", db.BackupSuffix())
	}

	// The restore of docs/operations.md, into a database of its own.
	to := dbtest.Database(t)
	if out, err := exec.Command("pg_restore", "--clean", "--if-exists", "--no-owner", "--dbname="+to, file).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	restored, err := Open(ctx, to, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	r := &fixture{db: restored, clock: clk, path: to}
	if j := r.job(t, done.Job.ID); j.Status != StatusSucceeded {
		t.Errorf("restored job %d: %s; want succeeded", j.ID, j.Status)
	}
	if j := r.job(t, running.Job.ID); j.Status != StatusRunning {
		t.Errorf("restored job %d: %s; want running, as the dump found it", j.ID, j.Status)
	}
	var out string
	r.view(t, func(tx *Tx) error {
		var err error
		out, err = tx.Output(ctx, running.Job.ID)
		return err
	})
	if out != "half way\n" {
		t.Errorf("restored output of job %d = %q; want what it had at the backup", running.Job.ID, out)
	}
	if got := strings.Join(r.queue(t), " "); got != strings.Join(f.queue(t), " ") {
		t.Errorf("restored queue %q; want %q", got, strings.Join(f.queue(t), " "))
	}
}

// TestDumpTarget checks what pg_dump is given of an address: never its
// password, nor a parameter libpq does not know.
func TestDumpTarget(t *testing.T) {
	for _, tc := range []struct {
		addr, password, target, pass string
	}{
		{"postgres://lc:s3cret@db.example.org:5432/lorry?sslmode=require&default_query_exec_mode=simple_protocol",
			"", "postgres://lc@db.example.org:5432/lorry?sslmode=require", "s3cret"},
		{"postgres://lc@db/lorry?password=s3cret&pool_max_conns=4", "", "postgres://lc@db/lorry", "s3cret"},
		{"postgres://lc:inline@db/lorry", "fromfile", "postgres://lc@db/lorry", "fromfile"},
		{"postgresql:///lorry?host=%2Frun%2Fpostgresql", "", "postgresql:///lorry?host=%2Frun%2Fpostgresql", ""},
		{"POSTGRES://lc:s3cret@db/lorry?sslpassword=k3y", "", "postgres://lc@db/lorry", "s3cret"},
		{"host=db user=lc password='s3 cr\\'et' sslpassword=k3y dbname=lorry default_query_exec_mode=exec", "",
			"host=db user=lc dbname=lorry", `s3 cr'et`},
		{"host=/run/postgresql dbname='lorry db'", "fromfile", "host=/run/postgresql dbname='lorry db'", "fromfile"},
	} {
		target, pass, err := dumpTarget(tc.addr, tc.password)
		if err != nil || target != tc.target || pass != tc.pass {
			t.Errorf("dumpTarget(%s) = %q, %q, %v; want %q, %q", Redact(tc.addr), target, pass, err, tc.target, tc.pass)
		}
	}
	if _, _, err := dumpTarget("state.db", ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("dumpTarget of a file: %v; want invalid", err)
	}
}
