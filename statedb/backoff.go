package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"lorrycontroller.dev/lc/rules"
)

// The states of a lorry's failure streak: see rules.
const (
	StateOK         = rules.StateOK
	StateFailing    = rules.StateFailing
	StateBackingOff = rules.StateBackingOff
	StateHardFailed = rules.StateHardFailed
)

// States are the states in the order the pages and metrics give them.
var States = rules.States

// Defaults of the max-backoff and hard-fail-after keys: see rules.
const (
	DefaultMaxBackoff     = rules.DefaultMaxBackoff
	DefaultHardFailAfter  = rules.DefaultHardFailAfter
	HardFailAfterAuthGone = rules.HardFailAfterAuthGone
)

// The error classes that the WEBAPP itself gives or treats apart: see
// rules.
const (
	ClassAuth       = rules.ClassAuth
	ClassGone       = rules.ClassGone
	ClassDownstream = rules.ClassDownstream
	ClassInternal   = rules.ClassInternal
)

// hardFailedDue is the next_due of a hard-failed lorry: later than any
// clock, so that it is never due and the indexes on next_due never find it.
const hardFailedDue = rules.Never

// resetStreak is the SQL that ends a lorry's failure streak, as a change
// of its spec or Retry now does; next_due is the caller's to set.
const resetStreak = `consecutive_failures = 0, state = 'ok', backoff_until = 0`

// streak is a lorry's failure streak after a job ended, as rules.AfterRun
// found it, in the form recordRunQuery writes it.
type streak struct {
	failures     int64
	state        string
	backoffUntil int64
	lastSuccess  *int64
	errorClass   string
	// notifyFailure, hardFailed and recovered are rules.Outcome's.
	notifyFailure, hardFailed, recovered bool
}

// lorryRun is what the end e of job j writes on its lorry l, which runs
// it: its streak, and when it is due next (planRun).
type lorryRun struct {
	l       Lorry
	j       Job
	e       jobEnd
	lastErr string
	s       streak
	next    int64
}

// planRun works out what the end e of job j, with the last error
// lastErr, writes on its lorry l.
func (tx *Tx) planRun(ctx context.Context, l Lorry, j Job, e jobEnd, lastErr string) (lorryRun, error) {
	rl := rules.Lorry{Path: l.Path, Interval: l.Interval, MaxBackoff: l.MaxBackoff, HardFailAfter: l.HardFailAfter,
		Scheduled: l.Schedule != "", Streak: rules.Streak{Failures: l.ConsecutiveFailures, State: l.State,
			BackoffUntil: l.BackoffUntil, LastSuccess: l.LastSuccess, ErrorClass: l.LastErrorClass}}
	if rl.Scheduled {
		if err := tx.queryRow(ctx, `SELECT cron_next FROM lorries WHERE path = $1`, l.Path).Scan(&rl.CronNext); err != nil {
			return lorryRun{}, fmt.Errorf("read schedule of lorry %q: %w", l.Path, err)
		}
	}
	o := rules.AfterRun(rl, rules.End{Started: j.Started, Status: e.status, Class: e.class})
	s := streak{failures: o.Streak.Failures, state: o.Streak.State, backoffUntil: o.Streak.BackoffUntil,
		lastSuccess: o.Streak.LastSuccess, errorClass: o.Streak.ErrorClass,
		notifyFailure: o.NotifyFailure, hardFailed: o.HardFailed, recovered: o.Recovered}
	return lorryRun{l: l, j: j, e: e, lastErr: lastErr, s: s, next: o.Next}, nil
}

// recordRunQuery writes a lorryRun (its args) on the lorry, if it still
// runs the job and its streak is as read, and answers whether a run was
// asked for meanwhile. A successful end's upstream HEAD is kept.
const recordRunQuery = `UPDATE lorries SET running_job = NULL, last_run = $1, next_due = $2,
		last_run_exit = $3, last_run_error = $4, disk_usage = COALESCE($5, disk_usage),
		consecutive_failures = $6, state = $7, backoff_until = $8, last_success = $9, last_error_class = $10,
		upstream_head = CASE WHEN $11 != '' THEN $11 ELSE upstream_head END
	WHERE path = $12 AND running_job = $13 AND consecutive_failures = $14 AND state = $15 RETURNING run_again`

