package routes

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"testing"
	"time"

	"lorrycontroller.dev/lc/control"
)

// BenchmarkListLorries answers lorries and status over loopback HTTP with
// 100,000 lorries in 50 queues, 1,000 finished jobs (100 of them failed,
// so 100 lorries are failing) and 8 running. It reports the time of each
// request, the size of its answer and what the request allocated (the
// WEBAPP's side and the client's, in one process): a page of 100 lorries,
// first and in the middle, by state, by queue and by path prefix; walking
// a queue of 2,000 lorries to its end a page of 100 at a time, decoding
// each page as a script would; and status with and without its run
// queue.
func BenchmarkListLorries(b *testing.B) {
	db := benchDB(b)
	fillQueue(b, db, 100_000)
	fillJobs(b, db, 1000, 8)
	fillQueues(b, db, 100_000, false)
	s := &Server{App: &control.App{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), GhostTimeout: 15 * time.Minute},
		InsecureNoAuth: true}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()

	// get answers the body of GET path, which must be 200.
	get := func(path string) []byte {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("GET %s = %d, %v", path, resp.StatusCode, err)
		}
		return body
	}
	// walk follows next from GET path to the end and answers the pages
	// and lorries it read.
	walk := func(path string) (pages, lorries int) {
		after := ""
		for {
			var page lorriesJSON
			if err := json.Unmarshal(get(path+"&after="+url.QueryEscape(after)), &page); err != nil {
				b.Fatal(err)
			}
			pages, lorries = pages+1, lorries+len(page.Lorries)
			if page.Next == nil {
				return pages, lorries
			}
			after = *page.Next
		}
	}
	type figures struct {
		time  time.Duration
		size  int
		alloc uint64
	}
	// measure is the median of 5 runs of do, after a first that warms
	// the statement caches, and what the last of them allocated.
	measure := func(do func() int) figures {
		do()
		var times []time.Duration
		var f figures
		for range 5 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			f.size = do()
			times = append(times, time.Since(start))
			runtime.ReadMemStats(&after)
			f.alloc = after.TotalAlloc - before.TotalAlloc
		}
		slices.Sort(times)
		f.time = times[len(times)/2]
		return f
	}
	request := func(path string) func() int { return func() int { return len(get(path)) } }
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	mib := func(n uint64) float64 { return float64(n) / (1 << 20) }

	for b.Loop() {
		var walkedPages, walkedLorries int
		results := []struct {
			name, metric string
			f            figures
		}{
			{name: "first page of 100", metric: "page", f: measure(request("/1.0/lorries"))},
			{name: "page of 100 in the middle", metric: "middle-page",
				f: measure(request("/1.0/lorries?after=bench/group500/"))},
			{name: "failing, page of 100", metric: "failing-page", f: measure(request("/1.0/lorries?state=failing"))},
			{name: "queue q07, page of 100", metric: "queue-page", f: measure(request("/1.0/lorries?queue=q07"))},
			{name: "prefix bench/group042/, page of 100", metric: "prefix-page",
				f: measure(request("/1.0/lorries?prefix=bench/group042/"))},
			{name: "walk of queue q07, pages of 100", metric: "walk-queue", f: measure(func() int {
				walkedPages, walkedLorries = walk("/1.0/lorries?queue=q07&limit=100")
				return 0
			})},
			{name: "status?run_queue=false", metric: "status-no-queue", f: measure(request("/1.0/status?run_queue=false"))},
			{name: "status", metric: "status", f: measure(request("/1.0/status"))},
		}
		if walkedPages != 20 || walkedLorries != 2000 {
			b.Errorf("the walk read %d pages of %d lorries; want 20 of 2,000", walkedPages, walkedLorries)
		}
		for _, r := range results {
			b.ReportMetric(ms(r.f.time), r.metric+"-ms")
			b.ReportMetric(mib(r.f.alloc), r.metric+"-alloc-MiB")
			size := ""
			if r.f.size > 0 {
				size = fmt.Sprintf(", %.1f KiB", float64(r.f.size)/1024)
			}
			b.Logf("100,000 lorries: %s: %v%s, %.1f MiB allocated", r.name, r.f.time.Round(10*time.Microsecond), size, mib(r.f.alloc))
		}
	}
}
