package hoststest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// server is what every fake has: an httptest server and the log of the
// calls made to its API.
type server struct {
	srv *httptest.Server
	log requestLog
}

// start serves h, over TLS with httptest's own certificate if useTLS.
func (s *server) start(tb testing.TB, h http.Handler, useTLS bool) {
	tb.Helper()
	s.srv = startServer(tb, h, useTLS)
}

// URL is the base URL of the fake, such as http://127.0.0.1:4321: the
// --downstream-host of a gitlab or gitea downstream.
func (s *server) URL() string { return s.srv.URL }

// Host is the host and port of the fake: the "host" of a host section.
func (s *server) Host() string { return s.srv.Listener.Addr().String() }

// Client is an HTTP client that trusts the fake's certificate.
func (s *server) Client() *http.Client { return s.srv.Client() }

// Requests lists the API calls made so far, refused ones included; git's
// requests are not among them.
func (s *server) Requests() []Request { return s.log.all() }

// ResetRequests forgets the calls made so far.
func (s *server) ResetRequests() { s.log.reset() }

func (s *server) scheme() string { return strings.SplitN(s.srv.URL, ":", 2)[0] }

// section is a host section of type typ that lists the fake, with the keys
// of base and then of extra added.
func (s *server) section(typ string, base, extra map[string]any) map[string]any {
	sec := section(map[string]any{"type": typ, "host": s.Host(), "protocol": s.scheme()}, base)
	return section(sec, extra)
}

// forge is what the fakes of GitLab, Gitea and GitHub share besides the
// server: the one valid token, a status to fail every call with, the log
// of changes, and the repositories served over git's smart HTTP. Each
// fake adds only its API's shapes and quirks.
type forge struct {
	server
	tb  testing.TB
	chg changeLog
	git *gitRepos // nil when the fake serves no git
	// mux answers the calls under /api/ that auth lets through, for the
	// fakes that serve git beside their API (see serveForge).
	mux  *http.ServeMux
	auth apiAuth

	// mu guards the fields below, and the state of the fake that embeds
	// forge.
	mu    sync.Mutex
	token string
	fail  int
	// refuseCreate answers the creations the user may not make with 403:
	// GitLab's of groups, Gitea's of repositories in an organisation.
	refuseCreate bool
	// beforeCreate, if set, runs when the creation of a repository (a
	// GitLab project) arrives, before the fake looks at it.
	beforeCreate func()
}

func (f *forge) init(tb testing.TB, token string, serveGit bool) {
	f.tb, f.token = tb, token
	if serveGit {
		f.git = newGitRepos(tb)
	}
}

// locked runs fn with mu held: the fakes' methods read and change their
// state through it.
func (f *forge) locked(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// SetToken changes the valid token.
func (f *forge) SetToken(tok string) { f.locked(func() { f.token = tok }) }

// SetFail makes every API call answer status, with the body the real
// server gives for it; 0 answers normally.
func (f *forge) SetFail(status int) { f.locked(func() { f.fail = status }) }

// Changes lists the authenticated calls that would change something, as
// "METHOD /escaped/path {body with sorted keys}", whatever their answer.
func (f *forge) Changes() []string { return f.chg.all() }

// RepoDir is the bare repository of the repository at path (a project's
// full path, or a repository's owner/name), when the fake serves git; its
// clone URL serves it.
func (f *forge) RepoDir(path string) string {
	if f.git == nil {
		f.tb.Fatal(errNoGit)
	}
	return f.git.dir(path)
}

// apiAuth is how a forge's API takes its token, and what it answers when
// it refuses a call.
type apiAuth struct {
	header, prefix string                                  // the token comes as header: prefix+token
	failed         func(w http.ResponseWriter, status int) // the answer of SetFail's status
	badToken       func(w http.ResponseWriter)             // the answer to a wrong token
	// noToken answers a call that would change something without a
	// token, and badBody one whose body is not a JSON object; both nil
	// when the API changes nothing.
	noToken, badBody func(w http.ResponseWriter)
}

// authenticate logs an API call and decides on its token. ok is false when
// the call has been answered already: with SetFail's status, or refused
// for a wrong token (any token, when the fake has none) or for a change
// without one.
func (f *forge) authenticate(w http.ResponseWriter, r *http.Request, a apiAuth) (authed, ok bool) {
	f.log.add(r)
	f.mu.Lock()
	fail, token := f.fail, f.token
	f.mu.Unlock()
	if fail != 0 {
		a.failed(w, fail)
		return false, false
	}
	if given := r.Header.Get(a.header); given != "" {
		if token == "" || given != a.prefix+token {
			a.badToken(w)
			return false, false
		}
		authed = true
	}
	if a.noToken != nil && !authed && r.Method != http.MethodGet && r.Method != http.MethodHead {
		a.noToken(w)
		return false, false
	}
	return authed, true
}

type authedKey struct{}

// isAuthed reports whether serveForge found a valid token on the call.
func isAuthed(r *http.Request) bool { v, _ := r.Context().Value(authedKey{}).(bool); return v }

// serveForge answers the API under /api/ with f.mux, once authenticate
// has let the call through, and git's smart HTTP under any other path
// with serveGit, whose arguments it takes: GitLab and Gitea serve both
// from one origin.
func (f *forge) serveForge(w http.ResponseWriter, r *http.Request, realm string,
	find func(path string) gitTarget, pushed func(path string, cmds []pushCommand)) {
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		f.serveGit(w, r, realm, find, pushed)
		return
	}
	authed, ok := f.authenticate(w, r, f.auth)
	if !ok {
		return
	}
	f.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), authedKey{}, authed)))
}

