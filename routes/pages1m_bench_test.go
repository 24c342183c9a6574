package routes

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
)

// millionNow is the time of the database of BenchmarkPagesMillion, which
// its clock keeps: a database kept for later runs shows the same moment.
const millionNow = 1_800_000_000

// fillMillion fills db as cmd/lcsim leaves an installation of a million
// lorries in 50 queues: due times spread over the interval, each queue's
// lorries due in its own order, about 1% of them due now; 500 minions,
// 300 of them running a job with output, the others idle after one;
// 1,000 jobs finished before those, one in ten failed.
func fillMillion(tb testing.TB, db *statedb.DB, place string) {
	tb.Helper()
	ctx := context.Background()
	const lorries = 1_000_000
	fillQueue(tb, db, lorries)
	fillQueues(tb, db, lorries, false)
	// Due times written straight into the table, as cmd/lcsim does, since
	// no operation of the WEBAPP sets them so.
	raw, err := sql.Open("sqlite", place+"?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer raw.Close()
	const interval = 3167
	now := int64(millionNow)
	_, err = raw.ExecContext(ctx, fmt.Sprintf(`UPDATE lorries SET next_due = r.due
		FROM (SELECT path, %d + (ROW_NUMBER() OVER (PARTITION BY queue ORDER BY queue_pos) - 1) * %d
				/ COUNT(*) OVER (PARTITION BY queue) AS due
			FROM lorries WHERE schedule = '') AS r
		WHERE lorries.path = r.path`, now-interval/100, interval))
	if err != nil {
		tb.Fatal(err)
	}
	fillJobs(tb, db, 1000, 0)
	line := strings.Repeat("remote: Counting objects, compressing, writing … ", 2) + "\n"
	for i := range 500 {
		m := statedb.MinionID{Name: fmt.Sprintf("sim-%03d", i), Host: fmt.Sprintf("build%d", i%10), PID: int64(2000 + i)}
		err := db.Update(ctx, func(tx *statedb.Tx) error {
			a, err := tx.GiveMeJob(ctx, m)
			if err != nil || a.Idle != "" {
				return fmt.Errorf("minion %d: %v %s", i, err, a.Idle)
			}
			u := statedb.JobUpdate{ID: a.Job.ID, Minion: m, Stdout: []byte(strings.Repeat(line, 3))}
			if i >= 300 {
				code := int64(0)
				u.Exit = &code
			}
			_, err = tx.UpdateJob(ctx, u)
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkPagesMillion answers status-html (with and without an on-disk
// copy to write), a lorry's page and status without its run queue over
// loopback HTTP with a million lorries (fillMillion), and reports the
// median time of each. Building the
// database takes minutes: LC_BENCH_MILLION_DB names a file that keeps it
// for the next run.
func BenchmarkPagesMillion(b *testing.B) {
	ctx := context.Background()
	place := os.Getenv("LC_BENCH_MILLION_DB")
	if place == "" {
		place = filepath.Join(b.TempDir(), "state.db")
	}
	_, statErr := os.Stat(place)
	start := time.Now()
	clk := &clock.Fake{}
	clk.Set(millionNow)
	db, err := statedb.Open(ctx, place, statedb.Options{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if statErr != nil {
		fillMillion(b, db, place)
		b.Logf("built the database in %v", time.Since(start).Round(time.Second))
	} else {
		b.Logf("opened %s in %v", place, time.Since(start).Round(time.Millisecond))
	}
	dir := b.TempDir()
	s := &Server{App: &control.App{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), GhostTimeout: time.Hour},
		StatusHTML: filepath.Join(dir, "status.html"), InsecureNoAuth: true}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	// A WEBAPP without --status-html, as cmd/lcsim starts it.
	noCopy := &Server{App: s.App, InsecureNoAuth: true}
	hsNoCopy := httptest.NewServer(noCopy.Handler())
	defer hsNoCopy.Close()

	get := func(path string) time.Duration {
		start := time.Now()
		base := hs.URL
		if p, ok := strings.CutPrefix(path, "nocopy:"); ok {
			base, path = hsNoCopy.URL, p
		}
		resp, err := http.Get(base + path)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("GET %s = %d, %v", path, resp.StatusCode, err)
		}
		return time.Since(start)
	}
	measure := func(path string) time.Duration {
		get(path)
		var times []time.Duration
		for range 5 {
			times = append(times, get(path))
		}
		slices.Sort(times)
		return times[len(times)/2]
	}
	// A lorry half-way down the queue and one near its end.
	middle, end := "bench/group000/repo500000", "bench/group999/repo999999"
	for b.Loop() {
		html := measure("/1.0/status-html")
		lorryMiddle := measure("/1.0/lorry-html/" + middle)
		lorryEnd := measure("/1.0/lorry-html/" + end)
		htmlNoCopy := measure("nocopy:/1.0/status-html")
		status := measure("/1.0/status?run_queue=false")
		b.ReportMetric(ms(html), "status-html-ms")
		b.ReportMetric(ms(htmlNoCopy), "no-copy-ms")
		b.ReportMetric(ms(lorryMiddle), "lorry-middle-ms")
		b.ReportMetric(ms(lorryEnd), "lorry-end-ms")
		b.ReportMetric(ms(status), "status-ms")
	}
}
