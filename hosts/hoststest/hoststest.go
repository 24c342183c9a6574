// Package hoststest provides fakes of the hosts' APIs — GitLab, Gitea,
// GitHub and Gitano — for tests and benchmarks of the packages that talk
// to them. Each fake is an httptest server that answers the calls the
// controller makes the way the real server documents them: field names,
// pagination headers, status codes, error bodies and rate-limit headers.
// The GitLab and Gitea fakes are both Upstream and Downstream Hosts, and
// can serve the repositories they hold over git's smart HTTP protocol, so
// that a mirror into them can be checked with git. What the fakes share
// (the server and its request log, the token and SetFail, pagination by
// offset, and git over smart HTTP) is in forge.go; each fake holds only
// its API's shapes and quirks.
package hoststest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/githttp"
)

// Request is what a fake remembers of a call to its API.
type Request struct {
	Method string
	// URL is the request URI as sent: the escaped path and the query.
	URL    string
	Header http.Header
}

type requestLog struct {
	mu   sync.Mutex
	reqs []Request
}

func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, Request{Method: r.Method, URL: r.URL.RequestURI(), Header: r.Header.Clone()})
}

func (l *requestLog) all() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.reqs...)
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = nil
}

// changeLog records the calls that change something, each as
// "METHOD /escaped/path {body}" with the JSON body's keys sorted, so that
// tests compare them as plain strings.
type changeLog struct {
	mu      sync.Mutex
	changes []string
}

// record notes r and returns its body decoded; ok is false when the body
// is not a JSON object. A call with no body (an archive or a delete) is
// noted as its method and path alone.
func (l *changeLog) record(r *http.Request) (body map[string]any, ok bool) {
	err := json.NewDecoder(r.Body).Decode(&body)
	entry := r.Method + " " + r.URL.EscapedPath()
	switch {
	case err == io.EOF:
	case err != nil:
		entry += " (bad JSON)"
	default:
		canon, _ := json.Marshal(body)
		entry += " " + string(canon)
	}
	l.mu.Lock()
	l.changes = append(l.changes, entry)
	l.mu.Unlock()
	return body, err == nil
}

func (l *changeLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.changes...)
}

// Clock is the wall clock a rate-limited fake and the client it limits
// share: sleeping moves it on at once, so no test waits for real.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

// NewClock returns a clock that reads start until it sleeps.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the clock on by d, unless ctx is done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	return nil
}

