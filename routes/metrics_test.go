package routes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/wire"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// scrape GETs /metrics from h and parses it with the Prometheus text
// parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics = %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q; want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// metricValue finds the gauge or the histogram's count of name whose labels
// are exactly labels (name=value pairs); ok is false if there is none.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) (v float64, ok bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if want[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

type wantMetric struct {
	name   string
	labels []string
	value  float64
	absent bool
}

func checkMetrics(t *testing.T, when string, fams map[string]*dto.MetricFamily, wants []wantMetric) {
	t.Helper()
	for _, w := range wants {
		v, ok := metricValue(fams, w.name, w.labels...)
		switch {
		case w.absent && ok:
			t.Errorf("%s: %s%v = %v; want no such series", when, w.name, w.labels, v)
		case !w.absent && !ok:
			t.Errorf("%s: %s%v missing; want %v", when, w.name, w.labels, w.value)
		case !w.absent && v != w.value:
			t.Errorf("%s: %s%v = %v; want %v", when, w.name, w.labels, v, w.value)
		}
	}
}

func histogramSum(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	for _, m := range fams[name].GetMetric() {
		got := []string{}
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName(), l.GetValue())
		}
		if strings.Join(got, ",") == strings.Join(labels, ",") {
			return m.GetHistogram().GetSampleSum()
		}
	}
	return -1
}

