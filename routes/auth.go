package routes

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
)

// Authentication. A client names itself with "Authorization: Bearer
// TOKEN"; a browser signs in once with a token and then sends a session
// cookie. What a caller may do is decided in one place, authorize, by the
// route's method and name, so that a new route is an admin's unless it is
// said otherwise:
//
//   - GET routes read. They are anyone's, or any token holder's under
//     ReadNeedsToken; the health check is always anyone's. A read that
//     anyone may make is answered as to anyone when its Authorization
//     header is no token of ours.
//   - give-me-job and job-update are a minion token's, and only under the
//     minion names its token claims.
//   - The forges' push hooks (hooks/gitlab, hooks/gitea, hooks/github) are
//     anyone's: each checks the forge's own secret or signature, and a
//     token the forge may send is not looked at.
//   - Every other request is an admin's. A signed-in browser may post only
//     to the pages' -html routes, each with the session's CSRF token: the
//     API routes take a bearer token, which no other site can make a
//     browser send.

// caller is who a request comes from.
type caller struct {
	token   statedb.Token    // zero: nobody has signed in
	session *statedb.Session // set when a browser's session cookie came
	// all is set when no token is asked for (InsecureNoAuth), and for the
	// WEBAPP's own in-process requests.
	all bool
}

func (c *caller) known() bool { return c.all || c.token.Name != "" }
func (c *caller) admin() bool { return c.all || c.token.Role == statedb.RoleAdmin }

type callerKey struct{}

func callerOf(ctx context.Context) *caller {
	if c, ok := ctx.Value(callerKey{}).(*caller); ok {
		return c
	}
	return &caller{}
}

// InProcess marks ctx as that of a request the WEBAPP makes to itself,
// such as the periodic work: it may do everything. A request from the
// network cannot carry it.
func InProcess(ctx context.Context) context.Context {
	return context.WithValue(ctx, callerKey{}, &caller{all: true})
}

const (
	sessionCookie = "lorry_controller_session"
	// sessionLifetime is how long a browser stays signed in.
	sessionLifetime = 12 * time.Hour
	// tokenUseEvery is how often a token's last use is written at most:
	// a minion polls every few seconds, and each of its requests should
	// not also be a write.
	tokenUseEvery = 60
)

