package statedb

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// sqliteFixture is a fixture on a SQLite file, whatever the backend
// under test: the source of a copy.
func sqliteFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	f := &fixture{clock: &clock.Fake{}, path: filepath.Join(t.TempDir(), "state.db")}
	f.clock.Set(1000)
	opts.Clock = f.clock
	db, err := Open(context.Background(), f.path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.db = db
	return f
}

// copySecrets are the secrets of the token and session of a copied
// STATEDB.
type copySecrets struct {
	token, cookie string
}

// fillForCopy puts into f a bit of everything a STATEDB keeps: lorries in
// two queues, hosts with a limit, jobs ended with output (and one
// removed, one still running), a token and a browser session, and
// notifications in the outbox.
func fillForCopy(t *testing.T, f *fixture) copySecrets {
	t.Helper()
	ctx := context.Background()
	var paths []string
	for i := range 23 {
		paths = append(paths, fmt.Sprintf("group%d/repo%02d", i%3, i))
	}
	f.lorries(t, paths...)
	f.queues(t, []Queue{{Name: "heavy", Threads: exit(2)}},
		map[string]string{"group0/repo00": "heavy", "group1/repo01": "heavy"})
	f.update(t, func(tx *Tx) error {
		if _, err := tx.SetConfigHosts(ctx, []Host{{Name: "git.example.org", Type: "gitlab", Protocol: "https",
			LsInterval: 3600, Interval: 600, Timeout: 300, Section: `{"type":"gitlab"}`}}); err != nil {
			return err
		}
		return tx.SetHostMaxJobs(ctx, "git.example.org", exit(3))
	})
	m2 := MinionID{Name: "m2", Host: "h", PID: 2}
	running := f.mustGive(t, m2)
	if _, err := f.report(t, JobUpdate{ID: running.Job.ID, Minion: m2, Stdout: []byte("half way\n")}); err != nil {
		t.Fatal(err)
	}
	var last int64
	for i := range 9 {
		a := f.mustGive(t, m1)
		out := bytes.Repeat([]byte(fmt.Sprintf("line %d of %s\n", i, a.Lorry.Path)), 3)
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Stdout: out, Stderr: []byte("Receiving objects: 10%\r")}); err != nil {
			t.Fatal(err)
		}
		code := int64(i % 2)
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: &code, Stderr: []byte("Receiving objects: 100%\rdone\n")}); err != nil {
			t.Fatal(err)
		}
		last = a.Job.ID
		f.clock.Set(f.clock.Now().Unix() + 7)
	}
	// The newest job gone: the copy must not hand out its id again.
	f.update(t, func(tx *Tx) error { return tx.RemoveJob(ctx, last) })
	token, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	cookie, err := NewSecret("lcs_")
	if err != nil {
		t.Fatal(err)
	}
	f.update(t, func(tx *Tx) error {
		if err := tx.CreateToken(ctx, "alice", "admin", HashSecret(token)); err != nil {
			return err
		}
		return tx.CreateSession(ctx, HashSecret(cookie), "alice", "csrf-secret", f.clock.Now().Unix()+3600)
	})
	return copySecrets{token: token, cookie: cookie}
}

// copyView is what a STATEDB shows of what fillForCopy put in.
type copyView struct {
	Lorries    []Lorry
	Jobs       JobPage
	Output     map[int64]string
	Hosts      []Host
	Limits     map[string]int64
	Tokens     []Token
	Token      Token
	Session    Session
	Deliveries []Delivery
	// Live are the counts of live jobs, which are not copied: the
	// target's triggers make them.
	Live liveCounts
}

