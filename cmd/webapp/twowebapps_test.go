package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

// twoRun is how long the minions race the two WEBAPPs.
const twoRun = 20 * time.Second

// TestTwoWebappsOneDatabase runs two WEBAPP processes on one database
// file, with 20 minions asking either of them for jobs and reporting to
// either, while the periodic work of both (their schedulers every second,
// and the test's calls of read-configuration, ls-troves and
// remove-ghost-jobs to each) runs as often as it can. At the end no lorry
// had two live jobs, no queue ran more jobs than its threads nor a minion
// host more than its max_jobs, every kind of periodic work ran, and each
// ran on one process at a time.
func TestTwoWebappsOneDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 20 seconds")
	}
	dir := t.TempDir()
	// The sweeps of ghost jobs and unconfirmed claims run every tick, but
	// their timeouts are long enough that a slow machine's minion never
	// has its job ended under it.
	repo := filepath.Join(dir, "confgit-origin")
	makeRepo(t, repo, map[string]string{
		"lorry-controller.conf": `[
  {"type": "queue", "name": "narrow", "threads": 2},
  {"type": "queue", "name": "wide"},
  {"type": "lorries", "prefix": "narrow", "globs": ["narrow.lorry"], "queue": "narrow", "interval": "1s"},
  {"type": "lorries", "prefix": "wide", "globs": ["wide.lorry"], "queue": "wide", "interval": "1s"}
]
`,
		"narrow.lorry": specs("narrow", 8),
		"wide.lorry":   specs("wide", 24),
	})
	db := statedbOf(t, dir)
	var apps [2]*webapp
	for i := range apps {
		d := filepath.Join(dir, fmt.Sprintf("w%d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		apps[i] = startWebapp(t, d, startOpts{args: []string{"--statedb", db, "--confgit-url", repo,
			"--listen", "127.0.0.1:0", "--insecure-no-auth", "--periodic-work", "--log-level", "debug",
			"--ghost-timeout", "20s", "--lease", "5s", "--kill-grace", "1s", "--claim-timeout", "10s"}})
	}
	c := &http.Client{Timeout: time.Minute}
	post := func(w *webapp, route string, form url.Values) (int, []byte, error) {
		return postForm(c, w.url+route, form)
	}
	mustPost := func(w *webapp, route string, form url.Values) {
		t.Helper()
		if code, b, err := post(w, route, form); err != nil || code != 200 {
			t.Fatalf("POST %s = %d %s %v", route, code, b, err)
		}
	}
	mustPost(apps[0], "/1.0/read-configuration?wait=3600", nil)
	const hostLimit = 3
	mustPost(apps[1], "/1.0/set-host-max-jobs", url.Values{"host": {"limited"}, "max_jobs": {strconv.Itoa(hostLimit)}})

	ctx, cancel := context.WithTimeout(context.Background(), twoRun)
	defer cancel()
	var (
		mu       sync.Mutex
		errs     []string
		live     = map[string]bool{} // paths with a job live, as the minions see
		queueRun = map[string]int{}
		hostRun  = map[string]int{}
		jobs     int
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	for m := range 20 {
		host := "free"
		if m%2 == 0 {
			host = "limited"
		}
		wg.Go(func() {
			name := fmt.Sprintf("m%d", m)
			r := rand.New(rand.NewPCG(uint64(m), 1))
			pick := func() *webapp { return apps[r.IntN(2)] }
			for ctx.Err() == nil {
				req := wire.JobRequest{Minion: name, Host: host, PID: int64(1000 + m)}
				code, b, err := post(pick(), "/1.0/give-me-job", req.Form())
				if err != nil {
					fail("%s: give-me-job: %v", name, err)
					return
				}
				if code == http.StatusNoContent {
					continue
				}
				var o wire.Offer
				if err := json.Unmarshal(b, &o); code != 200 || err != nil || o.ID == 0 {
					fail("%s: give-me-job = %d %s %v", name, code, b, err)
					return
				}
				queue := strings.Split(o.Path, "/")[0]
				mu.Lock()
				if live[o.Path] {
					errs = append(errs, fmt.Sprintf("job %d of %s handed out while another job of it is live", o.ID, o.Path))
				}
				live[o.Path] = true
				queueRun[queue]++
				hostRun[host]++
				if queue == "narrow" && queueRun[queue] > 2 {
					errs = append(errs, fmt.Sprintf("%d jobs of queue narrow live, of 2 threads", queueRun[queue]))
				}
				if host == "limited" && hostRun[host] > hostLimit {
					errs = append(errs, fmt.Sprintf("%d jobs on host limited live, of max_jobs %d", hostRun[host], hostLimit))
				}
				jobs++
				mu.Unlock()
				update := func(u wire.Update) bool {
					u.JobID, u.Minion, u.PID = o.ID, name, int64(1000+m)
					code, b, err := post(pick(), "/1.0/job-update", u.Form())
					if err != nil || code != 200 {
						fail("%s: job-update of job %d = %d %s %v", name, o.ID, code, b, err)
						return false
					}
					return true
				}
				if !update(wire.Update{Stdout: "started\n"}) {
					return
				}
				// The job's work.
				time.Sleep(time.Duration(r.IntN(50)) * time.Millisecond)
				mu.Lock()
				delete(live, o.Path)
				queueRun[queue]--
				hostRun[host]--
				mu.Unlock()
				exit := int64(0)
				if !update(wire.Update{Exit: &exit, Stdout: "done\n"}) {
					return
				}
			}
		})
	}
	// The periodic work that the timers ask for, of each WEBAPP, as
	// often as it answers.
	var calls sync.Map
	for _, w := range apps {
		for _, route := range []string{"/1.0/read-configuration", "/1.0/ls-troves", "/1.0/force-ls-troves", "/1.0/remove-ghost-jobs"} {
			wg.Go(func() {
				for ctx.Err() == nil {
					code, b, err := post(w, route, nil)
					switch {
					case err != nil && ctx.Err() == nil:
						fail("POST %s: %v", route, err)
						return
					case err == nil && code != 200 && code != http.StatusAccepted && code != http.StatusConflict:
						fail("POST %s = %d %s", route, code, b)
						return
					}
					n, _ := calls.LoadOrStore(route+" "+strconv.Itoa(code), new(int))
					mu.Lock()
					*n.(*int)++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	calls.Range(func(k, v any) bool { t.Logf("%s: %d", k, *v.(*int)); return true })
	t.Logf("%d jobs handed out", jobs)
	if jobs < 20 {
		t.Errorf("only %d jobs handed out", jobs)
	}
	for _, w := range apps {
		w.stop(t)
	}

	checkJobs(t, db)
	checkLeaseLogs(t, apps[:])
}

// checkJobs checks, from the jobs table of the STATEDB at path, that
// each lorry's jobs ran one after another: every job ended, as the
// minions ended them all, and none was handed out before the one before
// it ended.
func checkJobs(t *testing.T, path string) {
	t.Helper()
	db := openStatedbRaw(t, path)
	defer db.Close()
	rows, err := db.Query(`SELECT id, path, started, ended FROM jobs ORDER BY path, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var prevPath string
	var prevEnded sql.NullInt64
	var prevID int64
	n := 0
	for rows.Next() {
		var id, started int64
		var p string
		var ended sql.NullInt64
		if err := rows.Scan(&id, &p, &started, &ended); err != nil {
			t.Fatal(err)
		}
		n++
		if !ended.Valid {
			t.Errorf("job %d of %s never ended", id, p)
		}
		// A write transaction reads the clock once it holds the
		// database, so the times of the writes of both processes are in
		// the order of the writes.
		if p == prevPath && prevEnded.Valid && started < prevEnded.Int64 {
			t.Errorf("job %d of %s handed out at %d, before job %d ended at %d", id, p, started, prevID, prevEnded.Int64)
		}
		prevPath, prevEnded, prevID = p, ended, id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d jobs in the database", n)
}

var leaseLine = regexp.MustCompile(`msg="lease (taken|released)" kind=(\S+) owner=(\S+) at_ns=(\d+)`)

// checkLeaseLogs checks, from the WEBAPPs' logs, that each kind of
// periodic work ran, and that no two runs of one kind overlapped.
func checkLeaseLogs(t *testing.T, apps []*webapp) {
	t.Helper()
	type run struct {
		owner      string
		start, end int64
	}
	runs := map[string][]run{}
	for _, w := range apps {
		b, err := os.ReadFile(w.stderr)
		if err != nil {
			t.Fatal(err)
		}
		open := map[string]*run{}
		for _, line := range strings.Split(string(b), "\n") {
			m := leaseLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			at, _ := strconv.ParseInt(m[4], 10, 64)
			kind := m[2]
			switch m[1] {
			case "taken":
				if open[kind] != nil {
					t.Errorf("%s took the lease of %s twice without releasing it", m[3], kind)
				}
				open[kind] = &run{owner: m[3], start: at}
			case "released":
				r := open[kind]
				if r == nil {
					t.Errorf("%s released the lease of %s it had not taken", m[3], kind)
					continue
				}
				r.end = at
				runs[kind] = append(runs[kind], *r)
				delete(open, kind)
			}
		}
	}
	for _, kind := range []string{"read-configuration", "ls-troves", "tick"} {
		rs := runs[kind]
		owners := map[string]int{}
		for _, r := range rs {
			owners[r.owner]++
		}
		t.Logf("%s: %d runs, by process %v", kind, len(rs), owners)
		if len(rs) == 0 {
			t.Errorf("%s never ran", kind)
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].start < rs[j].start })
		for i := 1; i < len(rs); i++ {
			if rs[i].start < rs[i-1].end {
				t.Errorf("%s ran by %s from %d while %s ran it until %d", kind, rs[i].owner, rs[i].start, rs[i-1].owner, rs[i-1].end)
			}
		}
	}
}

// specs is a .lorry file of n lorries under prefix.
func specs(prefix string, n int) string {
	var b strings.Builder
	b.WriteString("{\n")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "  %q: {\"type\": \"git\", \"url\": \"https://example.invalid/%s/%d.git\"}", fmt.Sprintf("r%d", i), prefix, i)
	}
	b.WriteString("\n}\n")
	return b.String()
}

// makeRepo makes a git repository at dir with files, in one commit.
func makeRepo(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "master"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "configuration"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// openStatedbRaw opens the state database at place (a SQLite file, read
// only, or a PostgreSQL URL) with database/sql, for a test to look at
// its tables as they are.
func openStatedbRaw(t testing.TB, place string) *sql.DB {
	t.Helper()
	driver, dsn := "sqlite", "file:"+place+"?mode=ro"
	if statedb.IsPostgres(place) {
		driver, dsn = "pgx", place
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// postForm posts form to u with c, and answers the status and the body.
func postForm(c *http.Client, u string, form url.Values) (int, []byte, error) {
	resp, err := c.PostForm(u, form)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
