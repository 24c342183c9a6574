package routes

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"lorrycontroller/confgit"
	"lorrycontroller/cron"
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

// runAt asks for a job at now and, if one is given, runs it to success at
// once; it says whether there was one.
func (ts *testServer) runAt(t *testing.T, now int64) bool {
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

func TestScheduleSkippedHourDoesNotFire(t *testing.T) {
	ts := newTestServer(t)
	ts.FakeClock.Set(1362902400) // 00:00 PST
	ts.configureScheduled(t, `{"minute": 30, "hour": 2, "dst_fixes": ["skip", "repeat_use_only_early"],
		"timezone": "US/Pacific", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`)
	for _, now := range []int64{1362909600 - 60, 1362909600, 1362909600 + 60, 1362909600 + 3600} {
		if ts.runAt(t, now) {
			t.Fatalf("a job at %d on the day 2:30 is skipped", now)
		}
	}
	if got := ts.nextDue(t); got != 1362994200 {
		t.Errorf("next_due %d; want 1362994200, 2:30 PDT the next day", got)
	}
}

func TestScheduleCatchUpAndClockJumps(t *testing.T) {
	const day = 86400
	const t0 = 1700006400 // a midnight, UTC
	ts := newTestServer(t)
	ts.FakeClock.Set(t0)
	ts.configureScheduled(t, `{"minute": 0, "hour": 3, "dst_fixes": ["skip", "repeat_use_both"],
		"timezone": "UTC", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`)
	sched := &Scheduler{Server: ts.Server}
	tick := func(now int64) {
		t.Helper()
		ts.FakeClock.Set(now)
		if err := sched.runOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing ticked at 03:00: half an hour later, the event is young
	// enough, and fires once.
	tick(t0 + 3*3600 + 1800)
	if got := ts.nextDue(t); got > t0+3*3600+1800 {
		t.Errorf("after a late tick, next_due %d; want due now (%d)", got, t0+3*3600+1800)
	}
	if !ts.runAt(t, t0+3*3600+1800) || ts.runAt(t, t0+3*3600+1801) {
		t.Fatal("want one job for the late event, and no second")
	}
	// The clock jumps two days and two hours forward: both events are more
	// than an hour old, so neither fires.
	tick(t0 + 2*day + 5*3600)
	if ts.runAt(t, t0+2*day+5*3600) {
		t.Error("a job after a jump past events too old to fire")
	}
	if got := ts.nextDue(t); got != t0+3*day+3*3600 {
		t.Errorf("next_due %d; want the next 03:00 (%d)", got, t0+3*day+3*3600)
	}
	// Fire at 03:00 on day 3, then the clock goes back half an hour and
	// comes forward again: the event is not repeated.
	if !ts.runAt(t, t0+3*day+3*3600) {
		t.Fatal("no job at 03:00")
	}
	tick(t0 + 3*day + 3*3600 - 1800)
	if ts.runAt(t, t0+3*day+3*3600) || ts.runAt(t, t0+3*day+3*3600+60) {
		t.Error("a job again after the clock was set back half an hour")
	}
}
