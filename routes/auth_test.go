package routes

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"lorrycontroller.dev/lc/statedb"
)

// authServer is a testServer that asks for tokens, with an admin token
// (which call sends) and minion tokens for build-01 and build-02.
type authServer struct {
	*testServer
	admin, build01, build02 string
}

func newAuthServer(t *testing.T, opts ...func(*Server)) *authServer {
	t.Helper()
	ts := newTestServer(t, append([]func(*Server){func(s *Server) { s.InsecureNoAuth = false }}, opts...)...)
	as := &authServer{testServer: ts}
	for name, dst := range map[string]*string{"root": &as.admin, "build-01": &as.build01, "build-02": &as.build02} {
		secret, err := statedb.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		role := statedb.RoleMinion
		if name == "root" {
			role = statedb.RoleAdmin
		}
		err = ts.DB.Update(context.Background(), func(tx *statedb.Tx) error {
			return tx.CreateToken(context.Background(), name, role, statedb.HashSecret(secret))
		})
		if err != nil {
			t.Fatal(err)
		}
		*dst = secret
	}
	ts.bearer = as.admin
	return as
}

// as makes a request with token (none if ""), and answers the status
// code and the body.
func (as *authServer) as(t *testing.T, token, method, path string, form url.Values) (int, string) {
	t.Helper()
	b := newBrowser(t, as.testServer)
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	r := b.do(method, path, form, h)
	return r.code, r.body
}

// routeList is every route of the handler as METHOD PATH, with its
// wildcards filled in.
func routeList(t *testing.T, h http.Handler) [][2]string {
	t.Helper()
	var out [][2]string
	err := chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		path := strings.NewReplacer("/*", "/s/a", "{id}", "1").Replace(route)
		out = append(out, [2]string{method, path})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 40 {
		t.Fatalf("walked %d routes; the walk misses some", len(out))
	}
	return out
}

// TestEveryMutatingRouteNeedsItsRole walks the routes, so that a new one
// cannot be forgotten: every request that is not a GET answers 401
// without a token, and 403 with the token of the other role.
func TestEveryMutatingRouteNeedsItsRole(t *testing.T) {
	as := newAuthServer(t)
	n := 0
	for _, rt := range routeList(t, as.Handler()) {
		method, path := rt[0], rt[1]
		if method == http.MethodGet || method == http.MethodHead || path == signInPath || hookRoutes[path] {
			// The hooks are checked by their own secret: see
			// TestPushHooksNeedNoToken and TestPushHooksForged.
			continue
		}
		n++
		t.Run(method+" "+path, func(t *testing.T) {
			if code, body := as.as(t, "", method, path, url.Values{}); code != http.StatusUnauthorized {
				t.Errorf("without a token: %d %.200s; want 401", code, body)
			}
			if code, body := as.as(t, "lct_forged", method, path, url.Values{}); code != http.StatusUnauthorized {
				t.Errorf("with an unknown token: %d %.200s; want 401", code, body)
			}
			other := as.build01
			if minionRoutes[path] {
				other = as.admin
			}
			if code, body := as.as(t, other, method, path, url.Values{}); code != http.StatusForbidden {
				t.Errorf("with the other role's token: %d %.200s; want 403", code, body)
			}
		})
	}
	if n < 25 {
		t.Errorf("checked %d routes that change state; the walk misses some", n)
	}
	// Nothing was changed on the way.
	_, st := as.call(t, "GET", "/1.0/status", nil)
	if st["running_queue"] != true || st["max_jobs"] != nil {
		t.Errorf("after the refused requests: running_queue %v, max_jobs %v; want true, null", st["running_queue"], st["max_jobs"])
	}
}

// TestReadAccessToken has every GET route but the health check and the
// sign-in page ask for a token under ReadNeedsToken, and take a minion's.
func TestReadAccessToken(t *testing.T) {
	as := newAuthServer(t, func(s *Server) { s.ReadNeedsToken, s.MetricsNeedToken = true, true })
	for _, rt := range routeList(t, as.Handler()) {
		method, path := rt[0], rt[1]
		if method != http.MethodGet || path == "/" || strings.HasPrefix(path, "/static/") {
			continue
		}
		code, body := as.as(t, "", method, path, nil)
		if open := openRoutes[path]; open != (code != http.StatusUnauthorized) {
			t.Errorf("GET %s without a token = %d %.200s; want 401 unless open (%v)", path, code, body, open)
		}
		if code, body := as.as(t, as.build02, method, path, nil); code == http.StatusUnauthorized || code == http.StatusForbidden {
			t.Errorf("GET %s with a minion token = %d %.200s; want it read", path, code, body)
		}
	}
}

