// Package hooks holds the git hooks that go on the git server, not in
// Lorry Controller's own processes; its tests run them under a real git
// push.
package hooks

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lorrycontroller.dev/lc/gittest"
)

// webapp stands in for the WEBAPP, counting read-configuration calls.
type webapp struct {
	mu    sync.Mutex
	calls []string
	code  int
}

func (w *webapp) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, r.Method+" "+r.URL.Path)
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(w.code)
	if w.code == 200 {
		rw.Write([]byte(`{"ok": true, "commit": "abc123", "errors": []}` + "\n"))
	} else {
		rw.Write([]byte(`{"error": "lorry-controller.conf: bad JSON"}` + "\n"))
	}
}

func (w *webapp) took() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	calls := w.calls
	w.calls = nil
	return calls
}

// push commits a change in the clone and pushes it to branch, returning
// what the pusher sees on standard error. The push must succeed whatever
// the hook meets.
func push(t *testing.T, clone, branch string) string {
	t.Helper()
	f := filepath.Join(clone, "lorry-controller.conf")
	old, _ := os.ReadFile(f)
	if err := os.WriteFile(f, append(old, []byte("[]\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, clone, nil, "add", "-A")
	gittest.Git(t, clone, nil, "commit", "-q", "-m", "change")
	cmd := exec.Command("git", "push", "origin", "HEAD:refs/heads/"+branch)
	cmd.Dir = clone
	cmd.Env = append(os.Environ(), gittest.GitEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git push: %v\n%s", err, stderr.String())
	}
	return stderr.String()
}

func TestPostUpdate(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the post-update hook needs curl (or wget) to call the WEBAPP; install curl")
	}
	os.Unsetenv("LORRY_CONTROLLER_URL")
	w := &webapp{code: 200}
	srv := httptest.NewServer(w)
	defer srv.Close()

	dir := t.TempDir()
	bare := filepath.Join(dir, "confgit.git")
	gittest.Git(t, dir, nil, "init", "-q", "--bare", bare)
	hook, err := os.ReadFile("post-update")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "hooks", "post-update"), hook, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, bare, nil, "config", "lorry-controller.url", srv.URL+"/")
	clone := filepath.Join(dir, "clone")
	gittest.Git(t, dir, nil, "clone", "-q", bare, clone)

	out := push(t, clone, "master")
	if got := w.took(); len(got) != 1 || got[0] != "POST /1.0/read-configuration" {
		t.Errorf("calls after a push = %q; want one POST /1.0/read-configuration", got)
	}
	if !strings.Contains(out, "configuration read by "+srv.URL) || !strings.Contains(out, "abc123") {
		t.Errorf("the pusher sees %q; want the WEBAPP's answer", out)
	}

	// Only the branch the WEBAPP reads counts, once it is named.
	gittest.Git(t, bare, nil, "config", "lorry-controller.branch", "master")
	push(t, clone, "topic")
	if got := w.took(); len(got) != 0 {
		t.Errorf("calls after a push to another branch = %q; want none", got)
	}
	push(t, clone, "master")
	if got := w.took(); len(got) != 1 {
		t.Errorf("calls after a push to master = %q; want one", got)
	}

	// A WEBAPP that refuses the configuration, or is not there, never
	// fails the push; the pusher is told.
	w.code = 400
	out = push(t, clone, "master")
	if got := w.took(); len(got) != 1 || !strings.Contains(out, "failed") || !strings.Contains(out, "bad JSON") {
		t.Errorf("calls %q, pusher sees %q; want one call and its error", got, out)
	}
	srv.Close()
	out = push(t, clone, "master")
	if !strings.Contains(out, "failed") || !strings.Contains(out, "next timer run") {
		t.Errorf("with the WEBAPP down the pusher sees %q; want a failure that says what happens next", out)
	}

	// The environment wins over the repository's configuration.
	w2 := &webapp{code: 200}
	srv2 := httptest.NewServer(w2)
	defer srv2.Close()
	t.Setenv("LORRY_CONTROLLER_URL", srv2.URL)
	push(t, clone, "master")
	if got := w2.took(); len(got) != 1 {
		t.Errorf("calls to LORRY_CONTROLLER_URL = %q; want one", got)
	}
}
