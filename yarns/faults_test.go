package yarns

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// The fault campaign: make faults runs it for FAULTS_DURATION, and make
// test its short form when FAULTS_SHORT=1.
const (
	// envFaults selects TestFaults: "short" injects each fault once,
	// alone; a duration does that, then mixes faults until it is up.
	envFaults = "LORRY_CONTROLLER_TEST_FAULTS"
	// envFaultsSeed is the seed of the schedule, to replay one; the
	// campaign prints the seed it used.
	envFaultsSeed = "LORRY_CONTROLLER_TEST_FAULTS_SEED"
	// envClockOffset is how far ahead of the machine's clock a WEBAPP's
	// clock runs, in a test: the clock-ahead fault sets it on one
	// WEBAPP. A WEBAPP that does not read it runs on the machine's
	// clock, and the fault is then a restart.
	envClockOffset = "LORRY_CONTROLLER_TEST_CLOCK_OFFSET"
)

// The campaign's installation: two WEBAPPs, six minions, and lorries in
// two queues on one host. The narrow queue's jobs are long, so that a job
// can outlive the lease of a minion stopped under it; the wide queue's are
// short, so that many run.
const (
	faultsMinions       = 6
	faultsMaxJobs       = 4
	faultsNarrowThreads = 2
	faultsNarrowLorries = 4
	faultsWideLorries   = 12
	faultsNarrowLines   = 60
	faultsNarrowPause   = "0.4"
	faultsWideLines     = 12
	faultsWidePause     = "0.1"

	// The job's lease is longer than two requests of the latency fault
	// and an update interval: a minion whose every request takes 2 s
	// delivers an update within each lease, as the docs ask.
	faultsLease        = 6 * time.Second
	faultsKillGrace    = time.Second
	faultsGhostTimeout = 10 * time.Second
	faultsReplicaLease = 3 * time.Second
	faultsUpdate       = 300 * time.Millisecond

	// faultsResumeBound is the longest hand-outs may take to resume
	// after a fault's end before it is an anomaly. The figure itself
	// is reported; the bound is generous, so that a slow machine is no
	// anomaly.
	faultsResumeBound = time.Minute
)

// TestFaults is the fault campaign: real WEBAPPs, two on a PostgreSQL
// cluster of their own, and real minions that reach them through links
// the campaign controls, running jobs that print numbered lines. Faults
// are injected, each alone and then mixed, from a seeded schedule:
// minions and WEBAPPs stopped (SIGSTOP) past their leases, a WEBAPP
// inside a write transaction and outside one, minions and WEBAPPs killed
// (SIGKILL) and started again, answers to job-update dropped after the
// WEBAPP acted, 1-2 s of latency on the minions' links, a WEBAPP's clock
// 90 s ahead, PostgreSQL restarted and its sessions ended. The queue is
// then stopped, and the checker reads the jobs' own records, the STATEDB
// and the WEBAPPs' logs: no lorry had two live job processes at once, no
// limit was exceeded, each job ended once with the status of what
// happened to its process, each line printed is stored once and in
// order, and hand-outs resumed after each fault.
func TestFaults(t *testing.T) {
	mode := os.Getenv(envFaults)
	if mode == "" {
		t.Skipf("the fault campaign runs with %s=short or =DURATION (make faults)", envFaults)
	}
	var mixFor time.Duration
	if mode != "short" {
		d, err := time.ParseDuration(mode)
		if err != nil {
			t.Fatalf("%s=%q: want short or a duration", envFaults, mode)
		}
		mixFor = d
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envFaultsSeed); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: want a number", envFaultsSeed, s)
		}
	}
	t.Logf("seed %d (%s=%d replays the schedule)", seed, envFaultsSeed, seed)
	for _, bin := range []string{webappBin, minionBin} {
		if err := buildErrs[bin]; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Fatal("the campaign's jobs need flock (util-linux)")
	}

	c := newCampaign(t, seed)
	c.warmUp()
	c.alone()
	if mixFor > 0 {
		c.mixed(c.started.Add(mixFor))
	}
	// A quiet time after the last fault, for the hand-outs to resume.
	time.Sleep(15 * time.Second)
	c.finish()
}

