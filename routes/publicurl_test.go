package routes

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"lorrycontroller.dev/lc/statedb"
)

// TestSessionCookieSecureBehindTLSProxy signs in over plain HTTP, as a TLS
// proxy in front of the WEBAPP speaks it: with an https PublicURL the
// session cookie, set and cleared, is Secure; with an http one it is not.
func TestSessionCookieSecureBehindTLSProxy(t *testing.T) {
	for _, tc := range []struct {
		public string
		secure bool
	}{{"https://lorry.example.org", true}, {"http://lorry.example.org", false}, {"", false}} {
		t.Run(tc.public, func(t *testing.T) {
			as := newAuthServer(t, func(s *Server) { s.PublicURL = tc.public })
			b := newBrowser(t, as.testServer)
			r := b.do("POST", signInPath, url.Values{"token": {as.admin}, "back": {"/1.0/status-html"}}, nil)
			session := cookieOf(r.header)
			if r.code != http.StatusSeeOther || session == nil || session.Secure != tc.secure || !session.HttpOnly {
				t.Fatalf("sign in: %d, session cookie %+v; want 303 and a cookie that is Secure: %v", r.code, session, tc.secure)
			}
			var csrf string
			as.DB.View(context.Background(), func(tx *statedb.Tx) error {
				se, err := tx.SessionByHash(context.Background(), statedb.HashSecret(session.Value))
				csrf = se.CSRF
				return err
			})
			r = b.do("POST", signOutPath, url.Values{"csrf": {csrf}, "back": {"/1.0/status-html"}},
				map[string]string{"Cookie": sessionCookie + "=" + session.Value})
			if cleared := cookieOf(r.header); r.code != http.StatusSeeOther || cleared == nil || cleared.MaxAge >= 0 || cleared.Secure != tc.secure {
				t.Errorf("sign out: %d, session cookie %+v; want 303 and the cookie cleared, Secure: %v", r.code, cleared, tc.secure)
			}
		})
	}
}

func cookieOf(h http.Header) *http.Cookie {
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	return nil
}
