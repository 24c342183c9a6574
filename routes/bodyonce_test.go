package routes

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb"
)

// signIn signs b in with token and returns its session's CSRF token.
func signIn(t *testing.T, as *authServer, b *browser, token string) string {
	t.Helper()
	if r := b.do("POST", signInPath, url.Values{"token": {token}, "back": {"/1.0/status-html"}}, nil); r.code != http.StatusSeeOther {
		t.Fatalf("sign in: %d %.300s; want 303", r.code, r.body)
	}
	u, _ := url.Parse(as.url)
	var csrf string
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name != sessionCookie {
			continue
		}
		as.DB.View(context.Background(), func(tx *statedb.Tx) error {
			se, err := tx.SessionByHash(context.Background(), statedb.HashSecret(c.Value))
			csrf = se.CSRF
			return err
		})
	}
	if csrf == "" {
		t.Fatal("no session after signing in")
	}
	return csrf
}

// A signed-in browser's button is read once, through the body limits:
// the CSRF check and the route see the same form, and a form over the
// limit is refused before it is read, whoever sends it.
func TestFormsReadOnceThroughTheLimits(t *testing.T) {
	as := newAuthServer(t)
	as.configure(t, "a/b", "c/d")
	b := newBrowser(t, as.testServer)
	csrf := signIn(t, as, b, as.admin)

	r := b.do("POST", "/1.0/run-now-html", url.Values{"csrf": {csrf}, "path": {"c/d"}, "back": {"/1.0/lorry-html/c/d"}}, nil)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/1.0/lorry-html/c/d" {
		t.Errorf("run-now-html with the CSRF token: %d to %q; want 303 back to the lorry's page", r.code, r.header.Get("Location"))
	}
	code, body := as.as(t, as.admin, "GET", "/1.0/list-queue", nil)
	var q struct{ Queue []string }
	json.Unmarshal([]byte(body), &q)
	if code != 200 || len(q.Queue) == 0 || q.Queue[0] != "c/d" {
		t.Errorf("list-queue after run-now-html of c/d = %d %v; want c/d first", code, q.Queue)
	}

	// Bodies over 64 KiB, whose length is not said (chunked): net/http
	// would read 10 MiB of each on its own.
	big := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name, path, form string
		signedIn         bool
	}{
		{"a signed-in button", "/1.0/stop-queue-html", "csrf=" + csrf + "&back=" + big, true},
		{"the sign-in", signInPath, "back=/1.0/status-html&token=" + big, false},
		{"a button without a token", "/1.0/stop-queue-html", "back=" + big, false},
	} {
		c := b.client
		if !tc.signedIn {
			c = &http.Client{}
		}
		// No Content-Length: the body is sent chunked.
		req, _ := http.NewRequest("POST", as.url+tc.path, io.MultiReader(strings.NewReader(tc.form)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusSeeOther || resp.StatusCode == http.StatusOK {
			t.Errorf("%s with a 1 MiB form: %d; want it refused", tc.name, resp.StatusCode)
		}
		if tc.signedIn && resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s with a 1 MiB form: %d; want 413", tc.name, resp.StatusCode)
		}
	}
	if _, st := as.call(t, "GET", "/1.0/status", nil); st["running_queue"] != true {
		t.Errorf("a button over the limit stopped the queue")
	}
}
