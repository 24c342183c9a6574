package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/wire"
)

// cycleLoad is a closed loop of the job protocol against WEBAPP
// processes sharing one STATEDB: each minion asks one WEBAPP for a job
// and, at once, reports its end there, again and again.
type cycleLoad struct {
	statedb  string
	lorries  int
	webapps  int
	minions  int // spread evenly over the WEBAPPs
	duration time.Duration
	// sharedNames gives the minions of each WEBAPP the names of the
	// other's, each with a pid of its own: to the WEBAPPs, a minion
	// that comes back with a new pid, at one of them, while its job's
	// report is under way at the other, again and again. Each ends the
	// other's job as lost, which that job's report is answered with
	// (409), and no call may fail otherwise.
	sharedNames bool
}

// cycleFigures are what a cycleLoad saw.
type cycleFigures struct {
	jobs      int           // jobs handed out and ended
	elapsed   time.Duration // how long the minions ran
	giveP99   time.Duration // give-me-job's 99th percentile
	idle      int           // give-me-job answered 204
	lost      int           // job-update answered 409 (sharedNames)
	failed    []string      // calls that failed: no answer, or not 200 (or 204, or 409 when expected)
	deadlocks int           // lines of the WEBAPPs' logs that name a deadlock
	// broken are the deadlocks that PostgreSQL broke in the database,
	// whether or not the transaction it failed was tried again.
	broken int64
	ids    []int64 // the jobs handed out, in no order
	apps   []*webapp
}

func (f cycleFigures) jobsPerSecond() float64 { return float64(f.jobs) / f.elapsed.Seconds() }