// Slept lists the durations slept, in order.
func (c *Clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// answerJSON writes an API answer.
func answerJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// startServer starts h, over TLS with httptest's own certificate if
// useTLS. A client that refuses that certificate is what such tests
// check, so the server keeps the refused handshakes out of the output.
func startServer(tb testing.TB, h http.Handler, useTLS bool) *httptest.Server {
	tb.Helper()
	srv := httptest.NewUnstartedServer(h)
	if useTLS {
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
	} else {
		srv.Start()
	}
	tb.Cleanup(srv.Close)
	return srv
}

// gitRepos keeps the bare repositories a fake serves over smart HTTP, at
// <root>/<path>.git, as GitLab and Gitea serve them at
// <base URL>/<path>.git.
type gitRepos struct {
	root    string
	handler http.Handler
}

func newGitRepos(tb testing.TB) *gitRepos {
	tb.Helper()
	root := tb.TempDir()
	h, err := githttp.Handler(root)
	if err != nil {
		tb.Fatalf("serve git over HTTP: %v", err)
	}
	return &gitRepos{root: root, handler: h}
}

func (g *gitRepos) dir(path string) string {
	return filepath.Join(g.root, filepath.FromSlash(path)+".git")
}

// git runs git in the bare repository of path, apart from any
// configuration of the machine it runs on.
func (g *gitRepos) git(path string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--git-dir", g.dir(path)}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), path, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// create makes an empty bare repository whose HEAD names branch.
func (g *gitRepos) create(path, branch string) error {
	dir := g.dir(path)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	cmd := exec.Command("git", "init", "--quiet", "--bare", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git init %s: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	if branch == "" {
		branch = "main"
	}
	_, err := g.git(path, "symbolic-ref", "HEAD", "refs/heads/"+branch)
	return err
}

func (g *gitRepos) remove(path string) error {
	return os.RemoveAll(g.dir(path))
}

// empty reports whether the repository has no refs at all.
func (g *gitRepos) empty(path string) bool {
	out, err := g.git(path, "for-each-ref", "--count=1")
	return err == nil && out == ""
}

func (g *gitRepos) hasBranch(path, branch string) bool {
	_, err := g.git(path, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	return err == nil
}

func (g *gitRepos) setHead(path, branch string) error {
	_, err := g.git(path, "symbolic-ref", "HEAD", "refs/heads/"+branch)
	return err
}

// gitAccess is what a fake decides about a git request.
type gitAccess int

const (
	gitAllow gitAccess = iota
	gitNeedAuth
	gitNotFound
	// gitArchived refuses a push to an archived repository, as GitLab
	// and Gitea do; fetches still work.
	gitArchived
)

// splitGitRequest finds the repository path in the URL path of a smart
// HTTP request ("/a/b.git/info/refs" is "a/b") and whether it pushes.
func splitGitRequest(r *http.Request) (path string, push, ok bool) {
	p, _, found := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), ".git/")
	if !found || p == "" {
		return "", false, false
	}
	push = r.URL.Query().Get("service") == "git-receive-pack" || strings.HasSuffix(r.URL.Path, "/git-receive-pack")
	return p, push, true
}

// serveGit answers a smart HTTP request after access has decided on it:
// 401 with a Basic challenge in realm when credentials are needed, as
// GitLab and Gitea ask git for them.
func (g *gitRepos) serveGit(w http.ResponseWriter, r *http.Request, access gitAccess, realm string) {
	switch access {
	case gitNeedAuth:
		w.Header().Set("WWW-Authenticate", `Basic realm="`+realm+`"`)
		http.Error(w, "HTTP Basic: Access denied", http.StatusUnauthorized)
	case gitNotFound:
		http.Error(w, "Not Found", http.StatusNotFound)
	case gitArchived:
		http.Error(w, "You are not allowed to push code to an archived repository.", http.StatusForbidden)
	default:
		g.handler.ServeHTTP(w, r)
	}
}

// errNoGit is returned by the repository methods of a fake that serves
// no git.
var errNoGit = errors.New("the fake serves no git repositories (ServeGit is off)")

// pushCommand is one ref update of a push, as git sent it.
type pushCommand struct {
	old, new, ref string
}

// zeroID tells whether an object id is all zeros: the old id of a ref
// created, the new id of a ref deleted.
func zeroID(id string) bool { return strings.Trim(id, "0") == "" }

// readPushCommands reads the ref updates that start the body of a
// receive-pack request, in the order git sent them, and leaves the body
// to be read again whole by the handler.
func readPushCommands(r *http.Request) ([]pushCommand, error) {
	body := r.Body
	var seen bytes.Buffer
	defer func() {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(&seen, body), body}
	}()
	var in io.Reader = io.TeeReader(body, &seen)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, err
		}
		in = zr
	}
	// pkt-lines: four hex digits of length, then the line; a flush
	// ("0000") ends the commands. The first carries capabilities after
	// a NUL.
	var cmds []pushCommand
	for {
		var size [4]byte
		if _, err := io.ReadFull(in, size[:]); err != nil {
			return cmds, err
		}
		n, err := strconv.ParseUint(string(size[:]), 16, 16)
		if err != nil || (n != 0 && n < 4) {
			return cmds, fmt.Errorf("bad pkt-line length %q", size[:])
		}
		if n == 0 {
			return cmds, nil
		}
		line := make([]byte, n-4)
		if _, err := io.ReadFull(in, line); err != nil {
			return cmds, err
		}
		text, _, _ := strings.Cut(strings.TrimSuffix(string(line), "\n"), "\x00")
		if f := strings.Fields(text); len(f) == 3 {
			cmds = append(cmds, pushCommand{old: f[0], new: f[1], ref: f[2]})
		}
	}
}
