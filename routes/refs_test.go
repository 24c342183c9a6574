package routes

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/wire"
)

// A successful job's ref changes, reported with its final update, are
// checked, kept, answered by job/<id> and listed on the job's page; a job
// that reported none answers null.
func TestJobRefsOverHTTP(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/one", "a/two")
	const (
		id1 = "1111111111111111111111111111111111111111"
		id2 = "2222222222222222222222222222222222222222"
	)
	good := `{"created":[{"ref":"refs/tags/v1","new":"` + id1 + `"}],` +
		`"updated":[{"ref":"refs/heads/main","old":"` + id1 + `","new":"` + id2 + `"}],` +
		`"deleted":[{"ref":"refs/heads/gone","old":"` + id2 + `"}],"truncated":true}`
	minion := url.Values{"host": {"h"}, "pid": {"7"}, "minion": {"m"}}
	if code, offer := ts.call(t, "POST", "/1.0/give-me-job", minion); code != 200 || offer["job_id"] != 1.0 {
		t.Fatalf("give-me-job = %d %v; want job 1", code, offer)
	}
	update := func(exit, refs string) (int, map[string]any) {
		return ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {"1"}, "minion": {"m"}, "pid": {"7"},
			"exit": {exit}, "refs": {refs}})
	}
	for _, bad := range []struct{ name, exit, refs string }{
		{"while running", "no", good},
		{"not JSON", "0", `{"created": [`},
		{"two values", "0", `{} {}`},
		{"unknown field", "0", `{"renamed": []}`},
		{"not a ref", "0", `{"created":[{"ref":"main","new":"` + id1 + `"}]}`},
		{"bad ref name", "0", `{"created":[{"ref":"refs/heads/a..b","new":"` + id1 + `"}]}`},
		{"short id", "0", `{"created":[{"ref":"refs/heads/a","new":"1111"}]}`},
		{"uppercase id", "0", `{"created":[{"ref":"refs/heads/a","new":"` + strings.ToUpper("abcdef"+id1[6:]) + `"}]}`},
		{"created with old", "0", `{"created":[{"ref":"refs/heads/a","old":"` + id1 + `","new":"` + id2 + `"}]}`},
		{"updated without old", "0", `{"updated":[{"ref":"refs/heads/a","new":"` + id2 + `"}]}`},
		{"deleted with new", "0", `{"deleted":[{"ref":"refs/heads/a","old":"` + id1 + `","new":"` + id2 + `"}]}`},
		{"too many", "0", `{"created":[` + strings.Repeat(`{"ref":"refs/heads/a","new":"`+id1+`"},`, wire.MaxRefsPerKind) + `{"ref":"refs/heads/a","new":"` + id1 + `"}]}`},
		{"too large", "0", `{"created":[{"ref":"refs/heads/` + strings.Repeat("a", wire.MaxRefsBytes) + `","new":"` + id1 + `"}]}`},
	} {
		if code, m := update(bad.exit, bad.refs); code != http.StatusBadRequest {
			t.Errorf("job-update with refs %s = %d %v; want 400", bad.name, code, m)
		}
	}
	if code, m := update("0", good); code != 200 {
		t.Fatalf("final job-update with refs = %d %v", code, m)
	}
	_, job := ts.call(t, "GET", "/1.0/job/1", nil)
	var want any
	if err := json.Unmarshal([]byte(good), &want); err != nil {
		t.Fatal(err)
	}
	if job["status"] != "succeeded" || !reflect.DeepEqual(job["refs"], want) {
		t.Errorf("job 1: status %v, refs %v; want succeeded, %v", job["status"], job["refs"], want)
	}
	resp, err := http.Get(ts.url + "/1.0/job-html/1")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, s := range []string{`<td>created</td><td><code>refs/tags/v1</code></td><td></td><td><code title="` + id1 + `">1111111111</code></td>`,
		`<td>updated</td><td><code>refs/heads/main</code></td><td><code title="` + id1 + `">1111111111</code></td><td><code title="` + id2 + `">2222222222</code></td>`,
		`<td>deleted</td><td><code>refs/heads/gone</code></td>`, "at most 1,000 refs"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("job page lacks %q", s)
		}
	}

	// A job that reports no refs has none.
	if code, offer := ts.call(t, "POST", "/1.0/give-me-job", minion); code != 200 || offer["job_id"] != 2.0 {
		t.Fatalf("give-me-job = %d %v; want job 2", code, offer)
	}
	if code, m := ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {"2"}, "minion": {"m"}, "pid": {"7"}, "exit": {"0"}}); code != 200 {
		t.Fatalf("final job-update = %d %v", code, m)
	}
	if _, job := ts.call(t, "GET", "/1.0/job/2", nil); job["refs"] != nil {
		t.Errorf("job 2: refs %v; want null", job["refs"])
	}
	if _, ok := job["refs"]; !ok {
		t.Error(`job 1 has no "refs" field`)
	}
}
