package minion

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"log/slog"
)

const (
	testMinion = "test-minion"
	testHost   = "test-host"
	testPid    = 4242
)

// dropConnection, returned by a hook as the status, makes the fake WEBAPP
// close the connection without answering, as a crashed server would.
const dropConnection = -1

// request is one request the fake WEBAPP received, with its answer.
type request struct {
	Route  string
	Form   url.Values
	Status int
	At     time.Time
	// Via is the address the request was sent to: the fake's own, or
	// that of one of its fronts.
	Via string
}

// fakeWebapp plays the WEBAPP side of the minion protocol and records what
// it is sent. Hooks run one at a time; n counts requests to that route
// from 1. A nil hook answers 204 to give-me-job and {"kill": false} to
// job-update.
type fakeWebapp struct {
	t   *testing.T
	srv *httptest.Server
	// handler serves the fake's routes, behind srv and behind any
	// fronts.
	handler http.Handler

	mu        sync.Mutex
	reqs      []request
	giveMeJob func(n int) (int, string)
	jobUpdate func(n int, form url.Values) (int, string)
	// runtimeTar is served as every runtime's source; runtimeAuth is
	// the Authorization header of the last download.
	runtimeTar  []byte
	runtimeAuth string
}

func newFakeWebapp(t *testing.T) *fakeWebapp {
	f := &fakeWebapp{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("/1.0/give-me-job", f.handle("give-me-job", []string{"host", "pid", "minion"}))
	mux.HandleFunc("/1.0/job-update", f.handle("job-update", []string{"job_id", "minion", "pid", "exit", "stdout", "stderr"}))
	mux.HandleFunc("GET /1.0/runtime/{name}/{file}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		b := f.runtimeTar
		f.runtimeAuth = r.Header.Get("Authorization")
		f.mu.Unlock()
		if b == nil {
			http.Error(w, `{"error": "no such runtime"}`, http.StatusNotFound)
			return
		}
		w.Write(b)
	})
	f.handler = mux
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeWebapp) handle(route string, required []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			f.t.Errorf("%s: got method %s, want POST", route, r.Method)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
			f.t.Errorf("%s: got Content-Type %q, want a form", route, ct)
		}
		if err := r.ParseForm(); err != nil {
			f.t.Errorf("%s: parse form: %v", route, err)
		}
		form := r.PostForm
		for _, k := range required {
			if _, ok := form[k]; !ok {
				f.t.Errorf("%s: got form %v, want field %q", route, form, k)
			}
		}
		if got := form.Get("minion"); got != testMinion {
			f.t.Errorf("%s: got minion %q, want %q", route, got, testMinion)
		}
		if got := form.Get("pid"); got != strconv.Itoa(testPid) {
			f.t.Errorf("%s: got pid %q, want %d", route, got, testPid)
		}

		f.mu.Lock()
		n := 1
		for _, q := range f.reqs {
			if q.Route == route {
				n++
			}
		}
		status, body := http.StatusNoContent, ""
		switch route {
		case "give-me-job":
			if got := form.Get("host"); got != testHost {
				f.t.Errorf("give-me-job: got host %q, want %q", got, testHost)
			}
			if f.giveMeJob != nil {
				status, body = f.giveMeJob(n)
			}
		case "job-update":
			f.checkUpdate(form)
			status, body = http.StatusOK, `{"kill": false}`
			if f.jobUpdate != nil {
				status, body = f.jobUpdate(n, form)
			}
		}
		f.reqs = append(f.reqs, request{Route: route, Form: form, Status: status, At: time.Now(), Via: r.Host})
		f.mu.Unlock()

		if status == dropConnection {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				f.t.Errorf("hijack: %v", err)
				return
			}
			conn.Close()
			return
		}
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

// checkUpdate checks the shape of a job-update: disk_usage comes with the
// final update, and only with it.
func (f *fakeWebapp) checkUpdate(form url.Values) {
	exit := form.Get("exit")
	_, hasDU := form["disk_usage"]
	if exit == "no" {
		if hasDU {
			f.t.Errorf("job-update: got disk_usage %q while running, want none", form.Get("disk_usage"))
		}
		return
	}
	if _, err := strconv.Atoi(exit); err != nil {
		f.t.Errorf("job-update: got exit %q, want \"no\" or a number", exit)
	}
	if _, err := strconv.ParseInt(form.Get("disk_usage"), 10, 64); err != nil {
		f.t.Errorf("job-update: got final disk_usage %q, want a number", form.Get("disk_usage"))
	}
}

func (f *fakeWebapp) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

func (f *fakeWebapp) routeRequests(route string) []request {
	var out []request
	for _, q := range f.requests() {
		if q.Route == route {
			out = append(out, q)
		}
	}
	return out
}

// delivered are the job-updates the fake WEBAPP accepted.
func (f *fakeWebapp) delivered() []request {
	var out []request
	for _, q := range f.routeRequests("job-update") {
		if q.Status == http.StatusOK {
			out = append(out, q)
		}
	}
	return out
}

// jobAnswer is a give-me-job answer shaped like the WEBAPP's.
func jobAnswer(id int64, path, kind, text, pushURL string) string {
	return fmt.Sprintf(`{"job_id": %d, "path": %q, "kind": %q, "text": %q, "timeout": 3600, "push_url": %q, "extra": "ignored"}`,
		id, path, kind, text, pushURL)
}

// oneJob hands out answer once, then has nothing to do.
func oneJob(answer string) func(int) (int, string) {
	return func(n int) (int, string) {
		if n == 1 {
			return http.StatusOK, answer
		}
		return http.StatusNoContent, ""
	}
}

// sh quotes s for a shell script.
func sh(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeLorry writes a shell script to stand in for lorry.
func writeLorry(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lorry")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// newTestMinion returns a minion talking to f with short intervals, running
// lorryCmd in a fresh working area.
func newTestMinion(t *testing.T, f *fakeWebapp, lorryCmd string) (*Minion, Config) {
	t.Helper()
	return newTestMinionAt(t, lorryCmd, f.srv.URL)
}

// newTestMinionAt is newTestMinion asking the WEBAPPs at urls.
func newTestMinionAt(t *testing.T, lorryCmd string, urls ...string) (*Minion, Config) {
	t.Helper()
	cfg := Config{
		WebappURLs:     urls,
		Name:           testMinion,
		Host:           testHost,
		Pid:            testPid,
		LorryCmd:       lorryCmd,
		WorkingArea:    filepath.Join(t.TempDir(), "work"),
		Sleep:          20 * time.Millisecond,
		UpdateInterval: 20 * time.Millisecond,
		KillGrace:      10 * time.Second,
		BackoffMin:     5 * time.Millisecond,
		BackoffMax:     20 * time.Millisecond,
	}
	if err := os.MkdirAll(cfg.WorkingArea, 0o755); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	client := &http.Client{Timeout: 10 * time.Second}
	return New(cfg, client, logger), cfg
}

// runOnce runs m.RunOnce, giving up after a generous bound so that a broken
// minion fails the test instead of hanging it.
func runOnce(t *testing.T, ctx context.Context, m *Minion) (bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ran, err := m.RunOnce(ctx)
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatal("RunOnce did not return")
	}
	return ran, err
}

// waitFile waits until path exists and returns its contents.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(data), "\n") {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func touch(t *testing.T, path string) {
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Error(err)
	}
}

// gone reports whether pid no longer runs; an unreaped zombie counts as gone.
func gone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, path)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
