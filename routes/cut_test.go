package routes

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestMinionCutCounted has a minion report output it cut itself: the job
// counts it in cut_bytes and output_bytes, its output marks the cut, and
// its page says how much was cut.
func TestMinionCutCounted(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b")
	m := url.Values{"minion": {"m1"}, "host": {"h"}, "pid": {"1"}}
	code, j := ts.call(t, "POST", "/1.0/give-me-job", m)
	if code != 200 {
		t.Fatalf("give-me-job = %d", code)
	}
	id := fmt.Sprint(j["job_id"])
	update := func(v url.Values) (int, map[string]any) {
		t.Helper()
		v.Set("minion", "m1")
		v.Set("host", "h")
		v.Set("pid", "1")
		v.Set("job_id", id)
		return ts.call(t, "POST", "/1.0/job-update", v)
	}
	if code, a := update(url.Values{"exit": {"no"}, "stdout": {"HEAD\n"}}); code != 200 {
		t.Fatalf("job-update = %d %v", code, a)
	}
	const cut = 38 << 20
	if code, a := update(url.Values{"exit": {"0"}, "cut_bytes": {fmt.Sprint(cut)}, "stdout": {"TAIL\n"}}); code != 200 {
		t.Fatalf("job-update with cut_bytes = %d %v", code, a)
	}
	_, got := ts.call(t, "GET", "/1.0/job/"+id, nil)
	if got["cut_bytes"] != float64(cut) || got["output_bytes"] != float64(cut+10) {
		t.Errorf("job: cut_bytes %v, output_bytes %v; want %d, %d", got["cut_bytes"], got["output_bytes"], cut, cut+10)
	}
	if want := fmt.Sprintf("HEAD\n\n[... %d bytes of output cut ...]\nTAIL\n", cut); got["output"] != want {
		t.Errorf("job output %q, want %q", got["output"], want)
	}
	resp, err := http.Get(ts.url + "/1.0/job-html/" + id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "cut from the middle") {
		t.Errorf("job page does not say output was cut:\n%s", body)
	}

	for _, bad := range []string{"-1", "many"} {
		code, j := ts.call(t, "POST", "/1.0/give-me-job", m)
		if code != 200 {
			ts.FakeClock.Set(ts.FakeClock.Now().Unix() + 1<<30)
			if code, j = ts.call(t, "POST", "/1.0/give-me-job", m); code != 200 {
				t.Fatalf("give-me-job = %d", code)
			}
		}
		id = fmt.Sprint(j["job_id"])
		if code, a := update(url.Values{"exit": {"no"}, "cut_bytes": {bad}}); code != 400 {
			t.Errorf("job-update with cut_bytes %q = %d %v; want 400", bad, code, a)
		}
	}
}
