package routes

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
)

func ptr(n int64) *int64 { return &n }

// configureQueues reads a configuration whose lorries are in the queues
// named by in (path to queue).
func (ts *testServer) configureQueues(t *testing.T, queues []confgit.Queue, in map[string]string) {
	t.Helper()
	var ls []confgit.Lorry
	for _, p := range slices.Sorted(maps.Keys(in)) {
		q := in[p]
		ls = append(ls, confgit.Lorry{Path: p, Text: `{"` + p + `":{"type":"git","url":"u"}}`, Type: "git",
			Interval: time.Hour, Timeout: time.Minute, Queue: q})
	}
	ts.conf.cfg = &confgit.Config{Commit: "c1", Lorries: ls, Queues: queues}
	if code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{}); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
}

func TestQueuesOverHTTP(t *testing.T) {
	ts := newTestServer(t)
	ts.configureQueues(t, []confgit.Queue{{Name: "heavy", Threads: ptr(1), Sort: "queue-order"}},
		map[string]string{"h/a": "heavy", "h/b": "heavy", "s/a": "default"})
	if _, l := ts.call(t, "GET", "/1.0/lorry/h/a", nil); l["queue"] != "heavy" {
		t.Errorf("lorry h/a queue = %v; want heavy", l["queue"])
	}
	only := url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m1"}, "queues": {"heavy"}}
	if code, offer := ts.call(t, "POST", "/1.0/give-me-job", only); code != 200 || offer["path"] != "h/a" {
		t.Fatalf("give-me-job with queues heavy = %d %v; want h/a", code, offer)
	}
	only.Set("minion", "m2")
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", only); code != 204 {
		t.Errorf("give-me-job with heavy full = %d; want 204", code)
	}
	// The lorries were added at 1000: h/b has waited since then.
	ts.FakeClock.Set(1090)
	_, st := ts.call(t, "GET", "/1.0/status", nil)
	var heavy map[string]any
	for _, q := range st["queues"].([]any) {
		if q := q.(map[string]any); q["name"] == "heavy" {
			heavy = q
		}
	}
	if heavy == nil || heavy["threads"] != 1.0 || heavy["running"] != 1.0 || heavy["due"] != 1.0 ||
		heavy["oldest_due_wait"] != 90.0 || heavy["sort"] != "queue-order" {
		t.Errorf("status queues = %v; want heavy with threads 1, 1 running, 1 due for 90s", st["queues"])
	}

	if code, m := ts.call(t, "POST", "/1.0/set-host-max-jobs", url.Values{"host": {"build"}, "max_jobs": {"0"}}); code != 200 || m["max_jobs"] != 0.0 {
		t.Fatalf("set-host-max-jobs = %d %v", code, m)
	}
	if _, m := ts.call(t, "GET", "/1.0/get-host-max-jobs?host=build", nil); m["max_jobs"] != 0.0 || m["host"] != "build" {
		t.Errorf("get-host-max-jobs = %v; want 0", m)
	}
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"build"}, "pid": {"1"}, "minion": {"b1"}}); code != 204 {
		t.Errorf("give-me-job on a host capped at 0 = %d; want 204", code)
	}
	if code, m := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"other"}, "pid": {"1"}, "minion": {"o1"}, "ignore_queues": {"heavy"}}); code != 200 || m["path"] != "s/a" {
		t.Errorf("give-me-job ignoring heavy = %d %v; want s/a", code, m)
	}
	ts.call(t, "POST", "/1.0/set-host-max-jobs", url.Values{"host": {"build"}, "max_jobs": {""}})
	if _, m := ts.call(t, "GET", "/1.0/get-host-max-jobs?host=build", nil); m["max_jobs"] != nil {
		t.Errorf("get-host-max-jobs after clearing = %v; want null", m)
	}
	if code, _ := ts.call(t, "POST", "/1.0/set-host-max-jobs", url.Values{"max_jobs": {"1"}}); code != 400 {
		t.Errorf("set-host-max-jobs without host = %d; want 400", code)
	}
}

// Forty minions on four hosts race for jobs over HTTP against one state
// database. Counting the jobs each has been handed and not yet finished,
// no limit is ever exceeded: the global max_jobs, each queue's threads,
// the capped host's max_jobs, and no minion gets a queue it does not take.
func TestRacingMinionsKeepEveryLimit(t *testing.T) {
	ts := newTestServer(t)
	in := map[string]string{}
	for i := range 40 {
		in[fmt.Sprintf("heavy/%02d", i)] = "heavy"
		in[fmt.Sprintf("light/%02d", i)] = "light"
		in[fmt.Sprintf("other/%02d", i)] = "default"
	}
	total := int64(len(in))
	ts.configureQueues(t, []confgit.Queue{
		{Name: "heavy", Threads: ptr(2), Sort: "fifo"},
		{Name: "light", Threads: ptr(5), Sort: "queue-order"},
	}, in)
	ts.call(t, "POST", "/1.0/set-max-jobs", url.Values{"max_jobs": {"12"}})
	ts.call(t, "POST", "/1.0/set-host-max-jobs", url.Values{"host": {"h0"}, "max_jobs": {"3"}})
	limits := map[string]int64{"heavy": 2, "light": 5, "all": 12, "host h0": 3}

	var mu sync.Mutex
	now := map[string]int64{}
	peak := map[string]int64{}
	var done atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := fmt.Sprint("h", i%4)
			form := url.Values{"host": {host}, "pid": {"1"}, "minion": {fmt.Sprint("m", i)}}
			switch i % 10 {
			case 1:
				form.Set("queues", "heavy")
			case 2:
				form.Set("ignore_queues", "heavy,light")
			}
			for done.Load() < total {
				code, offer := ts.call(t, "POST", "/1.0/give-me-job", form)
				if code == 204 {
					continue
				}
				if code != 200 {
					t.Errorf("give-me-job = %d %v", code, offer)
					return
				}
				path := offer["path"].(string)
				q := in[path]
				if (i%10 == 1 && q != "heavy") || (i%10 == 2 && q != "default") {
					t.Errorf("minion m%d (%v) got %s of queue %s", i, form, path, q)
				}
				keys := []string{q, "all"}
				if host == "h0" {
					keys = append(keys, "host h0")
				}
				mu.Lock()
				for _, k := range keys {
					now[k]++
					peak[k] = max(peak[k], now[k])
					if lim, ok := limits[k]; ok && now[k] > lim {
						t.Errorf("%d jobs running for %s; its limit is %d", now[k], k, lim)
					}
				}
				mu.Unlock()
				// While this job runs, the jobs table agrees.
				_, st := ts.call(t, "GET", "/1.0/status", nil)
				if n := len(st["running_jobs"].([]any)); n > 12 {
					t.Errorf("status: %d running jobs; max_jobs is 12", n)
				}
				for _, sq := range st["queues"].([]any) {
					sq := sq.(map[string]any)
					if th, ok := sq["threads"].(float64); ok && sq["running"].(float64) > th {
						t.Errorf("status: queue %v", sq)
					}
				}
				mu.Lock()
				for _, k := range keys {
					now[k]--
				}
				mu.Unlock()
				id := strconv.FormatInt(int64(offer["job_id"].(float64)), 10)
				if code, m := ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {id}, "minion": form["minion"],
					"pid": {"1"}, "exit": {"0"}}); code != 200 {
					t.Errorf("job-update = %d %v", code, m)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := done.Load(); got != total {
		t.Errorf("%d jobs done; want %d", got, total)
	}
	t.Logf("peaks of jobs handed out and not yet finished: %v", peak)
}