// change records a call that changes something and returns its body; ok
// is false when the body is not a JSON object, which has been answered
// as the API does.
func (f *forge) change(w http.ResponseWriter, r *http.Request) (body map[string]any, ok bool) {
	body, ok = f.chg.record(r)
	if !ok {
		f.auth.badBody(w)
	}
	return body, ok
}

// creation is change for the creation of a repository: it runs the
// beforeCreate hook, without mu held, once the call is recorded.
func (f *forge) creation(w http.ResponseWriter, r *http.Request) (body map[string]any, ok bool) {
	if body, ok = f.change(w, r); !ok {
		return nil, false
	}
	var hook func()
	f.locked(func() { hook = f.beforeCreate })
	if hook != nil {
		hook()
	}
	return body, true
}

// createGit makes the bare repository of path, whose HEAD names branch,
// when the fake serves git.
func (f *forge) createGit(path, branch string) error {
	if f.git == nil {
		return nil
	}
	return f.git.create(path, branch)
}

// removeGit removes the bare repository of path, when the fake serves
// git.
func (f *forge) removeGit(path string) {
	if f.git == nil {
		return
	}
	if err := f.git.remove(path); err != nil {
		f.tb.Errorf("hoststest: remove %s: %v", path, err)
	}
}

// gitTarget is what a fake says of the repository a git request names.
type gitTarget struct {
	found            bool
	path             string // its path on disk, in its own case
	public, archived bool
}

