package routes

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// The alerting rules, their tests and the dashboard, beside the package.
const (
	rulesFile     = "../etc/prometheus/lorry-controller-rules.yml"
	rulesTestFile = "../etc/prometheus/lorry-controller-rules.test.yml"
	dashboardFile = "../etc/grafana/lorry-controller.json"
)

var (
	// promqlSkip matches what in PromQL is no metric name: strings, label
	// matchers, ranges, the labels of by, on and the like, and Grafana's
	// variables.
	promqlSkip = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\{[^}]*\}|\[[^\]]*\]|` +
		`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|\$\{?\w+\}?`)
	// promqlToken is a name or a number; numbers are taken first, so
	// that 1e9 is no name e9.
	promqlToken = regexp.MustCompile(`\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// promqlKeywords are the words of PromQL that are neither names nor
	// functions.
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "Inf": true, "NaN": true}
	labelValues = regexp.MustCompile(`^\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,`)
)

// promqlNames lists the metric names expr uses; the names of functions
// (a name followed by an opening parenthesis) are left out.
func promqlNames(expr string) []string {
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		return []string{m[1]}
	}
	expr = promqlSkip.ReplaceAllString(expr, " ")
	var out []string
	for _, loc := range promqlToken.FindAllStringIndex(expr, -1) {
		tok := expr[loc[0]:loc[1]]
		if tok[0] >= '0' && tok[0] <= '9' || promqlKeywords[tok] {
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(expr[loc[1]:], " \t\n"), "(") {
			continue // a function
		}
		out = append(out, tok)
	}
	return out
}

func TestPromqlNames(t *testing.T) {
	for expr, want := range map[string]string{
		`up{job="lorry-controller"} == 0`: "up",
		`sum by (job, instance) (rate(a_count{code=~"5.."}[10m])) / sum by (job) (rate(b[$__rate_interval])) > 0.05`: "a_count b",
		`x > 1e9 unless on (job, queue) y == 0`:                                             "x y",
		`histogram_quantile(0.99, sum by (le) (rate(h_bucket{instance=~"$instance"}[5m])))`: "h_bucket",
		`time() - c_seconds`:        "c_seconds",
		`label_values(d, instance)`: "d",
	} {
		if got := strings.Join(promqlNames(expr), " "); got != want {
			t.Errorf("promqlNames(%q) = %q; want %q", expr, got, want)
		}
	}
}

// usedMetrics reads the metric names of the rules, of their tests' series
// and of the dashboard's queries, each with where it is used.
func usedMetrics(t *testing.T) map[string]string {
	t.Helper()
	used := map[string]string{}
	add := func(where, expr string) {
		for _, n := range promqlNames(expr) {
			used[n] = where
		}
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	var tests struct {
		Tests []struct {
			Name   string `yaml:"name"`
			Series []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
		} `yaml:"tests"`
	}
	for file, v := range map[string]any{rulesFile: &rules, rulesTestFile: &tests} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			add("alert "+r.Alert, r.Expr)
		}
	}
	for _, tc := range tests.Tests {
		for _, s := range tc.Series {
			add("rules test "+tc.Name, s.Series)
		}
	}
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	walkQueries(dash, "dashboard", add)
	if len(used) < 10 {
		t.Fatalf("only %d metric names found in the rules and the dashboard: %v", len(used), used)
	}
	return used
}

// walkQueries calls add for each query of the dashboard: the expr of each
// target and the query of each query variable.
func walkQueries(v any, where string, add func(where, expr string)) {
	switch v := v.(type) {
	case map[string]any:
		if title, ok := v["title"].(string); ok {
			where = "dashboard panel " + title
		}
		if expr, ok := v["expr"].(string); ok {
			add(where, expr)
		}
		if v["type"] == "query" {
			if q, ok := v["query"].(map[string]any); ok {
				add("dashboard variable", q["query"].(string))
			} else if q, ok := v["query"].(string); ok {
				add("dashboard variable", q)
			}
		}
		for _, x := range v {
			walkQueries(x, where, add)
		}
	case []any:
		for _, x := range v {
			walkQueries(x, where, add)
		}
	}
}

// exportedNames are the names a Prometheus query may use for the families
// of a scrape: a histogram's as its _bucket, _sum and _count series.
func exportedNames(fams map[string]*dto.MetricFamily) map[string]bool {
	out := map[string]bool{}
	for name, f := range fams {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name], out[name+"_sum"], out[name+"_count"] = true, true, true
		default:
			out[name] = true
		}
	}
	return out
}

// TestAlertsAndDashboardUseExportedMetrics scrapes a WEBAPP that has done
// a bit of everything, so that every family has a series, and checks that
// the rules and the dashboard use no name it does not export (up aside,
// which Prometheus makes).
func TestAlertsAndDashboardUseExportedMetrics(t *testing.T) {
	exported := exportedNames(everyFamily(t, newTestServer(t, withBackups(t))))
	for _, want := range []string{"lorry_controller_job_duration_seconds_count", "lorry_controller_host_listing_success",
		"lorry_controller_queue_threads", "lorry_controller_http_request_duration_seconds_bucket",
		"lorry_controller_statedb_disk_free_bytes", "lorry_controller_notifications_oldest_pending_age_seconds"} {
		if !exported[want] {
			t.Fatalf("the scrape has no %s: the test WEBAPP did not do enough", want)
		}
	}
	used := usedMetrics(t)
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if n != "up" && !exported[n] {
			t.Errorf("%s uses %s, which the WEBAPP does not export", used[n], n)
		}
	}
}

