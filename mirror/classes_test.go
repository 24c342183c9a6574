package mirror

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"lorrycontroller.dev/lc/heldport"
)

func TestClassify(t *testing.T) {
	tool := func(msg, tail string) error { return &outputError{errors.New(msg), tail} }
	tests := []struct {
		name     string
		err      error
		specType string
		want     string
	}{
		{name: "no failure", err: nil, want: ""},
		{name: "lfs", err: &classError{ClassLFS, errors.New("fetch the LFS objects")}, want: ClassLFS},
		{name: "http 401", err: tool("git fetch: exit status 128: fatal: Authentication failed for 'https://h/r/'", ""), want: ClassAuth},
		{name: "no username", err: tool("git clone: exit status 128: fatal: could not read Username for 'https://h': terminal prompts disabled", ""), want: ClassAuth},
		{name: "http 403", err: tool("git clone: exit status 128: fatal: unable to access 'https://h/r/': The requested URL returned error: 403", ""), want: ClassAuth},
		{name: "ssh key", err: tool("git fetch: exit status 128: fatal: Could not read from remote repository.", "git@h: Permission denied (publickey).\nfatal: Could not read from remote repository."), want: ClassAuth},
		{name: "repository not found", err: tool("git clone: exit status 128: fatal: repository 'https://h/r/' not found", "remote: Repository not found.\nfatal: repository 'https://h/r/' not found"), want: ClassGone},
		{name: "http 404", err: tool("git clone: exit status 128: fatal: unable to access 'https://h/r/': The requested URL returned error: 404", ""), want: ClassGone},
		{name: "tarball 404", err: errors.New("fetch https://h/x.tar.gz: server answered 404 Not Found"), specType: "tarball", want: ClassGone},
		{name: "dns", err: tool("git clone: exit status 128: fatal: unable to access 'https://nonexistent.invalid/r/': Could not resolve host: nonexistent.invalid", ""), want: ClassNetwork},
		{name: "refused", err: tool("git clone: exit status 128: fatal: unable to access 'http://127.0.0.1:1/r/': Failed to connect to 127.0.0.1 port 1: Connection refused", ""), want: ClassNetwork},
		{name: "timeout", err: tool("git fetch: exit status 128: fatal: unable to access 'https://h/r/': Operation timed out after 300000 milliseconds", ""), want: ClassNetwork},
		{name: "tls", err: tool("git clone: exit status 128: fatal: unable to access 'https://h/r/': SSL certificate problem: self-signed certificate", ""), want: ClassNetwork},
		{name: "go dns", err: errors.New(`Get "https://nonexistent.invalid/x": dial tcp: lookup nonexistent.invalid: no such host`), specType: "tarball", want: ClassNetwork},
		{name: "no remote ref", err: tool("git fetch: exit status 128: fatal: couldn't find remote ref refs/heads/nope", ""), want: ClassEmpty},
		{name: "push rejected", err: tool("git push: exit status 1: error: failed to push some refs to '/d'", "! refs/heads/main:refs/heads/main [rejected] (non-fast-forward)"), want: ClassDownstream},
		{name: "remote error", err: tool("git push: exit status 1: remote: error: hook declined", ""), want: ClassDownstream},
		{name: "converter not installed", err: fmt.Errorf("git-svn is not installed: %w", errors.New(`exec: "git-svn": executable file not found in $PATH`)), specType: "svn", want: ClassConverter},
		{name: "converter failure", err: tool("hg-fast-export: exit status 1: abort: corrupt revlog", ""), specType: "hg", want: ClassConverter},
		{name: "converter unreachable", err: tool("svn: exit status 1: svn: E170013: Unable to connect to a repository at URL: Connection refused", ""), specType: "svn", want: ClassNetwork},
		{name: "anything else", err: errors.New("no working area"), specType: "git", want: ClassInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.err, tt.specType); got != tt.want {
				t.Errorf("classify(%v, %q) = %q; want %q", tt.err, tt.specType, got, tt.want)
			}
		})
	}
}

// TestClassifyRealGitFailures runs lorry's git against upstreams that
// fail in each way cheaply made on this machine.
func TestClassifyRealGitFailures(t *testing.T) {
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Basic realm="r"`)
			}
			http.Error(w, http.StatusText(code), code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/r.git"
	}
	// A held port with no listener refuses connections, and nothing else
	// can listen there meanwhile.
	closed, err := heldport.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closed.Close() })
	refused := "http://" + closed.Addr() + "/r.git"
	up := newUpstream(t, false)
	tests := []struct {
		name  string
		url   string
		extra map[string]any
		want  string
	}{
		{name: "401", url: status(http.StatusUnauthorized), want: ClassAuth},
		{name: "403", url: status(http.StatusForbidden), want: ClassAuth},
		{name: "404", url: status(http.StatusNotFound), want: ClassGone},
		{name: "refused", url: refused, want: ClassNetwork},
		{name: "no such host", url: "http://nonexistent.invalid/r.git", want: ClassNetwork},
		{name: "no ref matches", url: up.url, extra: map[string]any{"refspecs": []any{"refs/heads/nope"}}, want: ClassEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields := map[string]any{"url": tt.url}
			for k, v := range tt.extra {
				fields[k] = v
			}
			res := runSpec(t, gitSpec("p", fields), Options{WorkingArea: t.TempDir(), PullOnly: true})
			if res.Err == nil || res.ErrorClass != tt.want {
				t.Errorf("run: %v, class %q; want a failure of class %q", res.Err, res.ErrorClass, tt.want)
			}
		})
	}

	// A push the downstream refuses.
	down := downstream(t)
	hook := filepath.Join(down, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho refusing >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := runSpec(t, gitSpec("p", map[string]any{"url": up.url}), Options{WorkingArea: t.TempDir(), PushURL: down})
	if res.Err == nil || res.ErrorClass != ClassDownstream {
		t.Errorf("refused push: %v, class %q; want a failure of class downstream", res.Err, res.ErrorClass)
	}
}
