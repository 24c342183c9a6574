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
// With a token, as the real one, it refuses a call without it.
type webapp struct {
	mu    sync.Mutex
	calls []string
	code  int
	token string
}

func (w *webapp) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, r.Method+" "+r.URL.Path)
	rw.Header().Set("Content-Type", "application/json")
	if w.token != "" && r.Header.Get("Authorization") != "Bearer "+w.token {
		rw.WriteHeader(http.StatusUnauthorized)
		rw.Write([]byte(`{"error": "an admin's token is needed"}` + "\n"))
		return
	}
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

// postUpdateRepo is a bare CONFGIT repository with the post-update hook,
// told to call url, and a clone of it to push from.
func postUpdateRepo(t *testing.T, url string) (bare, clone string) {
	t.Helper()
	dir := t.TempDir()
	bare = filepath.Join(dir, "confgit.git")
	gittest.Git(t, dir, nil, "init", "-q", "--bare", bare)
	hook, err := os.ReadFile("post-update")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "hooks", "post-update"), hook, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, bare, nil, "config", "lorry-controller.url", url)
	clone = filepath.Join(dir, "clone")
	gittest.Git(t, dir, nil, "clone", "-q", bare, clone)
	return bare, clone
}

// tokenFile writes token into a file of the git server's user alone.
func tokenFile(t *testing.T, token string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(f, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPostUpdate(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the post-update hook needs curl (or wget) to call the WEBAPP; install curl")
	}
	os.Unsetenv("LORRY_CONTROLLER_URL")
	os.Unsetenv("LORRY_CONTROLLER_TOKEN_FILE")
	w := &webapp{code: 200, token: "admin-token"}
	srv := httptest.NewServer(w)
	defer srv.Close()
	bare, clone := postUpdateRepo(t, srv.URL+"/")
	gittest.Git(t, bare, nil, "config", "lorry-controller.token-file", tokenFile(t, w.token))

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
	w2 := &webapp{code: 200, token: w.token}
	srv2 := httptest.NewServer(w2)
	defer srv2.Close()
	t.Setenv("LORRY_CONTROLLER_URL", srv2.URL)
	push(t, clone, "master")
	if got := w2.took(); len(got) != 1 {
		t.Errorf("calls to LORRY_CONTROLLER_URL = %q; want one", got)
	}
}

// hookTools is a directory to be the whole PATH of a push: the programs
// the hook runs, and tool (curl or wget) behind a script that appends
// its arguments to the file args before running it. Where tool is wget,
// there is no curl, and the hook takes the path for wget.
func hookTools(t *testing.T, tool string) (dir, args string) {
	t.Helper()
	dir = t.TempDir()
	for _, name := range []string{"git", "cat", "sed", "tail", "mktemp", "rm"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	real, err := exec.LookPath(tool)
	if err != nil {
		t.Fatalf("the post-update hook calls the WEBAPP with curl, or wget without it: install %s (scripts/deps)", tool)
	}
	args = filepath.Join(t.TempDir(), "args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >>" + args + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, args
}

// The WEBAPP wants an admin's token. The hook sends the one in the file
// that LORRY_CONTROLLER_TOKEN_FILE names, else git config
// lorry-controller.token-file, with curl or, where there is no curl,
// with wget; on the command line of neither, where ps would show it.
func TestPostUpdateToken(t *testing.T) {
	os.Unsetenv("LORRY_CONTROLLER_URL")
	w := &webapp{code: 200, token: "admin-token-5f1c"}
	srv := httptest.NewServer(w)
	defer srv.Close()
	right, wrong := tokenFile(t, w.token), tokenFile(t, "not-the-token")

	for _, tool := range []string{"curl", "wget"} {
		t.Run(tool, func(t *testing.T) {
			bare, clone := postUpdateRepo(t, srv.URL)
			dir, args := hookTools(t, tool)
			t.Setenv("PATH", dir)
			t.Setenv("LORRY_CONTROLLER_TOKEN_FILE", "")
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			for _, step := range []struct {
				name, env, config string
				ok                bool
			}{
				{name: "no token"},
				{name: "git config", config: right, ok: true},
				{name: "a wrong token", config: wrong},
				{name: "the environment first", env: right, config: wrong, ok: true},
				{name: "the environment wrong", env: wrong, config: right},
			} {
				if step.config != "" {
					gittest.Git(t, bare, nil, "config", "lorry-controller.token-file", step.config)
				}
				t.Setenv("LORRY_CONTROLLER_TOKEN_FILE", step.env)
				out := push(t, clone, "master")
				if got := w.took(); len(got) != 1 {
					t.Errorf("%s: calls %q; want one", step.name, got)
				}
				if step.ok && !strings.Contains(out, "configuration read by "+srv.URL) {
					t.Errorf("%s: the pusher sees %q; want the configuration read", step.name, out)
				}
				if !step.ok && (!strings.Contains(out, "failed") || !strings.Contains(out, "an admin's token")) {
					t.Errorf("%s: the pusher sees %q; want the call failed, with the WEBAPP's answer", step.name, out)
				}
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("the hook left %v in TMPDIR; want nothing", left)
			}
			b, err := os.ReadFile(args)
			if err != nil {
				t.Fatalf("the hook never ran %s: %v", tool, err)
			}
			if strings.Contains(string(b), w.token) || !strings.Contains(string(b), "/1.0/read-configuration") {
				t.Errorf("%s's command lines:\n%s\nwant the WEBAPP's address, and not the token", tool, b)
			}
		})
	}
}
