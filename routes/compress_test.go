package routes

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/static"
)

// getEncoded asks for path with the Accept-Encoding given, and answers the
// response and its body as sent, not decompressed.
func getEncoded(t *testing.T, ts *testServer, path, acceptEncoding string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", ts.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Set by hand, so that the client neither adds gzip nor decompresses.
	req.Header.Set("Accept-Encoding", acceptEncoding)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func varies(h http.Header) bool {
	for _, v := range h.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), "Accept-Encoding") {
				return true
			}
		}
	}
	return false
}

// TestPagesAndAssetsCompressed asks for every page, an error page, and the
// style sheet and script, with and without gzip: with it the answer is
// gzip whose content is the same page, without it the page as it is, and
// both say that they vary with Accept-Encoding.
func TestPagesAndAssetsCompressed(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "c/one", "c/two")
	running := runJob(t, ts, "m1", "Counting objects: 1\n", "no")
	ended := runJob(t, ts, "m2", "done\n", "0")
	paths := []string{
		"/1.0/status-html", "/1.0/status-html?path=one", "/1.0/lorry-html/c/one", "/1.0/lorry-html/c%2Ftwo",
		"/1.0/job-html/" + fmt.Sprint(running), "/1.0/job-html/" + fmt.Sprint(ended), "/1.0/list-jobs-html",
		"/1.0/hosts-html", "/1.0/minions-html", "/1.0/notifications-html",
		"/1.0/lorry-html/c/none", // an error page
		"/static/style.css?v=" + static.Version, "/static/app.js?v=" + static.Version, "/static/app.js",
	}
	for _, path := range paths {
		plain, want := getEncoded(t, ts, path, "identity")
		if enc := plain.Header.Get("Content-Encoding"); enc != "" || !varies(plain.Header) {
			t.Errorf("%s without gzip: Content-Encoding %q, Vary %q; want none, and Accept-Encoding", path, enc, plain.Header.Values("Vary"))
		}
		for _, accept := range []string{"gzip", "gzip, deflate, br, zstd", "br;q=1.0, gzip;q=0.8, *;q=0.1", "*"} {
			resp, body := getEncoded(t, ts, path, accept)
			if resp.StatusCode != plain.StatusCode || resp.Header.Get("Content-Encoding") != "gzip" || !varies(resp.Header) {
				t.Errorf("%s with %q: %d, Content-Encoding %q, Vary %q; want %d, gzip and Accept-Encoding", path, accept,
					resp.StatusCode, resp.Header.Get("Content-Encoding"), resp.Header.Values("Vary"), plain.StatusCode)
				continue
			}
			if cl := resp.Header.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(body)) {
				t.Errorf("%s with %q: Content-Length %s of a %d byte body", path, accept, cl, len(body))
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Errorf("%s with %q: not gzip: %v", path, accept, err)
				continue
			}
			got, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s with %q: decompressed to %d bytes (%v); want the %d bytes of the page", path, accept, len(got), err, len(want))
			}
		}
	}
	// Refused gzip, and the API, go as they are.
	for _, tc := range []struct{ path, accept string }{
		{"/1.0/status-html", "gzip;q=0"}, {"/1.0/status-html", "deflate"}, {"/1.0/status-html", "*, gzip;q=0"},
		{"/1.0/status", "gzip"}, {"/1.0/job/" + fmt.Sprint(running), "gzip"}, {"/1.0/job-output/" + fmt.Sprint(running), "gzip"},
	} {
		resp, _ := getEncoded(t, ts, tc.path, tc.accept)
		if enc := resp.Header.Get("Content-Encoding"); enc != "" {
			t.Errorf("%s with %q: Content-Encoding %q; want none", tc.path, tc.accept, enc)
		}
	}
}

// TestAcceptsGzip reads Accept-Encoding headers as RFC 9110 says.
func TestAcceptsGzip(t *testing.T) {
	tests := []struct {
		header string
		want   bool
	}{
		{"", false}, {"identity", false}, {"gzip", true}, {"GZIP", true}, {"x-gzip", true},
		{"deflate, gzip", true}, {"gzip;q=0", false}, {"gzip; q=0.0", false}, {"gzip;q=0.001", true},
		{"*", true}, {"*;q=0", false}, {"*, gzip;q=0", false}, {"br, *;q=0.1", true}, {"deflate, br", false},
	}
	for _, tc := range tests {
		if got := acceptsGzip(tc.header); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v; want %v", tc.header, got, tc.want)
		}
	}
}
