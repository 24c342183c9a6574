package routes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/confgit/confgittest"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/cron"
	"lorrycontroller.dev/lc/hosts/hoststest"
	"lorrycontroller.dev/lc/hosts/upstream"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/wire"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { dbtest.Main(m, statedb.Migrate) }

// benchDB is a new state database for a benchmark, closed when it ends.
func benchDB(b *testing.B) *statedb.DB {
	b.Helper()
	db, err := statedb.Open(context.Background(), filepath.Join(b.TempDir(), "state.db"), statedb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// fillQueue puts n lorries, all due, straight into db.
func fillQueue(tb testing.TB, db *statedb.DB, n int) {
	tb.Helper()
	want := make([]statedb.NewLorry, n)
	for i := range want {
		p := fmt.Sprintf("bench/group%03d/repo%06d", i%1000, i)
		want[i] = statedb.NewLorry{Path: p, Kind: wire.KindLorry, Interval: 86400, Timeout: 3600,
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
	const lorries = 100_000
	db := benchDB(b)
	fillQueue(b, db, lorries)
	jobCycles(b, db, fmt.Sprintf("%d lorries", lorries))
}

// BenchmarkJobCycleBackends runs, in one run, the job cycle of
// BenchmarkJobCycle on SQLite, on PostgreSQL with one WEBAPP, and on
// PostgreSQL with two WEBAPPs (two servers, each with its own pool of
// connections, in this process), the minions spread over them.
func BenchmarkJobCycleBackends(b *testing.B) {
	const lorries = 100_000
	ctx := context.Background()
	open := func(place string) *statedb.DB {
		db, err := statedb.Open(ctx, place, statedb.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
	for _, c := range []struct {
		name    string
		place   func() string
		webapps int
	}{
		{"sqlite", func() string { return filepath.Join(b.TempDir(), "state.db") }, 1},
		{"postgres-1", func() string { return dbtest.Database(b) }, 1},
		{"postgres-2", func() string { return dbtest.Database(b) }, 2},
	} {
		b.Run(c.name, func(b *testing.B) {
			place := c.place()
			var bases []string
			for i := range c.webapps {
				db := open(place)
				if i == 0 {
					fillQueue(b, db, lorries)
				}
				hs := httptest.NewServer(benchServer(db).Handler())
				b.Cleanup(hs.Close)
				bases = append(bases, hs.URL)
			}
			for b.Loop() {
				r := runJobCyclesOn(b, bases)
				b.ReportMetric(r.jobsPerSec(), "jobs/s")
				b.ReportMetric(ms(r.p(0.99)), "p99-ms")
				b.Logf("%s, %d WEBAPPs, %d lorries: %s", c.name, c.webapps, lorries, r)
			}
		})
	}
}

// benchQueues is how many queue sections fillQueues makes.
const benchQueues = 50

// fillQueues makes benchQueues queues and spreads the lorries of the queue
// over them, one after the other: q00, q01, ... Their limits are assorted:
// by the queue's number modulo 5, none, 0 (always full, so its lorries
// stay due however many jobs run), 1, 2 and 8; their sorts go round
// queue-order, fifo and lifo. Every tenth queue has a threads-schedule as
// well, whose entry in force says the same as its threads, so that the
// schedule is read at every hand-out without changing the limits. With
// full, every queue has threads 0, the default queue too.
func fillQueues(tb testing.TB, db *statedb.DB, lorries int, full bool) {
	tb.Helper()
	ctx := context.Background()
	limits := []*int64{nil, ptr(0), ptr(1), ptr(2), ptr(8)}
	sorts := []string{statedb.SortQueueOrder, statedb.SortFIFO, statedb.SortLIFO}
	c := statedb.QueueConfig{Lorries: make(map[string]string, lorries)}
	for i := range benchQueues {
		q := statedb.Queue{Name: fmt.Sprintf("q%02d", i), Threads: limits[i%len(limits)], Sort: sorts[i%len(sorts)]}
		if full {
			q.Threads = ptr(0)
		} else if i%10 == 2 {
			// Fired at midnight UTC, before now: 1 thread, as Threads says.
			q.Schedule = `[{"schedule": {"cron": "0 0 * * *", "timezone": "UTC",
				"dst_fixes": ["skip", "repeat_use_only_early"],
				"max_shift_seconds_for_unskip_and_do_not_repeat": 3600}, "threads": 1}]`
		}
		c.Queues = append(c.Queues, q)
	}
	if full {
		c.Queues = append(c.Queues, statedb.Queue{Name: statedb.DefaultQueue, Threads: ptr(0)})
	}
	for i := range lorries {
		c.Lorries[fmt.Sprintf("bench/group%03d/repo%06d", i%1000, i)] = fmt.Sprintf("q%02d", i%benchQueues)
	}
	err := db.Update(ctx, func(tx *statedb.Tx) error { return tx.SetConfigQueues(ctx, c) })
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkJobCycleQueues is BenchmarkJobCycle with the 100,000 lorries
// spread over 50 queues of assorted limits (fillQueues): each give-me-job
// counts the running jobs of every queue, leaves out the full ones and
// looks for the first due lorry of each open queue in its index.
func BenchmarkJobCycleQueues(b *testing.B) {
	const lorries = 100_000
	db := benchDB(b)
	fillQueue(b, db, lorries)
	fillQueues(b, db, lorries, false)
	jobCycles(b, db, fmt.Sprintf("%d lorries in %d queues", lorries, benchQueues))
}

// jobCycles has 32 minions run 20,000 jobs from db over loopback HTTP,
// each a give-me-job and a final job-update, and reports jobs per second
// and the latency of give-me-job.
func jobCycles(b *testing.B, db *statedb.DB, what string) {
	s := benchServer(db)
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	for b.Loop() {
		r := runJobCycles(b, hs.URL)
		b.ReportMetric(r.jobsPerSec(), "jobs/s")
		b.ReportMetric(ms(r.p(0.50)), "p50-ms")
		b.ReportMetric(ms(r.p(0.99)), "p99-ms")
		b.ReportMetric(ms(r.perJob), "cpu-ms/job")
		b.Logf("%s over %s", r, what)
	}
}

// benchServer is a WEBAPP over db for the job cycle benchmarks.
func benchServer(db *statedb.DB) *Server {
	return &Server{App: &control.App{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), GhostTimeout: time.Hour}, InsecureNoAuth: true}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cycleResult is what one round of runJobCycles measured.
type cycleResult struct {
	jobs, minions int
	elapsed       time.Duration
	// latencies are those of give-me-job, sorted; updates those of the
	// final job-update, sorted.
	latencies, updates []time.Duration
	perJob             time.Duration // CPU time, server and clients
}

func (r cycleResult) jobsPerSec() float64 { return float64(r.jobs) / r.elapsed.Seconds() }

// p is the q quantile of give-me-job's latency.
func (r cycleResult) p(q float64) time.Duration {
	return r.latencies[int(q*float64(len(r.latencies)-1))]
}

// worstUpdate is the longest a job-update took.
func (r cycleResult) worstUpdate() time.Duration { return r.updates[len(r.updates)-1] }

func (r cycleResult) String() string {
	return fmt.Sprintf("%d jobs by %d minions in %v: %.0f jobs/s, give-me-job p50 %v p99 %v, job-update p99 %v max %v, %v of CPU a job (server and clients)",
		r.jobs, r.minions, r.elapsed.Round(time.Millisecond), r.jobsPerSec(), r.p(0.50), r.p(0.99),
		r.updates[int(0.99*float64(len(r.updates)-1))], r.worstUpdate(), r.perJob.Round(time.Microsecond))
}

// runJobCycles has 32 minions run 20,000 jobs from the WEBAPP at base,
// each a give-me-job and a final job-update, and measures them.
func runJobCycles(b *testing.B, base string) cycleResult {
	return runJobCyclesOn(b, []string{base})
}

// runJobCyclesOn is runJobCycles with the minions spread over the
// WEBAPPs at bases, minion m asking bases[m%len(bases)].
func runJobCyclesOn(b *testing.B, bases []string) cycleResult {
	const (
		minions = 32
		jobs    = 20_000
	)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: minions}}
	defer client.CloseIdleConnections()
	post := func(m int, path string, form url.Values) (int, []byte, error) {
		resp, err := client.Post(bases[m%len(bases)]+path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, err
	}

	var done atomic.Int64
	var mu sync.Mutex
	r := cycleResult{minions: minions, latencies: make([]time.Duration, 0, jobs), updates: make([]time.Duration, 0, jobs)}
	var wg sync.WaitGroup
	cpu0 := cpuTime(b)
	start := time.Now()
	for m := range minions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("bench-%d", m)
			mine := make([]time.Duration, 0, jobs/minions)
			updates := make([]time.Duration, 0, jobs/minions)
			defer func() {
				mu.Lock()
				r.latencies, r.updates = append(r.latencies, mine...), append(r.updates, updates...)
				mu.Unlock()
			}()
			for done.Add(1) <= jobs {
				t0 := time.Now()
				code, body, err := post(m, "/1.0/give-me-job", url.Values{"host": {"bench"}, "pid": {fmt.Sprint(m + 1)}, "minion": {name}})
				mine = append(mine, time.Since(t0))
				if err != nil || code != 200 {
					b.Errorf("give-me-job = %d %s %v", code, body, err)
					return
				}
				id := string(body[len(`{"job_id":`):])
				id = id[:strings.IndexByte(id, ',')]
				t0 = time.Now()
				code, body, err = post(m, "/1.0/job-update", url.Values{"job_id": {id}, "minion": {name},
					"pid": {fmt.Sprint(m + 1)}, "exit": {"0"}, "stdout": {"Fetching origin\nEverything up-to-date\n"}, "disk_usage": {"4096"}})
				updates = append(updates, time.Since(t0))
				if err != nil || code != 200 {
					b.Errorf("job-update = %d %s %v", code, body, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	r.jobs = len(r.latencies)
	if r.jobs == 0 || len(r.updates) == 0 {
		b.Fatal("no job was run")
	}
	r.perJob = (cpuTime(b) - cpu0) / time.Duration(r.jobs)
	slices.Sort(r.latencies)
	slices.Sort(r.updates)
	return r
}

// fillSchedules gives a daily schedule to n of the lorries fillQueue
// made, every fifth one from the first: at minute i%60 of hour (i/60)%24
// UTC, so that their events spread over the day, a few a minute, and
// each is first due at its event, as read-configuration makes it.
func fillSchedules(tb testing.TB, db *statedb.DB, lorries, n int) {
	tb.Helper()
	ctx := context.Background()
	step := lorries / n
	err := db.Update(ctx, func(tx *statedb.Tx) error {
		want := make([]statedb.NewLorry, lorries)
		for i := range want {
			p := fmt.Sprintf("bench/group%03d/repo%06d", i%1000, i)
			want[i] = statedb.NewLorry{Path: p, Kind: wire.KindLorry, Interval: 86400, Timeout: 3600,
				Text: `{"` + p + `":{"type":"git","url":"https://git.example.org/` + p + `.git"}}`}
			if j := i / step; i%step == 0 && j < n {
				text := fmt.Sprintf(`{"minute": %d, "hour": %d, "timezone": "UTC", "dst_fixes": ["skip", "repeat_use_only_early"],
					"max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`, j%60, (j/60)%24)
				it, err := cron.Parse([]byte(text), nil)
				if err != nil {
					return err
				}
				first, ok := it.FirstMatch(tx.Now)
				if !ok {
					return fmt.Errorf("schedule %s has no event", text)
				}
				want[i].Schedule, want[i].FirstDue = text, first
			}
		}
		_, err := tx.SetConfigLorries(ctx, want, statedb.Kept{})
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkJobCycleSchedules runs, in the same run, the job cycle of
// BenchmarkJobCycle over 100,000 lorries, and the same over 100,000
// lorries of which 20,000 have a daily schedule, each with the Scheduler
// ticking every second beside it (five times as often as the WEBAPP's).
// It reports both rates and their ratio, give-me-job's p99 and the
// longest job-update of the scheduled cycle.
func BenchmarkJobCycleSchedules(b *testing.B) {
	const lorries, scheduled = 100_000, 20_000
	plainDB, schedDB := benchDB(b), benchDB(b)
	fillQueue(b, plainDB, lorries)
	fillSchedules(b, schedDB, lorries, scheduled)
	cycle := func(db *statedb.DB) (cycleResult, control.TickWork) {
		s := benchServer(db)
		hs := httptest.NewServer(s.Handler())
		defer hs.Close()
		ctx, cancel := context.WithCancel(context.Background())
		sc := &control.Scheduler{App: s.App, Every: time.Second}
		var wg sync.WaitGroup
		wg.Go(func() { sc.Run(ctx) })
		r := runJobCycles(b, hs.URL)
		cancel()
		wg.Wait()
		// One more tick, to show what a tick does at the end.
		work, err := s.Tick(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		return r, work
	}
	round := 0
	for b.Loop() {
		// Which runs first alternates, so that a load the machine has
		// meanwhile weighs on both alike over the rounds.
		var plain, sched cycleResult
		var work control.TickWork
		if round%2 == 0 {
			plain, _ = cycle(plainDB)
			sched, work = cycle(schedDB)
		} else {
			sched, work = cycle(schedDB)
			plain, _ = cycle(plainDB)
		}
		round++
		ratio := sched.jobsPerSec() / plain.jobsPerSec()
		cpuRatio := float64(plain.perJob) / float64(sched.perJob)
		b.ReportMetric(plain.jobsPerSec(), "plain-jobs/s")
		b.ReportMetric(sched.jobsPerSec(), "scheduled-jobs/s")
		b.ReportMetric(ratio, "ratio")
		b.ReportMetric(cpuRatio, "cpu-ratio")
		b.ReportMetric(ms(sched.p(0.99)), "scheduled-p99-ms")
		b.ReportMetric(ms(sched.worstUpdate()), "scheduled-update-max-ms")
		b.Logf("plain: %s over %d lorries", plain, lorries)
		b.Logf("scheduled: %s over %d lorries, %d with a schedule (last Scheduler run: %+v)", sched, lorries, scheduled, work)
		b.Logf("scheduled/plain: jobs/s %.2f, by CPU a job %.2f; scheduled give-me-job p99 %v, longest job-update %v",
			ratio, cpuRatio, sched.p(0.99), sched.worstUpdate())
	}
}

// cpuTime is the CPU time the process has used, user and system: a figure
// that another load on the machine changes far less than the time taken.
func cpuTime(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIdlePollQueues has 8 minions ask give-me-job over loopback
// HTTP with 100,000 lorries, all due, in 50 queues when there is nothing
// to hand out: when every queue is full (threads 0, the default queue's
// too), and when the one open queue, the default, has nothing due, so
// that every poll looks into it. (When no lorry at all is due, give-me-job
// answers from one probe of an index before it reads any queue.) It
// reports answers per second and their latency.
func BenchmarkIdlePollQueues(b *testing.B) {
	const lorries = 100_000
	for _, tc := range []struct {
		name string
		open bool
	}{
		{name: "all-full"},
		{name: "open-queue-not-due", open: true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			db := benchDB(b)
			fillQueue(b, db, lorries)
			fillQueues(b, db, lorries, true)
			if tc.open {
				err := db.Update(context.Background(), func(tx *statedb.Tx) error {
					qs, err := tx.Queues(context.Background())
					if err != nil {
						return err
					}
					qs = slices.DeleteFunc(qs, func(q statedb.Queue) bool { return q.Name == statedb.DefaultQueue })
					c := statedb.QueueConfig{Queues: qs, Lorries: map[string]string{}}
					for i := range lorries {
						c.Lorries[fmt.Sprintf("bench/group%03d/repo%06d", i%1000, i)] = fmt.Sprintf("q%02d", i%benchQueues)
					}
					return tx.SetConfigQueues(context.Background(), c)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			idlePolls(b, db, fmt.Sprintf("%d lorries in %d queues, %s", lorries, benchQueues, tc.name))
		})
	}
}

// idlePolls has 8 minions ask give-me-job 20,000 times in all, expecting
// 204 each time, and reports answers per second and their latency.
func idlePolls(b *testing.B, db *statedb.DB, what string) {
	const (
		minions = 8
		polls   = 20_000
	)
	s := &Server{App: &control.App{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), GhostTimeout: time.Hour}, InsecureNoAuth: true}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: minions}}
	for b.Loop() {
		var done atomic.Int64
		var mu sync.Mutex
		latencies := make([]time.Duration, 0, polls)
		var wg sync.WaitGroup
		start := time.Now()
		for m := range minions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				form := url.Values{"host": {"bench"}, "pid": {fmt.Sprint(m + 1)}, "minion": {fmt.Sprintf("bench-%d", m)}}.Encode()
				mine := make([]time.Duration, 0, polls/minions)
				defer func() { mu.Lock(); latencies = append(latencies, mine...); mu.Unlock() }()
				for done.Add(1) <= polls {
					t0 := time.Now()
					resp, err := client.Post(hs.URL+"/1.0/give-me-job", "application/x-www-form-urlencoded", strings.NewReader(form))
					if err != nil {
						b.Errorf("give-me-job: %v", err)
						return
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					mine = append(mine, time.Since(t0))
					if err != nil || resp.StatusCode != http.StatusNoContent {
						b.Errorf("give-me-job = %d %.200s %v; want 204", resp.StatusCode, body, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		slices.Sort(latencies)
		p := func(q float64) time.Duration { return latencies[int(q*float64(len(latencies)-1))] }
		b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "polls/s")
		b.ReportMetric(float64(p(0.50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
		b.Logf("%d idle give-me-job by %d minions over %s in %v: %.0f a second, p50 %v p99 %v",
			len(latencies), minions, what, elapsed.Round(time.Millisecond),
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
		s := &Server{App: &control.App{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Config: &confgit.Source{Dir: filepath.Join(dir, "confgit"), URL: upstream}}, InsecureNoAuth: true}
		hs := httptest.NewServer(s.Handler())
		read := func() time.Duration {
			start := time.Now()
			resp, err := http.Post(hs.URL+"/1.0/read-configuration?wait=3600", "", nil)
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
	if out, err := exec.Command("go", "build", "-o", bin, "lorrycontroller.dev/lc/cmd/webapp").CombinedOutput(); err != nil {
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

// listTimes hears the WEBAPP's "host listed" log lines, which say how
// long the listing took and how long it took with its apply.
type listTimes struct {
	mu          sync.Mutex
	list, total time.Duration
}

func (h *listTimes) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *listTimes) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *listTimes) WithGroup(string) slog.Handler                { return h }

func (h *listTimes) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "host listed" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "list_ms":
			h.list += time.Duration(a.Value.Int64()) * time.Millisecond
		case "total_ms":
			h.total += time.Duration(a.Value.Int64()) * time.Millisecond
		}
		return true
	})
	return nil
}

// BenchmarkListHost20k lists a fake GitLab of 20,000 projects (100 a
// page) through POST /1.0/force-ls-troves over loopback HTTP, with
// 100,000 other lorries in the queue and 8 minions asking for jobs and
// finishing them the whole time. It reports how long the listing and its
// apply took, first with every lorry new and then unchanged, and how
// give-me-job answered meanwhile: how many calls, the slowest and p99.
func BenchmarkListHost20k(b *testing.B) {
	const (
		projects = 20_000
		queued   = 100_000
		minions  = 8
		token    = "glpat-bench"
	)
	ctx := context.Background()
	db, err := statedb.Open(ctx, filepath.Join(b.TempDir(), "state.db"), statedb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	fillQueue(b, db, queued)

	gl := hoststest.NewGitLab(b, hoststest.GitLabOptions{Token: token})
	gl.AddProjects(hoststest.GitLabProjects(projects, "big"))
	sec, err := json.Marshal(gl.Section(map[string]any{"private-token": token,
		"prefixmap": map[string]any{"big": "mirrors/big", "bigish": "mirrors/bigish"}}))
	if err != nil {
		b.Fatal(err)
	}
	h, err := confgit.ParseHostSection(string(sec))
	if err != nil {
		b.Fatal(err)
	}
	err = db.Update(ctx, func(tx *statedb.Tx) error {
		_, err := tx.SetConfigHosts(ctx, []statedb.Host{{Name: h.Name, Type: h.Type, Protocol: h.Protocol,
			LsInterval: int64(h.LsInterval.Seconds()), Interval: int64(h.Interval.Seconds()),
			Timeout: int64(h.Timeout.Seconds()), Section: h.Section}})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}

	times := &listTimes{}
	log := slog.New(times)
	s := &Server{App: &control.App{DB: db, Log: log, GhostTimeout: time.Hour, ListHost: control.NewHostLister(upstream.ListerOptions{Logger: log})}, InsecureNoAuth: true}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: minions + 1}}
	post := func(path string, form url.Values) (int, []byte, error) {
		resp, err := client.Post(hs.URL+path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, err
	}

	// call is one give-me-job: when it was asked and how long it took.
	type call struct {
		at   time.Time
		took time.Duration
	}
	var (
		mu    sync.Mutex
		calls []call
	)
	minion := func(stop <-chan struct{}, m int) {
		name, pid := fmt.Sprintf("bench-%d", m), fmt.Sprint(m+1)
		for {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			code, body, err := post("/1.0/give-me-job", url.Values{"host": {"bench"}, "pid": {pid}, "minion": {name}})
			took := time.Since(t0)
			if err != nil || (code != http.StatusOK && code != http.StatusNoContent) {
				b.Errorf("give-me-job = %d %s %v", code, body, err)
				return
			}
			mu.Lock()
			calls = append(calls, call{t0, took})
			mu.Unlock()
			if code == http.StatusNoContent {
				continue
			}
			var job struct {
				JobID int64 `json:"job_id"`
			}
			if err := json.Unmarshal(body, &job); err != nil {
				b.Errorf("give-me-job answer %s: %v", body, err)
				return
			}
			code, body, err = post("/1.0/job-update", url.Values{"job_id": {fmt.Sprint(job.JobID)}, "minion": {name},
				"pid": {pid}, "exit": {"0"}, "stdout": {"Everything up-to-date\n"}, "disk_usage": {"4096"}})
			if err != nil || code != http.StatusOK {
				b.Errorf("job-update = %d %s %v", code, body, err)
				return
			}
		}
	}
	// list forces a listing while the minions work, and returns how long
	// it took and the give-me-job calls asked while it ran.
	list := func(wantAdded int) (time.Duration, []time.Duration) {
		mu.Lock()
		calls = calls[:0]
		mu.Unlock()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for m := range minions {
			wg.Add(1)
			go func() { defer wg.Done(); minion(stop, m) }()
		}
		// Let the minions get going, so the listing meets a busy queue.
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		code, body, err := post("/1.0/force-ls-troves", url.Values{})
		elapsed := time.Since(start)
		close(stop)
		wg.Wait()
		var res struct {
			Hosts []lsResult `json:"hosts"`
		}
		if err != nil || code != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res.Hosts) != 1 ||
			!res.Hosts[0].OK || res.Hosts[0].Repos != projects || res.Hosts[0].Added != wantAdded {
			b.Fatalf("force-ls-troves = %d %.300s %v; want %d repos, %d added", code, body, err, projects, wantAdded)
		}
		mu.Lock()
		defer mu.Unlock()
		var during []time.Duration
		for _, c := range calls {
			if !c.at.Before(start) && c.at.Before(start.Add(elapsed)) {
				during = append(during, c.took)
			}
		}
		return elapsed, during
	}

	var first, again, listing, applying time.Duration
	var during []time.Duration
	n := 0
	for b.Loop() {
		times.mu.Lock()
		times.list, times.total = 0, 0
		times.mu.Unlock()
		d, calls := list(projects)
		first += d
		during = append(during, calls...)
		times.mu.Lock()
		listing, applying = listing+times.list, applying+times.total-times.list
		times.mu.Unlock()
		d, _ = list(0)
		again += d
		n++
		// Start the next round without the host's lorries.
		if err := db.Update(ctx, func(tx *statedb.Tx) error {
			_, _, err := tx.SetHostLorries(ctx, h.Name, nil)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	if len(during) == 0 {
		b.Fatal("no give-me-job call was answered during the listing")
	}
	slices.Sort(during)
	p99 := during[int(0.99*float64(len(during)-1))]
	worst := during[len(during)-1]
	firstAvg, againAvg := first/time.Duration(n), again/time.Duration(n)
	listAvg, applyAvg := listing/time.Duration(n), applying/time.Duration(n)
	b.ReportMetric(firstAvg.Seconds(), "list+apply-s")
	b.ReportMetric(listAvg.Seconds(), "list-s")
	b.ReportMetric(applyAvg.Seconds(), "apply-s")
	b.ReportMetric(againAvg.Seconds(), "unchanged-relist-s")
	b.ReportMetric(float64(len(during))/float64(n), "give-me-job-during")
	b.ReportMetric(float64(p99.Microseconds())/1000, "give-me-job-p99-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "give-me-job-max-ms")
	b.Logf("force-ls-troves of %d projects beside %d queued lorries, %d minions working: list+apply %v "+
		"(listing %v, apply %v; unchanged re-list %v); %d give-me-job calls answered during it, p99 %v, max %v",
		projects, queued, minions, firstAvg.Round(time.Millisecond), listAvg.Round(time.Millisecond),
		applyAvg.Round(time.Millisecond), againAvg.Round(time.Millisecond),
		len(during)/n, p99.Round(time.Microsecond), worst.Round(time.Microsecond))
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
