package routes

import (
	"io"
	"net/http"
	"testing"
)

// TestHealthCheckHead has HEAD /1.0/health-check answer as GET does, to
// anyone, without a body.
func TestHealthCheckHead(t *testing.T) {
	as := newAuthServer(t, func(s *Server) { s.ReadNeedsToken = true })
	get, err := http.Get(as.url + "/1.0/health-check")
	if err != nil {
		t.Fatal(err)
	}
	getBody, _ := io.ReadAll(get.Body)
	get.Body.Close()
	resp, err := http.Head(as.url + "/1.0/health-check")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || get.StatusCode != http.StatusOK {
		t.Fatalf("HEAD health-check = %d, GET = %d %s; want 200 for both", resp.StatusCode, get.StatusCode, getBody)
	}
	if len(body) != 0 {
		t.Errorf("HEAD health-check body = %q; want none", body)
	}
	if got, want := resp.Header.Get("Content-Type"), get.Header.Get("Content-Type"); got != want {
		t.Errorf("HEAD health-check Content-Type = %q; want %q as GET", got, want)
	}
}