// TestMinionCannotActAsAnother has minion build-02 try to take over, end
// and report on the job of minion build-01-1, with its own token.
func TestMinionCannotActAsAnother(t *testing.T) {
	as := newAuthServer(t)
	as.configure(t, "s/a")
	give := func(token, name, pid string) (int, string) {
		return as.as(t, token, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {pid}, "minion": {name}})
	}
	if code, body := give(as.build01, "build-01-1", "10"); code != 200 || !strings.Contains(body, `"job_id":1`) {
		t.Fatalf("build-01-1 asks for a job: %d %s", code, body)
	}
	for _, tc := range []struct {
		name   string
		do     func() (int, string)
		status int
	}{
		{"another minion's name with a new pid", func() (int, string) { return give(as.build02, "build-01-1", "11") }, 403},
		{"a name the token does not claim", func() (int, string) { return give(as.build02, "build-010", "11") }, 403},
		{"update under the owner's name", func() (int, string) {
			return as.as(t, as.build02, "POST", "/1.0/job-update", url.Values{"job_id": {"1"}, "minion": {"build-01-1"}, "exit": {"1"}})
		}, 403},
		{"update under no name", func() (int, string) {
			return as.as(t, as.build02, "POST", "/1.0/job-update", url.Values{"job_id": {"1"}, "exit": {"1"}})
		}, 403},
		{"update under its own name", func() (int, string) {
			return as.as(t, as.build02, "POST", "/1.0/job-update", url.Values{"job_id": {"1"}, "minion": {"build-02"}, "exit": {"1"}})
		}, 409},
		{"an admin's token", func() (int, string) { return give(as.admin, "build-01-1", "11") }, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := tc.do(); code != tc.status {
				t.Errorf("%d %s; want %d", code, body, tc.status)
			}
			if _, j := as.call(t, "GET", "/1.0/job/1", nil); j["status"] != "claimed" || j["minion"] != "build-01-1" {
				t.Errorf("job 1 is %v of %v; want claimed, of build-01-1", j["status"], j["minion"])
			}
		})
	}
	code, body := as.as(t, as.build01, "POST", "/1.0/job-update",
		url.Values{"job_id": {"1"}, "minion": {"build-01-1"}, "pid": {"10"}, "exit": {"0"}})
	if code != 200 {
		t.Errorf("the owner's update: %d %s", code, body)
	}
}

// TestReaderSeesNoSecret reads every GET route as anyone and finds no
// credential of a spec or a host; the minion that gets the job gets the
// spec whole.
func TestReaderSeesNoSecret(t *testing.T) {
	as := newAuthServer(t)
	configureHostile(t, as.testServer)
	for _, rt := range routeList(t, as.Handler()) {
		if rt[0] != http.MethodGet {
			continue
		}
		for _, path := range []string{rt[1], strings.Replace(rt[1], "/s/a", "/"+url.PathEscape(hostilePath), 1)} {
			if _, body := as.as(t, "", "GET", path, nil); strings.Contains(body, "hunter2") || strings.Contains(body, "SEKRIT") {
				t.Errorf("GET %s shows a secret: %.300s", path, body)
			}
		}
	}
	code, body := as.as(t, as.build01, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"build-01"}})
	if code != 200 || !strings.Contains(body, "hunter2") {
		t.Errorf("the minion's job: %d %s; want the spec with its password", code, body)
	}
}

