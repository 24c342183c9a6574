package routes

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// routeTable is the handler's routes, each path (its wildcards filled in)
// with its methods in the order of methods.
func routeTable(t *testing.T, h http.Handler) map[string][]string {
	t.Helper()
	fill := strings.NewReplacer("/*", "/a%2Fb", "{id}", "1", "{name}", "x")
	table := map[string][]string{}
	err := chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		path := fill.Replace(route)
		table[path] = append(table[path], method)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, ms := range table {
		slices.SortFunc(ms, func(a, b string) int { return slices.Index(methods, a) - slices.Index(methods, b) })
		table[path] = ms
	}
	if len(table) < 60 {
		t.Fatalf("walked %d routes; the walk misses some", len(table))
	}
	return table
}

// rawRequest makes a request with the Authorization header auth (none if
// ""), and a body of ct if body is not nil.
func rawRequest(t *testing.T, method, url, auth, ct string, body []byte) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// authorizations are the Authorization headers a request may come with:
// none, an unknown token, malformed ones, another scheme's.
func authorizations(admin string) map[string]string {
	return map[string]string{
		"none":          "",
		"unknown token": "Bearer lct_unknown",
		"no token":      "Bearer",
		"two words":     "Bearer lct_a lct_b",
		"Basic":         "Basic dXNlcjpwYXNz",
		"admin":         "Bearer " + admin,
	}
}

// TestMethodRefusedFirst asks every route of the table with every method
// it does not have (CONNECT names no path), from every kind of caller, with
// a body too large and of a type no route reads: each answers 405, with
// an Allow header that lists the route's methods, before it looks at the
// caller or the body.
func TestMethodRefusedFirst(t *testing.T) {
	as := newAuthServer(t, func(s *Server) { s.ReadNeedsToken, s.MetricsNeedToken = true, true })
	big := bytes.Repeat([]byte("x"), smallBody+1)
	n := 0
	for path, allowed := range routeTable(t, as.Handler()) {
		for _, method := range methods {
			if slices.Contains(allowed, method) || method == http.MethodConnect {
				continue
			}
			for name, auth := range authorizations(as.admin) {
				n++
				resp, body := rawRequest(t, method, as.url+path, auth, "text/plain", big)
				if resp.StatusCode != http.StatusMethodNotAllowed {
					t.Errorf("%s %s (%s) = %d %.200s; want 405", method, path, name, resp.StatusCode, body)
					continue
				}
				if got, want := resp.Header.Get("Allow"), strings.Join(allowed, ", "); got != want {
					t.Errorf("%s %s (%s): Allow %q; want %q", method, path, name, got, want)
				}
			}
		}
	}
	if n < 60*6*6 {
		t.Errorf("made %d requests; the walk misses some", n)
	}
}

// TestCallerCheckedBeforeBody sends every route that needs a token, with
// each method it has, a body too large and of a type no route reads, and
// no usable token: each answers 401 with a challenge, before it looks at
// the body. The push hooks, which check a signature of the body, are
// TestPushHookChallenges'.
func TestCallerCheckedBeforeBody(t *testing.T) {
	as := newAuthServer(t, func(s *Server) { s.ReadNeedsToken, s.MetricsNeedToken = true, true })
	big := bytes.Repeat([]byte("x"), smallBody+1)
	n := 0
	for path, allowed := range routeTable(t, as.Handler()) {
		if openRoutes[path] || hookRoutes[path] || path == "/" || strings.HasPrefix(path, "/static/") {
			continue
		}
		for _, method := range allowed {
			body := big
			if method == http.MethodGet || method == http.MethodHead {
				body = nil
			}
			for name, auth := range authorizations(as.admin) {
				if name == "admin" {
					continue
				}
				n++
				resp, got := rawRequest(t, method, as.url+path, auth, "text/plain", body)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s %s (%s) = %d %.200s; want 401", method, path, name, resp.StatusCode, got)
					continue
				}
				if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
					t.Errorf("%s %s (%s): 401 with WWW-Authenticate %q; want a Bearer challenge", method, path, name, resp.Header.Get("WWW-Authenticate"))
				}
			}
		}
	}
	if n < 50*5 {
		t.Errorf("made %d requests; the walk misses some", n)
	}
}

// TestPushHookChallenges: a push hook's 401 names what it wants.
func TestPushHookChallenges(t *testing.T) {
	ts := newTestServer(t, func(s *Server) { s.HookSecret = []byte(testHookSecret) })
	for forge, want := range map[string]string{"gitlab": "GitLab-Token ", "gitea": "HMAC-SHA256 ", "github": "HMAC-SHA256 "} {
		resp, body := rawRequest(t, "POST", ts.url+"/1.0/hooks/"+forge, "", "application/json", []byte(`{}`))
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), want) {
			t.Errorf("POST /1.0/hooks/%s unsigned = %d %.200s, WWW-Authenticate %q; want 401 with a %schallenge",
				forge, resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"), want)
		}
	}
}
