package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
)

// The states of a lorry's failure streak.
const (
	// StateOK: the last run did not fail (or none ran yet).
	StateOK = "ok"
	// StateFailing: the last run failed, and the next runs at the
	// normal interval.
	StateFailing = "failing"
	// StateBackingOff: runs failed in a row, and the delay before the
	// next has grown beyond the interval.
	StateBackingOff = "backing-off"
	// StateHardFailed: hard-fail-after runs failed in a row; the lorry
	// is not run again until Retry now, a change of its spec, or a
	// success of a run started otherwise.
	StateHardFailed = "hard-failed"
)

// States are the states in the order the pages and metrics give them.
var States = []string{StateOK, StateFailing, StateBackingOff, StateHardFailed}

// Defaults of the max-backoff and hard-fail-after keys.
const (
	DefaultMaxBackoff    = 24 * 60 * 60
	DefaultHardFailAfter = 14
	// HardFailAfterAuthGone is hard-fail-after for failures of class
	// auth or gone, which a retry seldom mends: credentials or a
	// repository that went away need an operator.
	HardFailAfterAuthGone = 3
)

// The error classes that the WEBAPP itself gives or treats apart; lorry
// names the others (see the mirror package).
const (
	ClassAuth       = "auth"
	ClassGone       = "gone"
	ClassDownstream = "downstream"
	ClassInternal   = "internal"
)

// hardFailedDue is the next_due of a hard-failed lorry: later than any
// clock, so that it is never due and the indexes on next_due never find it.
const hardFailedDue int64 = 1 << 62

// resetStreak is the SQL that ends a lorry's failure streak, as a change
// of its spec or Retry now does; next_due is the caller's to set.
const resetStreak = `consecutive_failures = 0, state = 'ok', backoff_until = 0`

// jitterPermille bounds the jitter of a backoff delay: ±10%.
const jitterPermille = 100

// BackoffDelay is how long after the start of its failures'th failed run
// in a row a lorry of the given interval runs again: interval ×
// 2^(failures−1), then ±10% of jitter, then at most max(maxBackoff,
// interval). The jitter is the same for the same path and failures, so
// that lorries that fail together spread out, and a test can predict it.
// A first failure waits just the interval.
func BackoffDelay(path string, interval, maxBackoff, failures int64) int64 {
	if interval <= 0 || failures <= 1 {
		return max(interval, 0)
	}
	limit := max(maxBackoff, interval)
	delay := interval
	for i := int64(1); i < failures && delay < limit*2; i++ {
		delay *= 2
	}
	h := fnv.New64a()
	h.Write([]byte(path + "\x00" + strconv.FormatInt(failures, 10)))
	j := int64(h.Sum64()%(2*jitterPermille+1)) - jitterPermille
	delay += delay * j / 1000
	return min(delay, limit)
}

// countsAsFailure says whether a job that ended with status is a failure
// of its lorry: not an operator's kill, nor a job that never ran.
func countsAsFailure(status string) bool {
	return status == StatusFailed || status == StatusTimedOut || status == StatusLost
}

// streak is a lorry's failure streak after a job ended.
type streak struct {
	failures     int64
	state        string
	backoffUntil int64
	lastSuccess  *int64
	errorClass   string
	// notifyFailure says whether the job's failure is notified: one of
	// class auth or gone is, only when it begins a streak of that class.
	notifyFailure bool
	// hardFailed and recovered say that the lorry became hard-failed, or
	// succeeded after failures, with this job.
	hardFailed, recovered bool
}

// nextStreak is l's streak after job j ended with status and class. base
// is the lorry's interval, or for a scheduled lorry the time from j's
// start to the next event of its schedule.
func nextStreak(l Lorry, j Job, status, class string, base int64) streak {
	s := streak{failures: l.ConsecutiveFailures, state: l.State, backoffUntil: l.BackoffUntil,
		lastSuccess: l.LastSuccess, errorClass: l.LastErrorClass, notifyFailure: status != StatusSucceeded}
	switch {
	case status == StatusSucceeded:
		started := j.Started
		s.recovered = l.ConsecutiveFailures > 0
		s.failures, s.state, s.backoffUntil, s.lastSuccess, s.errorClass = 0, StateOK, 0, &started, ""
	case countsAsFailure(status):
		repeated := (class == ClassAuth || class == ClassGone) && l.ConsecutiveFailures > 0 && l.LastErrorClass == class
		s.notifyFailure = !repeated
		s.failures++
		s.errorClass = class
		limit := l.HardFailAfter
		if (class == ClassAuth || class == ClassGone) && limit > HardFailAfterAuthGone {
			limit = HardFailAfterAuthGone
		}
		if limit > 0 && s.failures >= limit {
			s.hardFailed = l.State != StateHardFailed
			s.state, s.backoffUntil = StateHardFailed, 0
			break
		}
		delay := BackoffDelay(l.Path, base, l.MaxBackoff, s.failures)
		s.backoffUntil = j.Started + delay
		s.state = StateFailing
		if delay > base {
			s.state = StateBackingOff
		}
	}
	return s
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
	base := l.Interval
	var cronNext int64
	if l.Schedule != "" {
		if err := tx.queryRow(ctx, `SELECT cron_next FROM lorries WHERE path = $1`, l.Path).Scan(&cronNext); err != nil {
			return lorryRun{}, fmt.Errorf("read schedule of lorry %q: %w", l.Path, err)
		}
		if cronNext > j.Started {
			base = cronNext - j.Started
		}
	}
	s := nextStreak(l, j, e.status, e.class, base)
	// A scheduled lorry is due next at the first event its schedule has
	// not dealt with, or when its backoff ends if that is later.
	next := max(j.Started+l.Interval, s.backoffUntil)
	if l.Schedule != "" {
		next = max(cronNext, s.backoffUntil)
	}
	if s.state == StateHardFailed {
		next = hardFailedDue
	}
	return lorryRun{l: l, j: j, e: e, lastErr: lastErr, s: s, next: next}, nil
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