// TestTokenUseWrittenAtMostOnceAMinute checks that a token's last use is
// kept without a write for every request.
func TestTokenUseWrittenAtMostOnceAMinute(t *testing.T) {
	as := newAuthServer(t)
	lastUsed := func() int64 {
		var v int64 = -1
		as.DB.View(context.Background(), func(tx *statedb.Tx) error {
			toks, err := tx.Tokens(context.Background())
			for _, tk := range toks {
				if tk.Name == "build-02" && tk.LastUsed != nil {
					v = *tk.LastUsed
				}
			}
			return err
		})
		return v
	}
	read := func() { as.as(t, as.build02, "GET", "/1.0/list-queue", nil) }
	if got := lastUsed(); got != -1 {
		t.Fatalf("unused token last used at %d", got)
	}
	read()
	for _, step := range []struct{ now, want int64 }{{1030, 1000}, {1059, 1000}, {1060, 1060}, {1061, 1060}} {
		as.FakeClock.Set(step.now)
		read()
		if got := lastUsed(); got != step.want {
			t.Errorf("at %d the token's last use reads %d; want %d", step.now, got, step.want)
		}
	}
}

// TestSignInCSRFAndSignOut signs a browser in, checks the cookie, that the
// buttons carry the session's CSRF token and that a form without it or
// from another site changes nothing, and that signing out ends the
// session for every copy of the cookie.
func TestSignInCSRFAndSignOut(t *testing.T) {
	as := newAuthServer(t)
	b := newBrowser(t, as.testServer)
	if page := b.page("/1.0/status-html", 200); strings.Contains(page, "stop-queue-html") || !strings.Contains(page, `href="/1.0/sign-in-html?back=%2f1.0%2fstatus-html"`) {
		t.Errorf("anonymous status page: want no buttons and a sign-in link:\n%.3000s", page)
	}
	if r := b.do("POST", signInPath, url.Values{"token": {"lct_wrong"}, "back": {"/1.0/status-html"}}, nil); r.code != 401 || !strings.Contains(r.body, "not known") {
		t.Errorf("sign in with a wrong token: %d; want 401 and why", r.code)
	}
	r := b.do("POST", signInPath, url.Values{"token": {as.admin}, "back": {"/1.0/status-html"}}, nil)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/1.0/status-html" {
		t.Fatalf("sign in: %d to %q; want 303 to the status page", r.code, r.header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == sessionCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Secure || cookie.Path != "/" {
		t.Fatalf("session cookie %+v; want HttpOnly, SameSite=Strict, not Secure over plain HTTP", cookie)
	}
	page := b.page("/1.0/status-html", 200)
	var csrf string
	as.DB.View(context.Background(), func(tx *statedb.Tx) error {
		se, err := tx.SessionByHash(context.Background(), statedb.HashSecret(cookie.Value))
		csrf = se.CSRF
		return err
	})
	if csrf == "" || strings.Count(page, `name="csrf" value="`+csrf+`"`) < 4 || !strings.Contains(page, "root (admin)") {
		t.Fatalf("signed-in status page: want the buttons with the session's CSRF token, and who signed in:\n%.3000s", page)
	}
	for _, tc := range []struct {
		name   string
		path   string
		form   url.Values
		header map[string]string
		status int
	}{
		{"a button without the CSRF token", "/1.0/stop-queue-html", url.Values{"back": {"/"}}, nil, 403},
		{"a button with another CSRF token", "/1.0/stop-queue-html", url.Values{"csrf": {csrf + "x"}}, nil, 403},
		{"a button from another site", "/1.0/stop-queue-html", url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"the API with the cookie", "/1.0/stop-queue", url.Values{"csrf": {csrf}}, nil, 403},
		{"a GET of give-me-job", "/1.0/give-me-job", nil, map[string]string{"Sec-Fetch-Site": "cross-site"}, 405},
	} {
		method := "POST"
		if tc.form == nil {
			method = "GET"
		}
		if r := b.do(method, tc.path, tc.form, tc.header); r.code != tc.status {
			t.Errorf("%s: %d %.200s; want %d", tc.name, r.code, r.body, tc.status)
		}
		if _, st := as.call(t, "GET", "/1.0/status", nil); st["running_queue"] != true {
			t.Fatalf("%s stopped the queue", tc.name)
		}
	}
	if r := b.do("POST", "/1.0/stop-queue-html", url.Values{"csrf": {csrf}, "back": {"/1.0/status-html"}}, nil); r.code != http.StatusSeeOther {
		t.Errorf("the button with the CSRF token: %d %.300s; want 303", r.code, r.body)
	}
	if _, st := as.call(t, "GET", "/1.0/status", nil); st["running_queue"] != false {
		t.Errorf("the button did not stop the queue")
	}

	if r := b.do("POST", signOutPath, url.Values{"back": {"/1.0/status-html"}}, nil); r.code != 403 {
		t.Errorf("sign out without the CSRF token: %d; want 403", r.code)
	}
	if r := b.do("POST", signOutPath, url.Values{"csrf": {csrf}, "back": {"/1.0/status-html"}}, nil); r.code != http.StatusSeeOther {
		t.Errorf("sign out: %d; want 303", r.code)
	}
	// A copy of the cookie kept from before is worth nothing now.
	stale := newBrowser(t, as.testServer)
	h := map[string]string{"Cookie": sessionCookie + "=" + cookie.Value}
	if r := stale.do("POST", "/1.0/start-queue-html", url.Values{"csrf": {csrf}}, h); r.code != http.StatusUnauthorized {
		t.Errorf("a button with the signed-out cookie: %d; want 401", r.code)
	}
	if r := stale.do("GET", "/1.0/status-html", nil, h); strings.Contains(r.body, "start-queue-html") {
		t.Errorf("the signed-out cookie still shows the buttons")
	}
}

// signIn signs b in with token, and answers the session's cookie value
// and CSRF token.
func (as *authServer) signIn(t *testing.T, b *browser, token string) (cookie, csrf string) {
	t.Helper()
	r := b.do("POST", signInPath, url.Values{"token": {token}, "back": {"/1.0/status-html"}}, nil)
	if r.code != http.StatusSeeOther {
		t.Fatalf("sign in: %d %.300s; want 303", r.code, r.body)
	}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == sessionCookie {
			cookie = c.Value
		}
	}
	as.DB.View(context.Background(), func(tx *statedb.Tx) error {
		se, err := tx.SessionByHash(context.Background(), statedb.HashSecret(cookie))
		csrf = se.CSRF
		return err
	})
	if cookie == "" || csrf == "" {
		t.Fatalf("sign in: no session cookie or CSRF token")
	}
	return cookie, csrf
}

