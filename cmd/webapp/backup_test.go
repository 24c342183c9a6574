package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/wire"
)

func TestBackupCommandArguments(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists")
	if err := os.WriteFile(exists, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.db")
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderrHas  string
		stdoutLack string
	}{
		{name: "no file", args: []string{"--statedb", missing}, code: 2, stderrHas: "Usage"},
		{name: "two files", args: []string{"--statedb", missing, "a", "b"}, code: 2, stderrHas: "Usage"},
		{name: "no database", args: []string{"--statedb", missing, filepath.Join(dir, "b1")}, code: 1, stderrHas: "no such file"},
		{name: "existing file", args: []string{exists, "--statedb", missing}, code: 1, stderrHas: "exists"},
		{name: "password on the command line", args: []string{"--statedb", "postgres://lc:s3cret@db.example.org:5432/lorry?sslmode=require&password=s3cret", "/backups/lc dump"},
			code: 2, stderrHas: "--statedb-password-file", stdoutLack: "s3cret"},
		{name: "backup address's password on the command line", args: []string{"--statedb", "postgres://lc@pool.example.org/lorry?default_query_exec_mode=cache_describe",
			"--backup-statedb", "postgres://lc:s3cret@db.example.org/lorry", "/backups/lc dump"},
			code: 2, stderrHas: "--backup-statedb postgres://lc:xxxxx@db.example.org/lorry: a password", stdoutLack: "s3cret"},
		{name: "backup address not PostgreSQL's", args: []string{"--statedb", missing, "--backup-statedb", missing, filepath.Join(dir, "b2")},
			code: 2, stderrHas: "--backup-statedb " + missing + ": want the postgres:// URL"},
		{name: "through a pooler", args: []string{"--statedb", "postgres://lc@pool.example.org/lorry?default_query_exec_mode=cache_describe", filepath.Join(dir, "b3")},
			code: 1, stderrHas: "set backup-statedb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := backupMain(tc.args, &stdout, &stderr)
			if code != tc.code || tc.stdout != "" && stdout.String() != tc.stdout || !strings.Contains(stderr.String(), tc.stderrHas) ||
				tc.stdoutLack != "" && strings.Contains(stdout.String()+stderr.String(), tc.stdoutLack) {
				t.Errorf("backup %q = %d, stdout %q, stderr %q; want %d, stdout %q, stderr saying %q",
					tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderrHas)
			}
		})
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("backing up a missing database made one")
	}
	if b, _ := os.ReadFile(exists); string(b) != "keep me" {
		t.Errorf("a backup to an existing file changed it to %q", b)
	}
}

// loadMinion is a minion of TestBackupUnderLoadAndRestore, made of the
// requests a minion makes.
type loadMinion struct {
	name string
	pid  int64
	// long minions keep their jobs running until the test stops them;
	// the others end each job after a few updates.
	long bool
}

// loadJobs is what the minions of TestBackupUnderLoadAndRestore have
// been told, as they were told it.
type loadJobs struct {
	mu sync.Mutex
	// ended holds the output of each job whose end the WEBAPP took.
	ended map[int64]string
	// live holds the jobs handed out and not ended.
	live map[int64]bool
	// handouts counts the jobs handed out.
	handouts atomic.Int64
	errs     []string
}

func (l *loadJobs) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < 20 {
		l.errs = append(l.errs, fmt.Sprintf(format, args...))
	}
}

// snapshot returns copies of ended and live.
func (l *loadJobs) snapshot() (map[int64]string, map[int64]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ended, live := map[int64]string{}, map[int64]bool{}
	for id, out := range l.ended {
		ended[id] = out
	}
	for id := range l.live {
		live[id] = true
	}
	return ended, live
}

// run asks w for jobs and reports on them until ctx ends.
func (m loadMinion) run(ctx context.Context, w *webapp, jobs *loadJobs) {
	c := &http.Client{Timeout: waitLimit}
	post := func(route string, form url.Values) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+route, strings.NewReader(form.Encode()))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	for ctx.Err() == nil {
		code, b, err := post("/1.0/give-me-job", wire.JobRequest{Minion: m.name, Host: "h", PID: m.pid}.Form())
		if ctx.Err() != nil {
			return
		}
		if err != nil || code != 200 && code != http.StatusNoContent {
			jobs.fail("%s: give-me-job = %d %s %v", m.name, code, b, err)
			return
		}
		if code == http.StatusNoContent {
			continue
		}
		var o wire.Offer
		if err := json.Unmarshal(b, &o); err != nil || o.ID == 0 {
			jobs.fail("%s: give-me-job = %s %v", m.name, b, err)
			return
		}
		jobs.handouts.Add(1)
		jobs.mu.Lock()
		jobs.live[o.ID] = true
		jobs.mu.Unlock()
		var out strings.Builder
		for i := 0; ; i++ {
			line := fmt.Sprintf("job %d of %s: line %d\n", o.ID, m.name, i)
			u := wire.Update{JobID: o.ID, Minion: m.name, PID: m.pid, Stdout: line}
			last := !m.long && i == 3
			if last {
				exit := int64(0)
				u.Exit = &exit
			}
			code, b, err := post("/1.0/job-update", u.Form())
			if ctx.Err() != nil {
				// The minion is gone with its job, as if killed.
				return
			}
			if err != nil || code != 200 {
				jobs.fail("%s: job-update of job %d = %d %s %v", m.name, o.ID, code, b, err)
				return
			}
			out.WriteString(line)
			if last {
				jobs.mu.Lock()
				delete(jobs.live, o.ID)
				jobs.ended[o.ID] = out.String()
				jobs.mu.Unlock()
				break
			}
			if m.long {
				time.Sleep(20 * time.Millisecond) // the job's work
			}
		}
	}
}