func TestMetrics(t *testing.T) {
	ts := newTestServer(t) // fake clock at 1000, ghost timeout 1m
	h := ts.Handler()
	fams := scrape(t, h)
	checkMetrics(t, "fresh", fams, []wantMetric{
		{name: "lorry_controller_lorries", value: 0},
		{name: "lorry_controller_lorries_by_state", labels: []string{"state", "hard-failed"}, value: 0},
		{name: "lorry_controller_queue_running", value: 1},
		{name: "lorry_controller_jobs", labels: []string{"status", "failed"}, value: 0},
		{name: "lorry_controller_statedb_up", value: 1},
		{name: "lorry_controller_config_read_success", absent: true},
		{name: "go_goroutines", value: fams["go_goroutines"].GetMetric()[0].GetGauge().GetValue()},
	})
	if v, _ := metricValue(fams, "lorry_controller_statedb_bytes"); v <= 0 {
		t.Errorf("lorry_controller_statedb_bytes = %v; want the size of the database", v)
	}

	ts.configure(t, "a/b", "c/d")
	minion := func(name, pid string) url.Values { return url.Values{"minion": {name}, "host": {"h"}, "pid": {pid}} }
	update := func(id, pid, exit string) {
		t.Helper()
		v := minion("m"+pid, pid)
		v.Set("job_id", id)
		v.Set("exit", exit)
		if code, m := ts.call(t, "POST", "/1.0/job-update", v); code != 200 {
			t.Fatalf("job-update %s = %d %v", id, code, m)
		}
	}
	for _, pid := range []string{"1", "2"} {
		if code, m := ts.call(t, "POST", "/1.0/give-me-job", minion("m"+pid, pid)); code != 200 {
			t.Fatalf("give-me-job = %d %v", code, m)
		}
	}
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", minion("m3", "3")); code != 204 {
		t.Fatalf("give-me-job for m3 = %d; want 204", code)
	}
	ts.FakeClock.Set(1030)
	update("1", "1", "0")
	ts.FakeClock.Set(1065)
	update("2", "2", "no")
	ts.FakeClock.Set(1070)

	fams = scrape(t, h)
	checkMetrics(t, "one job done, one running", fams, []wantMetric{
		{name: "lorry_controller_lorries", value: 2},
		{name: "lorry_controller_lorries_due", value: 0},
		{name: "lorry_controller_lorries_failing", value: 0},
		{name: "lorry_controller_lorries_by_state", labels: []string{"state", "ok"}, value: 2},
		{name: "lorry_controller_lorries_by_state", labels: []string{"state", "backing-off"}, value: 0},
		{name: "lorry_controller_jobs", labels: []string{"status", "succeeded"}, value: 1},
		{name: "lorry_controller_jobs", labels: []string{"status", "running"}, value: 1},
		{name: "lorry_controller_running_jobs", value: 1},
		{name: "lorry_controller_minions", labels: []string{"state", "busy"}, value: 1},
		{name: "lorry_controller_minions", labels: []string{"state", "idle"}, value: 1},
		{name: "lorry_controller_minions", labels: []string{"state", "silent"}, value: 1},
		{name: "lorry_controller_job_duration_seconds", labels: []string{"kind", wire.KindLorry, "status", "succeeded"}, value: 1},
		{name: "lorry_controller_config_read_success", value: 1},
		{name: "lorry_controller_config_read_timestamp_seconds", value: 1000},
		{name: "lorry_controller_config_success_timestamp_seconds", value: 1000},
		{name: "lorry_controller_config_file_errors", value: 0},
		{name: "lorry_controller_host_listing_success", labels: []string{"host", "gl.example"}, absent: true},
	})
	if got := histogramSum(fams, "lorry_controller_job_duration_seconds", "kind", wire.KindLorry, "status", "succeeded"); got != 30 {
		t.Errorf("duration sum of the succeeded job = %v; want 30", got)
	}

	ts.FakeClock.Set(1100)
	update("2", "2", "1")
	// No lister is wired: the listing fails, and that is recorded.
	if code, m := ts.call(t, "POST", "/1.0/force-ls-troves", url.Values{}); code != 200 {
		t.Fatalf("force-ls-troves = %d %v", code, m)
	}
	ts.FakeClock.Set(1200)
	ts.conf.err = errors.New("CONFGIT is gone")
	if code, _ := ts.call(t, "POST", "/1.0/read-configuration", url.Values{}); code < 400 {
		t.Fatalf("read-configuration with a broken CONFGIT = %d; want a failure", code)
	}
	if code, _ := ts.call(t, "POST", "/1.0/stop-queue", url.Values{}); code != 200 {
		t.Fatalf("stop-queue = %d", code)
	}

	fams = scrape(t, h)
	checkMetrics(t, "after a failed job, listing and read", fams, []wantMetric{
		{name: "lorry_controller_lorries_failing", value: 1},
		{name: "lorry_controller_lorries_by_state", labels: []string{"state", "failing"}, value: 1},
		{name: "lorry_controller_lorries_by_state", labels: []string{"state", "ok"}, value: 1},
		// It ran past its lorry-timeout of a minute before it exited.
		{name: "lorry_controller_jobs", labels: []string{"status", "timed-out"}, value: 1},
		{name: "lorry_controller_jobs", labels: []string{"status", "running"}, value: 0},
		{name: "lorry_controller_running_jobs", value: 0},
		{name: "lorry_controller_queue_running", value: 0},
		// Each job is observed once, however many scrapes see it.
		{name: "lorry_controller_job_duration_seconds", labels: []string{"kind", wire.KindLorry, "status", "succeeded"}, value: 1},
		{name: "lorry_controller_job_duration_seconds", labels: []string{"kind", wire.KindLorry, "status", "timed-out"}, value: 1},
		{name: "lorry_controller_config_read_success", value: 0},
		{name: "lorry_controller_config_read_timestamp_seconds", value: 1200},
		{name: "lorry_controller_config_success_timestamp_seconds", value: 1000},
		{name: "lorry_controller_host_listing_success", labels: []string{"host", "gl.example"}, value: 0},
		{name: "lorry_controller_host_listing_timestamp_seconds", labels: []string{"host", "gl.example"}, value: 1100},
		{name: "lorry_controller_minions", labels: []string{"state", "silent"}, value: 3},
	})
	if got := histogramSum(fams, "lorry_controller_job_duration_seconds", "kind", wire.KindLorry, "status", "timed-out"); got != 100 {
		t.Errorf("duration sum of the timed-out job = %v; want 100", got)
	}

	// A restarted WEBAPP does not count the jobs that ended before it.
	fams = scrape(t, ts.Handler())
	if f := fams["lorry_controller_job_duration_seconds"]; len(f.GetMetric()) != 0 {
		t.Errorf("a new handler reports durations %v; want none", f.GetMetric())
	}
}