func (r lorryRun) args() []any {
	head := ""
	if r.e.status == StatusSucceeded {
		head = r.e.head
	}
	return []any{r.j.Started, r.next, r.e.exit, r.lastErr, r.j.DiskUsage,
		r.s.failures, r.s.state, r.s.backoffUntil, r.s.lastSuccess, r.s.errorClass, head,
		r.j.Path, r.j.ID, r.l.ConsecutiveFailures, r.l.State}
}

// runTaken is the error of a lorryRun that found its lorry changed.
func (r lorryRun) taken() error {
	// The streak is counted from l as read: a lorry freed, or whose
	// streak changed, since, is another writer's doing.
	return fmt.Errorf("record job %d on lorry %q: the lorry changed meanwhile: %w", r.j.ID, r.j.Path, ErrTaken)
}

// recordRun records on j's lorry l the end e of j, with the last error
// lastErr: its streak, and when it is due next. It notifies as the
// streak says.
func (tx *Tx) recordRun(ctx context.Context, l Lorry, j Job, e jobEnd, lastErr string) (again bool, state string, err error) {
	r, err := tx.planRun(ctx, l, j, e, lastErr)
	if err != nil {
		return false, "", err
	}
	err = tx.queryRow(ctx, recordRunQuery, r.args()...).Scan(&again)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "", r.taken()
	}
	if err != nil {
		return false, "", fmt.Errorf("record job %d on lorry %q: %w", j.ID, j.Path, err)
	}
	return again, r.s.state, tx.notifyRun(ctx, r)
}

// notifyRun notifies of what the run r did to its lorry's streak.
func (tx *Tx) notifyRun(ctx context.Context, r lorryRun) error {
	j, s := r.j, r.s
	if s.notifyFailure {
		err := tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: j.Path, JobID: j.ID, Kind: j.Kind,
			Status: r.e.status, Exit: r.e.exit, Minion: j.Minion, Error: r.lastErr, ErrorClass: r.e.class})
		if err != nil {
			return err
		}
	}
	if s.hardFailed {
		err := tx.Notify(ctx, EventLorryHardFailed, LorryHardFailed{Lorry: j.Path, JobID: j.ID,
			Failures: s.failures, Error: r.lastErr, ErrorClass: r.e.class})
		if err != nil {
			return err
		}
	}
	if s.recovered {
		err := tx.Notify(ctx, EventLorryRecovered, LorryRecovered{Lorry: j.Path, JobID: j.ID,
			Failures: r.l.ConsecutiveFailures})
		if err != nil {
			return err
		}
	}
	return nil
}

// RetryLorry is Retry now: it ends the failure streak of the lorry at
// path, hard-failed or backing off, and makes it due at once (unless it
// runs now: then it is due as that run's end says). ErrNotFound: no such
// lorry.
func (tx *Tx) RetryLorry(ctx context.Context, path string) error {
	res, err := tx.exec(ctx, `UPDATE lorries SET `+resetStreak+`,
			next_due = CASE WHEN running_job IS NULL THEN $1 ELSE next_due END
		WHERE path = $2`, tx.Now, path)
	if err != nil {
		return fmt.Errorf("retry lorry %q: %w", path, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("no lorry %q: %w", path, ErrNotFound)
	}
	return nil
}

// LorryStates counts the lorries by the state of their failure streak;
// every state is in the map.
func (tx *Tx) LorryStates(ctx context.Context) (map[string]int64, error) {
	out := make(map[string]int64, len(States))
	for _, s := range States {
		out[s] = 0
	}
	return out, tx.countBy(ctx, out, "lorry states", `SELECT state, COUNT(*) FROM lorries GROUP BY state`)
}
