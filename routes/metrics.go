package routes

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
)

// scrapeTimeout bounds the state database queries of one scrape, so that a
// database that does not answer shows as lorry_controller_statedb_up 0
// rather than as a scrape that hangs; it is under Prometheus's default
// scrape timeout of ten seconds.
const scrapeTimeout = 5 * time.Second

// jobDurationBuckets go from a git fetch with nothing new to a first
// mirror of a very large repository.
var jobDurationBuckets = []float64{10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400}

// jobStatuses are reported even when no job has them, so that a rate or
// an alert over them never meets a missing series.
var jobStatuses = []string{statedb.StatusClaimed, statedb.StatusRunning, statedb.StatusSucceeded, statedb.StatusFailed,
	statedb.StatusKilled, statedb.StatusTimedOut, statedb.StatusLost, statedb.StatusOrphaned}

// Minion states, as the metrics tell them.
const (
	minionBusy   = "busy"   // running a job
	minionIdle   = "idle"   // asking for work
	minionSilent = "silent" // not heard from for longer than the ghost timeout
	// retired, and idle or silent: told to exit, or gone for good
	minionRetired = "retired"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("lorry_controller_"+name, help, labels, nil)
}

var (
	descLorries        = desc("lorries", "Lorries in the run queue.")
	descLorriesDue     = desc("lorries_due", "Lorries due to run and not running.")
	descLorriesFailing = desc("lorries_failing", "Lorries whose last run failed.")
	descLorriesByState = desc("lorries_by_state", "Lorries by the state of their failure streak: ok, failing, backing-off, hard-failed.", "state")
	descJobs           = desc("jobs", "Jobs the state database remembers, by status.", "status")
	descRunningJobs    = desc("running_jobs", "Jobs running now.")
	descQueueRunning   = desc("queue_running", "1 if the run queue hands out jobs, 0 if it is stopped.")
	descMinions        = desc("minions", "Minions by state: busy (running a job), idle (asking for work), silent (not heard from for longer than --ghost-timeout), retired (retired and not running a job, or silent).", "state")
	descConfigSuccess  = desc("config_read_success", "1 if the last read-configuration succeeded, 0 if it failed.")
	descConfigTime     = desc("config_read_timestamp_seconds", "When read-configuration last ran, successfully or not, in Unix seconds.")
	descConfigGoodTime = desc("config_success_timestamp_seconds", "When read-configuration last succeeded, in Unix seconds.")
	descConfigErrors   = desc("config_file_errors", "Files or specs of CONFGIT that the last successful read-configuration skipped.")
	descHostSuccess    = desc("host_listing_success", "1 if the last listing of the Upstream Host succeeded, 0 if it failed.", "host")
	descHostTime       = desc("host_listing_timestamp_seconds", "When the Upstream Host was last listed, in Unix seconds.", "host")
	descHostRepos      = desc("host_repos", "Repositories the last successful listing of the Upstream Host found.", "host")
	descDBBytes        = desc("statedb_bytes", "Size of the state database's files on disk, write-ahead log included; of a PostgreSQL one, the database's size on the server.")
	descDBFree         = desc("statedb_free_bytes", "Part of the state database file left free by deleted rows; of a PostgreSQL one, the space its dead rows take, as its statistics estimate.")
	descDBUp           = desc("statedb_up", "1 if the state database answered this scrape's queries and takes writes, 0 if not.")
)

// metrics reads the figures from the state database at each scrape, so
// they are right whoever changed the database. Job durations are the
// exception: they go into a histogram, which a scrape fills with the jobs
// that ended since the one before.
type metrics struct {
	app          *control.App
	ghostTimeout int64
	log          *slog.Logger
	disk         string // the directory whose file system the disk metrics tell of
	durations    *prometheus.HistogramVec

	mu sync.Mutex // one scrape at a time
	// primed is set once the jobs that ended before the WEBAPP started are
	// known, so that they are not counted as if they had just ended.
	primed bool
	// next is the first job id not yet seen; running holds the jobs seen
	// running, whose end is still to be observed.
	next    int64
	running map[int64]bool
}

