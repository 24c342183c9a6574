package control

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/cron"
	"lorrycontroller.dev/lc/statedb"
)

// testApp is an App over a new state database, with a configuration
// that the tests set.
type testApp struct {
	*App
	conf *stubConfig
}

func newTestApp(t *testing.T) *testApp {
	t.Helper()
	a, _, conf := newApp(t)
	return &testApp{App: a, conf: conf}
}

// configureScheduled applies a configuration of one lorry, a/s, with the
// schedule text.
func (ts *testApp) configureScheduled(t *testing.T, schedule string) {
	t.Helper()
	it, err := cron.Parse([]byte(schedule), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts.conf.cfg = &confgit.Config{Commit: "c1", Lorries: []confgit.Lorry{{Path: "a/s", Text: `{"a/s":{"type":"git","url":"u"}}`,
		Type: "git", Interval: time.Hour, Timeout: time.Minute, Schedule: schedule, Cron: it}}}
	if _, err := ts.ApplyConfiguration(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// runAt ticks at now, as the Scheduler does every second, then hands out
// a job and, if there is one, runs it to success at once; it says whether
// there was one.
func (ts *testApp) runAt(t *testing.T, now int64) bool {
	t.Helper()
	ts.FakeClock.Set(now)
	if _, err := ts.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ts.handOutAt(t, now)
}

// handOutAt hands out a job at now, without a tick, and, if there is one,
// runs it to success at once; it says whether there was one.
func (ts *testApp) handOutAt(t *testing.T, now int64) bool {
	t.Helper()
	ts.FakeClock.Set(now)
	ctx := context.Background()
	h, err := ts.HandOut(ctx, minion("m"))
	if err != nil {
		t.Fatalf("HandOut at %d: %v", now, err)
	}
	if h.Offer == nil {
		return false
	}
	exit := int64(0)
	if _, err := ts.UpdateJob(ctx, statedb.JobUpdate{ID: h.Offer.Job.ID, Minion: minion("m"), Exit: &exit}); err != nil {
		t.Fatalf("UpdateJob: %v", err)
	}
	return true
}

// handOut hands out a job, and says whether there was one.
func (ts *testApp) handOut(t *testing.T) bool {
	t.Helper()
	h, err := ts.HandOut(context.Background(), minion("m"))
	if err != nil {
		t.Fatal(err)
	}
	return h.Offer != nil
}

func (ts *testApp) lorry(t *testing.T, path string) statedb.Lorry {
	t.Helper()
	ctx := context.Background()
	var l statedb.Lorry
	err := ts.DB.View(ctx, func(tx *statedb.Tx) error {
		var err error
		l, err = tx.Lorry(ctx, path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (ts *testApp) nextDue(t *testing.T) int64 {
	t.Helper()
	return ts.lorry(t, "a/s").NextDue
}

// configureMany applies a configuration of n lorries, s/00000 and on, with
// the schedules schedule gives, in the default queue, or with sort in a
// queue of their own if sort is not "".
func (ts *testApp) configureMany(t *testing.T, n int, schedule func(i int) string, sort ...string) {
	t.Helper()
	cfg := &confgit.Config{Commit: "c1"}
	queue := confgit.DefaultQueue
	if len(sort) > 0 && sort[0] != "" {
		queue = "q"
		cfg.Queues = []confgit.Queue{{Name: queue, Sort: sort[0]}}
	}
	for i := range n {
		text := schedule(i)
		it, err := cron.Parse([]byte(text), nil)
		if err != nil {
			t.Fatal(err)
		}
		p := fmt.Sprintf("s/%05d", i)
		cfg.Lorries = append(cfg.Lorries, confgit.Lorry{Path: p, Text: `{"` + p + `":{"type":"git","url":"u"}}`,
			Type: "git", Interval: time.Hour, Timeout: time.Minute, Schedule: text, Cron: it, Queue: queue})
	}
	ts.conf.cfg = cfg
	if _, err := ts.ApplyConfiguration(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// daily is a schedule at hh:mm every day in zone.
func daily(hh, mm int, zone string) string {
	return fmt.Sprintf(`{"minute": %d, "hour": %d, "timezone": %q, "dst_fixes": ["skip", "repeat_use_only_early"],
		"max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`, mm, hh, zone)
}

func TestScheduleSkippedHourDoesNotFire(t *testing.T) {
	ts := newTestApp(t)
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
	ts := newTestApp(t)
	ts.FakeClock.Set(t0)
	ts.configureScheduled(t, `{"minute": 0, "hour": 3, "dst_fixes": ["skip", "repeat_use_both"],
		"timezone": "UTC", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`)
	sched := ts.App
	tick := func(now int64) {
		t.Helper()
		ts.FakeClock.Set(now)
		if _, err := sched.Tick(context.Background()); err != nil {
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

// TestScheduleTickLooksOnlyAtDue checks that a tick looks only at the
// entries whose next event has come, whatever the number of schedules,
// and advances them in bounded batches.
func TestScheduleTickLooksOnlyAtDue(t *testing.T) {
	const t0 = 1700006400 // a midnight, UTC
	const n = 1200        // 20 at each minute of 03:00 to 03:59
	ts := newTestApp(t)
	ts.FakeClock.Set(t0)
	ts.configureMany(t, n, func(i int) string { return daily(3, i%60, "UTC") })
	sched := ts.App
	tick := func(now int64) TickWork {
		t.Helper()
		ts.FakeClock.Set(now)
		w, err := sched.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	// Between events nothing is looked at, at the first run too.
	for _, now := range []int64{t0 + 10, t0 + 3600, t0 + 3*3600 - 1} {
		if w := tick(now); w != (TickWork{}) {
			t.Errorf("tick at %d, before any event: did %+v, want nothing", now, w)
		}
	}
	// At 03:00:30, the 20 entries of minute 0 alone.
	if w := tick(t0 + 3*3600 + 30); w.Entries != 20 || w.Written != 20 {
		t.Errorf("tick at 03:00:30: looked at %d entries, wrote %d; want the 20 of 03:00", w.Entries, w.Written)
	}
	if w := tick(t0 + 3*3600 + 35); w != (TickWork{}) {
		t.Errorf("tick at 03:00:35: did %+v, want nothing", w)
	}
	// A hand-out in between ticks none but the entry it hands out, one
	// of minute 0's: at 03:01:10, minute 1's 20 are left to the tick.
	ts.FakeClock.Set(t0 + 3*3600 + 70)
	if !ts.handOut(t) {
		t.Fatal("hand-out at 03:01:10: nothing; want a job")
	}
	if w := tick(t0 + 3*3600 + 75); w.Entries != 20 || w.Written != 20 {
		t.Errorf("tick at 03:01:15, after a hand-out: looked at %d entries, wrote %d; want minute 1's 20", w.Entries, w.Written)
	}
	// At 04:00 the other 1160 have come, and are advanced in batches.
	w := tick(t0 + 4*3600)
	if w.Entries != n-40 || w.Written != n-40 {
		t.Errorf("tick at 04:00: looked at %d entries, wrote %d; want %d", w.Entries, w.Written, n-40)
	}
	if w.Largest > TickBatch || w.Batches < (n-40+TickBatch-1)/TickBatch {
		t.Errorf("tick at 04:00: %d batches, the largest of %d; want at most %d in each", w.Batches, w.Largest, TickBatch)
	}
	if w := tick(t0 + 4*3600 + 5); w != (TickWork{}) {
		t.Errorf("tick at 04:00:05: did %+v, want nothing", w)
	}
}

// TestScheduleFarFutureCostsNoMore checks that 3,000 schedules whose next
// event is 50 years away in a zone with DST cost the ticks no more work
// than 3,000 due tomorrow: between events, at the first run, and when the
// clock is set back a little and a lot.
func TestScheduleFarFutureCostsNoMore(t *testing.T) {
	const t0 = 1700006400 // 00:00 UTC 15 November 2023, 16:00 the day before in US/Pacific
	const n = 3000
	far := `{"minute": 0, "hour": 2, "day_of_month": 1, "month": 11, "year": 2073, "timezone": "US/Pacific",
		"dst_fixes": ["skip", "repeat_use_only_early"], "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`
	work := func(schedule string) TickWork {
		ts := newTestApp(t)
		ts.FakeClock.Set(t0)
		ts.configureMany(t, n, func(int) string { return schedule })
		sched := ts.App
		var w TickWork
		// Before 03:00 US/Pacific (11:00 UTC): the first run, runs hours
		// apart, and the clock set back to before the configuration was
		// read, ten minutes (less than the schedule's limit: nothing
		// changes) and then two hours (more: the past is forgotten, and
		// each entry's next event is searched for over those two hours).
		for _, now := range []int64{t0 + 10, t0 + 3600, t0 + 6*3600, t0 - 600, t0 - 7200, t0 + 5*3600} {
			ts.FakeClock.Set(now)
			one, err := sched.Tick(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			w.Add(one)
		}
		return w
	}
	tomorrow := work(daily(3, 0, "US/Pacific"))
	farAway := work(far)
	t.Logf("due tomorrow: %+v; 50 years away: %+v", tomorrow, farAway)
	if farAway.Entries > tomorrow.Entries || farAway.Written > tomorrow.Written || farAway.Steps > tomorrow.Steps {
		t.Errorf("50 years away did %+v, more than due tomorrow's %+v", farAway, tomorrow)
	}
	if tomorrow.Entries > 2*n {
		t.Errorf("due tomorrow: looked at %d entries in 6 ticks, want each at most once after the clock went back, and once when it came back", tomorrow.Entries)
	}
}

// TestScheduleBurstRunsEachOnce checks that when more schedules fire at
// once than a tick advances in one transaction, each entry runs once for
// its event, in a queue of each sort: a queue-order hand-out waits for the
// Scheduler's tick to fire an entry, and a fifo one may hand out an entry
// before any tick dealt with its event, which is then advanced as it is
// handed out, so that its job's end makes it due at the next event, not
// at this one again. The Scheduler ticks after the hand-outs of each
// second.
func TestScheduleBurstRunsEachOnce(t *testing.T) {
	const t0 = 1700006400 // a midnight, UTC
	const n = TickBatch + 10
	for _, sort := range []string{statedb.SortQueueOrder, statedb.SortFIFO} {
		t.Run(sort, func(t *testing.T) {
			ts := newTestApp(t)
			ts.FakeClock.Set(t0)
			ts.configureMany(t, n, func(int) string { return daily(3, 0, "UTC") }, sort)
			jobs := 0
			for now := int64(t0 + 3*3600); now < t0+3*3600+10 && jobs <= 2*n; now++ {
				for ts.handOutAt(t, now) && jobs <= 2*n {
					jobs++
				}
				if _, err := ts.Tick(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if jobs != n {
				t.Errorf("from 03:00, %d jobs for %d entries firing; want one each", jobs, n)
			}
			if ts.runAt(t, t0+3*3600+60) || ts.runAt(t, t0+23*3600) {
				t.Error("a job later that day")
			}
			for i := range n {
				if got := ts.lorry(t, fmt.Sprintf("s/%05d", i)).NextDue; got != t0+27*3600 {
					t.Errorf("s/%05d: next_due %d, want the next 03:00, %d", i, got, t0+27*3600)
					break
				}
			}
		})
	}
}

// TestScheduleWithoutEventsNeverRuns checks that an entry whose schedule
// has no event left is never due: not at once when read with none in the
// 50 years ahead, and not at once after its last event fired.
func TestScheduleWithoutEventsNeverRuns(t *testing.T) {
	const t0 = 1700006400
	ts := newTestApp(t)
	ts.FakeClock.Set(t0)
	// 2090 is more than 50 years ahead: no event is found.
	ts.configureScheduled(t, `{"minute": 0, "year": 2090, "timezone": "UTC", "dst_fixes": ["skip", "repeat_use_both"],
		"max_shift_seconds_for_unskip_and_do_not_repeat": 60}`)
	if got := ts.nextDue(t); got < t0+50*365*86400 {
		t.Errorf("no event in 50 years: next_due %d, want never", got)
	}
	if ts.runAt(t, t0) || ts.runAt(t, t0+86400) {
		t.Error("a job for a schedule with no event in 50 years")
	}

	ts.FakeClock.Set(t0)
	ts.configureScheduled(t, fmt.Sprintf(`{"epoch": [%d], "max_shift_seconds_for_unskip_and_do_not_repeat": 600}`, t0+600))
	sched := ts.App
	if !ts.runAt(t, t0+600) {
		t.Fatal("no job at the one event")
	}
	for _, now := range []int64{t0 + 601, t0 + 700, t0 + 86400} {
		ts.FakeClock.Set(now)
		if _, err := sched.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ts.runAt(t, now) {
			t.Fatalf("a job at %d, after the last event", now)
		}
	}
	if got := ts.nextDue(t); got == 0 || got < t0+50*365*86400 {
		t.Errorf("after the last event: next_due %d, want never", got)
	}
}

// TestScheduleClockSetBackFarRepeats checks that an entry whose next
// event is a day away, and so is looked at by no tick, still forgets the
// past when the wall clock is set back by more than its schedule allows:
// the Scheduler finds the clock behind its last run and looks at the
// entries ahead of the clock, and the event runs again as the clock
// reaches it. Set back by less, nothing is repeated.
func TestScheduleClockSetBackFarRepeats(t *testing.T) {
	const t0 = 1700006400 // a midnight, UTC
	ts := newTestApp(t)
	ts.FakeClock.Set(t0)
	ts.configureScheduled(t, daily(3, 0, "UTC"))
	sched := ts.App
	tick := func(now int64) {
		t.Helper()
		ts.FakeClock.Set(now)
		if _, err := sched.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	tick(t0 + 10)
	if !ts.runAt(t, t0+3*3600) {
		t.Fatal("no job at 03:00")
	}
	tick(t0 + 3*3600 + 60)
	// Back half an hour, within the hour allowed: 03:00 is not repeated.
	tick(t0 + 3*3600 - 1800)
	if ts.runAt(t, t0+3*3600-1) || ts.runAt(t, t0+3*3600) || ts.runAt(t, t0+3*3600+60) {
		t.Error("03:00 repeated after the clock was set back half an hour")
	}
	// Back two hours: the past is forgotten, and 03:00 runs again.
	tick(t0 + 3*3600 + 120)
	tick(t0 + 3600)
	if got := ts.nextDue(t); got != t0+3*3600 {
		t.Errorf("after the clock was set back two hours, next_due %d; want 03:00 again, %d", got, t0+3*3600)
	}
	if ts.runAt(t, t0+3*3600-1) {
		t.Error("a job before 03:00")
	}
	if !ts.runAt(t, t0+3*3600) {
		t.Error("no job at 03:00 after the clock was set back two hours")
	}
}

// TestScheduleTickWritesNothingBetweenEvents checks, in the database
// itself, that neither a hand-out nor the Scheduler writes a scheduled
// entry whose next event has not come: with 20,000 of them, a write of
// each at every tick stalled every minion.
func TestScheduleTickWritesNothingBetweenEvents(t *testing.T) {
	const t0 = 1700006400 // a midnight, UTC
	const n = 500
	ts := newTestApp(t)
	ts.FakeClock.Set(t0)
	ts.configureMany(t, n, func(i int) string { return daily(3, i%60, "UTC") })
	sched := ts.App
	for _, now := range []int64{t0 + 10, t0 + 20, t0 + 3600} {
		ts.FakeClock.Set(now)
		if ts.handOut(t) {
			t.Fatalf("hand-out at %d: a job; want none, nothing is due", now)
		}
		if _, err := sched.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	driver, dsn := "sqlite", "file:"+ts.DB.Path()+"?mode=ro"
	if statedb.IsPostgres(ts.DB.Path()) {
		driver, dsn = "pgx", ts.DB.Path()
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var written int
	if err := db.QueryRow(fmt.Sprintf(`SELECT COUNT(*) FROM lorries WHERE schedule != '' AND cron_wall != %d`, t0)).Scan(&written); err != nil {
		t.Fatal(err)
	}
	if written != 0 {
		t.Errorf("%d of %d scheduled entries written by ticks before any event came; want none", written, n)
	}
}
