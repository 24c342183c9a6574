package statedb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// TestDueSchedules checks that a tick's list holds only the scheduled
// entries whose next event has come, the oldest event first, at most
// limit of them, and that it is a range of the cron_next index: between
// events it reads nothing, however many schedules there are.
func TestDueSchedules(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	const sched = `{"epoch": {"period": 60}, "max_shift_seconds_for_unskip_and_do_not_repeat": 600}`
	var want []NewLorry
	for i := range 10 {
		p := fmt.Sprintf("s/%d", i)
		l := NewLorry{Path: p, Text: `{"` + p + `":{"type":"git"}}`, Kind: "lorry", Interval: 100, Timeout: 50}
		if i < 8 {
			// Events at 1000+100*(8-i): s/7 first.
			l.Schedule, l.FirstDue = sched, 1000+100*int64(8-i)
		}
		want = append(want, l)
	}
	f.update(t, func(tx *Tx) error { _, err := tx.SetConfigLorries(ctx, want, Kept{}); return err })
	due := func(now int64, limit int) []string {
		t.Helper()
		f.clock.Set(now)
		var paths []string
		f.update(t, func(tx *Tx) error {
			list, err := tx.DueSchedules(ctx, limit)
			for _, e := range list {
				paths = append(paths, e.Path)
			}
			return err
		})
		return paths
	}
	if got := due(1099, 10); len(got) != 0 {
		t.Errorf("before any event: got %v, want none", got)
	}
	if got, want := strings.Join(due(1300, 10), " "), "s/7 s/6 s/5"; got != want {
		t.Errorf("at 1300: got %s, want %s", got, want)
	}
	if got, want := strings.Join(due(2000, 4), " "), "s/7 s/6 s/5 s/4"; got != want {
		t.Errorf("at 2000, 4 at most: got %s, want %s", got, want)
	}
	if dbtest.Postgres() {
		return // the plan below is SQLite's
	}
	f.update(t, func(tx *Tx) error {
		var id, parent, unused int64
		var detail string
		err := tx.queryRow(ctx, `EXPLAIN QUERY PLAN `+dueSchedulesQuery, tx.Now, 10).Scan(&id, &parent, &unused, &detail)
		if err != nil {
			return err
		}
		if want := "SEARCH lorries USING INDEX lorries_cron_next (cron_next<?)"; detail != want {
			t.Errorf("plan %q, want %q", detail, want)
		}
		return nil
	})
}