// signedIn says whether the browser holding cookie is signed in as an
// admin: the status page shows it the buttons.
func (as *authServer) signedIn(t *testing.T, cookie string) bool {
	t.Helper()
	r := newBrowser(t, as.testServer).do("GET", "/1.0/status-html", nil, map[string]string{"Cookie": sessionCookie + "=" + cookie})
	if r.code != 200 {
		t.Fatalf("status page: %d; want 200", r.code)
	}
	return strings.Contains(r.body, "stop-queue-html")
}

// TestSessionLastsTwelveHours signs a browser in and moves the clock: it
// is signed in until 12 hours have passed, and the cookie says so too. A
// browser signed in with a minion's token is shown no buttons.
func TestSessionLastsTwelveHours(t *testing.T) {
	as := newAuthServer(t)
	b := newBrowser(t, as.testServer)
	r := b.do("POST", signInPath, url.Values{"token": {as.admin}, "back": {"/1.0/status-html"}}, nil)
	var maxAge int
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == sessionCookie {
			maxAge = c.MaxAge
		}
	}
	if maxAge != 12*60*60 {
		t.Errorf("session cookie Max-Age %d; want %d", maxAge, 12*60*60)
	}
	if minion, _ := as.signIn(t, newBrowser(t, as.testServer), as.build01); as.signedIn(t, minion) {
		t.Errorf("a browser signed in with a minion's token is shown the buttons")
	}
	cookie, _ := as.signIn(t, b, as.admin)
	for _, step := range []struct {
		after int64
		in    bool
	}{{0, true}, {6 * 3600, true}, {12*3600 - 1, true}, {12 * 3600, false}, {12*3600 + 1, false}} {
		as.FakeClock.Set(1000 + step.after)
		if got := as.signedIn(t, cookie); got != step.in {
			t.Errorf("%d s after signing in: signed in %v; want %v", step.after, got, step.in)
		}
	}
}