// campaign is the rig of TestFaults.
type campaign struct {
	t       *testing.T
	work    string
	cluster *dbtest.Cluster
	place   string
	conf    string
	script  string
	history string

	webapps []*daemon
	links   []*link
	minions []*daemon

	seed    uint64
	started time.Time

	mu     sync.Mutex
	rng    *rand.Rand
	faults []fault
	// drop is the share of job-update answers the links drop, in
	// thousandths; latency, when set, delays every request 1-2 s.
	drop    atomic.Int64
	latency atomic.Bool
	dropped atomic.Int64
	delayed atomic.Int64
	pg      sync.Mutex // held by a fault of PostgreSQL
	proxy   sync.Mutex // held by a fault of the links
	clock   sync.Mutex // held while a WEBAPP's clock is ahead: one at a time, or there is no skew
	sweeps  chan struct{}
	swept   sync.WaitGroup
	drained time.Time
}

func newCampaign(t *testing.T, seed uint64) *campaign {
	c := &campaign{t: t, work: t.TempDir(), seed: seed, started: time.Now(), rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}
	c.cluster = dbtest.NewCluster(t)
	c.place = c.cluster.Database(t)
	c.history = filepath.Join(c.work, "history")
	locks := filepath.Join(c.work, "locks")
	if err := os.Mkdir(locks, 0o755); err != nil {
		t.Fatal(err)
	}
	c.script = filepath.Join(c.work, "lorry")
	script := fmt.Sprintf(faultJobScript, faultsNarrowLines, faultsNarrowPause, faultsWideLines, faultsWidePause)
	if err := os.WriteFile(c.script, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c.conf = filepath.Join(c.work, "confgit")
	gittest.Git(t, "", nil, "init", "-q", "-b", "master", c.conf)
	files := map[string]string{
		"lorry-controller.conf": fmt.Sprintf(`[
  {"type": "queue", "name": "narrow", "threads": %d},
  {"type": "queue", "name": "wide"},
  {"type": "lorries", "prefix": "narrow", "globs": ["narrow.lorry"], "queue": "narrow", "interval": "1s"},
  {"type": "lorries", "prefix": "wide", "globs": ["wide.lorry"], "queue": "wide", "interval": "1s"}
]
`, faultsNarrowThreads),
		"narrow.lorry": lorrySpecs("narrow", faultsNarrowLorries),
		"wide.lorry":   lorrySpecs("wide", faultsWideLorries),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(c.conf, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Git(t, c.conf, nil, "add", "-A")
	gittest.Git(t, c.conf, nil, "commit", "-q", "-m", "lorries")

	for i := range 2 {
		name := fmt.Sprintf("w%d", i+1)
		dir := filepath.Join(c.work, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		w := &daemon{name: name, bin: webappBin, log: filepath.Join(dir, "webapp.log"), addrFile: filepath.Join(dir, "addr"),
			args: []string{"--statedb", c.place, "--confgit-url", c.conf,
				"--configuration-directory", filepath.Join(dir, "confgit-clone"), "--listen", "127.0.0.1:0",
				"--addr-file", filepath.Join(dir, "addr"), "--log-level", "info", "--insecure-no-auth", "--periodic-work",
				"--ghost-timeout", faultsGhostTimeout.String(), "--lease", faultsLease.String(),
				"--kill-grace", faultsKillGrace.String(), "--claim-timeout", "8s",
				"--replica-name", name, "--replica-lease", faultsReplicaLease.String()}}
		l := newLink(c)
		w.link = l
		c.webapps = append(c.webapps, w)
		c.links = append(c.links, l)
		t.Cleanup(w.stop)
		if err := w.start(); err != nil {
			t.Fatal(err)
		}
	}
	host, _ := os.Hostname()
	c.post(c.webapps[0], "read-configuration", nil)
	c.post(c.webapps[1], "set-host-max-jobs", url.Values{"host": {host}, "max_jobs": {strconv.Itoa(faultsMaxJobs)}})

	for i := range faultsMinions {
		name := fmt.Sprintf("m%d", i+1)
		var urls []string
		for k := range c.links {
			urls = append(urls, c.links[(i+k)%len(c.links)].srv.URL)
		}
		m := &daemon{name: name, bin: minionBin, log: filepath.Join(c.work, "minion-"+name+".log"),
			args: []string{"--webapp-url", strings.Join(urls, ","), "--name", name, "--sleep", "200ms",
				"--update-interval", faultsUpdate.String(), "--kill-grace", faultsKillGrace.String(),
				"--lorry-cmd", c.script, "--working-area", filepath.Join(c.work, "minion-"+name)},
			env: []string{"FAULTS_HISTORY=" + c.history, "FAULTS_LOCKS=" + locks, "FAULTS_MINION=" + name,
				"FAULTS_MAX_JOBS=" + strconv.Itoa(faultsMaxJobs), "FAULTS_NARROW_THREADS=" + strconv.Itoa(faultsNarrowThreads)}}
		c.minions = append(c.minions, m)
		t.Cleanup(m.stop)
		if err := m.start(); err != nil {
			t.Fatal(err)
		}
	}

	// The ghost sweep, as each WEBAPP's timer would run it, but every
	// second: a lorry freed by it is handed out again at once.
	c.sweeps = make(chan struct{})
	c.swept.Add(1)
	go func() {
		defer c.swept.Done()
		client := &http.Client{Timeout: 3 * time.Second}
		for i := 0; ; i++ {
			select {
			case <-c.sweeps:
				return
			case <-time.After(time.Second):
			}
			if u := c.webapps[i%len(c.webapps)].addr(); u != "" {
				if resp, err := client.PostForm(u+"/1.0/remove-ghost-jobs", nil); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
	}()
	t.Cleanup(c.stopSweeps)
	return c
}

func (c *campaign) stopSweeps() {
	if c.sweeps != nil {
		close(c.sweeps)
		c.swept.Wait()
		c.sweeps = nil
	}
}

// warmUp waits until jobs run on every minion's side: the first faults
// then hit work under way.
func (c *campaign) warmUp() {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		h, err := readHistoryFile(c.history)
		if err == nil && len(h.starts) >= faultsMaxJobs {
			return
		}
		if time.Now().After(deadline) {
			c.showLogs()
			c.t.Fatalf("no %d jobs started within 2 minutes (history: %v)", faultsMaxJobs, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// alone injects each kind of fault once, alone, with a quiet time after
// each.
func (c *campaign) alone() {
	for _, kind := range faultKinds {
		c.inject(kind)
		time.Sleep(4 * time.Second)
	}
}

// mixed injects faults of random kinds at random times, up to three at
// once, until the deadline; a fault whose target is taken by another is
// left out. The faults of PostgreSQL run in the test's goroutine, which
// alone may fail the test.
func (c *campaign) mixed(until time.Time) {
	var wg sync.WaitGroup
	running := make(chan struct{}, 3)
	for time.Now().Add(30 * time.Second).Before(until) {
		kind := faultKinds[c.intN(len(faultKinds))]
		if kind == faultPostgresStart || kind == faultPostgresTerm {
			c.inject(kind)
		} else {
			running <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-running }()
				c.inject(kind)
			}()
		}
		time.Sleep(time.Duration(2000+c.intN(6000)) * time.Millisecond)
	}
	wg.Wait()
}

func (c *campaign) intN(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.IntN(n)
}

// inject injects one fault of kind, and records it once over.
func (c *campaign) inject(kind string) {
	f := fault{kind: kind}
	var ok bool
	switch kind {
	case faultMinionStop:
		ok = c.stopMinion(&f)
	case faultMinionKill:
		ok = c.killMinion(&f)
	case faultWebappStop, faultWebappStopTx:
		ok = c.stopWebapp(&f, kind == faultWebappStopTx)
	case faultWebappKill:
		ok = c.killWebapp(&f)
	case faultDropAnswers, faultLatency:
		ok = c.spoilLinks(&f)
	case faultClockAhead:
		ok = c.clockAhead(&f)
	case faultPostgresStart:
		ok = c.restartPostgres(&f)
	case faultPostgresTerm:
		ok = c.terminateSessions(&f)
	}
	if !ok {
		return
	}
	c.mu.Lock()
	c.faults = append(c.faults, f)
	c.mu.Unlock()
	c.t.Logf("%s on %s: %v%s", f.kind, f.target, time.Duration(f.to-f.from).Round(time.Millisecond), f.note)
}

// pick takes a daemon of ds that no other fault holds, at random; nil if
// every one is taken.
func (c *campaign) pick(ds []*daemon) *daemon {
	order := make([]*daemon, len(ds))
	copy(order, ds)
	c.mu.Lock()
	c.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	c.mu.Unlock()
	for _, d := range order {
		if d.busy.TryLock() {
			return d
		}
	}
	return nil
}

// stopMinion stops a minion for longer than its job's lease, the ghost
// timeout and a sweep: its lorry is free by the WEBAPP's reckoning before
// it wakes. It stops the one whose narrow job started last, if any is
// free: that job most likely runs on past the sweep.
func (c *campaign) stopMinion(f *fault) bool {
	var youngest *jobProc
	if h, err := readHistoryFile(c.history); err == nil {
		for _, ps := range h.procs {
			for _, p := range ps {
				if p.end == 0 && strings.HasPrefix(p.lorry, "narrow/") && alive(p.pid) && (youngest == nil || p.start > youngest.start) {
					youngest = p
				}
			}
		}
	}
	var m *daemon
	for _, d := range c.minions {
		if youngest != nil && d.name == youngest.minion && d.busy.TryLock() {
			m = d
			f.note = fmt.Sprintf(", under job %d of %s", youngest.job, youngest.lorry)
		}
	}
	if m == nil {
		m = c.pick(c.minions)
	}
	if m == nil {
		return false
	}
	defer m.busy.Unlock()
	f.target = m.name
	f.from = time.Now().UnixNano()
	m.signal(syscall.SIGSTOP)
	time.Sleep(faultsGhostTimeout + faultsKillGrace + 5*time.Second)
	m.signal(syscall.SIGCONT)
	f.to = time.Now().UnixNano()
	return true
}

// killMinion kills a minion with SIGKILL, and starts it again a second
// later.
func (c *campaign) killMinion(f *fault) bool {
	m := c.pick(c.minions)
	if m == nil {
		return false
	}
	defer m.busy.Unlock()
	f.target, f.from = m.name, time.Now().UnixNano()
	m.kill()
	time.Sleep(time.Second)
	if err := m.start(); err != nil {
		c.t.Errorf("start %s again: %v", m.name, err)
	}
	f.to = time.Now().UnixNano()
	return true
}

// stopWebapp stops a WEBAPP (SIGSTOP) past two terms of its leases, inside
// a write transaction of its or outside any. PostgreSQL tells which: a
// WEBAPP writes under an advisory lock of the transaction, so one stopped
// while a session of its holds that lock is stopped inside a write
// transaction. It stops the WEBAPP when it sees such a lock, or when it
// does not, checks once stopped, and lets it go on and tries again when it
// missed; it gives up after a while.
func (c *campaign) stopWebapp(f *fault, inTx bool) bool {
	w := c.pick(c.webapps)
	if w == nil {
		return false
	}
	defer w.busy.Unlock()
	db, err := sql.Open("pgx", c.cluster.Admin())
	if err != nil {
		c.t.Errorf("%s: %v", f.kind, err)
		return false
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	app := "lorry-controller-webapp " + w.name
	writing := func() bool {
		var n int
		err := db.QueryRow(`SELECT COUNT(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE a.application_name = $1 AND l.locktype = 'advisory' AND l.granted`, app).Scan(&n)
		return err == nil && n > 0
	}
	f.target = w.name
	attempts := 0
	for deadline := time.Now().Add(20 * time.Second); ; {
		if time.Now().After(deadline) {
			c.t.Logf("%s on %s: not caught %s a write transaction in %d attempts", f.kind, w.name,
				map[bool]string{true: "inside", false: "outside"}[inTx], attempts)
			return false
		}
		if inTx && !writing() {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		attempts++
		w.signal(syscall.SIGSTOP)
		if writing() == inTx {
			break
		}
		w.signal(syscall.SIGCONT)
		time.Sleep(time.Duration(c.intN(20)) * time.Millisecond)
	}
	f.from = time.Now().UnixNano()
	f.note = fmt.Sprintf(" (caught in %d attempts)", attempts)
	time.Sleep(2*faultsReplicaLease + 2*time.Second)
	w.signal(syscall.SIGCONT)
	f.to = time.Now().UnixNano()
	return true
}

// killWebapp kills a WEBAPP with SIGKILL, and starts it again a second
// later.
func (c *campaign) killWebapp(f *fault) bool {
	w := c.pick(c.webapps)
	if w == nil {
		return false
	}
	defer w.busy.Unlock()
	f.target, f.from = w.name, time.Now().UnixNano()
	w.kill()
	time.Sleep(time.Second)
	if err := w.start(); err != nil {
		c.t.Errorf("start %s again: %v", w.name, err)
	}
	f.to = time.Now().UnixNano()
	return true
}

// spoilLinks drops a third of the answers to job-update after the WEBAPP
// acted on them, or delays every request of the minions 1-2 s, for 10 s.
func (c *campaign) spoilLinks(f *fault) bool {
	if !c.proxy.TryLock() {
		return false
	}
	defer c.proxy.Unlock()
	f.target, f.from = "links", time.Now().UnixNano()
	if f.kind == faultDropAnswers {
		c.drop.Store(333)
	} else {
		c.latency.Store(true)
	}
	time.Sleep(10 * time.Second)
	c.drop.Store(0)
	c.latency.Store(false)
	f.to = time.Now().UnixNano()
	return true
}

// clockAhead starts a WEBAPP again with its clock 90 s ahead, for 12 s, and
// then again on the machine's clock.
func (c *campaign) clockAhead(f *fault) bool {
	if !c.clock.TryLock() {
		return false
	}
	defer c.clock.Unlock()
	w := c.pick(c.webapps)
	if w == nil {
		return false
	}
	defer w.busy.Unlock()
	f.target, f.from = w.name, time.Now().UnixNano()
	f.note = " (" + envClockOffset + "=90s)"
	w.stop()
	if err := w.start(envClockOffset + "=90s"); err != nil {
		c.t.Errorf("start %s ahead: %v", w.name, err)
	}
	time.Sleep(12 * time.Second)
	w.stop()
	if err := w.start(); err != nil {
		c.t.Errorf("start %s again: %v", w.name, err)
	}
	f.to = time.Now().UnixNano()
	return true
}

// restartPostgres stops the PostgreSQL server (a fast shutdown) and starts
// it a second later. It must run in the test's goroutine.
func (c *campaign) restartPostgres(f *fault) bool {
	if !c.pg.TryLock() {
		return false
	}
	defer c.pg.Unlock()
	f.target, f.from = "postgres", time.Now().UnixNano()
	c.cluster.Stop()
	time.Sleep(time.Second)
	c.cluster.Start(c.t)
	f.to = time.Now().UnixNano()
	return true
}

// terminateSessions ends every session of the WEBAPPs on the server.
func (c *campaign) terminateSessions(f *fault) bool {
	if !c.pg.TryLock() {
		return false
	}
	defer c.pg.Unlock()
	f.target, f.from = "postgres", time.Now().UnixNano()
	db, err := sql.Open("pgx", c.cluster.Admin())
	if err != nil {
		c.t.Errorf("%s: %v", f.kind, err)
		return false
	}
	defer db.Close()
	var n int
	err = db.QueryRow(`SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name LIKE 'lorry-controller-webapp %' AND pid <> pg_backend_pid()`).Scan(&n)
	if err != nil {
		c.t.Errorf("%s: %v", f.kind, err)
		return false
	}
	f.to = time.Now().UnixNano()
	f.note = fmt.Sprintf(" (%d sessions)", n)
	return true
}

// finish stops the queue, waits for every job to end, then checks.
func (c *campaign) finish() {
	t := c.t
	c.drained = time.Now()
	stopped := false
	for deadline := time.Now().Add(time.Minute); !stopped; time.Sleep(time.Second) {
		for _, w := range c.webapps {
			if c.tryPost(w, "stop-queue") == nil {
				stopped = true
				break
			}
		}
		if !stopped && time.Now().After(deadline) {
			c.showLogs()
			t.Fatal("no WEBAPP stopped the queue within a minute")
		}
	}
	// The jobs running end, and every job process with them; those of
	// a minion that stops answering become ghosts, which the sweeps
	// end.
	var left string
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		left = c.live()
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("after two minutes, still live: %s", left)
			break
		}
	}
	c.stopSweeps()

	jobs := c.jobs()
	for _, m := range c.minions {
		m.stop()
	}
	for _, w := range c.webapps {
		w.stop()
	}
	hist, err := readHistoryFile(c.history)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	faults := c.faults
	c.mu.Unlock()
	r := check(checkInput{hist: hist, jobs: jobs, ends: c.ends(), faults: faults, webapps: len(c.webapps), drained: c.drained.UnixNano(),
		resumeBound: faultsResumeBound, excuse: faultsLease + faultsKillGrace + 2*time.Second})
	var out bytes.Buffer
	r.write(&out, faults, map[string]int64{"answers dropped": c.dropped.Load(), "requests delayed": c.delayed.Load()}, 20)
	t.Logf("fault campaign of %v (seed %d):\n%s", time.Since(c.started).Round(time.Second), c.seed, out.String())
	if n := r.anomalyCount(); n > 0 {
		t.Errorf("%d anomalies (above)", n)
	}
}

// live names what is still running: jobs the WEBAPP lists, and job
// processes; "" when nothing is.
func (c *campaign) live() string {
	var parts []string
	for _, w := range c.webapps {
		var running struct {
			Jobs []struct {
				ID int64 `json:"job_id"`
			} `json:"running_jobs"`
		}
		if err := c.getJSON(w, "/1.0/list-running-jobs", &running); err == nil {
			for _, j := range running.Jobs {
				parts = append(parts, fmt.Sprintf("job %d", j.ID))
			}
			break
		}
	}
	if h, err := readHistoryFile(c.history); err == nil {
		for _, ps := range h.procs {
			for _, p := range ps {
				if p.end == 0 && alive(p.pid) {
					parts = append(parts, fmt.Sprintf("process %d of job %d", p.pid, p.job))
				}
			}
		}
	}
	return strings.Join(parts, ", ")
}

// jobs reads every job from the WEBAPP: the ids from the STATEDB, each
// job from the API.
func (c *campaign) jobs() []storedJob {
	t := c.t
	db, err := sql.Open("pgx", c.place)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id FROM jobs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	jobs := make([]storedJob, 0, len(ids))
	for _, id := range ids {
		var j storedJob
		var err error
		for _, w := range c.webapps {
			if err = c.getJSON(w, fmt.Sprintf("/1.0/job/%d", id), &j); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("job %d: %v", id, err)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

var (
	jobEndedLog = regexp.MustCompile(`msg="job ended" job_id=(\d+)`)
	sweptLog    = regexp.MustCompile(`msg="(?:ghost jobs ended as lost|claimed jobs never confirmed, ended as orphaned)" job_ids="?\[([\d ]*)\]`)
)

// ends counts, from the WEBAPPs' logs, how often each job was ended: by
// its minion's report of its exit, or by a sweep.
func (c *campaign) ends() map[int64]int {
	n := map[int64]int{}
	for _, w := range c.webapps {
		b, err := os.ReadFile(w.log)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, m := range jobEndedLog.FindAllSubmatch(b, -1) {
			id, _ := strconv.ParseInt(string(m[1]), 10, 64)
			n[id]++
		}
		for _, m := range sweptLog.FindAllSubmatch(b, -1) {
			for _, f := range strings.Fields(string(m[1])) {
				id, _ := strconv.ParseInt(f, 10, 64)
				n[id]++
			}
		}
	}
	return n
}

func (c *campaign) post(w *daemon, route string, form url.Values) {
	c.t.Helper()
	resp, err := http.PostForm(w.addr()+"/1.0/"+route, form)
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("%s: %d %s", route, resp.StatusCode, body)
	}
}

var faultsClient = &http.Client{Timeout: 10 * time.Second}

func (c *campaign) tryPost(w *daemon, route string) error {
	resp, err := faultsClient.PostForm(w.addr()+"/1.0/"+route, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", route, resp.Status)
	}
	return nil
}

func (c *campaign) getJSON(w *daemon, path string, v any) error {
	resp, err := faultsClient.Get(w.addr() + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (c *campaign) showLogs() {
	var logs []string
	for _, d := range append(append([]*daemon{}, c.webapps...), c.minions...) {
		logs = append(logs, d.log)
	}
	for _, name := range logs {
		data, _ := os.ReadFile(name)
		if len(data) > 8<<10 {
			data = data[len(data)-8<<10:]
		}
		c.t.Logf("--- %s ---\n%s", filepath.Base(filepath.Dir(name))+"/"+filepath.Base(name), data)
	}
}

// daemon is a WEBAPP or a minion of the campaign, which faults stop,
// kill and start again.
type daemon struct {
	name, bin, log string
	args, env      []string
	addrFile       string // a WEBAPP's: where it writes its address
	link           *link  // a WEBAPP's: the minions' way to it

	// busy is held by the fault that has the daemon, one at a time.
	busy sync.Mutex

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	url  string
}

// start starts the daemon, with env added to its environment, and waits
// for a WEBAPP's address. A WEBAPP that cannot reach its STATEDB as it
// starts exits, as while PostgreSQL restarts under another fault: it is
// started again, for up to a minute.
func (d *daemon) start(env ...string) error {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		err := d.startOnce(env)
		if err == nil || !errors.Is(err, errExited) || time.Now().After(deadline) {
			return err
		}
	}
}

var errExited = errors.New("exited before writing its address")

func (d *daemon) startOnce(env []string) error {
	log, err := os.OpenFile(d.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	if d.addrFile != "" {
		os.Remove(d.addrFile)
	}
	cmd := exec.Command(filepath.Join(binDir, d.bin), d.args...)
	cmd.Env = append(append(os.Environ(), d.env...), env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	d.mu.Lock()
	d.cmd, d.done, d.url = cmd, done, ""
	d.mu.Unlock()
	if d.addrFile == "" {
		return nil
	}
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(20 * time.Millisecond) {
		if a, err := os.ReadFile(d.addrFile); err == nil && strings.HasSuffix(string(a), "\n") {
			u := "http://" + strings.TrimSpace(string(a))
			d.mu.Lock()
			d.url = u
			d.mu.Unlock()
			d.link.target.Store(&u)
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s: %w", d.name, errExited)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s wrote no address within %v", d.name, waitLimit)
		}
	}
}

// addr is a WEBAPP's address, "" while it has none.
func (d *daemon) addr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.url
}

func (d *daemon) signal(sig syscall.Signal) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil {
		d.cmd.Process.Signal(sig)
	}
}

// kill kills the daemon with SIGKILL and waits for it.
func (d *daemon) kill() {
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.cmd = nil
	d.mu.Unlock()
	if cmd != nil {
		cmd.Process.Kill()
		<-done
	}
}

// stop stops the daemon with SIGTERM, and SIGKILL if it takes too long.
func (d *daemon) stop() {
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.cmd = nil
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(waitLimit):
		cmd.Process.Kill()
		<-done
	}
}

// link is the minions' way to one WEBAPP: a proxy on the loopback that
// forwards each request to the WEBAPP's address of the moment, and that
// the campaign's faults delay or whose answers they drop.
type link struct {
	c      *campaign
	srv    *httptest.Server
	target atomic.Pointer[string]
	tr     *http.Transport
}

func newLink(c *campaign) *link {
	l := &link{c: c, tr: &http.Transport{}}
	l.srv = httptest.NewServer(l)
	c.t.Cleanup(func() {
		l.srv.CloseClientConnections()
		l.srv.Close()
		l.tr.CloseIdleConnections()
	})
	return l
}

func (l *link) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := l.c
	if c.latency.Load() {
		c.delayed.Add(1)
		select {
		case <-time.After(time.Duration(1000+c.intN(1000)) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
	target := l.target.Load()
	body, err := io.ReadAll(r.Body)
	if err != nil || target == nil {
		hangUp(w)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, *target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		hangUp(w)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := l.tr.RoundTrip(req)
	if err != nil {
		// As a WEBAPP that is down: the connection is closed.
		hangUp(w)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		hangUp(w)
		return
	}
	if drop := c.drop.Load(); drop > 0 && strings.HasSuffix(r.URL.Path, "/job-update") && int64(c.intN(1000)) < drop {
		// The WEBAPP has acted; its answer is lost.
		c.dropped.Add(1)
		hangUp(w)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
