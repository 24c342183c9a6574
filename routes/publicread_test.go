package routes

import (
	"net/http"
	"testing"
)

// TestPublicReadsIgnoreAuthorization reads every route that anyone may
// read, with every Authorization header that is no token of ours: each
// answers as it does without one. Under ReadNeedsToken such a header is
// still refused, but on the health check.
func TestPublicReadsIgnoreAuthorization(t *testing.T) {
	for _, readNeedsToken := range []bool{false, true} {
		as := newAuthServer(t, func(s *Server) { s.ReadNeedsToken, s.MetricsNeedToken = readNeedsToken, readNeedsToken })
		as.configure(t, "a/b")
		n := 0
		for path, allowed := range routeTable(t, as.Handler()) {
			for _, method := range allowed {
				if method != http.MethodGet && method != http.MethodHead {
					continue
				}
				anon, anonBody := rawRequest(t, method, as.url+path, "", "", nil)
				public := anon.StatusCode != http.StatusUnauthorized
				if public {
					n++
				}
				for name, auth := range authorizations(as.admin) {
					if name == "none" || name == "admin" {
						continue
					}
					resp, body := rawRequest(t, method, as.url+path, auth, "", nil)
					want := anon.StatusCode
					if !public {
						want = http.StatusUnauthorized
					}
					if resp.StatusCode != want {
						t.Errorf("ReadNeedsToken %v: %s %s (%s) = %d %.200s; want %d, as without it (%.100s)",
							readNeedsToken, method, path, name, resp.StatusCode, body, want, anonBody)
					}
				}
			}
		}
		if min := 2; readNeedsToken && n < min || !readNeedsToken && n < 25 {
			t.Errorf("ReadNeedsToken %v: read %d public routes; the walk misses some", readNeedsToken, n)
		}
	}
}
