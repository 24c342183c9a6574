package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/minion"
)

// updateRecorder serves a WEBAPP and keeps the form of every job-update
// it is sent.
type updateRecorder struct {
	h       http.Handler
	mu      sync.Mutex
	updates []url.Values
}

func (rec *updateRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/1.0/job-update" {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		rec.mu.Lock()
		rec.updates = append(rec.updates, form)
		rec.mu.Unlock()
	}
	rec.h.ServeHTTP(w, r)
}

func (rec *updateRecorder) received() []url.Values {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]url.Values(nil), rec.updates...)
}

// TestLiveOutputSplitLine runs a real minion against the WEBAPP with a job
// that prints a URL with credentials in two writes, paused longer than the
// minion's update interval, split at each place of the URL. No update of
// the running job ends inside a line, and job-output, polled live from
// where it left off, never shows any part of the password.
func TestLiveOutputSplitLine(t *testing.T) {
	const (
		password = "Pa55w0rd-x"
		line     = "fetching https://user:" + password + "@git.example/x.git\n"
	)
	for _, at := range []string{"fetching ht", "https://us", "user:", "user:Pa55", "w0rd-x", "@", "@git.ex"} {
		t.Run(at, func(t *testing.T) {
			split := strings.Index(line, at) + len(at)
			ts := newTestServer(t)
			ts.configure(t, "a/b")
			rec := &updateRecorder{h: ts.Handler()}
			hs := httptest.NewServer(rec)
			t.Cleanup(hs.Close)

			gates := t.TempDir()
			gate := func(name string) string { return filepath.Join(gates, name) }
			wait := func(name string) string {
				return fmt.Sprintf("touch %s\nwhile [ ! -e %s ]; do sleep 0.01; done\n", gate(name+".printed"), gate(name+".go"))
			}
			lorry := filepath.Join(gates, "lorry")
			script := fmt.Sprintf("#!/bin/sh\nprintf '%%s' '%s'\n%sprintf '%%s' '%s'\n%secho done\n",
				line[:split], wait("first"), line[split:], wait("second"))
			if err := os.WriteFile(lorry, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			work := filepath.Join(t.TempDir(), "work")
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			m := minion.New(minion.Config{
				WebappURLs: []string{hs.URL}, Name: "m", Host: "h", Pid: 7, LorryCmd: lorry, WorkingArea: work,
				Sleep: 20 * time.Millisecond, UpdateInterval: 20 * time.Millisecond, KillGrace: 10 * time.Second,
			}, &http.Client{Timeout: 30 * time.Second}, slog.New(slog.NewTextHandler(t.Output(), nil)))
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			ran := make(chan error, 1)
			go func() {
				_, err := m.RunOnce(ctx)
				ran <- err
			}()

			var shown []string
			next := int64(0)
			poll := func() {
				t.Helper()
				code, out := ts.call(t, "GET", fmt.Sprintf("/1.0/job-output/1?offset=%d", next), nil)
				if code != http.StatusOK {
					t.Fatalf("job-output = %d %v", code, out)
				}
				text, _ := out["output"].(string)
				progress, _ := out["progress"].(string)
				shown = append(shown, text, progress)
				next = int64(out["next"].(float64))
			}
			// pass waits until the job has printed a half and the minion
			// has sent updates that began after it, then reads the
			// job's output as a page would.
			pass := func(name string) {
				t.Helper()
				waitFor(t, gate(name+".printed"), ran)
				n := len(rec.received())
				for len(rec.received()) < n+3 {
					select {
					case err := <-ran:
						t.Fatalf("minion returned %v while the job waited", err)
					case <-time.After(5 * time.Millisecond):
					}
				}
				poll()
				if err := os.WriteFile(gate(name+".go"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			pass("first")
			pass("second")
			if err := <-ran; err != nil {
				t.Fatalf("RunOnce: %v", err)
			}
			poll()

			for i, u := range rec.received() {
				if u.Get("exit") != "no" {
					continue
				}
				for _, stream := range []string{"stdout", "stderr"} {
					if s := u.Get(stream); s != "" && !strings.HasSuffix(s, "\n") && !strings.HasSuffix(s, "\r") {
						t.Errorf("update %d of the running job: %s %q ends inside a line", i, stream, s)
					}
				}
			}
			all := strings.Join(shown, "")
			if !strings.Contains(all, "git.example/x.git\n") || !strings.Contains(all, "done\n") {
				t.Errorf("job-output showed %q; want the line and done", all)
			}
			for i, s := range shown {
				for _, part := range []string{password[:4], password[4:]} {
					if strings.Contains(s, part) {
						t.Errorf("job-output answer %d shows %q of the password: %q", i/2, part, s)
					}
				}
			}
			_, job := ts.call(t, "GET", "/1.0/job/1", nil)
			if b, _ := json.Marshal(job); bytes.Contains(b, []byte(password[:4])) || bytes.Contains(b, []byte(password[4:])) {
				t.Errorf("job shows part of the password: %s", b)
			}
		})
	}
}

// waitFor waits until path exists, or fails if the minion returns first.
func waitFor(t *testing.T, path string, ran <-chan error) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-ran:
			t.Fatalf("minion returned %v before %s", err, path)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
