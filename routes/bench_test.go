package routes

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lorrycontroller/statedb"
)

// fillQueue puts n lorries, all due, straight into db.
func fillQueue(tb testing.TB, db *statedb.DB, n int) {
	tb.Helper()
	want := make([]statedb.NewLorry, n)
	for i := range want {
		p := fmt.Sprintf("bench/group%03d/repo%06d", i%1000, i)
		want[i] = statedb.NewLorry{Path: p, Kind: KindLorry, Interval: 86400, Timeout: 3600,
			Text: `{"` + p + `":{"type":"git","url":"https://git.example.org/` + p + `.git"}}`}
	}
	err := db.Update(context.Background(), func(tx *statedb.Tx) error {
		_, err := tx.SetConfigLorries(context.Background(), want)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkJobCycle runs the whole give-me-job → final job-update cycle over
// loopback HTTP with 100,000 lorries in the queue and 32 minions asking at
// once, and reports jobs per second and the latency of give-me-job.
func BenchmarkJobCycle(b *testing.B) {
	const (
		lorries = 100_000
		minions = 32
		jobs    = 20_000
	)
	db, err := statedb.Open(context.Background(), filepath.Join(b.TempDir(), "state.db"), statedb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	fillQueue(b, db, lorries)
	s := &Server{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), GhostTimeout: time.Hour}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: minions}}

	post := func(path string, form url.Values) (int, []byte, error) {
		resp, err := client.Post(hs.URL+path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, err
	}

	for b.Loop() {
		var done atomic.Int64
		var mu sync.Mutex
		latencies := make([]time.Duration, 0, jobs)
		var wg sync.WaitGroup
		start := time.Now()
		for m := range minions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("bench-%d", m)
				mine := make([]time.Duration, 0, jobs/minions)
				defer func() { mu.Lock(); latencies = append(latencies, mine...); mu.Unlock() }()
				for done.Add(1) <= jobs {
					t0 := time.Now()
					code, body, err := post("/1.0/give-me-job", url.Values{"host": {"bench"}, "pid": {fmt.Sprint(m + 1)}, "minion": {name}})
					mine = append(mine, time.Since(t0))
					if err != nil || code != 200 {
						b.Errorf("give-me-job = %d %s %v", code, body, err)
						return
					}
					id := string(body[len(`{"job_id":`):])
					id = id[:strings.IndexByte(id, ',')]
					code, body, err = post("/1.0/job-update", url.Values{"job_id": {id}, "minion": {name},
						"pid": {fmt.Sprint(m + 1)}, "exit": {"0"}, "stdout": {"Fetching origin\nEverything up-to-date\n"}, "disk_usage": {"4096"}})
					if err != nil || code != 200 {
						b.Errorf("job-update = %d %s %v", code, body, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		slices.Sort(latencies)
		p := func(q float64) time.Duration { return latencies[int(q*float64(len(latencies)-1))] }
		b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "jobs/s")
		b.ReportMetric(float64(p(0.50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
		b.Logf("%d jobs by %d minions over %d lorries in %v: %.0f jobs/s, give-me-job p50 %v p99 %v",
			len(latencies), minions, lorries, elapsed.Round(time.Millisecond),
			float64(len(latencies))/elapsed.Seconds(), p(0.50), p(0.99))
	}
}
