package statedb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// RunNow is what asking for a run of a lorry at once did.
type RunNow struct {
	Path string
	// Due: the lorry was idle and is now due, first in the queue.
	Due bool
	// QueuedAfterCurrentRun: a job of the lorry is running; the lorry is
	// due again as soon as that job ends. Asking again changes nothing
	// more.
	QueuedAfterCurrentRun bool
	// HardFailed: the lorry is hard-failed, and nothing was done; only
	// Retry now (RetryLorry), a change of its spec or a success ends
	// that.
	HardFailed bool
}

// RunLorryNow makes the lorry at path due at once and first in the queue,
// or, while a job of it runs, due again once that job ends. However often
// it is asked while a job runs, one run follows, never a pile.
func (tx *Tx) RunLorryNow(ctx context.Context, path string) (RunNow, error) {
	var running, hardFailed bool
	err := tx.queryRow(ctx, `SELECT running_job IS NOT NULL, state = $1 FROM lorries WHERE path = $2`,
		StateHardFailed, path).Scan(&running, &hardFailed)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return RunNow{}, fmt.Errorf("no lorry %q: %w", path, ErrNotFound)
		}
		return RunNow{}, fmt.Errorf("read lorry %q: %w", path, err)
	}
	if hardFailed {
		return RunNow{Path: path, HardFailed: true}, nil
	}
	if running {
		if err := tx.runAgain(ctx, path); err != nil {
			return RunNow{}, err
		}
		return RunNow{Path: path, QueuedAfterCurrentRun: true}, nil
	}
	if err := tx.makeDueNow(ctx, path); err != nil {
		return RunNow{}, err
	}
	return RunNow{Path: path, Due: true}, nil
}

// runAgain asks for one more run of the running lorry at path once its
// job ends; ErrTaken if it is not running.
func (tx *Tx) runAgain(ctx context.Context, path string) error {
	res, err := tx.exec(ctx, `UPDATE lorries SET run_again = 1 WHERE path = $1 AND running_job IS NOT NULL`, path)
	if err != nil {
		return fmt.Errorf("queue a run of lorry %q: %w", path, err)
	}
	return taken(res, fmt.Sprintf("queue a run of lorry %q: it is not running", path))
}

// makeDueNow makes the idle lorry at path due now and puts it first in
// the queue; ErrTaken if it is running. A scheduled lorry's due time is
// kept at or before the instant its schedule was last dealt with, where
// the next tick leaves it due rather than moving it on to the schedule's
// next event.
func (tx *Tx) makeDueNow(ctx context.Context, path string) error {
	// A lorry that its last run left hard-failed stays so: a run asked
	// for while that run went on is dropped.
	res, err := tx.exec(ctx, tx.q.makeDueNow, tx.Now, path, StateHardFailed)
	if err != nil {
		return fmt.Errorf("make lorry %q due: %w", path, err)
	}
	return taken(res, fmt.Sprintf("make lorry %q due: it is running or gone", path))
}

// runAgainAfter makes the lorry at path due at once if a run was asked for
// while its job ran; endJob calls it once the job's end is recorded.
func (tx *Tx) runAgainAfter(ctx context.Context, path string) error {
	var again bool
	err := tx.queryRow(ctx, `SELECT run_again FROM lorries WHERE path = $1 AND running_job IS NULL`, path).Scan(&again)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !again) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read lorry %q: %w", path, err)
	}
	return tx.makeDueNow(ctx, path)
}

// LorriesByUpstream returns, in queue order, the paths of the lorries
// whose normalised upstream URL is one of urls.
func (tx *Tx) LorriesByUpstream(ctx context.Context, urls []string) ([]string, error) {
	out := []string{}
	if len(urls) == 0 {
		return out, nil
	}
	list, err := json.Marshal(urls)
	if err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, tx.q.lorriesByUpstream, string(list))
	if err != nil {
		return nil, fmt.Errorf("find lorries by upstream: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("find lorries by upstream: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