// authenticate finds who the request comes from and puts it in the
// request's context. A bearer token that is not known, or an
// Authorization header of another form, is refused at once rather than
// taken as nobody's, so that a client with a wrong token says so instead
// of being answered as anyone; but not on a read that anyone may make,
// which is answered as to anyone: a load balancer or a monitor left with
// a stale header must not take the WEBAPP for down.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Context().Value(callerKey{}).(*caller); ok || hookRoutes[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		c := &caller{all: s.InsecureNoAuth}
		if !s.InsecureNoAuth {
			var err error
			c, err = s.identify(r)
			if err != nil && statusOf(err) == http.StatusUnauthorized && s.publicRead(r) {
				c, err = s.sessionCaller(r)
			}
			if err != nil {
				s.refuse(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// maxTokenLength bounds a token: ours are a few dozen characters, and a
// longer one is no token of ours, so it is refused before it is hashed.
const maxTokenLength = 512

// parseBearer reads an Authorization header of the form "Bearer TOKEN"
// (the scheme in any case, spaces around the token ignored); ok is false
// for any other form, or for a token that is empty, too long or holds a
// space or a control character.
func parseBearer(header string) (token string, ok bool) {
	scheme, token, _ := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" || len(token) > maxTokenLength {
		return "", false
	}
	for _, c := range token {
		if c <= ' ' || c == 0x7f {
			return "", false
		}
	}
	return token, true
}

func (s *Server) identify(r *http.Request) (*caller, error) {
	ctx := r.Context()
	if h := r.Header.Get("Authorization"); h != "" {
		secret, ok := parseBearer(h)
		if !ok {
			return nil, errorf(http.StatusUnauthorized, "the Authorization header must be \"Bearer TOKEN\"")
		}
		t, err := s.TokenBySecret(ctx, secret)
		if errors.Is(err, statedb.ErrNotFound) {
			return nil, errorf(http.StatusUnauthorized, "the token is not known, or was revoked")
		}
		if err != nil {
			return nil, err
		}
		s.tokenUsed(ctx, t)
		return &caller{token: t}, nil
	}
	return s.sessionCaller(r)
}

// publicRead says whether r reads what anyone may read, token or none.
func (s *Server) publicRead(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	path := r.URL.Path
	switch {
	case openRoutes[path]:
		return true
	case path == "/metrics":
		return !s.MetricsNeedToken
	case strings.HasPrefix(path, "/1.0/"):
		return !s.ReadNeedsToken
	}
	return true
}

// sessionCaller is who r comes from by its session cookie alone: nobody
// without one.
func (s *Server) sessionCaller(r *http.Request) (*caller, error) {
	ctx := r.Context()
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return &caller{}, nil
	}
	se, err := s.SessionByCookie(ctx, ck.Value)
	if errors.Is(err, statedb.ErrNotFound) {
		// Signed out, expired or revoked: the page says "Sign in".
		return &caller{}, nil
	}
	if err != nil {
		return nil, err
	}
	s.tokenUsed(ctx, se.Token)
	return &caller{token: se.Token, session: &se}, nil
}

// tokenUsed records the use of t, at most once every tokenUseEvery
// seconds per token: the stored time already says whether it is due, and
// the map keeps requests that arrive together from all writing it.
func (s *Server) tokenUsed(ctx context.Context, t statedb.Token) {
	now := s.Now()
	if t.LastUsed != nil && now-*t.LastUsed < tokenUseEvery && now >= *t.LastUsed {
		return
	}
	s.usedMu.Lock()
	if s.used == nil {
		s.used = map[string]int64{}
	}
	last, seen := s.used[t.Name]
	due := !seen || now-last >= tokenUseEvery || now < last
	if due {
		s.used[t.Name] = now
	}
	s.usedMu.Unlock()
	if !due {
		return
	}
	if err := s.TokenUsed(ctx, t.Name); err != nil {
		s.Log.Warn("record token use", "token_name", t.Name, "err", err)
	}
}

// Routes that authorize treats apart. Every other unsafe request is an
// admin's.
var (
	minionRoutes = map[string]bool{"/1.0/give-me-job": true, "/1.0/job-update": true}
	// openRoutes answer anyone, whatever ReadNeedsToken says.
	openRoutes = map[string]bool{"/1.0/health-check": true, "/1.0/sign-in-html": true}
	// hookRoutes are posted to by the forges, which authenticate with
	// their own secret or signature, checked by the route itself.
	hookRoutes = map[string]bool{"/1.0/hooks/gitlab": true, "/1.0/hooks/gitea": true, "/1.0/hooks/github": true}
)

const (
	signInPath  = "/1.0/sign-in-html"
	signOutPath = "/1.0/sign-out-html"
)

// authorize lets a request through if its caller may make it; see the top
// of this file.
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.allowed(r, callerOf(r.Context())); err != nil {
			s.refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

var errSignIn = errorf(http.StatusUnauthorized, "a token is needed: send \"Authorization: Bearer TOKEN\", or sign in")

func (s *Server) allowed(r *http.Request, c *caller) error {
	path := r.URL.Path
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if openRoutes[path] || !s.ReadNeedsToken || c.known() {
			return nil
		}
		return errSignIn
	}
	if c.all || path == signInPath || hookRoutes[path] {
		return nil
	}
	if !c.known() {
		return errSignIn
	}
	if minionRoutes[path] {
		if c.token.Role != statedb.RoleMinion || c.session != nil {
			return errorf(http.StatusForbidden, "only a minion's token may %s", strings.TrimPrefix(path, "/1.0/"))
		}
		return nil
	}
	if c.session != nil {
		if !strings.HasSuffix(path, "-html") {
			return errorf(http.StatusForbidden, "a signed-in browser may only use the pages' buttons; send a token to %s", path)
		}
		// The form carries the session's CSRF token: a page of another
		// site cannot read it, so cannot forge the form, even where the
		// browser sends the cookie along.
		p, err := s.readParams(r)
		if err != nil {
			return err
		}
		if subtle.ConstantTimeCompare([]byte(p["csrf"]), []byte(c.session.CSRF)) != 1 {
			return errorf(http.StatusForbidden, "the form is stale or forged (no CSRF token of this session): reload the page")
		}
		if path == signOutPath {
			return nil
		}
	}
	if !c.admin() {
		return errorf(http.StatusForbidden, "only an admin's token may %s", strings.TrimPrefix(path, "/1.0/"))
	}
	return nil
}

// refuse answers a request that authenticate or authorize turned away:
// JSON for the API, a page for the pages, with the sign-in form for a
// 401.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	isHTTP := errors.As(err, &he)
	if !isPage(r.URL.Path) {
		s.writeError(w, r, err)
		return
	}
	if isHTTP && he.code == http.StatusUnauthorized {
		back := r.URL.RequestURI()
		if r.Method == http.MethodPost {
			back = s.formValue(r, "back")
		}
		if werr := s.signInPage(w, r, http.StatusUnauthorized, backURL(back), "Sign in with a token to do that."); werr != nil {
			s.Log.Error("sign-in page", "err", werr)
		}
		return
	}
	s.page(func(http.ResponseWriter, *http.Request) error { return err })(w, r)
}

