package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// On SQLite each write transaction runs alone: a hand-out finds the
// entry (pickLorry), then claims it (claimLorry), and a report's
// statements are calls into the library, cheap one by one.

func (sqliteDriver) claimDue(ctx context.Context, tx *Tx, m MinionID, q openSet) (Assignment, bool, error) {
	l, idle, err := tx.pickLorry(ctx, q)
	if err != nil || idle != "" {
		return Assignment{Idle: idle}, false, err
	}
	a, err := tx.claimLorry(ctx, m, l)
	return a, false, err
}

// idleAfterClaims: each hand-out reads whether anything is due
// (handOutState) after the claims before it.
func (sqliteDriver) idleAfterClaims(_ context.Context, _ *Tx, idle string) (string, error) {
	return idle, nil
}

// holdReports: the reports' transactions are the hand-outs'.
func (sqliteDriver) holdReports(context.Context, *Tx) error { return nil }

func (sqliteDriver) saveProgress(ctx context.Context, tx *Tx, j Job) error {
	if _, err := tx.exec(ctx, minionHeardQuery, tx.Now, j.Minion); err != nil {
		return fmt.Errorf("record minion %s: %w", j.Minion, err)
	}
	res, err := tx.exec(ctx, saveProgressQuery, j.progressArgs(tx.Now)...)
	if err != nil {
		return fmt.Errorf("update job %d: %w", j.ID, err)
	}
	return taken(res, fmt.Sprintf("update job %d: it ended or changed meanwhile", j.ID))
}

// minionHeardQuery records that the minion $2 reported at $1.
const minionHeardQuery = `UPDATE minions SET last_seen = $1, heard = heard + 1 WHERE name = $2`

// saveProgressQuery writes the progress of a live job (progressArgs).
const saveProgressQuery = `UPDATE jobs SET updated = $1, kill = $2, kill_reason = $3, disk_usage = $4,
		output_bytes = $5, head_bytes = $6, tail_bytes = $7, cut_bytes = $8, next_chunk = $9, output_carry = $10,
		stdout_bytes = $13, stderr_bytes = $14
	WHERE id = $11 AND ` + liveStatus + ` AND updated = $12`

func (d sqliteDriver) endRun(ctx context.Context, tx *Tx, l Lorry, j Job, e jobEnd, lastErr string) error {
	again, state, err := tx.recordRun(ctx, l, j, e, lastErr)
	if err != nil {
		return err
	}
	// Runs asked for while this one ran (pushes, run-now) come to one
	// more, at once, whatever the next due time recordRun set.
	if again {
		if err := tx.makeDueNow(ctx, j.Path); err != nil {
			return err
		}
	}
	return d.recordEnd(ctx, tx, j, e, state)
}

func (sqliteDriver) recordEnd(ctx context.Context, tx *Tx, j Job, e jobEnd, lorryState string) error {
	res, err := tx.exec(ctx, recordEndQuery, endArgs(tx, j, e, lorryState)...)
	if err != nil {
		return fmt.Errorf("end job %d: %w", j.ID, err)
	}
	ended, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("end job %d: %w", j.ID, err)
	}
	if ended == 0 {
		return endTaken(j, e)
	}
	if e.heard {
		_, err = tx.exec(ctx, freeHeardMinionQuery, j.Minion, j.ID, tx.Now)
	} else {
		_, err = tx.exec(ctx, freeMinionQuery, j.Minion, j.ID)
	}
	if err != nil {
		return fmt.Errorf("free minion %s: %w", j.Minion, err)
	}
	return nil
}

// recordEndQuery ends a job (endArgs).
const recordEndQuery = `UPDATE jobs SET status = $1, exit = $2, ended = $3, updated = $3, disk_usage = $4,
		output_bytes = $5, head_bytes = $6, tail_bytes = $7, cut_bytes = $8, next_chunk = $9, error_class = $10,
		output_carry = $11, lorry_state = $12, stdout_bytes = $15, stderr_bytes = $16
	WHERE id = $13 AND ` + liveStatus + ` AND updated = $14`

// freeMinionQuery frees the minion $1 of job $2, and freeHeardMinionQuery
// records it seen at $3 as well.
const (
	freeMinionQuery      = `UPDATE minions SET job_id = NULL WHERE name = $1 AND job_id = $2`
	freeHeardMinionQuery = `UPDATE minions SET job_id = NULL, last_seen = $3 WHERE name = $1 AND job_id = $2`
)

// lastOutputLines reads each job's line in turn: a read is a call into
// the library.
func (sqliteDriver) lastOutputLines(ctx context.Context, tx *Tx, ids []int64) (map[int64]string, error) {
	lines := make(map[int64]string, len(ids))
	for _, id := range ids {
		line, err := tx.LastOutputLine(ctx, id)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, err
		default:
			lines[id] = line
		}
	}
	return lines, nil
}
