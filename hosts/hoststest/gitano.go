package hoststest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Gitano is the gitano-command.cgi of a Trove's Gitano: GET with
// cmd=<command> runs that command as the authenticated user and answers
// its output as text/plain. Only "ls" is known; its output is what the
// test sets, one "<rights> <path>" line per repository, such as
// "RW baserock/definitions". A wrong or missing password for a protected
// instance is 401 with a Basic challenge (RFC 7617).
type Gitano struct {
	srv  *httptest.Server
	opts GitanoOptions
	log  requestLog

	mu sync.Mutex
	ls string
}

// GitanoOptions configure a fake Gitano.
type GitanoOptions struct {
	// User and Password, when User is set, are the HTTP basic
	// credentials every command needs.
	User, Password string
	// TLS serves HTTPS, with a certificate that no authority vouches for.
	TLS bool
}

// NewGitano starts a fake Gitano whose ls answers ls.
func NewGitano(tb testing.TB, ls string, opts GitanoOptions) *Gitano {
	tb.Helper()
	f := &Gitano{opts: opts, ls: ls}
	f.srv = startServer(tb, f, opts.TLS)
	return f
}

// URL is the base URL of the fake.
func (f *Gitano) URL() string { return f.srv.URL }

// Host is the host and port of the fake: the "host" of a trove section.
func (f *Gitano) Host() string { return f.srv.Listener.Addr().String() }

// Section is a trove host section for lorry-controller.conf that lists
// this fake over HTTP(S), with its credentials if it has some, and with
// the keys of extra added.
func (f *Gitano) Section(extra map[string]any) map[string]any {
	scheme := strings.SplitN(f.srv.URL, ":", 2)[0]
	base := map[string]any{"type": "trove", "host": f.Host(), "protocol": scheme}
	if f.opts.User != "" {
		base["auth"] = map[string]any{"username": f.opts.User, "password": f.opts.Password}
	}
	return section(base, extra)
}

// SetLs changes what ls answers.
func (f *Gitano) SetLs(out string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ls = out
}

// Requests lists the calls made so far, refused ones included.
func (f *Gitano) Requests() []Request { return f.log.all() }

// ServeHTTP answers gitano-command.cgi.
func (f *Gitano) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.log.add(r)
	if r.URL.Path != "/gitano-command.cgi" {
		http.NotFound(w, r)
		return
	}
	if f.opts.User != "" {
		if u, p, ok := r.BasicAuth(); !ok || u != f.opts.User || p != f.opts.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="Gitano"`)
			http.Error(w, "Authorization required", http.StatusUnauthorized)
			return
		}
	}
	if r.URL.Query().Get("cmd") != "ls" {
		http.Error(w, "unknown command", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	out := f.ls
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte(out))
}