func viewForCopy(t *testing.T, db *DB, s copySecrets) copyView {
	t.Helper()
	ctx := context.Background()
	v := copyView{Output: map[int64]string{}}
	err := db.View(ctx, func(tx *Tx) error {
		var err error
		if v.Lorries, _, err = tx.ListLorries(ctx, LorryListing{Limit: 1000}); err != nil {
			return err
		}
		if v.Jobs, err = tx.JobsBefore(ctx, JobFilter{}, 1<<62, 1000); err != nil {
			return err
		}
		for i, j := range v.Jobs.Jobs {
			// SQLite gives an empty blob as nil, PostgreSQL an empty bytea
			// as empty.
			if len(j.carry) == 0 {
				v.Jobs.Jobs[i].carry = nil
			}
			if v.Output[j.ID], err = tx.Output(ctx, j.ID); err != nil {
				return err
			}
		}
		if v.Hosts, err = tx.Hosts(ctx); err != nil {
			return err
		}
		if v.Live, err = tx.runningByQueueAndHost(ctx, ""); err != nil {
			return err
		}
		if v.Limits, err = tx.HostLimits(ctx); err != nil {
			return err
		}
		if v.Tokens, err = tx.Tokens(ctx); err != nil {
			return err
		}
		if v.Token, err = tx.TokenByHash(ctx, HashSecret(s.token)); err != nil {
			return err
		}
		if v.Session, err = tx.SessionByHash(ctx, HashSecret(s.cookie)); err != nil {
			return err
		}
		v.Deliveries, err = tx.Deliveries(ctx, 1000)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCopyToPostgres copies a SQLite STATEDB into PostgreSQL, in small
// batches: the copy shows the same lorries, jobs, output, hosts, token,
// session and notifications, and hands out job ids after every id SQLite
// handed out.
func TestCopyToPostgres(t *testing.T) {
	ctx := context.Background()
	f := sqliteFixture(t, Options{Notify: allEvents()})
	secrets := fillForCopy(t, f)
	before := viewForCopy(t, f.db, secrets)
	if before.Live.all == 0 {
		t.Fatal("the source has no live job")
	}
	if len(before.Jobs.Jobs) != 9 || len(before.Deliveries) == 0 || len(before.Lorries) != 23 {
		t.Fatalf("the source has %d jobs, %d notifications, %d lorries; want 9, some, 23",
			len(before.Jobs.Jobs), len(before.Deliveries), len(before.Lorries))
	}
	to := dbtest.Database(t)

	// Open, as by a running WEBAPP: refused, and nothing copied.
	if _, err := CopyToPostgres(ctx, f.path, to, CopyOptions{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("copy of a STATEDB in use: %v; want it refused as in use", err)
	}
	f.db.Close()

	var progress bytes.Buffer
	counts, err := CopyToPostgres(ctx, f.path, to, CopyOptions{Progress: &progress, BatchRows: 4})
	if err != nil {
		t.Fatalf("copy: %v\n%s", err, progress.String())
	}
	want := map[string]int64{"lorries": 23, "jobs": 9, "tokens": 1, "web_sessions": 1, "hosts": 1, "host_limits": 1}
	seen := map[string]bool{}
	for _, c := range counts {
		seen[c.Table] = true
		if c.SQLite != c.Target {
			t.Errorf("%s: %d rows in SQLite, %d in PostgreSQL", c.Table, c.SQLite, c.Target)
		}
		if n, ok := want[c.Table]; ok && c.Target != n {
			t.Errorf("%s: %d rows copied; want %d", c.Table, c.Target, n)
		}
		if !strings.Contains(progress.String(), c.Table+": ") {
			t.Errorf("no progress line for %s in\n%s", c.Table, progress.String())
		}
	}
	for _, table := range []string{"lorries", "jobs", "job_output", "job_refs", "hosts", "host_limits", "queues",
		"minions", "tokens", "web_sessions", "outbox", "hook_deliveries", "queue_samples", "leases", "settings"} {
		if !seen[table] {
			t.Errorf("table %s not copied", table)
		}
	}

	pg, err := Open(ctx, to, Options{Clock: f.clock, Notify: allEvents()})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	after := viewForCopy(t, pg, secrets)
	va, vb := reflect.ValueOf(after), reflect.ValueOf(before)
	for i := range va.NumField() {
		if a, b := va.Field(i).Interface(), vb.Field(i).Interface(); !reflect.DeepEqual(a, b) {
			t.Errorf("the copy's %s:\n%+v\nwant\n%+v", va.Type().Field(i).Name, a, b)
		}
	}

	// A new job's id is past the removed one's.
	var removed int64
	src, err := Open(ctx, f.path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	src.View(ctx, func(tx *Tx) error {
		return tx.queryRow(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'jobs'`).Scan(&removed)
	})
	src.Close()
	f.db = pg
	f.clock.Set(f.clock.Now().Unix() + 100000)
	if a := f.mustGive(t, m1); a.Job.ID != removed+1 {
		t.Errorf("the copy's next job is %d; want %d, after the removed %d", a.Job.ID, removed+1, removed)
	}

	// Again: the database is no longer empty.
	if _, err := CopyToPostgres(ctx, f.path, to, CopyOptions{}); err == nil || !strings.Contains(err.Error(), "has rows") {
		t.Errorf("copy into a database with rows: %v; want it refused", err)
	}
}

// TestCopyToPostgresRefusesOldSchema refuses a STATEDB that an older
// WEBAPP left, before touching the target.
func TestCopyToPostgresRefusesOldSchema(t *testing.T) {
	ctx := context.Background()
	f := sqliteFixture(t, Options{})
	f.db.Close()
	raw, err := sql.Open("sqlite", f.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA user_version = 20`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = CopyToPostgres(ctx, f.path, "postgres://nowhere.invalid/db", CopyOptions{})
	if err == nil || !strings.Contains(err.Error(), "older") || !strings.Contains(err.Error(), "start") {
		t.Errorf("copy of an old schema: %v; want it refused, saying to start the WEBAPP on it", err)
	}
	if _, err := CopyToPostgres(ctx, filepath.Join(t.TempDir(), "none.db"), "postgres://nowhere.invalid/db", CopyOptions{}); err == nil {
		t.Errorf("copy of a missing file succeeded")
	}
}

// TestCopyToPostgresAfterCrash copies the files of a STATEDB as a killed
// WEBAPP leaves them, its last transactions still in the write-ahead log:
// they are copied too.
func TestCopyToPostgresAfterCrash(t *testing.T) {
	ctx := context.Background()
	f := sqliteFixture(t, Options{})
	f.lorries(t, "a", "b", "c")
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(f.path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "-wal" && len(b) == 0 {
			t.Fatal("nothing in the write-ahead log")
		}
		if err := os.WriteFile(filepath.Join(dir, "state.db"+suffix), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	counts, err := CopyToPostgres(ctx, filepath.Join(dir, "state.db"), dbtest.Database(t), CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		if c.Table == "lorries" && c.Target != 3 {
			t.Errorf("%d lorries copied; want 3", c.Target)
		}
	}
}
