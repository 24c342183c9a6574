package routes

import (
	"context"
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

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
)

// statusPageLimit is the most the status page may weigh, whatever the size
// of the queue.
const statusPageLimit = 1 << 20

// fillJobs runs n jobs straight through db, as minions would: every tenth
// fails with an error tail of about 2 KiB; running of them are left
// running, with output.
func fillJobs(tb testing.TB, db *statedb.DB, n, running int) {
	tb.Helper()
	ctx := context.Background()
	line := strings.Repeat("remote: Counting objects, compressing, writing … ", 2) + "\n"
	for i := range n + running {
		m := statedb.MinionID{Name: fmt.Sprintf("minion-%d", i%8), Host: "build", PID: int64(100 + i%8)}
		if i >= n {
			m = statedb.MinionID{Name: fmt.Sprintf("busy-%d", i), Host: "build", PID: int64(1000 + i)}
		}
		err := db.Update(ctx, func(tx *statedb.Tx) error {
			a, err := tx.GiveMeJob(ctx, m)
			if err != nil || a.Idle != "" {
				return fmt.Errorf("job %d: %v %s", i, err, a.Idle)
			}
			u := statedb.JobUpdate{ID: a.Job.ID, Minion: m, Stdout: []byte(strings.Repeat(line, 20))}
			if i < n {
				code := int64(0)
				if i%10 == 0 {
					code = 1
				}
				du := int64(1 << 20)
				u.Exit, u.DiskUsage = &code, &du
			}
			_, err = tx.UpdateJob(ctx, u)
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkStatusPages answers status-html and status with 100,000
// lorries and 1,000 finished jobs (100 of them failed) and 8 running, and
// reports the time of each request and the size of its answer.
func BenchmarkStatusPages(b *testing.B) {
	dir := b.TempDir()
	db, err := statedb.Open(context.Background(), filepath.Join(dir, "state.db"), statedb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	fillQueue(b, db, 100_000)
	fillJobs(b, db, 1000, 8)
	s := &Server{App: &control.App{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), GhostTimeout: 15 * time.Minute},
		StatusHTML: filepath.Join(dir, "status.html"), InsecureNoAuth: true}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()

	get := func(path string) (time.Duration, int) {
		start := time.Now()
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("GET %s = %d, %v", path, resp.StatusCode, err)
		}
		return time.Since(start), int(n)
	}
	// median of 5 runs, after a first that warms the statement caches.
	measure := func(path string) (time.Duration, int) {
		get(path)
		var times []time.Duration
		var size int
		for range 5 {
			d, n := get(path)
			times, size = append(times, d), n
		}
		slices.Sort(times)
		return times[len(times)/2], size
	}
	for b.Loop() {
		htmlTime, htmlSize := measure("/1.0/status-html")
		filteredTime, filteredSize := measure("/1.0/status-html?path=group042/&page=3")
		jsonTime, jsonSize := measure("/1.0/status")
		onDisk, err := os.Stat(s.StatusHTML)
		if err != nil {
			b.Fatal(err)
		}
		if htmlSize > statusPageLimit || onDisk.Size() > statusPageLimit {
			b.Errorf("status-html is %d bytes, its copy %d; want at most %d", htmlSize, onDisk.Size(), statusPageLimit)
		}
		b.ReportMetric(float64(htmlTime.Microseconds())/1000, "status-html-ms")
		b.ReportMetric(float64(htmlSize)/1024, "status-html-KiB")
		b.ReportMetric(float64(filteredTime.Microseconds())/1000, "filtered-ms")
		b.ReportMetric(float64(jsonTime.Microseconds())/1000, "status-ms")
		b.ReportMetric(float64(jsonSize)/(1<<20), "status-MiB")
		b.Logf("100,000 lorries, 1,000 finished jobs: status-html %v, %d KiB (on-disk copy %d KiB); "+
			"filtered status-html %v, %d KiB; status %v, %.1f MiB",
			htmlTime.Round(time.Millisecond), htmlSize>>10, onDisk.Size()>>10,
			filteredTime.Round(time.Millisecond), filteredSize>>10, jsonTime.Round(time.Millisecond), float64(jsonSize)/(1<<20))
	}
}

// TestStatusPageStaysSmall checks the bound of the benchmark on a queue
// large enough to need paging, with failing lorries whose errors are long.
func TestStatusPageStaysSmall(t *testing.T) {
	ts := newTestServer(t)
	fillQueue(t, ts.DB, 3000)
	fillJobs(t, ts.DB, 600, 8)
	b := newBrowser(t, ts)
	body := b.page("/1.0/status-html", 200)
	if len(body) > statusPageLimit {
		t.Errorf("status page is %d bytes; want at most %d", len(body), statusPageLimit)
	}
	if got := strings.Count(body, `<td data-label="#"`); got != queuePage {
		t.Errorf("status page lists %d lorries of the queue; want a page of %d", got, queuePage)
	}
	failing := body[strings.Index(body, `id="failing"`):strings.Index(body, `id="queue"`)]
	if got := strings.Count(failing, `<pre class="err" `); got != failingShown {
		t.Errorf("status page lists %d failing lorries; want %d", got, failingShown)
	}
	if !strings.Contains(failing, "All 60 failing lorries") {
		t.Errorf("status page does not link to the rest of the failing lorries")
	}
	running := body[strings.Index(body, `id="running"`):strings.Index(body, `id="failing"`)]
	if got := strings.Count(running, `action="/1.0/stop-job-html"`); got != 8 {
		t.Errorf("status page lists %d running jobs with a stop button; want 8", got)
	}
}
