package routes

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestMinionNames refuses minion names with control characters, or of
// other characters than letters, digits, '.', '_' and '-', or too long,
// wherever a route takes one, before anything is recorded; the names
// minions are given (HOST-N, host names with dots) pass.
func TestMinionNames(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b", "a/c")
	bad := []string{"m1\x00", "m1\nlevel=ERROR msg=forged", "m\t1", "m 1", "a/b", "..", strings.Repeat("m", 65), "mïnion"}
	for _, name := range bad {
		if code, a := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"minion": {name}, "host": {"h"}, "pid": {"1"}}); code != 400 {
			t.Errorf("give-me-job as %q = %d %v; want 400", name, code, a)
		}
		if code, a := ts.call(t, "POST", "/1.0/retire-minion", url.Values{"minion": {name}}); code != 400 {
			t.Errorf("retire-minion %q = %d %v; want 400", name, code, a)
		}
	}
	// Without a name, the minion is HOST-PID: the host must make a name.
	if code, a := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h\n"}, "pid": {"1"}}); code != 400 {
		t.Errorf("give-me-job from host %q = %d %v; want 400", "h\n", code, a)
	}
	_, st := ts.call(t, "GET", "/1.0/status", nil)
	if ms, _ := st["minions"].([]any); len(ms) != 0 {
		t.Errorf("minions recorded after refused names: %v", ms)
	}

	for _, name := range []string{"build01.example.org-3", "Mirror_Box-12"} {
		code, j := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"minion": {name}, "host": {"h"}, "pid": {"1"}})
		if code != 200 {
			t.Fatalf("give-me-job as %q = %d %v; want 200", name, code, j)
		}
		u := url.Values{"job_id": {fmt.Sprint(j["job_id"])}, "minion": {name}, "pid": {"1"}, "exit": {"no"}}
		if code, a := ts.call(t, "POST", "/1.0/job-update", u); code != 200 {
			t.Errorf("job-update as %q = %d %v; want 200", name, code, a)
		}
		u.Set("minion", name+"\n")
		if code, a := ts.call(t, "POST", "/1.0/job-update", u); code != 400 {
			t.Errorf("job-update as %q = %d %v; want 400", name+"\n", code, a)
		}
	}
}
