package routes

import (
	"net/http"
	"net/url"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"lorrycontroller.dev/lc/confgit"
)

// scrapeServer GETs /metrics from the test WEBAPP over HTTP, so that the
// request durations of the calls made before are in it.
func (ts *testServer) scrapeServer(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics = %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// TestMetricsForAlerts checks the figures the alerting rules go by beyond
// the run queue's: each queue's wait, the outbox, the disk, the writes and
// the requests.
func TestMetricsForAlerts(t *testing.T) {
	ts := newTestServer(t, withBackups(t)) // fake clock at 1000
	ts.configureQueues(t, []confgit.Queue{{Name: "heavy", Threads: ptr(1), Sort: "queue-order"}},
		map[string]string{"h/a": "heavy", "h/b": "heavy", "s/a": "default"})
	only := url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m1"}, "queues": {"heavy"}}
	if code, offer := ts.call(t, "POST", "/1.0/give-me-job", only); code != 200 || offer["path"] != "h/a" {
		t.Fatalf("give-me-job with queues heavy = %d %v; want h/a", code, offer)
	}
	ts.FakeClock.Set(1090)
	fams := ts.scrapeServer(t)
	checkMetrics(t, "one heavy job running", fams, []wantMetric{
		{name: "lorry_controller_queue_lorries_due", labels: []string{"queue", "heavy"}, value: 1},
		{name: "lorry_controller_queue_running_jobs", labels: []string{"queue", "heavy"}, value: 1},
		{name: "lorry_controller_queue_threads", labels: []string{"queue", "heavy"}, value: 1},
		{name: "lorry_controller_queue_oldest_due_wait_seconds", labels: []string{"queue", "heavy"}, value: 90},
		{name: "lorry_controller_queue_lorries_due", labels: []string{"queue", "default"}, value: 1},
		{name: "lorry_controller_queue_running_jobs", labels: []string{"queue", "default"}, value: 0},
		{name: "lorry_controller_queue_threads", labels: []string{"queue", "default"}, absent: true},
		{name: "lorry_controller_queue_oldest_due_wait_seconds", labels: []string{"queue", "default"}, value: 90},
		{name: "lorry_controller_notifications_pending", value: 0},
		{name: "lorry_controller_notifications_oldest_pending_age_seconds", value: 0},
		{name: "lorry_controller_statedb_writes_up", value: 1},
		{name: "lorry_controller_http_request_duration_seconds",
			labels: []string{"code", "200", "method", "POST", "route", "/1.0/give-me-job"}, value: 1},
	})
	free, _ := metricValue(fams, "lorry_controller_statedb_disk_free_bytes")
	size, _ := metricValue(fams, "lorry_controller_statedb_disk_size_bytes")
	if free <= 0 || size < free {
		t.Errorf("disk free %v of %v; want some free space of a larger disk", free, size)
	}

	update := url.Values{"job_id": {"1"}, "exit": {"1"}, "minion": {"m1"}, "host": {"h"}, "pid": {"1"}}
	if code, m := ts.call(t, "POST", "/1.0/job-update", update); code != 200 {
		t.Fatalf("job-update = %d %v", code, m)
	}
	// An unknown route is counted under the pattern that took it, an
	// unknown method as other: neither makes series of its own.
	ts.call(t, "GET", "/1.0/no-such-route", nil)
	ts.call(t, "BREW", "/1.0/status", nil)
	ts.FakeClock.Set(1150)
	checkMetrics(t, "a failed job notified", ts.scrapeServer(t), []wantMetric{
		{name: "lorry_controller_queue_running_jobs", labels: []string{"queue", "heavy"}, value: 0},
		{name: "lorry_controller_queue_oldest_due_wait_seconds", labels: []string{"queue", "heavy"}, value: 150},
		{name: "lorry_controller_notifications_pending", value: 1},
		{name: "lorry_controller_notifications_oldest_pending_age_seconds", value: 60},
		{name: "lorry_controller_http_request_duration_seconds",
			labels: []string{"code", "404", "method", "GET", "route", "/1.0/*"}, value: 1},
		{name: "lorry_controller_http_request_duration_seconds",
			labels: []string{"code", "405", "method", "other", "route", "unmatched"}, value: 1},
	})
	// Retired minions, the silent and the idle, are neither silent nor
	// idle: they are not coming back to work.
	ts.FakeClock.Set(1500)
	minion := url.Values{"host": {"h"}, "pid": {"2"}, "minion": {"m2"}}
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", minion); code != 200 {
		t.Fatalf("give-me-job for m2 = %d", code)
	}
	for _, name := range []string{"m1", "gone"} {
		if code, a := ts.call(t, "POST", "/1.0/retire-minion", url.Values{"minion": {name}}); code != 200 {
			t.Fatalf("retire-minion %s = %d %v", name, code, a)
		}
	}
	checkMetrics(t, "two retired", ts.scrapeServer(t), []wantMetric{
		{name: "lorry_controller_minions", labels: []string{"state", "busy"}, value: 1},
		{name: "lorry_controller_minions", labels: []string{"state", "idle"}, value: 0},
		{name: "lorry_controller_minions", labels: []string{"state", "silent"}, value: 0},
		{name: "lorry_controller_minions", labels: []string{"state", "retired"}, value: 2},
	})
}
