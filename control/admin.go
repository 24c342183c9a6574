package control

import (
	"context"

	"lorrycontroller.dev/lc/statedb"
)

// The admins' operations on the run queue, its jobs and its minions, and
// the runs that pushes ask for.

// SetRunning starts or stops the run queue: stopped, it hands out no job.
func (a *App) SetRunning(ctx context.Context, running bool) error {
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.SetRunningQueue(ctx, running) })
	if err == nil {
		a.Log.Info("queue", "running", running)
	}
	return err
}

// Move puts the lorry at path at the top of the run queue, or at the
// bottom, and returns the queue as it is then.
func (a *App) Move(ctx context.Context, path string, top bool) ([]string, error) {
	var q []string
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error {
		move := tx.MoveToBottom
		if top {
			move = tx.MoveToTop
		}
		if err := move(ctx, path); err != nil {
			return err
		}
		var err error
		q, err = tx.QueuePaths(ctx)
		return err
	})
	return q, err
}

// RunNow makes the lorry at path due at once and first in the queue, or,
// while a job of it runs, has it run again as soon as that job ends. A
// hard-failed lorry is left as it is, which the result says.
func (a *App) RunNow(ctx context.Context, path string) (statedb.RunNow, error) {
	var res statedb.RunNow
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error {
		var err error
		res, err = tx.RunLorryNow(ctx, path)
		return err
	})
	if err == nil && !res.HardFailed {
		a.Log.Info("run now", "path", path, "due", res.Due, "queued_after_current_run", res.QueuedAfterCurrentRun)
	}
	return res, err
}

// Pushed runs now (RunNow) the lorries that mirror any of urls, which a
// forge's push hook named, in queue order, unless a delivery of keys was
// acted on before (a forge's redelivery, or a replay): repeat says so, and
// nothing is done again.
func (a *App) Pushed(ctx context.Context, forge string, keys, urls []string) (runs []statedb.RunNow, repeat bool, err error) {
	err = a.DB.Update(ctx, func(tx *statedb.Tx) error {
		fresh, err := tx.RememberHookDelivery(ctx, forge, keys)
		if err != nil {
			return err
		}
		if repeat = !fresh; repeat {
			return nil
		}
		paths, err := tx.LorriesByUpstream(ctx, urls)
		if err != nil {
			return err
		}
		// Pushed first, the last one in queue order ends first in the
		// queue; walking backwards keeps their order.
		runs = make([]statedb.RunNow, len(paths))
		for i := len(paths) - 1; i >= 0; i-- {
			if runs[i], err = tx.RunLorryNow(ctx, paths[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return runs, repeat, nil
}

// RetryLorry ends the failure streak of the lorry at path and makes it due
// at once, whether hard-failed, backing off or neither; it returns the
// lorry as it is then.
func (a *App) RetryLorry(ctx context.Context, path string) (statedb.Lorry, error) {
	var l statedb.Lorry
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error {
		if err := tx.RetryLorry(ctx, path); err != nil {
			return err
		}
		var err error
		l, err = tx.Lorry(ctx, path)
		return err
	})
	if err == nil {
		a.Log.Info("lorry retried", "path", path)
	}
	return l, err
}

// SetMaxJobs sets how many jobs may run at once; nil for no limit.
func (a *App) SetMaxJobs(ctx context.Context, n *int64) error {
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.SetMaxJobs(ctx, n) })
	if err == nil {
		a.Log.Info("max jobs", "max_jobs", optional(n))
	}
	return err
}

// SetHostMaxJobs sets how many jobs of the lorries of Upstream Host host
// may run at once; nil for no limit.
func (a *App) SetHostMaxJobs(ctx context.Context, host string, n *int64) error {
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.SetHostMaxJobs(ctx, host, n) })
	if err == nil {
		a.Log.Info("host max jobs", "host", host, "max_jobs", optional(n))
	}
	return err
}

// optional shows a nullable number in logs.
func optional(n *int64) any {
	if n == nil {
		return "unlimited"
	}
	return *n
}

// StopJob has the minion of job id kill it.
func (a *App) StopJob(ctx context.Context, id int64) error {
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.StopJob(ctx, id) })
	if err == nil {
		a.Log.Info("stop job", "job_id", id)
	}
	return err
}

// RemoveJob removes job id, which has ended, and its output.
func (a *App) RemoveJob(ctx context.Context, id int64) error {
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.RemoveJob(ctx, id) })
	if err == nil {
		a.Log.Info("remove job", "job_id", id)
	}
	return err
}

// RetireMinion retires the minion name, which is told to exit at its next
// request, after its job or, with kill, killing it; or un-retires it.
func (a *App) RetireMinion(ctx context.Context, name string, retire, kill bool) error {
	kill = kill && retire
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.RetireMinion(ctx, name, retire, kill) })
	if err == nil {
		a.Log.Info("minion retired", "minion", name, "retire", retire, "kill", kill)
	}
	return err
}
