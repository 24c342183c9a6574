package hoststest

import (
	"net/http"
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
	server
	opts GitanoOptions

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
	f.start(tb, f, opts.TLS)
	return f
}

// Section is a trove host section for lorry-controller.conf that lists
// this fake over HTTP(S), with its credentials if it has some, and with
// the keys of extra added.
func (f *Gitano) Section(extra map[string]any) map[string]any {
	base := map[string]any{}
	if f.opts.User != "" {
		base["auth"] = map[string]any{"username": f.opts.User, "password": f.opts.Password}
	}
	return f.section("trove", base, extra)
}

// SetLs changes what ls answers.
func (f *Gitano) SetLs(out string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ls = out
}

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
