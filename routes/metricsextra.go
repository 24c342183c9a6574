package routes

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/statedb"
)

// The figures the alerting rules and the dashboard need beyond the
// run queue's: each queue's, the outbox's, the disk's and the requests'.
var (
	descQueueDue         = desc("queue_lorries_due", "Lorries of the queue due to run and not running.", "queue")
	descQueueRunningJobs = desc("queue_running_jobs", "Jobs of the queue running now.", "queue")
	descQueueThreads     = desc("queue_threads", "The most jobs of the queue that may run at once now; absent when there is no limit.", "queue")
	descQueueOldestWait  = desc("queue_oldest_due_wait_seconds", "How long the lorry of the queue due longest has waited to run, 0 when none is due.", "queue")
	descNotifyPending    = desc("notifications_pending", "Notifications waiting to be delivered.")
	descNotifyOldest     = desc("notifications_oldest_pending_age_seconds", "How long the oldest notification waiting to be delivered has waited, 0 when none waits.")
	descDiskFree         = desc("statedb_disk_free_bytes", "Space left to unprivileged users on the state database's file system; for a PostgreSQL one, on that of the WEBAPP's backup directory.")
	descDiskSize         = desc("statedb_disk_size_bytes", "Size of the state database's file system; for a PostgreSQL one, of that of the WEBAPP's backup directory.")
	descWritesUp         = desc("statedb_writes_up", "1 if the state database takes writes, 0 if not; absent when it does not answer reads.")
)

// requestDurationBuckets go from a health check to a job-update that
// carries a large output over a slow link.
var requestDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// extraDescs are the descriptors of this file's figures, for Describe.
var extraDescs = []*prometheus.Desc{descQueueDue, descQueueRunningJobs, descQueueThreads, descQueueOldestWait,
	descNotifyPending, descNotifyOldest, descDiskFree, descDiskSize, descWritesUp}

// extraSnapshot is what one scrape reads for this file's figures, in the
// transaction of the others.
type extraSnapshot struct {
	queues        []statedb.QueueState
	pending       int64
	oldestPending *int64
}

// send sends the figures of e as they are at now.
func (e *extraSnapshot) send(ch chan<- prometheus.Metric, now int64) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, q := range e.queues {
		gauge(descQueueDue, float64(q.Due), q.Name)
		gauge(descQueueRunningJobs, float64(q.Running), q.Name)
		if q.Now != nil {
			gauge(descQueueThreads, float64(*q.Now), q.Name)
		}
		var wait int64
		if q.OldestDue != nil {
			wait = max(now-*q.OldestDue, 0)
		}
		gauge(descQueueOldestWait, float64(wait), q.Name)
	}
	gauge(descNotifyPending, float64(e.pending))
	var age int64
	if e.oldestPending != nil {
		age = max(now-*e.oldestPending, 0)
	}
	gauge(descNotifyOldest, float64(age))
}

// sendDisk sends the free space and the size of the file system that
// holds dir, unless they cannot be told.
func sendDisk(ch chan<- prometheus.Metric, dir string) {
	if dir == "" {
		return
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descDiskFree, prometheus.GaugeValue, float64(fs.Bavail)*float64(fs.Bsize))
	ch <- prometheus.MustNewConstMetric(descDiskSize, prometheus.GaugeValue, float64(fs.Blocks)*float64(fs.Bsize))
}

var knownMethods = map[string]bool{http.MethodGet: true, http.MethodHead: true, http.MethodPost: true,
	http.MethodPut: true, http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true}

// newRequestDurations is the histogram of how long the WEBAPP took to
// answer, by route pattern, method and status code.
func newRequestDurations() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lorry_controller_http_request_duration_seconds",
		Help:    "How long the WEBAPP took to answer requests, by route pattern, method and status code.",
		Buckets: requestDurationBuckets,
	}, []string{"route", "method", "code"})
}

// measureRequests observes each request's duration in durations. The
// route is chi's pattern, not the path, so that the lorries' paths do not
// each make a series of their own.
func measureRequests(durations *prometheus.HistogramVec) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			code := ww.Status()
			if code == 0 {
				code = http.StatusOK
			}
			method := r.Method
			if !knownMethods[method] {
				method = "other" // a client's made-up method is no series of its own
			}
			durations.WithLabelValues(route, method, strconv.Itoa(code)).Observe(time.Since(start).Seconds())
		})
	}
}
