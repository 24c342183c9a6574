package routes

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
)

func everyEvent() map[string]bool {
	m := map[string]bool{}
	for _, e := range statedb.Events {
		m[e] = true
	}
	return m
}

func TestNotificationsRoute(t *testing.T) {
	ts := newTestServer(t, func(s *Server) {
		s.Notifications = control.Notifications{URL: "https://hook:pw@hooks.example/services/T0/SEKRIT?token=SEKRIT",
			Events: []string{statedb.EventJobFailed}}
	})
	ts.configure(t, "a/b")
	_, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
	id := fmt.Sprint(offer["job_id"])
	code, m := ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {id}, "minion": {"m"}, "pid": {"1"},
		"exit": {"3"}, "stderr": {"fatal: no such repository\n"}})
	if code != 200 {
		t.Fatalf("job-update = %d %v", code, m)
	}

	code, n := ts.call(t, "GET", "/1.0/notifications", nil)
	if code != 200 {
		t.Fatalf("notifications = %d %v", code, n)
	}
	if n["enabled"] != true || n["target"] != "https://hooks.example" || fmt.Sprint(n["events"]) != "[job-failed]" {
		t.Errorf("notifications = %v; want enabled, the target without secrets, the events", n)
	}
	if counts := n["counts"].(map[string]any); counts["pending"] != 1.0 {
		t.Errorf("counts = %v; want 1 pending", counts)
	}
	ds := n["deliveries"].([]any)
	if len(ds) != 1 {
		t.Fatalf("deliveries = %v; want 1", ds)
	}
	d := ds[0].(map[string]any)
	p := d["payload"].(map[string]any)
	if d["event"] != "job-failed" || d["status"] != "pending" || d["attempts"] != 0.0 || d["next_try"] != 1000.0 ||
		d["time"] != 1000.0 || d["last_code"] != nil || p["lorry"] != "a/b" || p["job_id"] != offer["job_id"] ||
		p["exit"] != 3.0 || p["status"] != "failed" || !strings.Contains(p["error"].(string), "fatal: no such repository") {
		t.Errorf("delivery = %v; want the pending job-failed of job %s", d, id)
	}

	body := newBrowser(t, ts).page("/1.0/notifications-html", 200)
	for _, w := range []string{"<code>https://hooks.example</code>", "<code>job-failed</code>", `href="/1.0/lorry-html/a/b"`,
		`href="/1.0/job-html/` + id + `"`, `<span class="badge s-waiting">pending</span>`, "not tried yet"} {
		if !strings.Contains(body, w) {
			t.Errorf("notifications page lacks %q", w)
		}
	}
	if strings.Contains(body, "SEKRIT") || strings.Contains(body, "pw@") {
		t.Error("notifications page shows the URL's secrets")
	}
}

func TestNotificationsOff(t *testing.T) {
	ts := newTestServer(t)
	code, n := ts.call(t, "GET", "/1.0/notifications", nil)
	if code != 200 || n["enabled"] != false || len(n["deliveries"].([]any)) != 0 || len(n["events"].([]any)) != 0 {
		t.Errorf("notifications = %d %v; want off and empty", code, n)
	}
	body := newBrowser(t, ts).page("/1.0/notifications-html", 200)
	if !strings.Contains(body, "Notifications are off") || !strings.Contains(body, "No notification has been made yet") {
		t.Errorf("notifications page without a URL does not say so:\n%s", body)
	}
}

func TestHostListingFailedNotified(t *testing.T) {
	fake := &fakeHost{err: fmt.Errorf("GET https://u:SEKRIT@gl.example/api/v4/projects: 401 Unauthorized")}
	ts := newTestServer(t, func(s *Server) { s.ListHost = fake.list })
	ts.configure(t)
	ts.call(t, "POST", "/1.0/ls-troves", url.Values{})
	_, n := ts.call(t, "GET", "/1.0/notifications", nil)
	ds := n["deliveries"].([]any)
	if len(ds) != 1 {
		t.Fatalf("deliveries = %v; want 1", ds)
	}
	d := ds[0].(map[string]any)
	p := d["payload"].(map[string]any)
	if d["event"] != "host-listing-failed" || p["host"] != "gl.example" || !strings.Contains(p["error"].(string), "401") ||
		strings.Contains(p["error"].(string), "SEKRIT") {
		t.Errorf("delivery = %v; want host-listing-failed of gl.example with the error, redacted", d)
	}
}

// TestNotificationErrorHidesTheURL shows a failed delivery whose error
// names the notify URL whole, as a delivery's error did before the
// deliverer hid it, and finds only its scheme, host and port on the route
// and the page.
func TestNotificationErrorHidesTheURL(t *testing.T) {
	const hook = "https://hooks.example:8443/services/T0/B1/PathSecret42?token=QuerySecret42"
	ts := newTestServer(t, func(s *Server) {
		s.Notifications = control.Notifications{URL: hook, Events: []string{statedb.EventJobFailed}}
	})
	ts.configure(t, "a/b")
	runJob(t, ts, "m", "fatal: no such repository\n", "3")
	err := ts.DB.Update(context.Background(), func(tx *statedb.Tx) error {
		return tx.RecordDelivery(context.Background(), 1, statedb.DeliveryAttempt{Status: statedb.DeliveryPending,
			NextTry: tx.Now + 10, Error: `Post "` + hook + `": dial tcp 192.0.2.1:8443: connect: connection refused`})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, n := ts.call(t, "GET", "/1.0/notifications", nil)
	ds, _ := n["deliveries"].([]any)
	if len(ds) != 1 {
		t.Fatalf("deliveries = %v; want 1", n["deliveries"])
	}
	want := `Post "https://hooks.example:8443": dial tcp 192.0.2.1:8443: connect: connection refused`
	if got := ds[0].(map[string]any)["last_error"]; got != want || n["target"] != "https://hooks.example:8443" {
		t.Errorf("last_error %q, target %q; want %q, https://hooks.example:8443", got, n["target"], want)
	}
	body := newBrowser(t, ts).page("/1.0/notifications-html", 200)
	for _, secret := range []string{"PathSecret42", "QuerySecret42", "/services"} {
		if strings.Contains(body, secret) {
			t.Errorf("notifications page shows %q", secret)
		}
	}
	if !strings.Contains(body, "https://hooks.example:8443") {
		t.Error("notifications page does not name the receiver's host")
	}
}
