package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// TestReadsAfterStatedbFaults runs a WEBAPP on a PostgreSQL cluster of the
// test's own and serves reads of every kind, so that it holds
// connections; then:
//
//   - it ends every session of the database (pg_terminate_backend) while
//     reads are in flight, held inside their transactions by a lock: each
//     of them answers;
//   - it stops the server: every read that needs the database answers
//     503, none 500, and the health check says the database does not
//     answer (unless a pooler, in front of the server, holds the reads
//     until it is back);
//   - it starts the server again.
//
// After each fault, 40 reads of every kind, made side by side as a busy
// WEBAPP serves them, all answer: none with a 500 for a connection that
// the WEBAPP could replace.
func TestReadsAfterStatedbFaults(t *testing.T) {
	cl := dbtest.NewCluster(t)
	place := cl.Database(t)
	dir := t.TempDir()
	repo := filepath.Join(dir, "confgit-origin")
	makeRepo(t, repo, map[string]string{
		"lorry-controller.conf": `[{"type": "lorries", "prefix": "faults", "globs": ["faults.lorry"]}]` + "\n",
		"faults.lorry":          specs("faults", 5),
	})
	w := startWebapp(t, dir, startOpts{args: []string{"--statedb", place, "--confgit-url", repo,
		"--insecure-no-auth"}})
	if code := post(t, w.url+"/1.0/read-configuration?wait=3600"); code != http.StatusOK {
		t.Fatalf("read-configuration = %d; want 200\n%s", code, w.log(t))
	}
	reads := []string{"/1.0/status", "/1.0/lorries", "/1.0/lorry/faults/r1", "/1.0/health-check",
		"/1.0/status-html", "/metrics", "/1.0/list-queue", "/1.0/list-jobs", "/1.0/lorry-html/faults/r2"}
	every := func(when string) {
		t.Helper()
		if bad := readAll(t, w, reads, 40, answers(http.StatusOK)); len(bad) > 0 {
			t.Errorf("%s: %d of 40 reads failed: %s\n%s", when, len(bad), strings.Join(bad, "; "), w.log(t))
		}
	}
	every("before the faults")

	admin, err := sql.Open("pgx", cl.Admin())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	name := dbName(t, place)
	// The lock is taken on the database itself, not through a pooler.
	direct, err := url.Parse(cl.Admin())
	if err != nil {
		t.Fatal(err)
	}
	direct.Path = "/" + name
	locker, err := sql.Open("pgx", direct.String())
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()

	// Reads in flight, each held inside its transaction by a lock on the
	// lorries that the test takes first, when every session ends.
	ctx := context.Background()
	lock, err := locker.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`LOCK TABLE lorries IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	held := []string{"/1.0/lorries", "/1.0/lorry/faults/r1", "/1.0/list-queue", "/1.0/lorries?limit=2"}
	inFlight := make(chan []string, 1)
	go func() { inFlight <- readAll(t, w, held, len(held), answers(http.StatusOK)) }()
	waitFor(t, "the reads to wait for the lock", queryTrue(t, admin, `SELECT COUNT(*) >= $2 FROM pg_stat_activity
		WHERE datname = $1 AND wait_event_type = 'Lock'`, name, len(held)))
	endSessions(t, admin, name)
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if bad := <-inFlight; len(bad) > 0 {
		t.Errorf("reads in flight as their sessions ended: %d of %d failed: %s\n%s", len(bad), len(held), strings.Join(bad, "; "), w.log(t))
	}
	every("after the sessions ended")

	locker.Close()
	admin.Close()
	cl.Stop()
	// The metrics of the process are served without the database's.
	away := func(p string) int {
		if p == "/metrics" {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	}
	// A pooler holds the reads waiting for the server instead (its
	// query_wait_timeout).
	if !dbtest.Bouncer() {
		if bad := readAll(t, w, reads, 2*len(reads), away); len(bad) > 0 {
			t.Errorf("with the server stopped: %d of %d reads did not answer 503: %s", len(bad), 2*len(reads), strings.Join(bad, "; "))
		}
	}
	cl.Start(t)
	if dbtest.Bouncer() {
		// The pooler refuses the server's clients for a while after it
		// last failed to reach it (server_login_retry), whichever
		// connection they come on: the fault ends when it lets them in.
		waitFor(t, "the pooler to let the WEBAPP in", func() bool { return get(t, w.url+"/1.0/health-check") == http.StatusOK })
	}
	every("after the server started again")
}

// answers is a want of readAll: code from every path.
func answers(code int) func(string) int {
	return func(string) int { return code }
}

// dbName is the name of the database at the address place.
func dbName(t *testing.T, place string) string {
	t.Helper()
	u, err := url.Parse(place)
	if err != nil {
		t.Fatal(err)
	}
	return path.Base(u.Path)
}

// queryTrue is a condition of waitFor: whether query, given args,
// answers true on db.
func queryTrue(t *testing.T, db *sql.DB, query string, args ...any) func() bool {
	return func() bool {
		var done bool
		if err := db.QueryRow(query, args...).Scan(&done); err != nil {
			t.Fatal(err)
		}
		return done
	}
}

// readAll makes n reads, of the paths in turn, four at a time, and
// returns those that did not answer as want says.
func readAll(t *testing.T, w *webapp, paths []string, n int, want func(path string) int) []string {
	t.Helper()
	c := &http.Client{Timeout: waitLimit}
	var (
		mu  sync.Mutex
		bad []string
		wg  sync.WaitGroup
	)
	next := make(chan string)
	for range 4 {
		wg.Go(func() {
			for p := range next {
				resp, err := c.Get(w.url + p)
				if err != nil {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("GET %s: %v", p, err))
					mu.Unlock()
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want(p) {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("GET %s = %d %.200s", p, resp.StatusCode, body))
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- paths[i%len(paths)]
	}
	close(next)
	wg.Wait()
	return bad
}

// post makes one POST without a body and returns the status code.
func post(t *testing.T, u string) int {
	t.Helper()
	c := &http.Client{Timeout: waitLimit}
	resp, err := c.Post(u, "", nil)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// endSessions ends every server session of the WEBAPPs on the database
// name, and waits until they are gone (not their successors, which a
// WEBAPP may open at once).
func endSessions(t *testing.T, admin *sql.DB, name string) {
	t.Helper()
	var ended []byte
	err := admin.QueryRow(`SELECT COALESCE(json_agg(pid), '[]') FROM pg_stat_activity
		WHERE datname = $1 AND application_name LIKE 'lorry-controller-webapp%' AND pg_terminate_backend(pid)`, name).Scan(&ended)
	if err != nil {
		t.Fatal(err)
	}
	if string(ended) == "[]" {
		t.Fatalf("no session of %s to end", name)
	}
	// pg_terminate_backend only asks: the sessions are gone once no
	// server process of them is left.
	waitFor(t, "the sessions to end", queryTrue(t, admin, `SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity
		WHERE pid IN (SELECT value::int FROM json_array_elements_text($1::json)))`, string(ended)))
}
