package statedb

import (
	"context"
	"fmt"
)

// confirmJob makes the claimed job j running: its minion said that the
// process started.
func (tx *Tx) confirmJob(ctx context.Context, j *Job) error {
	res, err := tx.exec(ctx, `UPDATE jobs SET status = 'running' WHERE id = $1 AND status = 'claimed'`, j.ID)
	if err != nil {
		return fmt.Errorf("confirm job %d: %w", j.ID, err)
	}
	if err := taken(res, fmt.Sprintf("confirm job %d: it is no longer claimed", j.ID)); err != nil {
		return err
	}
	j.Status = StatusRunning
	return nil
}

// OrphanClaimedJobs ends as orphaned the jobs claimed more than timeout
// seconds ago and never confirmed: the minion took the job and never said
// that it started it, so it most likely never will. Their lorries are due
// again at once. It is cheap when there are none, so that give-me-job can
// call it every time and no timer is needed for it to happen.
func (tx *Tx) OrphanClaimedJobs(ctx context.Context, timeout int64) ([]int64, error) {
	rows, err := tx.query(ctx, tx.q.orphanedJobs, tx.Now-timeout)
	if err != nil {
		return nil, fmt.Errorf("find orphaned jobs: %w", err)
	}
	var orphans []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		orphans = append(orphans, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ids := []int64{}
	for _, j := range orphans {
		msg := fmt.Sprintf("minion %s never confirmed the job within %ds of taking it; the job is orphaned", j.Minion, timeout)
		if err := tx.endReadJob(ctx, j, jobEnd{status: StatusOrphaned, why: msg}); err != nil {
			return nil, err
		}
		ids = append(ids, j.ID)
	}
	return ids, nil
}
