package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Lorry is one entry of the run queue.
type Lorry struct {
	Path         string
	Text         string
	Kind         string
	Generated    bool
	FromHost     string
	FromPath     string
	Interval     int64 // seconds
	Timeout      int64 // seconds
	QueuePos     int64
	RunningJob   *int64
	LastRun      *int64
	NextDue      int64
	LastRunExit  *int64
	LastRunError string
	DiskUsage    *int64
	// Description and DefaultBranch come from the upstream host, for the
	// downstream repository; empty when unknown.
	Description   string
	DefaultBranch string
	// CommitID is the CONFGIT commit a scraper was read from, and Runtime
	// its runtime there; both empty for a lorry.
	CommitID string
	Runtime  Runtime
	// UpstreamHead is the branch that the upstream's HEAD named, as the
	// last successful job that knew it reported; empty when unknown.
	UpstreamHead string
	// Queue is the queue the entry is handed out from.
	Queue string
	// Schedule is the lorry's schedule (a cron item's JSON), which
	// replaces Interval; "" for none.
	Schedule string
	// MaxBackoff (seconds) and HardFailAfter are the lorry's section's
	// max-backoff and hard-fail-after.
	MaxBackoff    int64
	HardFailAfter int64
	// ConsecutiveFailures counts the failed runs since the last success
	// (or Retry now, or change of spec), State is what they led to, one
	// of the State constants, and BackoffUntil is when the backoff lets
	// the lorry run again (0 for none).
	ConsecutiveFailures int64
	State               string
	BackoffUntil        int64
	// LastSuccess is when the last successful run started; nil if none
	// has been seen.
	LastSuccess *int64
	// LastErrorClass is the error class of the last failed run, "" when
	// the last run did not fail or its class is unknown.
	LastErrorClass string
}

// Runtime is the runtime a scraper runs in, as a commit of CONFGIT
// defines it.
type Runtime struct {
	Name    string
	Version string
	ID      string // git tree id of the runtime directory
	Python  string
}

const lorryColumns = `path, text, kind, generated, from_host, from_path, interval,
	lorry_timeout, queue_pos, running_job, last_run, next_due, last_run_exit,
	last_run_error, disk_usage, description, default_branch,
	commit_id, runtime_name, runtime_version, runtime_id, runtime_python, upstream_head, queue, schedule,
	max_backoff, hard_fail_after, consecutive_failures, state, backoff_until, last_success, last_error_class`

type scanner interface{ Scan(...any) error }

func scanLorry(row scanner) (Lorry, error) {
	var l Lorry
	var running, lastRun, exit, du, success sql.NullInt64
	err := row.Scan(&l.Path, &l.Text, &l.Kind, &l.Generated, &l.FromHost, &l.FromPath,
		&l.Interval, &l.Timeout, &l.QueuePos, &running, &lastRun, &l.NextDue, &exit,
		&l.LastRunError, &du, &l.Description, &l.DefaultBranch,
		&l.CommitID, &l.Runtime.Name, &l.Runtime.Version, &l.Runtime.ID, &l.Runtime.Python, &l.UpstreamHead, &l.Queue, &l.Schedule,
		&l.MaxBackoff, &l.HardFailAfter, &l.ConsecutiveFailures, &l.State, &l.BackoffUntil, &success, &l.LastErrorClass)
	l.RunningJob, l.LastRun, l.LastRunExit, l.DiskUsage = nullInt(running), nullInt(lastRun), nullInt(exit), nullInt(du)
	l.LastSuccess = nullInt(success)
	return l, err
}

// Lorry returns the run-queue entry at path.
func (tx *Tx) Lorry(ctx context.Context, path string) (Lorry, error) {
	l, err := scanLorry(tx.queryRow(ctx, `SELECT `+lorryColumns+` FROM lorries WHERE path = $1`, path))
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("no lorry %q: %w", path, ErrNotFound)
	}
	if err != nil {
		return l, fmt.Errorf("read lorry %q: %w", path, err)
	}
	return l, nil
}

// Lorries returns the whole run queue in queue order.
func (tx *Tx) Lorries(ctx context.Context) ([]Lorry, error) {
	var out []Lorry
	err := tx.EachLorry(ctx, func(l Lorry) error {
		out = append(out, l)
		return nil
	})
	return out, err
}