// TestBackupUnderLoadAndRestore backs up the state database of a WEBAPP
// that 8 minions keep busy, both over HTTP and with the backup command,
// then restores each backup as docs/operations.md says and starts a
// WEBAPP on it: it keeps every job that had ended before, with its
// output, and hands out jobs again; on SQLite it ends as lost the jobs
// that ran when the backup was taken. On PostgreSQL the WEBAPP and the
// backup command find the database and its password through a --config
// file, as installed, on a server that asks for the password.
func TestBackupUnderLoadAndRestore(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) { backupUnderLoad(t, backend == "postgres") })
	}
}

func backupUnderLoad(t *testing.T, pg bool) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "confgit-origin")
	makeRepo(t, repo, map[string]string{
		"lorry-controller.conf": `[{"type": "lorries", "prefix": "load", "globs": ["load.lorry"], "interval": "1s"}]` + "\n",
		"load.lorry":            specs("load", 16),
	})
	backups := filepath.Join(dir, "backups")
	wdir := filepath.Join(dir, "running")
	if err := os.Mkdir(wdir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--confgit-url", repo, "--insecure-no-auth", "--ghost-timeout", "10m"}
	cliArgs := []string{"backup", "--statedb", filepath.Join(wdir, "state.db")}
	suffix := ".sqlite"
	if pg {
		conf := pgConfig(t, dir, "backup-directory = "+backups+"\n")
		args = append(args, "--config", conf, "--statedb", configuredStateDB(t, conf))
		cliArgs, suffix = []string{"backup", "--config", conf}, ".pgdump"
	} else {
		// A file, whichever backend the other tests run on.
		args = append(args, "--backup-directory", backups, "--statedb", filepath.Join(wdir, "state.db"))
	}
	w := startWebapp(t, wdir, startOpts{args: args})
	if code, m := postJSON(t, w.url+"/1.0/read-configuration", nil); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}

	jobs := &loadJobs{ended: map[int64]string{}, live: map[int64]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range 8 {
		m := loadMinion{name: fmt.Sprintf("m%d", i), pid: int64(100 + i), long: i < 4}
		wg.Go(func() { m.run(ctx, w, jobs) })
	}
	// Load: the long jobs all run, and many short ones have ended.
	waitFor(t, "jobs to run and end", func() bool {
		ended, live := jobs.snapshot()
		return len(ended) >= 30 && len(live) >= 4
	})
	endedBefore, liveBefore := jobs.snapshot()
	handoutsBefore := jobs.handouts.Load()

	// Both backups at once, beside the minions.
	cliFile := filepath.Join(dir, "cli"+suffix)
	type result struct {
		out []byte
		err error
	}
	cli := make(chan result, 1)
	go func() {
		out, err := exec.Command(webappBin, append(cliArgs, cliFile)...).CombinedOutput()
		cli <- result{out, err}
	}()
	code, res := postJSON(t, w.url+"/1.0/backup", nil)
	if code != 200 || res["integrity"] != "ok" {
		t.Fatalf("backup = %d %v", code, res)
	}
	apiFile := filepath.Join(backups, res["file"].(string))
	var cliOut []byte
	var cliErr error
	select {
	case r := <-cli:
		cliOut, cliErr = r.out, r.err
	case <-time.After(waitLimit):
		t.Fatalf("the backup command did not end in %v", waitLimit)
	}
	_, liveAfter := jobs.snapshot()
	t.Logf("%d jobs handed out before the backups, %d by the time they were taken", handoutsBefore, jobs.handouts.Load())

	cancel()
	wg.Wait()
	for _, e := range jobs.errs {
		t.Error(e)
	}
	w.stop(t)
	if cliErr != nil || !strings.Contains(string(cliOut), "integrity: ok\n") || !strings.Contains(string(cliOut), "file: "+cliFile+"\n") {
		t.Fatalf("backup command: %v\n%s", cliErr, cliOut)
	}
	// The jobs live all through the backups were live in them.
	var liveThroughout []int64
	for id := range liveBefore {
		if liveAfter[id] {
			liveThroughout = append(liveThroughout, id)
		}
	}
	if len(liveThroughout) < 4 {
		t.Fatalf("%d jobs live all through the backups; want the 4 long ones", len(liveThroughout))
	}

	for _, file := range []string{apiFile, cliFile} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			info, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v; want 0600", file, info.Mode().Perm())
			}
			if !strings.HasSuffix(file, suffix) {
				t.Errorf("backup %s; want a name ending %s", file, suffix)
			}
			checkRestore(t, dir, repo, file, pg, endedBefore, liveThroughout)
		})
	}
}