// diskDir is the directory whose file system the disk metrics tell of:
// the STATEDB's (stateDir, control's StateDir), if it is on this
// machine. A PostgreSQL STATEDB's disk is the server's, which no query
// tells of; there they tell of the disk that the WEBAPP writes the
// STATEDB's backups to (backups), if it has one.
func diskDir(stateDir, backups string) string {
	if stateDir != "" {
		return stateDir
	}
	return backups
}

// metricsHandler serves GET /metrics in the Prometheus text format: the
// WEBAPP's figures, the requests' durations and the Go runtime's.
func (s *Server) metricsHandler(requests *prometheus.HistogramVec) http.Handler {
	m := &metrics{
		app:          s.App,
		ghostTimeout: int64(s.GhostTimeout.Seconds()),
		log:          s.Log,
		disk:         diskDir(s.StateDir(), s.BackupDirectory),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lorry_controller_job_duration_seconds",
			Help:    "How long jobs ran, by kind and by how they ended, observed as they end.",
			Buckets: jobDurationBuckets,
		}, []string{"kind", "status"}),
		running: map[int64]bool{},
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if err := m.prime(ctx); err != nil {
		// The first scrape tries again.
		s.Log.Warn("metrics: read running jobs", "err", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, requests,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.Log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// prime notes the jobs that exist now: those running will be observed when
// they end, the others never.
func (m *metrics) prime(ctx context.Context) error {
	so, err := m.app.JobsSoFar(ctx)
	if err != nil {
		return err
	}
	m.next = so.LastID + 1
	for _, id := range so.Running {
		m.running[id] = true
	}
	m.primed = true
	return nil
}

// Describe sends every descriptor the collector uses.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLorries, descLorriesDue, descLorriesFailing, descLorriesByState, descJobs,
		descRunningJobs, descQueueRunning, descMinions, descConfigSuccess, descConfigTime,
		descConfigGoodTime, descConfigErrors, descHostSuccess, descHostTime, descHostRepos,
		descDBBytes, descDBFree, descDBUp} {
		ch <- d
	}
	for _, d := range extraDescs {
		ch <- d
	}
	m.durations.Describe(ch)
}

// Collect reads the state database and sends the figures.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	up := 1.0
	if err := m.collect(ctx, ch); err != nil {
		m.log.Error("metrics: read state database", "err", err)
		up = 0
	} else {
		writes := 1.0
		if err := m.app.CheckWrites(ctx); err != nil {
			m.log.Error("metrics: write state database", "err", err)
			up, writes = 0, 0
		}
		ch <- prometheus.MustNewConstMetric(descWritesUp, prometheus.GaugeValue, writes)
	}
	ch <- prometheus.MustNewConstMetric(descDBUp, prometheus.GaugeValue, up)
	sendDisk(ch, m.disk)
	m.durations.Collect(ch)
}

// snapshot is what one scrape reads, in one transaction.
type snapshot struct {
	now     int64
	lorries statedb.LorryCounts
	states  map[string]int64
	jobs    map[string]int64
	running int
	queue   bool
	minions []statedb.Minion
	config  statedb.ConfigState
	hosts   []statedb.Host
	timings []statedb.JobTiming
	usage   statedb.Usage
	extra   extraSnapshot
}

// read fills sn in one read transaction, after noting the jobs so far
// if they are not yet.
func (m *metrics) read(ctx context.Context, sn *snapshot) error {
	if !m.primed {
		if err := m.prime(ctx); err != nil {
			return err
		}
	}
	rd, err := m.app.ReadMetrics(ctx, m.oldestUnseen())
	if err != nil {
		return err
	}
	sn.now, sn.lorries, sn.states, sn.jobs, sn.running = rd.Now, rd.Lorries, rd.States, rd.Jobs, rd.Running
	sn.queue, sn.minions, sn.config, sn.hosts, sn.timings = rd.RunningQueue, rd.Minions, rd.Config, rd.Hosts, rd.Timings
	sn.extra = extraSnapshot{queues: rd.Queues, pending: rd.Pending, oldestPending: rd.OldestPending}
	return nil
}

