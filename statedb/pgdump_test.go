package statedb

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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

	// The restore of docs/operations.md, into a database of its own, on
	// the server itself; the WEBAPP's address may go through a pooler.
	to := dbtest.Database(t)
	restored := restore(t, file, to, Options{Clock: clk})
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

// restore restores the dump file into the empty test database at to as
// docs/operations.md says, with pg_restore on the server itself, and
// opens it at to, closed when t ends.
func restore(t *testing.T, file, to string, opts Options) *DB {
	t.Helper()
	if out, err := exec.Command("pg_restore", "--clean", "--if-exists", "--no-owner", "--dbname="+dbtest.Direct(t, to), file).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	db, err := Open(context.Background(), to, opts)
	if err != nil {
		t.Fatalf("open the restored database at %s: %v", to, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// poolerSessions checks every server session of the pooler at addr (in
// transaction mode, holding at most dbtest's default_pool_size of them
// for a database): each has the server's search_path, which a client's
// session settings made through the pooler would have changed. The
// clients hold their transactions at once, so that each has a session
// of its own.
func poolerSessions(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	direct, err := pgx.Connect(ctx, dbtest.Direct(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	var want string
	if err := direct.QueryRow(ctx, `SHOW search_path`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	const poolSize = 20
	for i := range poolSize {
		conn, err := pgx.Connect(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `BEGIN`); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := conn.QueryRow(ctx, `SHOW search_path`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("server session %d behind the pooler has search_path %q; want the server's %q", i, got, want)
		}
	}
}

// TestBackupThroughPooler backs up a STATEDB whose address goes through
// pgbouncer in transaction mode (dbtest.Pooled). Without the server's
// own address, the backup is refused, saying which setting gives it, and
// the pooler's server sessions are as they were; with it, pg_dump dumps
// the database there, leaves the pooler's sessions alone, and the dump,
// restored on the server itself, opens through the pooler.
func TestBackupThroughPooler(t *testing.T) {
	ctx := context.Background()
	addr := dbtest.Pooled(t)
	clk := &clock.Fake{}
	clk.Set(1000)
	db, err := Open(ctx, addr, Options{Clock: clk})
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

	dir := t.TempDir()
	file := filepath.Join(dir, "refused.pgdump")
	if _, err := db.Backup(ctx, file); !errors.Is(err, ErrBackupThroughPooler) || !errors.Is(err, ErrConflict) ||
		!strings.Contains(err.Error(), "backup-statedb") {
		t.Errorf("a backup through the pooler: %v; want it refused, naming backup-statedb", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("a refused backup left %q", left)
	}
	poolerSessions(t, addr)
	if j := f.job(t, done.Job.ID); j.Status != StatusSucceeded {
		t.Errorf("job %d through the pooler after the refused backup: %s; want succeeded", j.ID, j.Status)
	}

	backed, err := Open(ctx, addr, Options{Clock: clk, BackupAddress: dbtest.Direct(t, addr)})
	if err != nil {
		t.Fatal(err)
	}
	defer backed.Close()
	file = filepath.Join(dir, "backup.pgdump")
	res, err := backed.Backup(ctx, file)
	if err != nil {
		t.Fatalf("a backup from the server's own address: %v", err)
	}
	if version, err := db.SchemaVersion(ctx); err != nil || res.Integrity != "ok" || res.SchemaVersion != version {
		t.Errorf("Backup = %+v; want integrity ok, schema %d (%v)", res, version, err)
	}
	poolerSessions(t, addr)

	to := dbtest.Pooled(t)
	r := &fixture{db: restore(t, file, to, Options{Clock: clk}), clock: clk, path: to}
	if j := r.job(t, done.Job.ID); j.Status != StatusSucceeded {
		t.Errorf("restored job %d: %s; want succeeded", j.ID, j.Status)
	}
	if got, want := strings.Join(r.queue(t), " "), strings.Join(f.queue(t), " "); got != want {
		t.Errorf("restored queue %q; want %q", got, want)
	}
	poolerSessions(t, to)
}

// TestDumpAddress checks which address pg_dump is given: the one for
// backups if there is one, else the STATEDB's, unless that goes through
// a pooler.
func TestDumpAddress(t *testing.T) {
	const direct = "postgres://lc@db.example.org:5432/lorry?sslmode=require"
	for _, tc := range []struct {
		name, addr, backup, want string
		err                      error
	}{
		{"direct", direct, "", direct, nil},
		{"prepared statements named", direct + "&default_query_exec_mode=cache_statement", "", direct + "&default_query_exec_mode=cache_statement", nil},
		{"through a pooler", "postgres://lc@pool.example.org:6432/lorry?default_query_exec_mode=cache_describe", "", "", ErrBackupThroughPooler},
		{"simple protocol", "postgres://lc@pool.example.org:6432/lorry?default_query_exec_mode=simple_protocol", "", "", ErrBackupThroughPooler},
		{"through a pooler, backed up directly", "postgres://lc@pool.example.org:6432/lorry?default_query_exec_mode=cache_describe", direct, direct, nil},
		{"backup address not PostgreSQL's", direct, "/var/lib/lorry-controller/webapp.db", "", ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DumpAddress(tc.addr, tc.backup)
			if got != tc.want || !errors.Is(err, tc.err) || tc.err == nil && err != nil {
				t.Errorf("DumpAddress(%s, %s) = %q, %v; want %q, %v", tc.addr, tc.backup, got, err, tc.want, tc.err)
			}
		})
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

// TestBackupPostgresRestoresInPlace restores a dump as docs/operations.md
// says, into the database in use, which has gone on after the dump: a
// lorry added, a job handed out and another's output grown. pg_restore
// --clean --if-exists --no-owner, as the database's role with its
// password in the environment, leaves the database as the dump found it.
func TestBackupPostgresRestoresInPlace(t *testing.T) {
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
	file := filepath.Join(t.TempDir(), "statedb.pgdump")
	if _, err := db.Backup(ctx, file); err != nil {
		t.Fatal(err)
	}
	queue := f.queue(t)

	// The database goes on after the dump.
	if _, err := f.report(t, JobUpdate{ID: running.Job.ID, Minion: m2, Stdout: []byte("after the dump\n"), Exit: exit(0)}); err != nil {
		t.Fatal(err)
	}
	f.lorries(t, "a", "b", "c")
	clk.Set(5000)
	later := f.mustGive(t, MinionID{Name: "m3", Host: "h", PID: 3})
	if later.Job.ID <= running.Job.ID {
		t.Fatalf("the job after the dump has id %d; want one above %d", later.Job.ID, running.Job.ID)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("pg_restore", "--clean", "--if-exists", "--no-owner", "--dbname="+addr, file)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_restore into the database in use: %v\n%s", err, out)
	}

	restored, err := Open(ctx, addr, Options{Clock: clk, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	r := &fixture{db: restored, clock: clk, path: addr}
	if j := r.job(t, done.Job.ID); j.Status != StatusSucceeded {
		t.Errorf("restored job %d: %s; want succeeded", j.ID, j.Status)
	}
	if j := r.job(t, running.Job.ID); j.Status != StatusRunning {
		t.Errorf("restored job %d: %s; want running, as the dump found it", j.ID, j.Status)
	}
	err = restored.View(ctx, func(tx *Tx) error {
		out, err := tx.Output(ctx, running.Job.ID)
		if err != nil {
			return err
		}
		if out != "half way\n" {
			t.Errorf("restored output of job %d = %q; want what it had at the dump", running.Job.ID, out)
		}
		if _, err := tx.Job(ctx, later.Job.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("job %d, handed out after the dump, after the restore: %v; want not found", later.Job.ID, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(r.queue(t), " "), strings.Join(queue, " "); got != want {
		t.Errorf("restored queue %q; want the dump's %q", got, want)
	}
	// The database takes writes again: the next job is handed out.
	if a := r.mustGive(t, MinionID{Name: "m4", Host: "h", PID: 4}); a.Job.ID <= running.Job.ID {
		t.Errorf("a job after the restore has id %d; want one above %d", a.Job.ID, running.Job.ID)
	}
}
