package control

import (
	"context"

	"lorrycontroller.dev/lc/statedb"
)

// JobsSoFar are the last job's id and the live jobs' ids, read together.
type JobsSoFar struct {
	LastID  int64
	Running []int64
}

// JobsSoFar reads the last job's id and the live jobs' ids, in one
// transaction.
func (a *App) JobsSoFar(ctx context.Context) (JobsSoFar, error) {
	return read(ctx, a, func(tx *statedb.Tx) (j JobsSoFar, err error) {
		if j.LastID, err = tx.LastJobID(ctx); err != nil {
			return j, err
		}
		j.Running, err = tx.RunningJobIDs(ctx)
		return j, err
	})
}

// MetricsRead is what one scrape of the metrics reads, in one
// transaction.
type MetricsRead struct {
	Now          int64
	Lorries      statedb.LorryCounts
	States       map[string]int64
	Jobs         map[string]int64
	Running      int
	RunningQueue bool
	Minions      []statedb.Minion
	Config       statedb.ConfigState
	Hosts        []statedb.Host
	Queues       []statedb.QueueState
	// Pending is how many notifications wait to be delivered, the oldest
	// made at OldestPending (nil when none waits).
	Pending       int64
	OldestPending *int64
	// Timings are the jobs' timings from the job id asked for on.
	Timings []statedb.JobTiming
}

// ReadMetrics reads the figures of a scrape, the timings of the jobs
// from the id fromID on.
func (a *App) ReadMetrics(ctx context.Context, fromID int64) (MetricsRead, error) {
	return read(ctx, a, func(tx *statedb.Tx) (m MetricsRead, err error) {
		m.Now = tx.Now
		if m.Lorries, err = tx.CountLorries(ctx); err != nil {
			return m, err
		}
		if m.States, err = tx.LorryStates(ctx); err != nil {
			return m, err
		}
		if m.Jobs, err = tx.JobCounts(ctx); err != nil {
			return m, err
		}
		ids, err := tx.RunningJobIDs(ctx)
		if err != nil {
			return m, err
		}
		m.Running = len(ids)
		if m.RunningQueue, err = tx.RunningQueue(ctx); err != nil {
			return m, err
		}
		if m.Minions, err = tx.Minions(ctx); err != nil {
			return m, err
		}
		if m.Config, err = tx.ConfigState(ctx); err != nil {
			return m, err
		}
		if m.Hosts, err = tx.Hosts(ctx); err != nil {
			return m, err
		}
		if m.Queues, err = tx.QueueStates(ctx); err != nil {
			return m, err
		}
		// Only the pending deliveries: counting the others reads the
		// whole outbox, a week of events, at every scrape.
		if m.Pending, m.OldestPending, err = tx.PendingDeliveries(ctx); err != nil {
			return m, err
		}
		m.Timings, err = tx.JobTimings(ctx, fromID)
		return m, err
	})
}

// Usage reads the state database's size on disk and the part of it left
// free.
func (a *App) Usage(ctx context.Context) (statedb.Usage, error) { return a.DB.Usage(ctx) }