// runCycleLoad starts l.webapps WEBAPPs on l.statedb, each with its own
// CONFGIT clone, reads a CONFGIT of l.lorries lorries, due every second,
// and drives the minions for l.duration. The WEBAPPs are stopped before
// it returns, so that their logs are whole.
func runCycleLoad(t testing.TB, l cycleLoad) cycleFigures {
	t.Helper()
	dir := t.TempDir()
	repo := filepath.Join(dir, "confgit-origin")
	makeRepo(t, repo, map[string]string{
		"lorry-controller.conf": `[{"type": "lorries", "prefix": "cycle", "globs": ["*.lorry"], "interval": "1s"}]` + "\n",
		"cycle.lorry":           specs("cycle", l.lorries),
	})
	brokenBefore := brokenDeadlocks(t, l.statedb)
	f := cycleFigures{apps: make([]*webapp, l.webapps)}
	for i := range f.apps {
		d := filepath.Join(dir, fmt.Sprintf("w%d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		f.apps[i] = startWebapp(t, d, startOpts{args: []string{"--statedb", l.statedb, "--confgit-url", repo,
			"--insecure-no-auth", "--max-connections", "4000"}})
	}
	tr := &http.Transport{MaxIdleConns: 2 * l.minions, MaxIdleConnsPerHost: 2 * l.minions}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	post := func(w *webapp, route string, form url.Values) (int, []byte, error) {
		return postForm(c, w.url+route, form)
	}
	if code, b, err := post(f.apps[0], "/1.0/read-configuration?wait=3600", nil); err != nil || code != 200 {
		t.Fatalf("read-configuration = %d %s %v", code, b, err)
	}

	var (
		mu    sync.Mutex
		gives []time.Duration
		wg    sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		f.failed = append(f.failed, fmt.Sprintf(format, args...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.duration)
	defer cancel()
	start := time.Now()
	for m := range l.minions {
		w := f.apps[m%l.webapps]
		wg.Go(func() {
			name, pid := fmt.Sprintf("cycle-%d", m), int64(1000+m)
			if l.sharedNames {
				name = fmt.Sprintf("cycle-%d", m/l.webapps)
			}
			var ids []int64
			var took []time.Duration
			idle, lost := 0, 0
			defer func() {
				mu.Lock()
				f.ids = append(f.ids, ids...)
				gives = append(gives, took...)
				f.idle += idle
				f.lost += lost
				mu.Unlock()
			}()
			for ctx.Err() == nil {
				asked := time.Now()
				code, b, err := post(w, "/1.0/give-me-job", wire.JobRequest{Minion: name, Host: "cycle", PID: pid}.Form())
				took = append(took, time.Since(asked))
				if err != nil || code != http.StatusOK && code != http.StatusNoContent {
					fail("%s: give-me-job = %d %s %v", name, code, b, err)
					continue
				}
				if code == http.StatusNoContent {
					idle++
					continue
				}
				var o wire.Offer
				if err := json.Unmarshal(b, &o); err != nil || o.ID == 0 {
					fail("%s: give-me-job answered %s: %v", name, b, err)
					continue
				}
				exit := int64(0)
				u := wire.Update{JobID: o.ID, Minion: name, PID: pid, Exit: &exit, Stdout: "done\n"}
				// The job is reported until the WEBAPP takes its end: a
				// minion keeps what it could not deliver, and tries again.
				for try := 0; try < 3; try++ {
					code, b, err = post(w, "/1.0/job-update", u.Form())
					if err == nil && code == http.StatusOK {
						ids = append(ids, o.ID)
						break
					}
					if err == nil && code == http.StatusConflict && l.sharedNames {
						lost++
						break
					}
					fail("%s: job-update of job %d = %d %s %v", name, o.ID, code, b, err)
				}
			}
		})
	}
	wg.Wait()
	f.elapsed = time.Since(start)
	f.jobs = len(f.ids)
	if len(gives) > 0 {
		slices.Sort(gives)
		f.giveP99 = gives[min(len(gives)-1, len(gives)*99/100)]
	}
	for _, w := range f.apps {
		w.stop(t)
	}
	for _, w := range f.apps {
		for _, line := range strings.Split(w.log(t), "\n") {
			if strings.Contains(line, "deadlock detected") || strings.Contains(line, "40P01") {
				f.deadlocks++
			}
		}
	}
	f.broken = brokenDeadlocks(t, l.statedb) - brokenBefore
	return f
}

// brokenDeadlocks is how many deadlocks PostgreSQL has broken in the
// database at place (pg_stat_database), 0 for SQLite. A session counts
// its own when it ends, or now and then: the count is read once no
// other session is left on the database.
func brokenDeadlocks(t testing.TB, place string) int64 {
	t.Helper()
	if !statedb.IsPostgres(place) {
		return 0
	}
	db, err := sql.Open("pgx", place)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	deadline := time.Now().Add(waitLimit)
	for {
		var others int
		err := db.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid != pg_backend_pid()`).Scan(&others)
		if err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still on the database %v after the WEBAPPs stopped", others, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var n int64
	if err := db.QueryRow(`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkCycleJobs checks, from the jobs table of the STATEDB at place,
// that every job of a cycleLoad ended once: those whose ends the WEBAPPs
// took (ids) as their minions reported, the others (lost, with
// sharedNames) as lost, and no job is left live.
func checkCycleJobs(t testing.TB, place string, ids []int64, lost bool) {
	t.Helper()
	db := openStatedbRaw(t, place)
	defer db.Close()
	reported := map[int64]bool{}
	for _, id := range ids {
		if reported[id] {
			t.Errorf("the end of job %d taken twice", id)
		}
		reported[id] = true
	}
	rows, err := db.Query(`SELECT id, status, ended IS NOT NULL FROM jobs`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int64
		var status string
		var ended bool
		if err := rows.Scan(&id, &status, &ended); err != nil {
			t.Fatal(err)
		}
		n++
		switch {
		case reported[id] && (status != statedb.StatusSucceeded || !ended):
			t.Errorf("job %d is %s, ended %v; its minion's report of its end, exit 0, was taken", id, status, ended)
		case !reported[id] && (!lost || status != statedb.StatusLost || !ended):
			t.Errorf("job %d is %s, ended %v; no report of its end was taken", id, status, ended)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < len(reported) {
		t.Errorf("%d jobs in the database, %d reported ended", n, len(reported))
	}
}

// TestJobCycleWebappProcesses drives two WEBAPP processes on one STATEDB
// with minions in a closed loop, each asking one of them for a job and
// reporting its end at once, as fast as they answer: no call fails, no
// WEBAPP meets a deadlock, and every job handed out ends once. With
// shared names, each minion's job is ended as lost by the hand-out to
// its namesake at the other WEBAPP, as its report runs there.
func TestJobCycleWebappProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the job cycle for seconds")
	}
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared-names=%v", shared), func(t *testing.T) {
			place := statedbOf(t, t.TempDir())
			f := runCycleLoad(t, cycleLoad{statedb: place, lorries: 2000, webapps: 2, minions: 16,
				duration: 4 * time.Second, sharedNames: shared})
			t.Logf("%d jobs in %v (%.0f/s), give-me-job p99 %v, %d answered 204, %d reports found their job lost, %d calls failed, %d deadlocks logged, %d broken",
				f.jobs, f.elapsed.Round(time.Millisecond), f.jobsPerSecond(), f.giveP99, f.idle, f.lost, len(f.failed), f.deadlocks, f.broken)
			for i, e := range f.failed {
				if i == 10 {
					t.Errorf("and %d more failed calls", len(f.failed)-i)
					break
				}
				t.Error(e)
			}
			if f.deadlocks > 0 {
				for _, w := range f.apps {
					for _, line := range strings.Split(w.log(t), "\n") {
						if strings.Contains(line, "deadlock") {
							t.Log(line)
							break
						}
					}
				}
				t.Errorf("%d lines of the WEBAPPs' logs name a deadlock", f.deadlocks)
			}
			if f.broken > 0 {
				t.Errorf("PostgreSQL broke %d deadlocks in the database", f.broken)
			}
			if f.jobs < 16 {
				t.Errorf("only %d jobs handed out and ended", f.jobs)
			}
			checkCycleJobs(t, place, f.ids, shared)
		})
	}
}

