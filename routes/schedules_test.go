package routes

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/cron"
)

// configureScheduled reads a configuration of one lorry, a/s, with the
// schedule text.
func (ts *testServer) configureScheduled(t *testing.T, schedule string) {
	t.Helper()
	it, err := cron.Parse([]byte(schedule), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts.conf.cfg = &confgit.Config{Commit: "c1", Lorries: []confgit.Lorry{{Path: "a/s", Text: `{"a/s":{"type":"git","url":"u"}}`,
		Type: "git", Interval: time.Hour, Timeout: time.Minute, Schedule: schedule, Cron: it}}}
	if code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{}); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
}

// runAt ticks at now, as the Scheduler does every second, then asks for
// a job and, if one is given, runs it to success at once; it says whether
// there was one.
func (ts *testServer) runAt(t *testing.T, now int64) bool {
	t.Helper()
	ts.FakeClock.Set(now)
	if _, err := ts.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ts.handOutAt(t, now)
}

// handOutAt asks for a job at now, without a tick, and, if one is given,
// runs it to success at once; it says whether there was one.
func (ts *testServer) handOutAt(t *testing.T, now int64) bool {
	t.Helper()
	ts.FakeClock.Set(now)
	code, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"7"}, "minion": {"m"}})
	if code == 204 {
		return false
	}
	if code != 200 {
		t.Fatalf("give-me-job at %d = %d %v", now, code, offer)
	}
	id := url.Values{"job_id": {strconv.FormatInt(int64(offer["job_id"].(float64)), 10)}, "minion": {"m"}, "pid": {"7"}, "exit": {"0"}}
	if code, m := ts.call(t, "POST", "/1.0/job-update", id); code != 200 {
		t.Fatalf("job-update = %d %v", code, m)
	}
	return true
}

func (ts *testServer) nextDue(t *testing.T) int64 {
	t.Helper()
	_, l := ts.call(t, "GET", "/1.0/lorry/a/s", nil)
	return int64(l["next_due"].(float64))
}

// The seed's examples: in US/Pacific, 1:30 am came twice on 3 November
// 2013 (UTC 1383467400 and 1383471000), and 2:30 am never came on 10
// March 2013 (1362909600 would have been it).
func TestScheduleRepeatedHourFiresOnce(t *testing.T) {
	ts := newTestServer(t)
	ts.FakeClock.Set(1383462000) // 00:00 PDT
	ts.configureScheduled(t, `{"minute": 30, "hour": 1, "dst_fixes": ["skip", "repeat_use_only_early"],
		"timezone": "US/Pacific", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`)
	if got := ts.nextDue(t); got != 1383467400 {
		t.Fatalf("next_due %d; want 1383467400, the first 1:30", got)
	}
	_, l := ts.call(t, "GET", "/1.0/lorry/a/s", nil)
	if l["schedule"] == nil {
		t.Errorf("lorry has no schedule in words: %v", l)
	}
	if ts.runAt(t, 1383467399) {
		t.Fatal("a job a second before the event")
	}
	if !ts.runAt(t, 1383467400) {
		t.Fatal("no job at the first 1:30")
	}
	if ts.runAt(t, 1383471000) || ts.runAt(t, 1383471000+600) {
		t.Fatal("a job at the repeated 1:30; want none with repeat_use_only_early")
	}
	if got := ts.nextDue(t); got != 1383557400 {
		t.Errorf("next_due %d; want 1383557400, 1:30 PST the next day", got)
	}
}