// isPage says whether path answers HTML.
func isPage(path string) bool {
	return strings.HasSuffix(path, "-html") || strings.Contains(path, "-html/")
}

// requireToken guards a route outside /1.0, such as /metrics, with a token
// of any role when on is set.
func (s *Server) requireToken(on bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if on && !callerOf(r.Context()).known() {
			s.refuse(w, r, errSignIn)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// claimMinion refuses a minion's request made under a minion name its
// token does not claim, so that no minion can take over another's jobs by
// using its name.
func claimMinion(r *http.Request, name string) error {
	c := callerOf(r.Context())
	if c.all || c.token.Claims(name) {
		return nil
	}
	return errorf(http.StatusForbidden, "the token %s may not act as minion %q: only as %s or %s-*",
		c.token.Name, name, c.token.Name, c.token.Name)
}

// --- signing in and out ---

type signInView struct {
	pageBase
	Message string
}

func (s *Server) signInPage(w http.ResponseWriter, r *http.Request, code int, back, msg string) error {
	v := signInView{pageBase: livePage(w, r, "Sign in", "sign-in", s.Now()), Message: msg}
	v.Back = back
	challenge(w, code)
	return writePage(w, code, "signin.html", v)
}

func (s *Server) signInForm(w http.ResponseWriter, r *http.Request) error {
	return s.signInPage(w, r, http.StatusOK, backURL(r.URL.Query().Get("back")), "")
}

// signIn starts a session for the token posted, and sets its cookie:
// HttpOnly, so that no script reads it; SameSite=Strict, so that no other
// site's page sends it; Secure when served over TLS.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	back := backURL(p["back"])
	secret := strings.TrimSpace(p["token"])
	t, err := s.TokenBySecret(ctx, secret)
	if errors.Is(err, statedb.ErrNotFound) || secret == "" {
		s.Log.Warn("sign-in refused", "remote_addr", r.RemoteAddr)
		return s.signInPage(w, r, http.StatusUnauthorized, back, "That token is not known, or was revoked.")
	}
	if err != nil {
		return err
	}
	id, err := statedb.NewSecret("")
	if err != nil {
		return err
	}
	csrf, err := statedb.NewSecret("")
	if err != nil {
		return err
	}
	err = s.StartSession(ctx, control.NewSession{Cookie: id, Token: t.Name, CSRF: csrf, Lifetime: int64(sessionLifetime / time.Second)})
	if err != nil {
		return err
	}
	s.Log.Info("signed in", "token_name", t.Name, "role", t.Role)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", MaxAge: int(sessionLifetime / time.Second),
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteStrictMode})
	setFlash(w, flash{Text: "Signed in as " + t.Name + " (" + t.Role + ")."})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// secureCookies says whether the session cookie is for HTTPS only: when
// the request came over TLS, or when --public-url says browsers use https,
// as they do through a TLS proxy that speaks plain HTTP to the WEBAPP.
func (s *Server) secureCookies(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(s.PublicURL, "https://")
}

// signOut ends the session for good: its cookie is worth nothing after,
// wherever a copy of it is.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	c := callerOf(ctx)
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if err := s.EndSession(ctx, ck.Value); err != nil {
			return err
		}
	}
	s.Log.Info("signed out", "token_name", c.token.Name)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: s.secureCookies(r), SameSite: http.SameSiteStrictMode})
	setFlash(w, flash{Text: "Signed out."})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, backURL(s.formValue(r, "back")), http.StatusSeeOther)
	return nil
}
