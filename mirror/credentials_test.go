package mirror

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lorrycontroller.dev/lc/githttp"
	"lorrycontroller.dev/lc/gittest"
)

// authServer serves h to requests that give user and token by Basic
// authentication. While it answers one, it looks through the command
// lines of every process of the machine for the token: the client that
// asks is alive then, and so is whatever started it.
type authServer struct {
	t           *testing.T
	user, token string
	srv         *httptest.Server

	mu       sync.Mutex
	answered int
	leaks    []string
}

func newAuthServer(t *testing.T, h http.Handler, user string) *authServer {
	t.Helper()
	a := &authServer{t: t, user: user, token: randomToken(t)}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.scan()
		if u, p, ok := r.BasicAuth(); !ok || u != a.user || p != a.token {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		a.mu.Lock()
		a.answered++
		a.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "tok" + hex.EncodeToString(b)
}

// url is the server's URL of path, with the credentials.
func (a *authServer) url(path string) string {
	return strings.Replace(a.srv.URL, "http://", "http://"+a.user+":"+a.token+"@", 1) + path
}

// scan records each process whose command line holds the token.
func (a *authServer) scan() {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		data, err := os.ReadFile(f)
		if err == nil && bytes.Contains(data, []byte(a.token)) {
			a.mu.Lock()
			a.leaks = append(a.leaks, f+": "+string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})))
			a.mu.Unlock()
		}
	}
}

// check fails the test if a command line held the token, or if no
// request came with it.
func (a *authServer) check(what string) {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.answered == 0 {
		a.t.Errorf("%s: no request came with the credentials", what)
	}
	for _, l := range a.leaks {
		a.t.Errorf("%s: the token is on a command line: %s", what, l)
	}
}

// An upstream cloned with a token, and a downstream pushed to with one,
// both over HTTP requiring them: the mirror follows the upstream, and no
// process's command line ever holds either token, whether cloning,
// fetching, asking for the upstream's HEAD, listing the downstream's
// refs or pushing.
func TestCredentialsNotOnCommandLine(t *testing.T) {
	up := newUpstream(t, false)
	upH, err := githttp.Handler(up.root)
	if err != nil {
		t.Fatal(err)
	}
	upstream := newAuthServer(t, upH, "clone")
	downRoot := t.TempDir()
	gittest.Git(t, "", nil, "init", "-q", "--bare", filepath.Join(downRoot, "down.git"))
	downH, err := githttp.Handler(downRoot)
	if err != nil {
		t.Fatal(err)
	}
	down := newAuthServer(t, downH, "oauth2")

	opts := Options{WorkingArea: t.TempDir(), PushURL: down.url("/down.git")}
	spec := gitSpec("delta/project", map[string]any{"url": upstream.url("/project")})
	for _, run := range []string{"clone", "fetch"} {
		if run == "fetch" {
			up.commit("second")
		}
		res := runSpec(t, spec, opts)
		if res.Err != nil {
			t.Fatalf("%s run: %v", run, res.Err)
		}
		if res.Refs == nil || len(res.Refs.Created)+len(res.Refs.Updated) != 1 {
			t.Errorf("%s run: downstream changes %+v; want one ref created or updated", run, res.Refs)
		}
		if got, want := refsOf(t, filepath.Join(downRoot, "down.git")), refsOf(t, up.dir); !equalRefs(got, want) {
			t.Errorf("%s run: downstream refs = %v; want %v", run, got, want)
		}
	}
	upstream.check("upstream")
	down.check("downstream")
}

// LFS objects are fetched from an LFS server that requires the
// upstream's credentials, which stay off every command line too.
func TestLFSCredentialsNotOnCommandLine(t *testing.T) {
	up := newLFSUpstream(t)
	lfs := newAuthServer(t, up.lfs, "clone")
	down := downstream(t)
	opts := Options{WorkingArea: t.TempDir(), PushURL: down}
	res := runSpec(t, gitSpec("delta/project", map[string]any{"url": lfs.url("/project"), "lfs": true}), opts)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for _, oid := range up.oids {
		if _, err := os.Stat(lfsObject(down, oid)); err != nil {
			t.Errorf("downstream LFS object: %v", err)
		}
	}
	lfs.check("LFS upstream")
}

func TestCredentials(t *testing.T) {
	tests := []struct {
		url, plain string
		header     string // "" for none
	}{
		{"https://oauth2:s3cr%40t@git.example.com/a/b.git", "https://git.example.com/a/b.git", "Basic b2F1dGgyOnMzY3JAdA=="},
		{"http://tok@git.example.com:8080/b", "http://git.example.com:8080/b", "Basic dG9rOg=="},
		{"https://git.example.com/a.git", "https://git.example.com/a.git", ""},
		{"ssh://git@git.example.com/a.git", "ssh://git@git.example.com/a.git", ""},
		{"git@git.example.com:a.git", "git@git.example.com:a.git", ""},
		{"/srv/down.git", "/srv/down.git", ""},
	}
	for _, tt := range tests {
		plain, config, err := credentials(tt.url)
		if err != nil {
			t.Errorf("credentials(%q): %v", tt.url, err)
		}
		if plain != tt.plain {
			t.Errorf("credentials(%q): plain %q; want %q", tt.url, plain, tt.plain)
		}
		var header string
		for _, kv := range config {
			if _, v, _ := strings.Cut(kv, "="); v != "" {
				header = strings.TrimPrefix(v, "Authorization: ")
			}
		}
		if header != tt.header {
			t.Errorf("credentials(%q): header %q; want %q", tt.url, header, tt.header)
		}
	}
}
