package routes

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestRetryLorry fails a lorry with class auth until it is hard-failed,
// sees its state, failures and class in the API, and makes it run again
// with retry-lorry.
func TestRetryLorry(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b")
	m := url.Values{"minion": {"m1"}, "host": {"h"}, "pid": {"1"}}
	var id string
	for n := 1; n <= 3; n++ {
		code, l := ts.call(t, "GET", "/1.0/lorry/a/b", nil)
		if code != 200 {
			t.Fatalf("lorry = %d", code)
		}
		if due := int64(l["next_due"].(float64)); due > ts.FakeClock.Now().Unix() {
			ts.FakeClock.Set(due)
		}
		code, j := ts.call(t, "POST", "/1.0/give-me-job", m)
		if code != 200 {
			t.Fatalf("give-me-job %d = %d", n, code)
		}
		id = fmt.Sprint(j["job_id"])
		u := url.Values{"minion": {"m1"}, "host": {"h"}, "pid": {"1"}, "job_id": {id}, "exit": {"1"}, "error_class": {"auth"}}
		if code, m := ts.call(t, "POST", "/1.0/job-update", u); code != 200 {
			t.Fatalf("job-update = %d %v", code, m)
		}
	}
	_, l := ts.call(t, "GET", "/1.0/lorry/a/b", nil)
	if l["state"] != "hard-failed" || l["consecutive_failures"] != 3.0 || l["last_error_class"] != "auth" || l["last_success"] != nil {
		t.Errorf("lorry after 3 auth failures: %v; want hard-failed, 3, auth, no last_success", l)
	}
	_, j := ts.call(t, "GET", "/1.0/job/"+id, nil)
	if j["error_class"] != "auth" || j["lorry_state"] != "hard-failed" {
		t.Errorf("job %s: error_class %v, lorry_state %v; want auth, hard-failed", id, j["error_class"], j["lorry_state"])
	}
	_, st := ts.call(t, "GET", "/1.0/status", nil)
	if q := st["run_queue"].([]any); len(q) != 1 || q[0].(map[string]any)["state"] != "hard-failed" {
		t.Errorf("status run_queue %v; want a/b hard-failed", q)
	}
	for _, page := range []string{"/1.0/lorry-html/a/b", "/1.0/status-html"} {
		resp, err := http.Get(ts.url + page)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{"hard-failed", "3 in a row", "auth", "never: hard-failed"} {
			if !strings.Contains(string(body), want) {
				t.Errorf("%s does not say %q", page, want)
			}
		}
		if page == "/1.0/lorry-html/a/b" && !strings.Contains(string(body), "/1.0/retry-lorry-html") {
			t.Errorf("%s has no Retry now button", page)
		}
	}
	ts.FakeClock.Set(ts.FakeClock.Now().Unix() + 365*86400)
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", m); code != 204 {
		t.Fatalf("give-me-job for a hard-failed lorry = %d; want 204", code)
	}

	for _, tt := range []struct {
		name string
		form url.Values
		want int
	}{
		{name: "no path", form: url.Values{}, want: 400},
		{name: "unknown", form: url.Values{"path": {"x/y"}}, want: 404},
		{name: "retry", form: url.Values{"path": {"a/b"}}, want: 200},
	} {
		if code, m := ts.call(t, "POST", "/1.0/retry-lorry", tt.form); code != tt.want {
			t.Errorf("%s: retry-lorry = %d %v; want %d", tt.name, code, m, tt.want)
		}
	}
	_, l = ts.call(t, "GET", "/1.0/lorry/a/b", nil)
	if l["state"] != "ok" || l["consecutive_failures"] != 0.0 {
		t.Errorf("lorry after retry: %v; want ok, 0 failures", l)
	}
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", m); code != 200 {
		t.Fatalf("give-me-job after retry = %d; want 200", code)
	}
}

func TestJobUpdateErrorClass(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b")
	m := url.Values{"minion": {"m1"}, "host": {"h"}, "pid": {"1"}}
	_, j := ts.call(t, "POST", "/1.0/give-me-job", m)
	id := fmt.Sprint(j["job_id"])
	for _, tt := range []struct {
		name, exit, class string
		want              int
	}{
		{name: "not a class", exit: "1", class: "Auth; drop", want: 400},
		{name: "while running", exit: "no", class: "network", want: 400},
		{name: "with the end", exit: "1", class: "network", want: 200},
	} {
		u := url.Values{"minion": {"m1"}, "host": {"h"}, "pid": {"1"}, "job_id": {id}, "exit": {tt.exit}, "error_class": {tt.class}}
		if code, m := ts.call(t, "POST", "/1.0/job-update", u); code != tt.want {
			t.Errorf("%s: job-update = %d %v; want %d", tt.name, code, m, tt.want)
		}
	}
	if _, j := ts.call(t, "GET", "/1.0/job/"+id, nil); j["error_class"] != "network" {
		t.Errorf("job error_class %v; want network", j["error_class"])
	}
}

// TestMinionStoppingKillsJob: a job that a minion killed as it stopped
// (stopping=true) ends killed, with no error class, and is no failure of
// its lorry.
func TestMinionStoppingKillsJob(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b")
	m := url.Values{"minion": {"m1"}, "host": {"h"}, "pid": {"1"}}
	code, j := ts.call(t, "POST", "/1.0/give-me-job", m)
	if code != 200 {
		t.Fatalf("give-me-job = %d", code)
	}
	id := fmt.Sprint(j["job_id"])
	u := url.Values{"minion": {"m1"}, "host": {"h"}, "pid": {"1"}, "job_id": {id}, "exit": {"143"},
		"error_class": {"internal"}, "stopping": {"true"}}
	if code, m := ts.call(t, "POST", "/1.0/job-update", u); code != 200 {
		t.Fatalf("job-update = %d %v", code, m)
	}
	_, j = ts.call(t, "GET", "/1.0/job/"+id, nil)
	if j["status"] != "killed" || j["error_class"] != "" {
		t.Errorf("job %s: status %v, error_class %v; want killed, none", id, j["status"], j["error_class"])
	}
	_, l := ts.call(t, "GET", "/1.0/lorry/a/b", nil)
	if l["consecutive_failures"] != 0.0 || l["last_error_class"] != "" {
		t.Errorf("lorry: consecutive_failures %v, last_error_class %v; want 0, none", l["consecutive_failures"], l["last_error_class"])
	}
}
