package periodic

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/routes"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, statedb.Migrate) }

// stubConfig is a CONFGIT that reads as one lorry, or fails with err.
type stubConfig struct{ err error }

func (s *stubConfig) Read(context.Context) (*confgit.Config, error) {
	if s.err != nil {
		return nil, s.err
	}
	return &confgit.Config{Commit: "c1", Lorries: []confgit.Lorry{{
		Path: "delta/hello", Text: `{"delta/hello":{"type":"git","url":"https://example.com/hello"}}`,
		Type: "git", File: "hello.lorry", Interval: time.Hour, Timeout: time.Hour,
	}}}, nil
}

func TestRunOnce(t *testing.T) {
	dir := t.TempDir()
	fake := &clock.Fake{}
	fake.Set(1000)
	ctx := context.Background()
	db, err := statedb.Open(ctx, dbtest.Place(t), statedb.Options{Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conf := &stubConfig{}
	srv := &routes.Server{App: &control.App{DB: db, Config: conf, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		GhostTimeout: time.Minute, JobMaxAge: time.Hour, FakeClock: fake}, StatusHTML: filepath.Join(dir, "status.html")}
	h := srv.Handler()
	p := &Runner{Work: srv, Tasks: Tasks, Log: srv.Log}

	if errs := p.runOnce(ctx); len(errs) > 0 {
		t.Fatalf("runOnce: %v", errs)
	}
	// read-configuration ran first, so the status page shows its lorry.
	page, err := os.ReadFile(srv.StatusHTML)
	if err != nil || !strings.Contains(string(page), "delta/hello") {
		t.Errorf("status page after runOnce: %v; want it to list delta/hello", err)
	}

	// A job that no minion reports on is ended by remove-ghost-jobs.
	code, _, err := routes.ServeInProcess(ctx, h, http.MethodPost, "/1.0/give-me-job?host=h&pid=1&minion=m")
	if err != nil || code != 200 {
		t.Fatalf("give-me-job = %d %v", code, err)
	}
	// Confirmed, it is running: left unconfirmed, it would end orphaned.
	code, _, err = routes.ServeInProcess(ctx, h, http.MethodPost, "/1.0/job-update?job_id=1&minion=m&pid=1&exit=no")
	if err != nil || code != 200 {
		t.Fatalf("job-update = %d %v", code, err)
	}
	fake.Set(1000 + 3*3600)
	if errs := p.runOnce(ctx); len(errs) > 0 {
		t.Fatalf("runOnce: %v", errs)
	}
	err = db.View(ctx, func(tx *statedb.Tx) error {
		j, err := tx.Job(ctx, 1)
		if err == nil && j.Status != statedb.StatusLost {
			t.Errorf("job 1 is %s after runOnce; want lost", j.Status)
		}
		return err
	})
	if err != nil {
		t.Errorf("job 1 after runOnce: %v", err)
	}

	// A failed task is reported, and the others still run.
	conf.err = errors.New("CONFGIT is gone")
	os.Remove(srv.StatusHTML)
	errs := p.runOnce(ctx)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "read-configuration") {
		t.Errorf("runOnce with a broken CONFGIT: %v; want one error, from read-configuration", errs)
	}
	if _, err := os.Stat(srv.StatusHTML); err != nil {
		t.Errorf("status page after a failed read-configuration: %v; want it rewritten all the same", err)
	}
}

// timerSettings reads the OnActiveSec, OnUnitActiveSec and OnCalendar of a
// timer unit.
func timerSettings(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}

// span reads the systemd time spans the timer units use.
func span(t *testing.T, s string) time.Duration {
	t.Helper()
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"min", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}, {"s", time.Second}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			var v int
			for _, c := range n {
				if c < '0' || c > '9' {
					t.Fatalf("time span %q: not a number of %s", s, u.suffix)
				}
				v = v*10 + int(c-'0')
			}
			return time.Duration(v) * u.unit
		}
	}
	t.Fatalf("time span %q: unknown unit", s)
	return 0
}

// TestTimerUnitsMatchPeriodicTasks keeps --periodic-work and the timer
// units doing the same work at the same intervals.
func TestTimerUnitsMatchPeriodicTasks(t *testing.T) {
	units := filepath.Join("..", "units")
	all, err := filepath.Glob(filepath.Join(units, "lorry-controller-*.timer"))
	if err != nil {
		t.Fatal(err)
	}
	// The minions' timers do the minions' work, which is no WEBAPP's.
	var timers []string
	for _, tm := range all {
		if !strings.HasPrefix(filepath.Base(tm), "lorry-controller-minion") {
			timers = append(timers, tm)
		}
	}
	if len(timers) != len(Tasks) {
		t.Errorf("%d timer units, %d periodic tasks; want one of each per task", len(timers), len(Tasks))
	}
	webapp, err := os.ReadFile(filepath.Join(units, "lorry-controller-webapp.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range Tasks {
		base := filepath.Join(units, "lorry-controller-"+task.Name)
		timer := timerSettings(t, base+".timer")
		switch {
		case timer["OnCalendar"] == "daily":
			if task.Every != 24*time.Hour {
				t.Errorf("%s.timer is daily; the task runs every %v", task.Name, task.Every)
			}
		case timer["OnUnitActiveSec"] != "":
			if got := span(t, timer["OnUnitActiveSec"]); got != task.Every {
				t.Errorf("%s.timer runs every %v; the task every %v", task.Name, got, task.Every)
			}
			if got := span(t, timer["OnActiveSec"]); got != task.Every {
				t.Errorf("%s.timer first runs after %v; the task after %v", task.Name, got, task.Every)
			}
		default:
			t.Errorf("%s.timer has neither OnCalendar=daily nor OnUnitActiveSec", task.Name)
		}
		service, err := os.ReadFile(base + ".service")
		if err != nil {
			t.Fatal(err)
		}
		call := " call --quiet --config @sysconfdir@/lorry-controller/webapp.conf " + task.Method + " " + task.Path
		if task.Args != "" {
			call += " " + task.Args
		}
		if call += "\n"; !strings.Contains(string(service), call) {
			t.Errorf("%s.service does not make the call%s", task.Name, call)
		}
		// The tasks done at start are those the WEBAPP's unit pulls in.
		pulled := strings.Contains(string(webapp), "lorry-controller-"+task.Name+".service")
		if pulled != task.AtStart {
			t.Errorf("task %s runs at start: %v; the WEBAPP's unit pulls its service in: %v", task.Name, task.AtStart, pulled)
		}
	}
}
