package routes

import (
	"context"
	"time"

	"lorrycontroller/statedb"
)

// DefaultClaimTimeout is how long a minion has to confirm a job it was
// given: it confirms at once after starting the process, so a minute is
// ample even for a minion that must first fetch a runtime's archive.
const DefaultClaimTimeout = time.Minute

func (s *Server) claimTimeout() int64 {
	if s.ClaimTimeout <= 0 {
		return int64(DefaultClaimTimeout.Seconds())
	}
	return int64(s.ClaimTimeout.Seconds())
}

// orphanClaimedJobs ends the jobs claimed too long ago, within tx. It is
// done whenever a minion asks for work, and by the scheduler and
// remove-ghost-jobs, so that it needs no timer of its own to happen, and a
// lorry whose minion died with its job never confirmed is handed out
// again at the first chance.
func (s *Server) orphanClaimedJobs(ctx context.Context, tx *statedb.Tx) error {
	ids, err := tx.OrphanClaimedJobs(ctx, s.claimTimeout())
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		s.Log.Warn("claimed jobs never confirmed, ended as orphaned", "job_ids", ids)
	}
	return nil
}