// checkRestore restores the backup file as docs/operations.md says, on
// SQLite as the database's file, on PostgreSQL with pg_restore into a
// new database, starts a WEBAPP on it, and checks what it has.
func checkRestore(t *testing.T, dir, repo, file string, pg bool, endedBefore map[int64]string, liveThroughout []int64) {
	rdir := filepath.Join(dir, "restored-"+filepath.Base(file))
	if err := os.Mkdir(rdir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--confgit-url", repo, "--insecure-no-auth", "--ghost-timeout", "10m"}
	if pg {
		to := dbtest.Database(t)
		// On the server itself: to may go through a pooler.
		if out, err := exec.Command("pg_restore", "--clean", "--if-exists", "--no-owner", "--dbname", dbtest.Direct(t, to), file).CombinedOutput(); err != nil {
			t.Fatalf("pg_restore: %v\n%s", err, out)
		}
		args = append(args, "--statedb", to)
	} else {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rdir, "state.db"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--statedb", filepath.Join(rdir, "state.db"))
	}
	w := startWebapp(t, rdir, startOpts{args: args})
	defer w.stop(t)

	if pg {
		// A dump carries no mark of a backup: the jobs it shows live
		// stay so until their minions come back, or the ghost timeout.
		for _, id := range liveThroughout {
			if _, j := getJSON(t, fmt.Sprintf("%s/1.0/job/%d", w.url, id)); j["status"] != "running" {
				t.Errorf("job %d, running when the dump was taken: status %v; want running", id, j["status"])
			}
		}
		checkEndedAndHandOut(t, w, endedBefore)
		return
	}

	// Before any minion asks, no job is live any more.
	if code, m := getJSON(t, w.url+"/1.0/list-running-jobs"); code != 200 || len(m["running_jobs"].([]any)) != 0 {
		t.Errorf("running jobs after the restore: %d %v; want none", code, m)
	}
	for _, id := range liveThroughout {
		_, j := getJSON(t, fmt.Sprintf("%s/1.0/job/%d", w.url, id))
		if out, _ := j["output"].(string); j["status"] != "lost" || !strings.Contains(out, "restored from a backup") {
			t.Errorf("job %d, running when the backup was taken: status %v, output %q; want lost, and why", id, j["status"], out)
		}
	}
	if !strings.Contains(w.log(t), "started on a restored backup") {
		t.Errorf("the WEBAPP's log says nothing of the restore:\n%s", w.log(t))
	}
	checkEndedAndHandOut(t, w, endedBefore)
}

// checkEndedAndHandOut checks that the restored WEBAPP w has the jobs that
// ended before the backup, with their output, and hands out jobs again.
func checkEndedAndHandOut(t *testing.T, w *webapp, endedBefore map[int64]string) {
	t.Helper()
	for id, want := range endedBefore {
		_, j := getJSON(t, fmt.Sprintf("%s/1.0/job/%d", w.url, id))
		if j["status"] != "succeeded" || j["output"] != want {
			t.Errorf("job %d, ended before the backup: status %v, output %q; want succeeded, %q", id, j["status"], j["output"], want)
		}
	}
	// Jobs are handed out again.
	form := wire.JobRequest{Minion: "after", Host: "h", PID: 1}.Form()
	waitFor(t, "a job handed out after the restore", func() bool {
		code, _ := postJSON(t, w.url+"/1.0/give-me-job", form)
		return code == 200
	})
}

// waitFor polls cond until it holds, failing the test after waitLimit.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", waitLimit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// postJSON posts form to u and decodes the JSON answer, if any.
func postJSON(t *testing.T, u string, form url.Values) (int, map[string]any) {
	t.Helper()
	c := &http.Client{Timeout: waitLimit}
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := map[string]any{}
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// getJSON gets u and decodes the JSON answer.
func getJSON(t *testing.T, u string) (int, map[string]any) {
	t.Helper()
	c := &http.Client{Timeout: waitLimit}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := map[string]any{}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return resp.StatusCode, m
}