func (m *metrics) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	var sn snapshot
	err := m.read(ctx, &sn)
	if err != nil {
		return err
	}
	if sn.usage, err = m.app.Usage(ctx); err != nil {
		return err
	}
	m.observe(sn.timings)

	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descLorries, float64(sn.lorries.Total))
	gauge(descLorriesDue, float64(sn.lorries.Due))
	gauge(descLorriesFailing, float64(sn.lorries.Failing))
	for _, st := range statedb.States {
		gauge(descLorriesByState, float64(sn.states[st]), st)
	}
	for _, st := range jobStatuses {
		gauge(descJobs, float64(sn.jobs[st]), st)
	}
	for st, n := range sn.jobs {
		if !contains(jobStatuses, st) {
			gauge(descJobs, float64(n), st)
		}
	}
	gauge(descRunningJobs, float64(sn.running))
	gauge(descQueueRunning, boolFloat(sn.queue))
	states := map[string]int{minionBusy: 0, minionIdle: 0, minionSilent: 0, minionRetired: 0}
	for _, mn := range sn.minions {
		states[m.minionState(mn, sn.now)]++
	}
	for st, n := range states {
		gauge(descMinions, float64(n), st)
	}

	c := sn.config
	if c.ReadAt > 0 || c.FailAt > 0 {
		failed := c.Failure != "" && c.FailAt >= c.ReadAt
		gauge(descConfigSuccess, boolFloat(!failed))
		gauge(descConfigTime, float64(max(c.ReadAt, c.FailAt)))
	}
	if c.ReadAt > 0 {
		gauge(descConfigGoodTime, float64(c.ReadAt))
		gauge(descConfigErrors, float64(len(c.Errors)))
	}
	for _, h := range sn.hosts {
		if h.LastLs == nil {
			continue // never listed: there is no result yet
		}
		gauge(descHostSuccess, boolFloat(h.LastLsError == ""), h.Name)
		gauge(descHostTime, float64(*h.LastLs), h.Name)
		gauge(descHostRepos, float64(h.Repos), h.Name)
	}
	gauge(descDBBytes, float64(sn.usage.FileBytes))
	gauge(descDBFree, float64(sn.usage.FreeBytes))
	sn.extra.send(ch, sn.now)
	return nil
}

// minionState tells a minion's state. A retired minion that is silent is
// retired rather than silent: retiring the minions of a host taken away
// for good is how an operator says that their silence is no trouble.
func (m *metrics) minionState(mn statedb.Minion, now int64) string {
	silent := m.ghostTimeout > 0 && now-mn.LastSeen > m.ghostTimeout
	switch {
	case mn.Retire && (silent || mn.JobID == nil):
		return minionRetired
	case silent:
		return minionSilent
	case mn.JobID != nil:
		return minionBusy
	}
	return minionIdle
}

// oldestUnseen is the lowest job id whose end may not have been observed.
func (m *metrics) oldestUnseen() int64 {
	from := m.next
	for id := range m.running {
		from = min(from, id)
	}
	return from
}

// observe puts the jobs that ended since the last scrape into the
// duration histogram.
func (m *metrics) observe(timings []statedb.JobTiming) {
	present := map[int64]bool{}
	next := m.next
	for _, j := range timings {
		present[j.ID] = true
		if j.ID < m.next && !m.running[j.ID] {
			continue // already observed, or ended before the WEBAPP started
		}
		next = max(next, j.ID+1)
		if j.Ended == nil {
			m.running[j.ID] = true
			continue
		}
		delete(m.running, j.ID)
		m.durations.WithLabelValues(j.Kind, j.Status).Observe(float64(max(*j.Ended-j.Started, 0)))
	}
	for id := range m.running {
		if !present[id] {
			delete(m.running, id) // removed before it was seen to end
		}
	}
	m.next = next
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