// EachLorry calls fn on every lorry in queue order, without holding the
// whole queue in memory; an error from fn stops the walk and is returned.
func (tx *Tx) EachLorry(ctx context.Context, fn func(Lorry) error) error {
	rows, err := tx.query(ctx, `SELECT `+lorryColumns+` FROM lorries ORDER BY queue_pos`)
	if err != nil {
		return fmt.Errorf("list lorries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanLorry(rows)
		if err != nil {
			return fmt.Errorf("list lorries: %w", err)
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return rows.Err()
}

// QueuePaths returns the paths of the run queue in queue order.
func (tx *Tx) QueuePaths(ctx context.Context) ([]string, error) {
	rows, err := tx.query(ctx, `SELECT path FROM lorries ORDER BY queue_pos`)
	if err != nil {
		return nil, fmt.Errorf("list queue: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("list queue: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// LorryCounts summarises the run queue at time now.
type LorryCounts struct {
	Total   int64 `json:"total"`
	Due     int64 `json:"due"`
	Failing int64 `json:"failing"`
	Running int64 `json:"running"`
}

// CountLorries counts the run queue's lorries: all of them, those due now,
// those whose last run failed and those running.
//
// Each count is a subquery of its own that an index answers, all four in
// one statement (on PostgreSQL, one round trip): one pass over the
// table, as it was, read every row of a million lorries, specs and all,
// and took a second for every status page. The total is the sum of the
// counts the triggers keep by range of queue positions (lorry_buckets):
// counting the smallest index of a million entries took 10 ms on SQLite,
// and 160 ms on PostgreSQL.
func (tx *Tx) CountLorries(ctx context.Context) (LorryCounts, error) {
	var c LorryCounts
	err := tx.queryRow(ctx, tx.q.countLorries, tx.Now).Scan(&c.Total, &c.Due, &c.Failing, &c.Running)
	if err != nil {
		return c, fmt.Errorf("count lorries: %w", err)
	}
	return c, nil
}

// TotalLorries counts the run queue's lorries, as CountLorries does, and
// nothing else: a lorry's page needs no more, and the lorries due, which
// the other counts read, may be many.
func (tx *Tx) TotalLorries(ctx context.Context) (int64, error) {
	var n int64
	if err := tx.queryRow(ctx, `SELECT `+countTotal).Scan(&n); err != nil {
		return 0, fmt.Errorf("count lorries: %w", err)
	}
	return n, nil
}

// MoveToTop puts the lorry at path first in the queue.
func (tx *Tx) MoveToTop(ctx context.Context, path string) error {
	return tx.moveLorry(ctx, path, `UPDATE lorries SET queue_pos = (SELECT MIN(queue_pos) - 1 FROM lorries) WHERE path = $1`)
}

// MoveToBottom puts the lorry at path last in the queue.
func (tx *Tx) MoveToBottom(ctx context.Context, path string) error {
	return tx.moveLorry(ctx, path, `UPDATE lorries SET queue_pos = (SELECT MAX(queue_pos) + 1 FROM lorries) WHERE path = $1`)
}

// moveLorry runs move, which gives the lorry at path a new place: the
// place is worked out in the statement that takes it, so that no other
// write comes between, and the unique index on queue_pos keeps two
// entries from sharing one.
func (tx *Tx) moveLorry(ctx context.Context, path, move string) error {
	res, err := tx.exec(ctx, move, path)
	if err != nil {
		return fmt.Errorf("move lorry %q: %w", path, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("no lorry %q: %w", path, ErrNotFound)
	}
	return nil
}

// countTotalAndDue and countRunning are the parts of the drivers'
// countLorries that both dialects write alike: the total, those due at
// $1, and those running, found from their jobs, which are few.
const (
	countTotal       = `(SELECT COALESCE(SUM(n), 0) FROM lorry_buckets)`
	countTotalAndDue = countTotal + `,
		(SELECT COUNT(*) FROM lorries WHERE running_job IS NULL AND next_due <= $1)`
	countRunning = `(SELECT COUNT(*) FROM jobs AS j WHERE j.` + liveStatus + `
			AND EXISTS (SELECT 1 FROM lorries AS l WHERE l.path = j.path AND l.running_job = j.id))`
)
