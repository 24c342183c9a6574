package routes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPIListsAreNeverNull walks every schema of docs/openapi.yaml:
// no list admits null, as the WEBAPP answers an empty list with [].
func TestOpenAPIListsAreNeverNull(t *testing.T) {
	doc := openAPISpec(t)
	seen := map[*openapi3.Schema]bool{}
	var walk func(at string, ref *openapi3.SchemaRef)
	walk = func(at string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if s.Type.Includes("array") && (s.Type.Includes("null") || s.Nullable) {
			t.Errorf("%s is a list or null; want a list alone", at)
		}
		for name, p := range s.Properties {
			walk(at+"."+name, p)
		}
		walk(at+"[]", s.Items)
		if s.AdditionalProperties.Schema != nil {
			walk(at+".*", s.AdditionalProperties.Schema)
		}
		for i, sub := range append(append(append(openapi3.SchemaRefs{}, s.OneOf...), s.AnyOf...), s.AllOf...) {
			walk(fmt.Sprintf("%s|%d", at, i), sub)
		}
	}
	for name, s := range doc.Components.Schemas {
		walk(name, s)
	}
	for name, r := range doc.Components.Responses {
		for ct, mt := range r.Value.Content {
			walk(name+" "+ct, mt.Schema)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for code, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for ct, mt := range r.Value.Content {
					walk(fmt.Sprintf("%s %s %s %s", method, path, code, ct), mt.Schema)
				}
			}
		}
	}
	if len(seen) < 50 {
		t.Errorf("walked %d schemas; the walk misses some", len(seen))
	}
}

// TestEmptyListsAreEmpty asks a WEBAPP with nothing in it for its lists:
// each is [], not null.
func TestEmptyListsAreEmpty(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct{ method, path, field string }{
		{"GET", "/1.0/list-queue", "queue"},
		{"GET", "/1.0/list-running-jobs", "running_jobs"},
		{"GET", "/1.0/list-jobs", "job_ids"},
		{"GET", "/1.0/status", "running_jobs"},
		{"GET", "/1.0/status", "hosts"},
		{"GET", "/1.0/status", "minions"},
		{"GET", "/1.0/lorries", "lorries"},
		{"POST", "/1.0/remove-ghost-jobs", "removed"},
		{"POST", "/1.0/ls-hosts", "hosts"},
	} {
		code, m := ts.call(t, tc.method, tc.path, nil)
		if l, ok := m[tc.field].([]any); code != 200 || !ok || len(l) != 0 {
			t.Errorf("%s %s = %d, %s %#v; want 200, []", tc.method, tc.path, code, tc.field, m[tc.field])
		}
	}
}

// TestGiveMeJobRefusesPIDBelowOne: a pid is 1 or more, as the document
// says, in a form or in JSON.
func TestGiveMeJobRefusesPIDBelowOne(t *testing.T) {
	as := newAuthServer(t)
	for _, pid := range []string{"0", "-1", "-4", "-9223372036854775808"} {
		for name, body := range map[string]string{
			"form": "host=h&minion=build-01&pid=" + pid,
			"json": `{"host":"h","minion":"build-01","pid":` + pid + `}`,
		} {
			ct := formType
			if name == "json" {
				ct = jsonType
			}
			resp, got := rawRequest(t, "POST", as.url+"/1.0/give-me-job", "Bearer "+as.build01, ct, []byte(body))
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("give-me-job with pid %s (%s) = %d %.200s; want 400", pid, name, resp.StatusCode, got)
			}
		}
	}
	resp, got := rawRequest(t, "POST", as.url+"/1.0/give-me-job", "Bearer "+as.build01, formType, []byte("host=h&minion=build-01&pid=1"))
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("give-me-job with pid 1 = %d %.200s; want 204", resp.StatusCode, got)
	}
}

// TestBodyTypes posts to every POST route of the table with a body of
// each type: a form and JSON are read; any other type is answered 415
// (the Error object, or a page for a button), and the route does
// nothing. A push hook reads JSON only.
func TestBodyTypes(t *testing.T) {
	as := newAuthServer(t, func(s *Server) { s.HookSecret = []byte(testHookSecret) })
	n := 0
	for path, allowed := range routeTable(t, as.Handler()) {
		if !strings.HasPrefix(path, "/1.0/") || !strings.Contains(strings.Join(allowed, " "), "POST") {
			continue
		}
		for _, ct := range []string{"text/plain", "text/plain; charset=utf-8", "multipart/form-data; boundary=x", "application/octet-stream", "application/xml", "nonsense"} {
			n++
			token := as.admin
			if minionRoutes[path] {
				token = as.build01
			}
			resp, got := rawRequest(t, "POST", as.url+path, "Bearer "+token, ct, []byte("max_jobs=0"))
			if resp.StatusCode != http.StatusUnsupportedMediaType {
				t.Errorf("POST %s with %q = %d %.200s; want 415", path, ct, resp.StatusCode, got)
			}
			var e map[string]string
			if !isPage(path) && (json.Unmarshal([]byte(got), &e) != nil || e["error"] == "") {
				t.Errorf("POST %s with %q answered %.200s; want the Error object", path, ct, got)
			}
		}
	}
	if n < 40*6 {
		t.Errorf("made %d requests; the walk misses some", n)
	}
	if _, st := as.call(t, "GET", "/1.0/status", nil); st["max_jobs"] != nil || st["running_queue"] != true {
		t.Errorf("after the refused bodies: max_jobs %v, running_queue %v; want null, true", st["max_jobs"], st["running_queue"])
	}
	for name, ct := range map[string]string{"form": formType, "JSON": jsonType} {
		body := "max_jobs=3"
		if name == "JSON" {
			body = `{"max_jobs":3}`
		}
		resp, got := rawRequest(t, "POST", as.url+"/1.0/set-max-jobs", "Bearer "+as.admin, ct+"; charset=utf-8", []byte(body))
		if resp.StatusCode != 200 || !strings.Contains(got, `"max_jobs":3`) {
			t.Errorf("set-max-jobs with a %s = %d %.200s; want 200, 3", name, resp.StatusCode, got)
		}
	}
}
