package statedb

import (
	"context"
	"database/sql"
	"fmt"
)

// CronState is the state of a scheduled entry's stateful cron, as the
// cron package's State: the clocks at the last tick and the instant up to
// which its events were dealt with.
type CronState struct {
	Wall    int64
	Mono    int64
	Boot    string
	Handled int64
}

// NoEvent is the cron_next of an entry whose schedule has no event left
// within 50 years, and the next_due it waits at while idle: later than any
// clock, so that it is never due, and never 0, which would be due at once.
const NoEvent = hardFailedDue

// Scheduled is a run-queue entry with a schedule, as a tick needs it.
type Scheduled struct {
	Path     string
	Schedule string
	State    CronState
	// Next is cron_next: the first event the state has not dealt with.
	Next    int64
	Running bool
}

// scheduledColumns are the columns scanScheduled reads.
const scheduledColumns = `path, schedule, cron_wall, cron_mono, cron_boot, cron_handled, cron_next,
	running_job IS NOT NULL`

func scanScheduled(rows *sql.Rows) (Scheduled, error) {
	var s Scheduled
	err := rows.Scan(&s.Path, &s.Schedule, &s.State.Wall, &s.State.Mono, &s.State.Boot, &s.State.Handled,
		&s.Next, &s.Running)
	return s, err
}

func (tx *Tx) listScheduled(ctx context.Context, what, query string, args ...any) ([]Scheduled, error) {
	rows, err := tx.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	defer rows.Close()
	var out []Scheduled
	for rows.Next() {
		s, err := scanScheduled(rows)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", what, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	return out, nil
}

// DueSchedules lists up to limit scheduled entries whose next event has
// come (cron_next at or before tx.Now), the oldest event first: the only
// entries a tick has to look at. An entry waiting for its next event needs
// nothing until then, since a tick would find the same next event, so
// this is a range of an index that stays empty between events, whatever
// the number of schedules.
func (tx *Tx) DueSchedules(ctx context.Context, limit int) ([]Scheduled, error) {
	return tx.listScheduled(ctx, "due schedules", tx.q.dueSchedules, tx.Now, limit)
}

// DueSchedule is the scheduled entry at path if its next event has come,
// as DueSchedules would list it; false if it has no schedule or its next
// event is still to come.
func (tx *Tx) DueSchedule(ctx context.Context, path string) (Scheduled, bool, error) {
	list, err := tx.listScheduled(ctx, "due schedule", `SELECT `+scheduledColumns+`
		FROM lorries WHERE path = $1 AND schedule != '' AND cron_next <= $2`, path, tx.Now)
	if err != nil || len(list) == 0 {
		return Scheduled{}, false, err
	}
	return list[0], true, nil
}

// AheadSchedules lists, by path after after, up to limit scheduled entries
// whose events are dealt with beyond tx.Now: the wall clock was set back
// since they were ticked. Only these can have a state that a tick at
// tx.Now changes while their next event is still to come.
func (tx *Tx) AheadSchedules(ctx context.Context, after string, limit int) ([]Scheduled, error) {
	return tx.listScheduled(ctx, "schedules ahead of the clock", tx.q.aheadSchedules, after, tx.Now, limit)
}

// TickSchedule records a tick of the scheduled entry at path: its new
// cron state, whether its schedule fired, and next, the first event the
// new state has not dealt with. A firing makes an idle entry due now; one
// already due stays so, and one running is not queued again, so that
// firings never pile up. Otherwise an idle entry waiting for its next
// event is due at next; one made due by an earlier firing, or by a job
// ended orphaned, stays due. A lorry backing off is not due before its
// backoff ends, however many events fall in it, and a hard-failed one is
// never made due by its schedule. schedule is the schedule the state belongs
// to: a tick that raced with a change of the schedule changes nothing.
// next is NoEvent when the schedule has none left.
func (tx *Tx) TickSchedule(ctx context.Context, path, schedule string, st CronState, fire bool, next int64) error {
	// In an UPDATE, every column on the right is its old value: cron_handled
	// is the instant up to which events had been dealt with before this
	// tick, and a next_due after it is an event time, not a firing.
	_, err := tx.exec(ctx, tx.q.tickSchedule,
		fire, tx.Now, next, st.Wall, st.Mono, st.Boot, st.Handled, path, schedule)
	if err != nil {
		return fmt.Errorf("record schedule of lorry %q: %w", path, err)
	}
	return nil
}
