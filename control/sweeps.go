package control

import (
	"context"
	"fmt"
	"time"

	"lorrycontroller.dev/lc/statedb"
)

// DefaultClaimTimeout is how long a minion has to confirm a job it was
// given: it confirms at once after starting the process, so a minute is
// ample even for a minion that must first fetch a runtime's archive.
const DefaultClaimTimeout = time.Minute

func (a *App) claimTimeout() int64 {
	if a.ClaimTimeout <= 0 {
		return int64(DefaultClaimTimeout.Seconds())
	}
	return int64(a.ClaimTimeout.Seconds())
}

// orphanClaimedJobs ends the jobs claimed too long ago, within tx. The
// Scheduler does it every second (Tick), so that a lorry whose minion died
// with its job never confirmed is handed out again soon.
func (a *App) orphanClaimedJobs(ctx context.Context, tx *statedb.Tx) error {
	ids, err := tx.OrphanClaimedJobs(ctx, a.claimTimeout())
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		a.Log.Warn("claimed jobs never confirmed, ended as orphaned", "job_ids", ids)
	}
	return nil
}

// RemoveGhostJobs ticks (Tick), then ends as lost the running jobs whose
// minions have not updated them for GhostTimeout, and returns their ids.
func (a *App) RemoveGhostJobs(ctx context.Context) ([]int64, error) {
	if _, err := a.Tick(ctx); err != nil {
		return nil, err
	}
	var ids []int64
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error {
		var err error
		ids, err = tx.RemoveGhostJobs(ctx, int64(a.GhostTimeout.Seconds()))
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		a.Log.Warn("ghost jobs ended as lost", "job_ids", ids)
	}
	return ids, nil
}

// RemoveOldJobs removes the finished jobs older than maxAge seconds, or
// than JobMaxAge if maxAge is nil, and returns how many and the age used.
// Then it gives the space they took in the state database back to the file
// system, so that removing old jobs shrinks the file rather than only
// leaving room in it. The removal stands even if reclaiming fails; that is
// logged.
func (a *App) RemoveOldJobs(ctx context.Context, maxAge *int64) (removed, age int64, err error) {
	age = int64(a.JobMaxAge.Seconds())
	if maxAge != nil {
		age = *maxAge
	}
	if age < 0 {
		return 0, age, fmt.Errorf("max_age %d is negative: %w", age, statedb.ErrInvalid)
	}
	err = a.DB.Update(ctx, func(tx *statedb.Tx) error {
		var err error
		removed, err = tx.RemoveOldJobs(ctx, age)
		return err
	})
	if err != nil {
		return 0, age, err
	}
	a.Log.Info("old jobs removed", "removed", removed, "max_age_s", age)
	start := time.Now()
	before, after, err := a.DB.Reclaim(ctx)
	if err != nil {
		a.Log.Error("reclaim database space", "err", err)
		return removed, age, nil
	}
	a.Log.Info("database space reclaimed", "bytes_before", before.FileBytes, "bytes_after", after.FileBytes,
		"duration_ms", time.Since(start).Milliseconds())
	return removed, age, nil
}
