package openapitest

import (
	"maps"
	"net/url"
	"regexp"
	"testing"
)

// TestFind asks Find for every path of the document, each parameter
// holding every printable ASCII character besides the letters, escaped
// as a client made from the document escapes it; and a lorry's path with
// its slashes as they are, as the WEBAPP takes it too.
func TestFind(t *testing.T) {
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var odd []byte
	for c := byte(' '); c <= '~'; c++ {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			odd = append(odd, c)
		}
	}
	value := "x" + string(odd) + "y"
	if len(d.routes) < 60 {
		t.Fatalf("the document has %d paths; want more", len(d.routes))
	}
	for _, r := range d.routes {
		params := map[string]string{}
		for _, name := range r.params {
			params[name] = value
		}
		u := Canonical(&url.URL{}, r.path, params)
		got, gotParams := d.Find(u.EscapedPath())
		if got != r.path || !maps.Equal(gotParams, params) {
			t.Errorf("Find(%q) = %q, %q; want %q, %q", u.EscapedPath(), got, gotParams, r.path, params)
		}
		if len(r.params) == 1 && r.params[0] == "path" {
			raw := regexp.MustCompile(`\{path\}`).ReplaceAllLiteralString(r.path, "delta/foo%20x/bar")
			got, gotParams := d.Find(raw)
			if want := map[string]string{"path": "delta/foo x/bar"}; got != r.path || !maps.Equal(gotParams, want) {
				t.Errorf("Find(%q) = %q, %q; want %q, %q", raw, got, gotParams, r.path, want)
			}
		}
	}
	for _, p := range []string{"/1.0/no-such-route", "/1.0/lorry/", "/1.0/job/", "/2.0/status"} {
		if got, _ := d.Find(p); got != "" {
			t.Errorf("Find(%q) = %q; want none", p, got)
		}
	}
}
