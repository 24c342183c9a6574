package routes

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"lorrycontroller/confgit"
	"lorrycontroller/confgit/confgittest"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
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
		_, err := tx.SetConfigLorries(context.Background(), want, statedb.Kept{})
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

// BenchmarkReadConfiguration reads a CONFGIT of 10,000 .lorry files holding
// 20,000 lorries through POST /1.0/read-configuration: the first read
// clones and fills the queue, the second finds the same commit.
func BenchmarkReadConfiguration(b *testing.B) {
	upstream := confgittest.BigRepo(b, 10_000, 2)
	var first, again time.Duration
	n := 0
	for b.Loop() {
		dir := b.TempDir()
		db, err := statedb.Open(context.Background(), filepath.Join(dir, "state.db"), statedb.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s := &Server{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Config: &confgit.Source{Dir: filepath.Join(dir, "confgit"), URL: upstream}}
		hs := httptest.NewServer(s.Handler())
		read := func() time.Duration {
			start := time.Now()
			resp, err := http.Post(hs.URL+"/1.0/read-configuration", "", nil)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), `"lorries":20000`) {
				b.Fatalf("read-configuration = %d %.200s", resp.StatusCode, body)
			}
			return time.Since(start)
		}
		first += read()
		again += read()
		n++
		hs.Close()
		db.Close()
	}
	b.ReportMetric(first.Seconds()/float64(n), "first-read-s")
	b.ReportMetric(again.Seconds()/float64(n), "unchanged-re-read-s")
	b.Logf("read-configuration of 10,000 files / 20,000 lorries: first %v, unchanged re-read %v",
		(first / time.Duration(n)).Round(time.Millisecond), (again / time.Duration(n)).Round(time.Millisecond))
}

// BenchmarkWebappMemory starts the real WEBAPP on a queue of 100,000
// lorries, has it answer status, status-html, list-queue and a round of
// jobs, and reports its resident memory.
func BenchmarkWebappMemory(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "lorry-controller-webapp")
	if out, err := exec.Command("go", "build", "-o", bin, "lorrycontroller/cmd/webapp").CombinedOutput(); err != nil {
		b.Fatalf("build webapp: %v\n%s", err, out)
	}
	dbPath := filepath.Join(dir, "state.db")
	db, err := statedb.Open(context.Background(), dbPath, statedb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	fillQueue(b, db, 100_000)
	db.Close()

	for b.Loop() {
		addrFile := filepath.Join(dir, "addr")
		os.Remove(addrFile)
		cmd := exec.Command(bin, "--statedb", dbPath, "--listen", "127.0.0.1:0", "--addr-file", addrFile,
			"--configuration-directory", filepath.Join(dir, "confgit"), "--log-level", "warn")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		var addr []byte
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if addr, err = os.ReadFile(addrFile); err == nil {
				break
			}
		}
		base := "http://" + strings.TrimSpace(string(addr))
		get := func(path string) int {
			resp, err := http.Get(base + path)
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return int(n)
		}
		statusBytes := get("/1.0/status")
		get("/1.0/status-html")
		get("/1.0/list-queue")
		for i := range 200 {
			resp, err := http.PostForm(base+"/1.0/give-me-job", url.Values{"host": {"b"}, "pid": {fmt.Sprint(i + 1)}, "minion": {fmt.Sprint("m", i)}})
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if err != nil {
			b.Fatal(err)
		}
		rss, hwm := procField(string(status), "VmRSS:"), procField(string(status), "VmHWM:")
		b.ReportMetric(float64(rss)/1024, "rss-MiB")
		b.ReportMetric(float64(hwm)/1024, "peak-rss-MiB")
		b.Logf("WEBAPP with 100,000 lorries: resident %d MiB, peak %d MiB (status answer %d MiB)",
			rss/1024, hwm/1024, statusBytes>>20)
	}
}

// procField reads a "Name:  N kB" line of /proc/PID/status, in KiB.
func procField(status, name string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			var n int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &n)
			return n
		}
	}
	return -1
}
