package routes

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// TestStatedbRestart restarts the PostgreSQL server under a WEBAPP:
// while it is away the health check answers 503; once it is back,
// every route answers at its first request, none with a 500 for a
// connection that broke meanwhile.
func TestStatedbRestart(t *testing.T) {
	cl := dbtest.NewCluster(t)
	ts := newPlacedServer(t, cl.Database(t))
	ts.configure(t, "a/b", "c/d")

	paths := []string{"/1.0/status", "/1.0/status-html", "/1.0/list-queue", "/1.0/lorries",
		"/1.0/lorry/a/b", "/1.0/lorry-html/a/b", "/1.0/list-jobs", "/1.0/list-running-jobs",
		"/1.0/list-jobs-html", "/1.0/get-max-jobs", "/1.0/hosts-html", "/1.0/health-check", "/metrics"}
	every := func(when string) {
		t.Helper()
		// Twice, so that each of the read sessions serves one.
		for range 2 {
			for _, p := range paths {
				resp, err := http.Get(ts.url + p)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s: GET %s = %d %.200s; want 200", when, p, resp.StatusCode, body)
				}
			}
		}
		if code, m := ts.call(t, "POST", "/1.0/read-configuration?wait=3600", nil); code != http.StatusOK {
			t.Errorf("%s: read-configuration = %d %v; want 200", when, code, m)
		}
	}
	every("before the restart")

	cl.Stop()
	if code, m := ts.call(t, "GET", "/1.0/health-check", nil); code != http.StatusServiceUnavailable {
		t.Errorf("health-check with the server away = %d %v; want 503", code, m)
	}
	cl.Start(t)
	every("after the restart")
}

// newPlacedServer is newTestServer on the STATEDB at place.
func newPlacedServer(t *testing.T, place string) *testServer {
	t.Helper()
	dir := t.TempDir()
	fake := &clock.Fake{}
	fake.Set(1000)
	db, err := statedb.Open(context.Background(), place, statedb.Options{Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conf := &stubConfig{cfg: &confgit.Config{Commit: "c0"}}
	s := &Server{
		App: &control.App{DB: db, Config: conf,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), GhostTimeout: time.Minute, JobMaxAge: time.Hour, FakeClock: fake},
		StatusHTML: filepath.Join(dir, "status.html"), InsecureNoAuth: true,
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &testServer{Server: s, url: hs.URL, conf: conf}
}

// TestHealthCheckBehindPooler runs a WEBAPP behind pgbouncer in
// transaction mode on an address that leaves pgx's default mode, whose
// sessions' prepared statements the pooler's server sessions do not
// keep: after a route answers 500 for it, the health check answers 503.
func TestHealthCheckBehindPooler(t *testing.T) {
	u, err := url.Parse(dbtest.Pooled(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("default_query_exec_mode")
	u.RawQuery = q.Encode()
	ts := newPlacedServer(t, u.String())
	failed := 0
	for range 16 {
		code, _ := ts.call(t, "GET", "/1.0/lorries", nil)
		if code == http.StatusOK {
			continue
		}
		failed++
		if hc, m := ts.call(t, "GET", "/1.0/health-check", nil); hc != http.StatusServiceUnavailable {
			t.Errorf("health-check after lorries answered %d = %d %v; want 503", code, hc, m)
		}
	}
	if failed == 0 {
		t.Errorf("lorries answered 200 every time; want failures behind the pooler")
	}
}
