package control

import (
	"context"
	"errors"

	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

// The reads that the API and the pages answer with, each in one read
// transaction of its own.

// read answers what fn reads in a read transaction of a's database. fn
// may run more than once (statedb.DB.View), and starts afresh each time.
func read[T any](ctx context.Context, a *App, fn func(tx *statedb.Tx) (T, error)) (T, error) {
	var v T
	err := a.DB.View(ctx, func(tx *statedb.Tx) error {
		var err error
		v, err = fn(tx)
		return err
	})
	return v, err
}

// Now is the time of the WEBAPP's clock, in Unix seconds.
func (a *App) Now() int64 { return a.DB.Now() }

// OutputCaps are how many bytes of a job's output are kept from its
// start and from its end.
func (a *App) OutputCaps() (head, tail int64) { return a.DB.OutputCaps() }

// RunningJobIDs are the ids of the live jobs.
func (a *App) RunningJobIDs(ctx context.Context) ([]int64, error) {
	return read(ctx, a, func(tx *statedb.Tx) ([]int64, error) { return tx.RunningJobIDs(ctx) })
}

// JobIDs are the ids of the jobs remembered.
func (a *App) JobIDs(ctx context.Context) ([]int64, error) {
	return read(ctx, a, func(tx *statedb.Tx) ([]int64, error) { return tx.JobIDs(ctx) })
}

// JobDetail is a job with its output, its lorry's credentials hidden in
// it, and the ref changes it made (nil when none were recorded).
type JobDetail struct {
	Job    statedb.Job
	Output string
	Refs   *wire.RefChanges
}

// Job reads the job id whole.
func (a *App) Job(ctx context.Context, id int64) (JobDetail, error) {
	return read(ctx, a, func(tx *statedb.Tx) (d JobDetail, err error) {
		if d.Job, err = tx.Job(ctx, id); err != nil {
			return d, err
		}
		if d.Refs, err = jobRefs(ctx, tx, id); err != nil {
			return d, err
		}
		if d.Output, err = tx.Output(ctx, id); err != nil {
			return d, err
		}
		d.Output = knownSecrets(ctx, tx, d.Job.Path).Text(d.Output)
		return d, nil
	})
}

// OutputPart is a part of a job's output, as JobOutput reads it, with
// the time it was read at and the job's ref changes if asked for.
type OutputPart struct {
	statedb.OutputPart
	Now  int64
	Refs *wire.RefChanges
}

// JobOutput reads job id's output from offset, with its lorry's
// credentials hidden in its text and its progress line, which is output
// too; and its ref changes when refs says so.
func (a *App) JobOutput(ctx context.Context, id, offset int64, refs bool) (OutputPart, error) {
	return read(ctx, a, func(tx *statedb.Tx) (p OutputPart, err error) {
		p.Now = tx.Now
		if p.OutputPart, err = tx.OutputFrom(ctx, id, offset); err != nil {
			return p, err
		}
		known := knownSecrets(ctx, tx, p.Job.Path)
		p.Text, p.Progress = known.Text(p.Text), known.Text(p.Progress)
		if refs {
			p.Refs, err = jobRefs(ctx, tx, id)
		}
		return p, err
	})
}

// jobRefs reads the ref changes of job id: nil when none were recorded.
func jobRefs(ctx context.Context, tx *statedb.Tx, id int64) (*wire.RefChanges, error) {
	c, err := tx.JobRefs(ctx, id)
	if errors.Is(err, statedb.ErrNotFound) {
		return nil, nil
	}
	return c, err
}

// knownSecrets are the credentials of the spec of the lorry at path,
// which its jobs' output may repeat in forms the parser does not see;
// nil when there is no such lorry now.
func knownSecrets(ctx context.Context, tx *statedb.Tx, path string) *redact.Known {
	l, err := tx.Lorry(ctx, path)
	if err != nil {
		return nil
	}
	return redact.KnownInJSON(l.Text)
}

// JobsPage is a page of jobs with the time it was read at.
type JobsPage struct {
	statedb.JobPage
	Now int64
}

// JobsRequest asks for a page of at most N jobs that Filter lets
// through: those after the id After if it is set, else those before the
// id Before.
type JobsRequest struct {
	Filter        statedb.JobFilter
	Before, After int64
	UseAfter      bool
	N             int
}

// Jobs reads the page of jobs that req asks for.
func (a *App) Jobs(ctx context.Context, req JobsRequest) (JobsPage, error) {
	return read(ctx, a, func(tx *statedb.Tx) (p JobsPage, err error) {
		p.Now = tx.Now
		if req.UseAfter {
			p.JobPage, err = tx.JobsAfter(ctx, req.Filter, req.After, req.N)
		} else {
			p.JobPage, err = tx.JobsBefore(ctx, req.Filter, req.Before, req.N)
		}
		return p, err
	})
}

// ListLorries reads a page of lorries as l asks, and the after of the
// next page ("" when this is the last).
func (a *App) ListLorries(ctx context.Context, l statedb.LorryListing) (page []statedb.Lorry, next string, err error) {
	err = a.DB.View(ctx, func(tx *statedb.Tx) error {
		page, next, err = tx.ListLorries(ctx, l)
		return err
	})
	return page, next, err
}

// QueuePaths are the lorries' paths in run-queue order.
func (a *App) QueuePaths(ctx context.Context) ([]string, error) {
	return read(ctx, a, func(tx *statedb.Tx) ([]string, error) { return tx.QueuePaths(ctx) })
}

// Lorry reads the lorry at path.
func (a *App) Lorry(ctx context.Context, path string) (statedb.Lorry, error) {
	return read(ctx, a, func(tx *statedb.Tx) (statedb.Lorry, error) { return tx.Lorry(ctx, path) })
}

// LorryPage is what a lorry's page shows: the lorry, its place in the
// queue of Total, its recent jobs and runs, read at Now.
type LorryPage struct {
	Lorry      statedb.Lorry
	Pos, Total int64
	Jobs       []statedb.Job
	Runs       []statedb.Run
	Now        int64
}

// LorryPage reads the lorry at path with its jobs, at most jobs of
// them, and its runs, at most runs of them.
func (a *App) LorryPage(ctx context.Context, path string, jobs, runs int) (LorryPage, error) {
	return read(ctx, a, func(tx *statedb.Tx) (p LorryPage, err error) {
		p.Now = tx.Now
		if p.Lorry, err = tx.Lorry(ctx, path); err != nil {
			return p, err
		}
		if p.Pos, err = tx.QueuePosition(ctx, path); err != nil {
			return p, err
		}
		if p.Total, err = tx.TotalLorries(ctx); err != nil {
			return p, err
		}
		if p.Jobs, err = tx.RecentJobs(ctx, path, jobs); err != nil {
			return p, err
		}
		p.Runs, err = tx.RecentRuns(ctx, path, runs)
		return p, err
	})
}

// MaxJobs reads max_jobs: nil for no limit.
func (a *App) MaxJobs(ctx context.Context) (*int64, error) {
	return read(ctx, a, func(tx *statedb.Tx) (*int64, error) { return tx.MaxJobs(ctx) })
}

// HostMaxJobs reads the max_jobs of the minion host named: nil for no
// limit.
func (a *App) HostMaxJobs(ctx context.Context, host string) (*int64, error) {
	return read(ctx, a, func(tx *statedb.Tx) (*int64, error) { return tx.HostMaxJobs(ctx, host) })
}

// ConfigState reads what the configuration applied last left.
func (a *App) ConfigState(ctx context.Context) (statedb.ConfigState, error) {
	return read(ctx, a, func(tx *statedb.Tx) (statedb.ConfigState, error) { return tx.ConfigState(ctx) })
}

// RuntimeIs says whether id is a tree of the runtime name as configured
// or as a job was handed it.
func (a *App) RuntimeIs(ctx context.Context, name, id string) (bool, error) {
	return read(ctx, a, func(tx *statedb.Tx) (bool, error) { return tx.RuntimeIs(ctx, name, id) })
}

// Hosts reads the Upstream Hosts, and the time it read them at.
func (a *App) Hosts(ctx context.Context) (hosts []statedb.Host, now int64, err error) {
	err = a.DB.View(ctx, func(tx *statedb.Tx) error {
		now = tx.Now
		hosts, err = tx.Hosts(ctx)
		return err
	})
	return hosts, now, err
}

// MinionsRead is the minions, the path of the job each runs (by the
// minion's name), the max_jobs of the capped minion hosts, and the time
// they were read at.
type MinionsRead struct {
	Minions    []statedb.Minion
	JobPaths   map[string]string
	HostLimits map[string]int64
	Now        int64
}

// Minions reads the minions, with their jobs' paths and their hosts'
// limits.
func (a *App) Minions(ctx context.Context) (MinionsRead, error) {
	return read(ctx, a, func(tx *statedb.Tx) (m MinionsRead, err error) {
		m.Now, m.JobPaths = tx.Now, map[string]string{}
		if m.Minions, err = tx.Minions(ctx); err != nil {
			return m, err
		}
		for _, mn := range m.Minions {
			if mn.JobID == nil {
				continue
			}
			j, err := tx.Job(ctx, *mn.JobID)
			switch {
			case err == nil:
				m.JobPaths[mn.Name] = j.Path
			case !errors.Is(err, statedb.ErrNotFound):
				return m, err
			}
		}
		m.HostLimits, err = tx.HostLimits(ctx)
		return m, err
	})
}