// serveGit answers git's smart HTTP under a repository's path the way
// GitLab and Gitea do: pushes need the token as the password of any user
// name, and so do fetches of a repository that is not public; a wrong
// password is asked again, with a Basic challenge in realm. find looks
// the repository up, with mu held. pushed, when a push was served, is
// given the repository's path and the ref updates in the order git sent
// them; it takes mu itself.
func (f *forge) serveGit(w http.ResponseWriter, r *http.Request, realm string,
	find func(path string) gitTarget, pushed func(path string, cmds []pushCommand)) {
	path, push, ok := splitGitRequest(r)
	if f.git == nil || !ok {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	t := find(path)
	_, pass, hasAuth := r.BasicAuth()
	authed := hasAuth && f.token != "" && pass == f.token
	f.mu.Unlock()
	access := gitAllow
	switch {
	case hasAuth && !authed:
		access = gitNeedAuth
	case !t.found && authed:
		access = gitNotFound
	case !t.found || ((push || !t.public) && !authed):
		access = gitNeedAuth
	case push && t.archived:
		access = gitArchived
	}
	if access == gitAllow && t.path != path {
		// The repository is on disk under its own case.
		r = r.Clone(r.Context())
		r.URL.Path = "/" + t.path + strings.TrimPrefix(r.URL.Path, "/"+path)
	}
	receive := access == gitAllow && push && r.Method == http.MethodPost
	var cmds []pushCommand
	if receive {
		var err error
		if cmds, err = readPushCommands(r); err != nil {
			f.tb.Logf("hoststest: %s cannot read the ref updates of a push to %s: %v", realm, t.path, err)
		}
	}
	f.git.serveGit(w, r, access, realm)
	if receive {
		pushed(t.path, cmds)
	}
}

// offsetPage is one page of a listing paged by offset, as the forges page
// with "page" (from 1) and a page size.
type offsetPage struct {
	number, size, pages, total int
	lo, hi                     int // the page's items are list[lo:hi]
}

// pageSize reads the page size from q's key: def when it is missing or
// not positive, and at most max.
func pageSize(q url.Values, key string, def, max int) int {
	n, _ := strconv.Atoi(q.Get(key))
	if n <= 0 {
		n = def
	}
	return min(n, max)
}

// pageOf is the page that q asks for of a listing of total items, size a
// page.
func pageOf(q url.Values, size, total int) offsetPage {
	p := offsetPage{size: size, total: total}
	p.number, _ = strconv.Atoi(q.Get("page"))
	p.number = max(p.number, 1)
	p.pages = max((total+size-1)/size, 1)
	p.lo = min((p.number-1)*size, total)
	p.hi = min(p.lo+size, total)
	return p
}

// links returns a Link header's links (RFC 8288) to the pages that rels
// name, in that order, leaving out prev and first on the first page and
// next and last on the last. href makes the URL of a page.
func (p offsetPage) links(href func(page int) string, rels ...string) []string {
	var out []string
	for _, rel := range rels {
		n, ok := 0, false
		switch rel {
		case "prev":
			n, ok = p.number-1, p.number > 1
		case "first":
			n, ok = 1, p.number > 1
		case "next":
			n, ok = p.number+1, p.number < p.pages
		case "last":
			n, ok = p.pages, p.number < p.pages
		}
		if ok {
			out = append(out, linkTo(href(n), rel))
		}
	}
	return out
}

func linkTo(target, rel string) string { return fmt.Sprintf(`<%s>; rel="%s"`, target, rel) }

// withPage returns q encoded, with "page" set to n.
func withPage(q url.Values, n int) string {
	nq := url.Values{}
	for k, v := range q {
		nq[k] = v
	}
	nq.Set("page", strconv.Itoa(n))
	return nq.Encode()
}

// hostOnly drops the port of host:port.
func hostOnly(hostport string) string {
	if u, err := url.Parse("http://" + hostport); err == nil {
		return u.Hostname()
	}
	return hostport
}

// section copies base with the keys of extra set.
func section(base, extra map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// repoIndex is a forge's repositories (GitLab's projects): in id order,
// and by path without regard to case, as GitLab and Gitea find them.
type repoIndex[R any] struct {
	path   func(*R) string
	lastID int64
	list   []*R
	byPath map[string]*R // by lower-case path
}

func newRepoIndex[R any](path func(*R) string) repoIndex[R] {
	return repoIndex[R]{path: path, byPath: map[string]*R{}}
}

// nextID is the id of the next repository.
func (x *repoIndex[R]) nextID() int64 {
	x.lastID++
	return x.lastID
}

func (x *repoIndex[R]) get(path string) *R { return x.byPath[strings.ToLower(path)] }

// copyOf returns the repository at path as it stands.
func (x *repoIndex[R]) copyOf(path string) (r R, ok bool) {
	if p := x.get(path); p != nil {
		return *p, true
	}
	return r, false
}

func (x *repoIndex[R]) add(r *R) {
	x.list = append(x.list, r)
	x.byPath[strings.ToLower(x.path(r))] = r
}

// remove removes the repository at path and returns it; nil when there
// was none.
func (x *repoIndex[R]) remove(path string) *R {
	r := x.get(path)
	if r != nil {
		delete(x.byPath, strings.ToLower(path))
		x.list = slices.DeleteFunc(x.list, func(q *R) bool { return q == r })
	}
	return r
}