// BenchmarkJobCycleWebapps runs the closed loop of
// TestJobCycleWebappProcesses, 20,000 lorries and 32 minions, with one
// WEBAPP process and with two on one database, 16 minions each, on
// SQLite and on PostgreSQL, and on PostgreSQL with the names shared
// across the two WEBAPPs too; it reports jobs per second, give-me-job's
// p99, the failed calls and the deadlocks of each.
func BenchmarkJobCycleWebapps(b *testing.B) {
	for _, c := range []struct {
		backend string
		webapps int
		shared  bool
	}{{"sqlite", 1, false}, {"sqlite", 2, false}, {"postgres", 1, false}, {"postgres", 2, false}, {"postgres", 2, true}} {
		name := fmt.Sprintf("%s/webapps=%d", c.backend, c.webapps)
		if c.shared {
			name += "/shared-names"
		}
		b.Run(name, func(b *testing.B) {
			place := filepath.Join(b.TempDir(), "state.db")
			if c.backend == "postgres" {
				place = dbtest.DatabaseOrSkip(b)
			}
			var f cycleFigures
			for range b.N {
				f = runCycleLoad(b, cycleLoad{statedb: place, lorries: 20_000, webapps: c.webapps, minions: 32,
					duration: 10 * time.Second, sharedNames: c.shared})
			}
			b.ReportMetric(f.jobsPerSecond(), "jobs/s")
			b.ReportMetric(float64(f.giveP99.Microseconds())/1000, "give-p99-ms")
			b.ReportMetric(float64(len(f.failed)), "failed")
			b.ReportMetric(float64(f.broken), "deadlocks")
			b.Logf("%s: %d jobs in %v, %.0f jobs/s, give-me-job p99 %v, %d reports found their job lost, %d failed calls, %d deadlocks (%d logged)",
				name, f.jobs, f.elapsed.Round(time.Millisecond), f.jobsPerSecond(), f.giveP99, f.lost, len(f.failed), f.broken, f.deadlocks)
		})
	}
}
