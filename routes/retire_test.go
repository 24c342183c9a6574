package routes

import (
	"context"
	"net/url"
	"testing"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
)

// TestClaimTimeoutOrphansAtTick checks that a job whose minion never
// confirmed it is ended as orphaned by the Scheduler's next tick past the
// claim timeout, and its lorry handed out again.
func TestClaimTimeoutOrphansAtTick(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/one")
	m1 := url.Values{"host": {"h"}, "pid": {"7"}, "minion": {"m1"}}
	if code, offer := ts.call(t, "POST", "/1.0/give-me-job", m1); code != 200 || offer["path"] != "a/one" {
		t.Fatalf("give-me-job = %d %v; want a/one", code, offer)
	}
	if _, j := ts.call(t, "GET", "/1.0/job/1", nil); j["status"] != statedb.StatusClaimed {
		t.Fatalf("job 1 is %v; want claimed", j["status"])
	}
	m2 := url.Values{"host": {"h"}, "pid": {"8"}, "minion": {"m2"}}
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", m2); code != 204 {
		t.Fatalf("give-me-job while a/one is claimed = %d; want 204", code)
	}
	// m1 never confirms: past the claim timeout, the tick ends its job,
	// and the next minion to ask gets the lorry.
	ts.FakeClock.Set(1000 + int64(control.DefaultClaimTimeout.Seconds()))
	if _, err := ts.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, j := ts.call(t, "GET", "/1.0/job/1", nil); j["status"] != statedb.StatusClaimed {
		t.Fatalf("job 1 is %v at the claim timeout; want still claimed", j["status"])
	}
	ts.FakeClock.Set(1000 + int64(control.DefaultClaimTimeout.Seconds()) + 1)
	if _, err := ts.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, offer := ts.call(t, "POST", "/1.0/give-me-job", m2); code != 200 || offer["path"] != "a/one" || offer["job_id"] != 2.0 {
		t.Fatalf("give-me-job after the claim timeout = %d %v; want job 2 of a/one", code, offer)
	}
	if _, j := ts.call(t, "GET", "/1.0/job/1", nil); j["status"] != statedb.StatusOrphaned {
		t.Errorf("job 1 is %v; want orphaned", j["status"])
	}
	if _, l := ts.call(t, "GET", "/1.0/lorry/a/one", nil); l["last_run"] != nil {
		t.Errorf("last_run %v; want null: an orphaned job is no run", l["last_run"])
	}
}

func TestRetireMinion(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/one", "a/two")
	m := url.Values{"host": {"h"}, "pid": {"7"}, "minion": {"m"}}
	health := func() string {
		_, st := ts.call(t, "GET", "/1.0/status", nil)
		for _, v := range st["minions"].([]any) {
			if mm := v.(map[string]any); mm["name"] == "m" {
				return mm["health"].(string)
			}
		}
		return "absent"
	}
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", m); code != 200 {
		t.Fatalf("give-me-job = %d", code)
	}
	if h := health(); h != control.HealthNew {
		t.Errorf("health after one request %s; want %s", h, control.HealthNew)
	}
	update := url.Values{"job_id": {"1"}, "minion": {"m"}, "pid": {"7"}, "exit": {"no"}}
	if code, a := ts.call(t, "POST", "/1.0/job-update", update); code != 200 || a["retire"] != nil {
		t.Fatalf("job-update = %d %v; want 200 without retire", code, a)
	}
	if h := health(); h != control.HealthHealthy {
		t.Errorf("health after an update %s; want %s", h, control.HealthHealthy)
	}
	if code, a := ts.call(t, "POST", "/1.0/retire-minion", url.Values{"minion": {"m"}, "kill": {"true"}}); code != 200 || a["retire"] != true || a["kill"] != true {
		t.Fatalf("retire-minion = %d %v", code, a)
	}
	if code, a := ts.call(t, "POST", "/1.0/job-update", update); code != 200 || a["retire"] != true || a["kill"] != true {
		t.Errorf("job-update of a retired minion = %d %v; want retire and kill", code, a)
	}
	if h := health(); h != control.HealthMustDie {
		t.Errorf("health when retired %s; want %s", h, control.HealthMustDie)
	}
	final := url.Values{"job_id": {"1"}, "minion": {"m"}, "pid": {"7"}, "exit": {"143"}}
	if code, _ := ts.call(t, "POST", "/1.0/job-update", final); code != 200 {
		t.Fatalf("final job-update = %d", code)
	}
	if _, j := ts.call(t, "GET", "/1.0/job/1", nil); j["status"] != statedb.StatusKilled {
		t.Errorf("job 1 is %v; want killed", j["status"])
	}
	// Asking again, even as a new process, gets retire, not a job.
	m.Set("pid", "8")
	for range 2 {
		if code, a := ts.call(t, "POST", "/1.0/give-me-job", m); code != 200 || a["retire"] != true || a["job_id"] != nil {
			t.Fatalf("give-me-job of a retired minion = %d %v; want 200 with retire only", code, a)
		}
	}
	if code, a := ts.call(t, "POST", "/1.0/unretire-minion", url.Values{"minion": {"m"}}); code != 200 || a["retire"] != false {
		t.Fatalf("unretire-minion = %d %v", code, a)
	}
	if code, a := ts.call(t, "POST", "/1.0/give-me-job", m); code != 200 || a["path"] != "a/two" {
		t.Errorf("give-me-job after un-retiring = %d %v; want a/two", code, a)
	}
	if code, a := ts.call(t, "POST", "/1.0/retire-minion", url.Values{}); code != 400 {
		t.Errorf("retire-minion without a minion = %d %v; want 400", code, a)
	}
}
