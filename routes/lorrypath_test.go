package routes

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/go-chi/chi/v5"

	"lorrycontroller.dev/lc/confgit"
)

// lorryPathRoutes are the route table's routes that take a lorry path at
// the end of their URL (chi's wildcard), with their method.
func lorryPathRoutes(t *testing.T, h http.Handler) map[string]string {
	t.Helper()
	routes := map[string]string{}
	err := chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if p, ok := strings.CutSuffix(route, "/*"); ok && strings.HasPrefix(route, "/1.0/") {
			routes[p+"/"] = method
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < 2 {
		t.Fatalf("found %d routes that take a lorry path: %v; the walk misses some", len(routes), routes)
	}
	return routes
}

// lorryPathSamples are lorry paths holding each printable ASCII
// character, and some others, between slashes.
func lorryPathSamples() []string {
	var paths []string
	for c := rune(' '); c <= '~'; c++ {
		paths = append(paths, "a/x"+string(c)+"y/b")
	}
	return append(paths, "delta/foo/bar", "a/é/日本", "a/%2F/b", "a/%/b", "top")
}

// TestLorryPathEitherForm asks every route that takes a lorry path for
// lorries whose paths hold every printable character, with the path's
// slashes as they are and escaped as %2F, which is how a client generated
// from docs/openapi.yaml sends its path parameter: both find the lorry.
func TestLorryPathEitherForm(t *testing.T) {
	ts := newTestServer(t)
	paths := lorryPathSamples()
	var ls []confgit.Lorry
	for _, p := range paths {
		text, err := json.Marshal(map[string]any{p: map[string]string{"type": "git", "url": "u"}})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, confgit.Lorry{Path: p, Text: string(text), Type: "git", Interval: time.Hour, Timeout: time.Minute})
	}
	ts.conf.cfg = &confgit.Config{Commit: "c1", Lorries: ls}
	if code, m := ts.call(t, "POST", "/1.0/read-configuration?wait=3600", url.Values{}); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
	for prefix, method := range lorryPathRoutes(t, ts.Handler()) {
		for _, p := range paths {
			segments := strings.Split(p, "/")
			for i, s := range segments {
				segments[i] = url.PathEscape(s)
			}
			forms := map[string]string{
				"slashes":        strings.Join(segments, "/"),
				"escaped %2F":    strings.Join(segments, "%2F"),
				"lower-case %2f": strings.Join(segments, "%2f"),
			}
			for name, form := range forms {
				req, err := http.NewRequest(method, ts.url+prefix+form, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s %s%s (%s) = %d %.200s; want 200", method, prefix, form, name, resp.StatusCode, body)
					continue
				}
				if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
					continue
				}
				var l struct{ Path string }
				if err := json.Unmarshal(body, &l); err != nil || l.Path != p {
					t.Errorf("%s %s%s (%s) answered lorry %q (%v); want %q", method, prefix, form, name, l.Path, err, p)
				}
			}
		}
	}
}

// TestLorryPathMatchedByOpenAPITools sends a lorry's path as a client
// made from docs/openapi.yaml does, its slashes escaped, to every route
// that takes one: both validators find the route's {path} in it, the path
// whole, and take the request and its answer.
func TestLorryPathMatchedByOpenAPITools(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "delta/foo/bar")
	doc := openAPISpec(t)
	kin, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	second, err := secondValidator()
	if err != nil {
		t.Fatal(err)
	}
	for prefix, method := range lorryPathRoutes(t, ts.Handler()) {
		target := prefix + "delta%2Ffoo%2Fbar"
		// The document's server, where the routers look for the route.
		req := httptest.NewRequest(method, doc.Servers[0].URL+target, nil)
		route, params, err := kin.FindRoute(req)
		if err != nil {
			t.Errorf("kin-openapi: %s %s: %v", method, target, err)
		} else if want := openAPIPath(prefix + "*"); route.Path != want || params["path"] != "delta%2Ffoo%2Fbar" {
			t.Errorf("kin-openapi: %s %s is %s with path %q; want %s with delta%%2Ffoo%%2Fbar", method, target, route.Path, params["path"], want)
		}
		if ok, errs := second.ValidateHttpRequestSync(req); !ok {
			t.Errorf("libopenapi-validator: %s %s: %v", method, target, joinValidationErrors(errs))
		}

		resp, err := http.Get(ts.url + target)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s = %d %.200s; want 200", method, target, resp.StatusCode, body)
			continue
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if ok, errs := second.ValidateHttpResponse(req, resp); !ok {
			t.Errorf("libopenapi-validator: the answer to %s %s: %v", method, target, joinValidationErrors(errs))
		}
	}
}
