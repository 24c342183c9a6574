package routes

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/wire"
)

// TestMetricsOnBothBackends has a WEBAPP on SQLite and one on PostgreSQL,
// configured alike, do the same jobs, and scrapes each: they export the
// same metric names, among them every name the shipped alerting rules
// and dashboard use, and the same figures of the state they share. It
// opens both backends whichever the tests run on; only where no
// PostgreSQL can be had is its PostgreSQL half skipped.
func TestMetricsOnBothBackends(t *testing.T) {
	pg := dbtest.DatabaseOrSkip(t)
	backups := withBackups(t)
	names := map[string][]string{}
	series := map[string]map[string]float64{}
	for _, b := range []struct{ name, place string }{
		{"sqlite", filepath.Join(t.TempDir(), "state.db")},
		{"postgres", pg},
	} {
		fams := everyFamily(t, newTestServerOn(t, b.place, backups))
		names[b.name] = slices.Sorted(maps.Keys(exportedNames(fams)))
		series[b.name] = stateSeries(fams)
		checkMetrics(t, b.name, fams, []wantMetric{
			{name: "lorry_controller_statedb_up", value: 1},
			{name: "lorry_controller_statedb_writes_up", value: 1},
		})
		for _, n := range []string{"lorry_controller_statedb_bytes", "lorry_controller_statedb_disk_free_bytes",
			"lorry_controller_statedb_disk_size_bytes"} {
			if v, _ := metricValue(fams, n); v <= 0 {
				t.Errorf("%s: %s = %v; want more than 0", b.name, n, v)
			}
		}
	}
	sq, pq := names["sqlite"], names["postgres"]
	for _, n := range sq {
		if !slices.Contains(pq, n) {
			t.Errorf("the WEBAPP on PostgreSQL exports no %s; on SQLite it does", n)
		}
	}
	for _, n := range pq {
		if !slices.Contains(sq, n) {
			t.Errorf("the WEBAPP on SQLite exports no %s; on PostgreSQL it does", n)
		}
	}
	used := usedMetrics(t)
	for _, n := range slices.Sorted(maps.Keys(used)) {
		for _, b := range []string{"sqlite", "postgres"} {
			if n != "up" && !slices.Contains(names[b], n) {
				t.Errorf("%s uses %s, which the WEBAPP on %s does not export", used[n], n, b)
			}
		}
	}
	if len(series["sqlite"]) < 20 {
		t.Fatalf("only %d series of the state on SQLite: %v", len(series["sqlite"]), series["sqlite"])
	}
	for _, s := range slices.Sorted(maps.Keys(series["sqlite"])) {
		if v, ok := series["postgres"][s]; !ok || v != series["sqlite"][s] {
			t.Errorf("%s on PostgreSQL = %v (present: %v); on SQLite %v", s, v, ok, series["sqlite"][s])
		}
	}
	for _, s := range slices.Sorted(maps.Keys(series["postgres"])) {
		if _, ok := series["sqlite"][s]; !ok {
			t.Errorf("%s on PostgreSQL only", s)
		}
	}
}

// stateSeries are the series of a scrape that tell of the state the
// WEBAPPs share, each with its value (a histogram's count): not the
// sizes and disks, which are each database's own, nor the requests' and
// the process's.
func stateSeries(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range fams {
		switch {
		case !strings.HasPrefix(name, "lorry_controller_"),
			strings.HasPrefix(name, "lorry_controller_statedb_"),
			name == "lorry_controller_http_request_duration_seconds":
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := name + "{" + strings.Join(labels, ",") + "}"
			if m.Histogram != nil {
				out[key] = float64(m.GetHistogram().GetSampleCount())
			} else {
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestMetricsFromStartOnBothBackends has a WEBAPP on each backend, in one
// run, count in its job durations the jobs that end after its metrics
// start, and not one that ended before (each driver reads the last job id
// its own way), and tell of the disk it has: the SQLite file's, in the
// status and the metrics; for PostgreSQL, whose disk is its server's,
// none in the status, and the backups' disk in the metrics.
func TestMetricsFromStartOnBothBackends(t *testing.T) {
	for _, b := range []struct {
		name  string
		place func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "state.db") }},
		{"postgres", func(t *testing.T) string { return dbtest.DatabaseOrSkip(t) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			backups := t.TempDir()
			ts := newTestServerOn(t, b.place(t), func(s *Server) { s.BackupDirectory = backups })
			ts.configure(t, "a/b", "c/d", "e/f")
			minion := func(n string) url.Values { return url.Values{"minion": {"m" + n}, "host": {"h"}, "pid": {n}} }
			give := func(n string) {
				t.Helper()
				if code, m := ts.call(t, "POST", "/1.0/give-me-job", minion(n)); code != 200 {
					t.Fatalf("give-me-job for m%s = %d %v", n, code, m)
				}
			}
			end := func(n, id string, at int64) {
				t.Helper()
				ts.FakeClock.Set(at)
				v := minion(n)
				v.Set("job_id", id)
				v.Set("exit", "0")
				if code, m := ts.call(t, "POST", "/1.0/job-update", v); code != 200 {
					t.Fatalf("job-update %s = %d %v", id, code, m)
				}
			}
			give("1")
			give("2")
			end("1", "1", 1010)
			h := ts.Handler() // job 1 ended before its metrics start, job 2 runs
			end("2", "2", 1040)
			give("3")
			end("3", "3", 1050)
			fams := scrape(t, h)
			checkMetrics(t, b.name, fams, []wantMetric{
				{name: "lorry_controller_statedb_up", value: 1},
				{name: "lorry_controller_job_duration_seconds", labels: []string{"kind", wire.KindLorry, "status", "succeeded"}, value: 2},
			})
			if got := histogramSum(fams, "lorry_controller_job_duration_seconds", "kind", wire.KindLorry, "status", "succeeded"); got != 50 {
				t.Errorf("duration sum = %v; want 50, of jobs 2 and 3 and not job 1", got)
			}

			code, st := ts.call(t, "GET", "/1.0/status?run_queue=false", nil)
			if code != 200 {
				t.Fatalf("status = %d %v", code, st)
			}
			free, _ := st["disk_free"].(float64)
			dir := ts.DB.DiskDir()
			switch b.name {
			case "sqlite":
				if dir != filepath.Dir(ts.DB.Path()) || free < 0 {
					t.Errorf("DiskDir = %q, disk_free = %v; want %q, and its free space", dir, free, filepath.Dir(ts.DB.Path()))
				}
			default:
				if dir != "" || free != -1 {
					t.Errorf("DiskDir = %q, disk_free = %v; want none, -1", dir, free)
				}
			}
			if got, want := diskDir(ts.StateDir(), backups), cmp.Or(dir, backups); got != want {
				t.Errorf("the metrics' disk is %q; want %q", got, want)
			}
		})
	}
}