// withBackups gives a test server a backup directory, as the installed
// webapp.conf does: on PostgreSQL the disk figures are that directory's.
func withBackups(t testing.TB) func(*Server) {
	dir := t.TempDir()
	return func(s *Server) { s.BackupDirectory = dir }
}

// everyFamily has ts do a bit of everything, so that every family has a
// series: a queue with a limit, a host whose listing fails, a job that
// ends, a notification waiting; and scrapes it.
func everyFamily(t *testing.T, ts *testServer) map[string]*dto.MetricFamily {
	t.Helper()
	ts.conf.cfg = &confgit.Config{Commit: "c1",
		Queues: []confgit.Queue{{Name: "heavy", Threads: ptr(1), Sort: "queue-order"}},
		Lorries: []confgit.Lorry{{Path: "h/a", Text: `{"h/a":{"type":"git","url":"u"}}`, Type: "git",
			Interval: time.Hour, Timeout: time.Minute, Queue: "heavy"}},
		Hosts: []confgit.Host{{Name: "gl.example", Type: "gitlab", Protocol: "https", LsInterval: time.Hour,
			Interval: time.Hour, Timeout: time.Minute, Section: `{"host":"gl.example","type":"gitlab"}`}}}
	if code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{}); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
	minion := url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m1"}}
	if code, offer := ts.call(t, "POST", "/1.0/give-me-job", minion); code != 200 {
		t.Fatalf("give-me-job = %d %v", code, offer)
	}
	ts.scrapeServer(t) // sees the job running, to observe its end
	minion.Set("job_id", "1")
	minion.Set("exit", "1")
	if code, m := ts.call(t, "POST", "/1.0/job-update", minion); code != 200 {
		t.Fatalf("job-update = %d %v", code, m)
	}
	// No lister is wired: the listing fails, and that is recorded.
	if code, m := ts.call(t, "POST", "/1.0/force-ls-troves", url.Values{}); code != 200 {
		t.Fatalf("force-ls-troves = %d %v", code, m)
	}
	return ts.scrapeServer(t)
}

// operationsDoc is the operator's guide, whose monitoring section names
// the metrics.
const operationsDoc = "../docs/operations.md"

var (
	// docMetricRow is a row of a table of metrics: the name, and the
	// labels in braces.
	docMetricRow = regexp.MustCompile("(?m)^\\| `(lorry_controller_[a-z0-9_]+)(?:\\{([a-z_,]*)\\})?` \\|")
	// docMetricName is a name of ours anywhere in the text.
	docMetricName = regexp.MustCompile(`\blorry_controller_[a-z0-9_]+\b`)
	// docPromQL is a line of a code block that uses a name of ours.
	docPromQL = regexp.MustCompile(`(?m)^    .*\blorry_controller_[a-z0-9_]+\b.*$`)
)

// TestDocsUseExportedMetrics checks docs/operations.md against what the
// WEBAPP exports, on each backend: every metric of its tables, with the
// labels the table gives it; every name of the queries in its code
// blocks ("Alerts worth having"); and every other name of ours in its
// text.
func TestDocsUseExportedMetrics(t *testing.T) {
	backups := withBackups(t)
	t.Run("sqlite", func(t *testing.T) {
		checkDocMetrics(t, everyFamily(t, newTestServerOn(t, filepath.Join(t.TempDir(), "state.db"), backups)))
	})
	t.Run("postgres", func(t *testing.T) {
		checkDocMetrics(t, everyFamily(t, newTestServerOn(t, dbtest.DatabaseOrSkip(t), backups)))
	})
}

func checkDocMetrics(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	exported := exportedNames(fams)
	b, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)

	rows := docMetricRow.FindAllStringSubmatch(doc, -1)
	if len(rows) < 20 {
		t.Fatalf("%s has %d rows of metrics; want the tables of the monitoring section", operationsDoc, len(rows))
	}
	for _, row := range rows {
		name, labels := row[1], row[2]
		f, ok := fams[name]
		if !ok {
			t.Errorf("%s: the table's %s is not exported", operationsDoc, name)
			continue
		}
		have := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				have[l.GetName()] = true
			}
		}
		var got []string
		for l := range have {
			got = append(got, l)
		}
		sort.Strings(got)
		want := []string{}
		if labels != "" {
			want = strings.Split(labels, ",")
		}
		sort.Strings(want)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: the table gives %s the labels {%s}; the WEBAPP exports it with {%s}", operationsDoc, name, labels, strings.Join(got, ","))
		}
	}

	queries := docPromQL.FindAllString(doc, -1)
	if len(queries) < 8 {
		t.Fatalf("%s has %d lines of queries; want the alerts worth having", operationsDoc, len(queries))
	}
	for _, q := range queries {
		for _, n := range promqlNames(q) {
			if n != "up" && !exported[n] {
				t.Errorf("%s: the query %q uses %s, which the WEBAPP does not export", operationsDoc, strings.TrimSpace(q), n)
			}
		}
	}

	for _, n := range docMetricName.FindAllString(doc, -1) {
		if _, ok := fams[n]; !ok && !exported[n] {
			t.Errorf("%s names %s, which the WEBAPP does not export", operationsDoc, n)
		}
	}

	// "and the Go runtime's and the process's own (go_*, process_*)"
	for _, prefix := range []string{"go_", "process_"} {
		found := false
		for n := range fams {
			found = found || strings.HasPrefix(n, prefix)
		}
		if strings.Contains(doc, "`"+prefix+"*`") && !found {
			t.Errorf("%s says the WEBAPP exports %s*; it exports none", operationsDoc, prefix)
		}
	}
}