func TestMetricsWhenTheDatabaseDoesNotAnswer(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	h := ts.Handler()
	ts.DB.Close()
	done := make(chan map[string]*dto.MetricFamily)
	go func() { done <- scrape(t, h) }()
	var fams map[string]*dto.MetricFamily
	select {
	case fams = <-done:
	case <-time.After(2 * scrapeTimeout):
		t.Fatal("the scrape hangs")
	}
	checkMetrics(t, "closed database", fams, []wantMetric{
		{name: "lorry_controller_statedb_up", value: 0},
		{name: "lorry_controller_lorries", absent: true},
	})
}

func TestHealthCheck(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	if code, m := ts.call(t, "GET", "/1.0/health-check", nil); code != 200 || m["ok"] != true {
		t.Fatalf("health-check = %d %v; want 200 ok", code, m)
	}
	h := checkAnswers(t, ts.Handler())
	ts.DB.Close()
	start := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/1.0/health-check", nil).WithContext(context.Background()))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"error"`) {
		t.Errorf("health-check with the database closed = %d %s; want 503 with an error", rec.Code, rec.Body)
	}
	if d := time.Since(start); d > 2*healthCheckTimeout {
		t.Errorf("health-check took %v; want at most about %v", d, healthCheckTimeout)
	}
}

// TestHealthCheckWhenWritesFail fills the state database: reads still
// answer, but the health check and statedb_up must say that writes do not,
// until a real write commits again.
func TestHealthCheckWhenWritesFail(t *testing.T) {
	dbtest.SQLiteOnly(t, "DB.LimitSize caps a SQLite file; a PostgreSQL server has no such cap to set")
	t.Parallel()
	ctx := context.Background()
	ts := newTestServer(t)
	ts.configure(t, "a/b")
	h := checkAnswers(t, ts.Handler())
	code, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
	if code != 200 {
		t.Fatalf("give-me-job = %d %v", code, offer)
	}
	id := fmt.Sprint(offer["job_id"])
	update := url.Values{"job_id": {id}, "exit": {"no"}, "minion": {"m"}, "stdout": {strings.Repeat("x", 1<<20)}}

	size, err := ts.DB.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.DB.LimitSize(ctx, size); err != nil {
		t.Fatal(err)
	}
	if code, m := ts.call(t, "POST", "/1.0/job-update", update); code != 500 {
		t.Fatalf("job-update into a full database = %d %v; want 500", code, m)
	}
	if code, m := ts.call(t, "GET", "/1.0/health-check", nil); code != 503 || !strings.Contains(fmt.Sprint(m["error"]), "writes") {
		t.Errorf("health-check with a full database = %d %v; want 503 saying writes fail", code, m)
	}
	checkMetrics(t, "full database", scrape(t, h), []wantMetric{{name: "lorry_controller_statedb_up", value: 0}})

	if err := ts.DB.LimitSize(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// Room again, but only a real write can say so: the health check's
	// own small write fits where a job's output may not.
	if code, m := ts.call(t, "GET", "/1.0/health-check", nil); code != 503 {
		t.Errorf("health-check once there is room, before a real write = %d %v; want 503", code, m)
	}
	if code, m := ts.call(t, "POST", "/1.0/job-update", update); code != 200 {
		t.Errorf("job-update once there is room = %d %v; want 200", code, m)
	}
	if code, m := ts.call(t, "GET", "/1.0/health-check", nil); code != 200 {
		t.Errorf("health-check after a real write = %d %v; want 200", code, m)
	}
	checkMetrics(t, "room again", scrape(t, h), []wantMetric{{name: "lorry_controller_statedb_up", value: 1}})
}