// TestRevokeSignsOut revokes the token a browser signed in with: the
// token and the session are refused at the next request, and stay so when
// a new token is made under the revoked one's name. Another token's
// session is kept.
func TestRevokeSignsOut(t *testing.T) {
	as := newAuthServer(t)
	ctx := context.Background()
	err := as.DB.Update(ctx, func(tx *statedb.Tx) error {
		return tx.CreateToken(ctx, "other", statedb.RoleAdmin, statedb.HashSecret("lct_other"))
	})
	if err != nil {
		t.Fatal(err)
	}
	cookie, csrf := as.signIn(t, newBrowser(t, as.testServer), as.admin)
	otherCookie, _ := as.signIn(t, newBrowser(t, as.testServer), "lct_other")
	if !as.signedIn(t, cookie) {
		t.Fatalf("not signed in before the revoke")
	}
	if err := as.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.RevokeToken(ctx, "root") }); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if code, body := as.as(t, as.admin, "POST", "/1.0/stop-queue", url.Values{}); code != http.StatusUnauthorized {
			t.Errorf("%s: the revoked token: %d %.200s; want 401", when, code, body)
		}
		if as.signedIn(t, cookie) {
			t.Errorf("%s: the browser signed in with the revoked token is still signed in", when)
		}
		stale := newBrowser(t, as.testServer)
		h := map[string]string{"Cookie": sessionCookie + "=" + cookie}
		if r := stale.do("POST", "/1.0/stop-queue-html", url.Values{"csrf": {csrf}}, h); r.code != http.StatusUnauthorized {
			t.Errorf("%s: a button of the revoked token's session: %d; want 401", when, r.code)
		}
		if _, st := as.call(t, "GET", "/1.0/status", nil); st["running_queue"] != true {
			t.Fatalf("%s: the revoked token stopped the queue", when)
		}
		if !as.signedIn(t, otherCookie) {
			t.Errorf("%s: the session of another token was ended too", when)
		}
	}
	check("after the revoke")
	err = as.DB.Update(ctx, func(tx *statedb.Tx) error {
		return tx.CreateToken(ctx, "root", statedb.RoleAdmin, statedb.HashSecret("lct_new"))
	})
	if err != nil {
		t.Fatal(err)
	}
	check("with a new token called root")
}

// TestTokensNotLogged logs at debug level while tokens are used, refused,
// signed in with, revoked and signed out: no token, session cookie or
// CSRF token is in the log.
func TestTokensNotLogged(t *testing.T) {
	logs := &lockedWriter{}
	as := newAuthServer(t, func(s *Server) {
		s.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ctx := context.Background()
	unknown := "lct_unknownTokenNeverMade"
	secrets := []string{as.admin, as.build01, as.build02, unknown}
	for _, tok := range []string{as.admin, as.build01, unknown, ""} {
		as.as(t, tok, "GET", "/1.0/list-queue", nil)
		as.as(t, tok, "POST", "/1.0/stop-queue", url.Values{})
		as.as(t, tok, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"build-01"}})
	}
	b := newBrowser(t, as.testServer)
	b.do("POST", signInPath, url.Values{"token": {unknown}}, nil)
	cookie, csrf := as.signIn(t, b, as.admin)
	secrets = append(secrets, cookie, csrf)
	b.page("/1.0/status-html", 200)
	b.do("POST", "/1.0/start-queue-html", url.Values{"csrf": {csrf}, "back": {"/"}}, nil)
	b.do("POST", "/1.0/start-queue-html", url.Values{"csrf": {"wrong"}}, nil)
	if err := as.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.RevokeToken(ctx, "build-01") }); err != nil {
		t.Fatal(err)
	}
	as.as(t, as.build01, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"build-01"}})
	b.do("POST", signOutPath, url.Values{"csrf": {csrf}}, nil)
	b.do("GET", "/1.0/status-html", nil, map[string]string{"Cookie": sessionCookie + "=" + cookie})

	log := logs.String()
	for _, want := range []string{"level=DEBUG", "signed in", "sign-in refused", "signed out"} {
		if !strings.Contains(log, want) {
			t.Fatalf("the log does not say %q, so it says too little to be checked:\n%s", want, log)
		}
	}
	for _, s := range secrets {
		if strings.Contains(log, s) {
			t.Errorf("the log holds the secret %q:\n%s", s, log)
		}
		if strings.Contains(log, strings.TrimPrefix(s, "lct_")[:12]) {
			t.Errorf("the log holds a part of the secret %q:\n%s", s, log)
		}
	}
}
