package statedb

import (
	"context"
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

// Scheduled is a run-queue entry with a schedule, as a tick needs it.
type Scheduled struct {
	Path     string
	Schedule string
	State    CronState
	Running  bool
}

// ScheduledLorries lists the entries that have a schedule, by path.
func (tx *Tx) ScheduledLorries(ctx context.Context) ([]Scheduled, error) {
	rows, err := tx.query(ctx, `SELECT path, schedule, cron_wall, cron_mono, cron_boot, cron_handled,
			running_job IS NOT NULL
		FROM lorries INDEXED BY lorries_scheduled WHERE schedule != '' ORDER BY path`)
	if err != nil {
		return nil, fmt.Errorf("list scheduled lorries: %w", err)
	}
	defer rows.Close()
	var out []Scheduled
	for rows.Next() {
		var s Scheduled
		if err := rows.Scan(&s.Path, &s.Schedule, &s.State.Wall, &s.State.Mono, &s.State.Boot, &s.State.Handled,
			&s.Running); err != nil {
			return nil, fmt.Errorf("list scheduled lorries: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
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
func (tx *Tx) TickSchedule(ctx context.Context, path, schedule string, st CronState, fire bool, next int64) error {
	// In an UPDATE, every column on the right is its old value: cron_handled
	// is the instant up to which events had been dealt with before this
	// tick, and a next_due after it is an event time, not a firing.
	_, err := tx.exec(ctx, `UPDATE lorries SET
			next_due = CASE
				WHEN running_job IS NOT NULL OR state = 'hard-failed' THEN next_due
				WHEN ?1 THEN MAX(MIN(next_due, ?2), backoff_until)
				WHEN next_due > cron_handled THEN MAX(?3, backoff_until)
				ELSE next_due END,
			cron_wall = ?4, cron_mono = ?5, cron_boot = ?6, cron_handled = ?7, cron_next = ?3
		WHERE path = ?8 AND schedule = ?9`,
		fire, tx.Now, next, st.Wall, st.Mono, st.Boot, st.Handled, path, schedule)
	if err != nil {
		return fmt.Errorf("record schedule of lorry %q: %w", path, err)
	}
	return nil
}
