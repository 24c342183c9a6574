package control

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

// DefaultKillGrace is the kill grace the WEBAPP grants when it is not told.
const DefaultKillGrace = 10 * time.Second

// EffectiveLease is the lease that lease and ghostTimeout give: lease, or
// half the ghost timeout when lease is zero.
func EffectiveLease(lease, ghostTimeout time.Duration) time.Duration {
	if lease > 0 {
		return lease
	}
	return ghostTimeout / 2
}

// LeaseTerms go with every answer to a minion about its job, as the job
// protocol has them.
type LeaseTerms = wire.LeaseTerms

// LeaseTerms are the terms a minion is given with its job, in whole
// seconds, rounded down: a minion may give up early, never late.
func (a *App) LeaseTerms() LeaseTerms {
	grace := a.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	return LeaseTerms{
		Lease:     max(1, int64(EffectiveLease(a.Lease, a.GhostTimeout).Seconds())),
		KillGrace: int64(grace.Seconds()),
	}
}

// Offer is a job handed out to a minion: all it needs to run it.
type Offer struct {
	Job  statedb.Job
	Text string // the spec handed to the job
	// PushURL is where a lorry's job pushes; "" for a scraper.
	PushURL string
	// Scraper is set for a scraper, which pushes nowhere.
	Scraper *Scraper
	// AllowLocalSources is passed on to lorry as --allow-local-sources.
	AllowLocalSources bool
	LeaseTerms
	OutputLimit int64 // bytes
}

// Scraper is what a scraper's job needs to build its runtime and run it,
// as of the commit the job was read from, as the job protocol has it.
type Scraper = wire.Scraper

// HandOut is the answer to a minion asking for work: Retire, or an
// Offer, or neither when there is nothing to do.
type HandOut struct {
	// Retire tells a retired minion to exit.
	Retire bool
	Offer  *Offer
}

// maxPrepareTries bounds how many jobs one hand-out fails for want of a
// downstream repository before answering that there is nothing to do.
const maxPrepareTries = 3

// HandOut claims a job for minion m and answers with it. It claims and
// answers, nothing more: the schedules' ticks and the sweeps are the
// Scheduler's (Tick), and a hand-out sees their results. The one entry it
// hands out is ticked in its transaction if its event has come meanwhile,
// so that the event fires into the job now running rather than making the
// entry due again when the job ends.
//
// A job whose downstream cannot be prepared, or a scraper whose files
// cannot be read, fails at once, and the next due lorry is tried, so one
// bad downstream never blocks the queue.
func (a *App) HandOut(ctx context.Context, m statedb.MinionID) (HandOut, error) {
	for range maxPrepareTries {
		var as statedb.Assignment
		err := a.DB.UpdateShared(ctx, func(tx *statedb.Tx) error {
			var err error
			if as, err = tx.GiveMeJob(ctx, m); err != nil || as.Idle != "" || as.Lorry.Schedule == "" {
				return err
			}
			return a.tickHandedOut(ctx, tx, as.Lorry.Path)
		})
		if err != nil {
			return HandOut{}, err
		}
		if as.Retired {
			// Told at every request until un-retired, so that a retired
			// minion started again by hand exits again.
			a.Log.Info("retired minion told to exit", "minion", m.Name, "pid", m.PID)
			return HandOut{Retire: true}, nil
		}
		if as.Idle != "" {
			break
		}
		offer, why := a.prepare(ctx, as)
		if why != "" {
			if err := ctx.Err(); err != nil {
				return HandOut{}, err // the minion is gone; the job is left to the ghost timeout
			}
			a.Log.Error("prepare job", "job_id", as.Job.ID, "path", as.Job.Path, "err", why)
			err = a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.FailJob(ctx, as.Job.ID, why) })
			if err != nil {
				return HandOut{}, err
			}
			continue
		}
		if as.Again {
			a.Log.Info("job given again", "job_id", as.Job.ID, "path", as.Job.Path, "minion", m.Name)
		} else {
			a.Log.Info("job given", "job_id", as.Job.ID, "path", as.Job.Path, "minion", m.Name)
		}
		return HandOut{Offer: offer}, nil
	}
	return HandOut{}, nil
}

// prepare makes the offer of the job as claimed: a scraper's files read
// from CONFGIT, or a lorry's downstream repository prepared. It says why,
// without credentials, when it cannot.
func (a *App) prepare(ctx context.Context, as statedb.Assignment) (*Offer, string) {
	limit := a.OutputLimit
	if limit <= 0 {
		limit = statedb.DefaultOutputLimit
	}
	offer := &Offer{Job: as.Job, Text: as.Lorry.Text, AllowLocalSources: a.AllowLocalSources,
		LeaseTerms: a.LeaseTerms(), OutputLimit: limit}
	var err error
	if as.Job.Kind == wire.KindScraper {
		if offer.Scraper, err = a.scraperFor(ctx, as.Job, as.Lorry.Text); err != nil {
			return nil, "read the scraper's files from CONFGIT: " + redact.URLs(err.Error())
		}
		if as.Job.Text != "" {
			offer.Text = as.Job.Text
		}
	} else if offer.PushURL, err = a.downstream().Prepare(ctx, downstreamRepo(as.Lorry)); err != nil {
		return nil, "prepare the downstream repository: " + redact.URLs(err.Error())
	}
	return offer, ""
}

// scraperFor builds what scraper job j needs. Its spec, runtime and
// files all come from the commit recorded on the job, so that they agree
// with each other whatever CONFGIT holds now. No database session is held:
// this reads from git.
func (a *App) scraperFor(ctx context.Context, j statedb.Job, text string) (*Scraper, error) {
	if j.Text != "" {
		text = j.Text
	}
	if j.CommitID == "" || j.Runtime.ID == "" {
		return nil, errors.New("the job has no CONFGIT commit or runtime recorded; read the configuration again")
	}
	spec, err := confgit.DecodeScraper(text)
	if err != nil {
		return nil, fmt.Errorf("scraper spec: %w", err)
	}
	hist, ok := a.History()
	if !ok {
		return nil, errors.New("the WEBAPP cannot read the history of CONFGIT")
	}
	contents, err := hist.ReadFiles(ctx, j.CommitID, spec.Config)
	if err != nil {
		return nil, err
	}
	rt := wire.Runtime{Name: j.Runtime.Name, Version: j.Runtime.Version, ID: j.Runtime.ID, Python: j.Runtime.Python}
	sc := &Scraper{Runtime: rt, Argv: spec.Argv(), Env: spec.Env, Config: []wire.ConfigFile{}, FDArgs: spec.FDArgs}
	if sc.Env == nil {
		sc.Env = map[string]string{}
	}
	for i, p := range spec.Config {
		sc.Config = append(sc.Config, wire.ConfigFile{Name: path.Base(p), Path: p, Content: contents[i]})
	}
	return sc, nil
}

// UpdateResult is the answer to a job's update: whether the minion is to
// kill it, and whether the minion is retired.
type UpdateResult struct {
	Kill   bool
	Retire bool
	LeaseTerms
	// Repeated is set for a final report sent again, its first answer
	// lost: the job had ended already, and nothing was done.
	Repeated bool
}

// UpdateJob records a job's update from its minion. At the job's
// successful end it has the Downstream Host finish the repository.
func (a *App) UpdateJob(ctx context.Context, u statedb.JobUpdate) (UpdateResult, error) {
	res := UpdateResult{LeaseTerms: a.LeaseTerms()}
	err := a.DB.UpdateReports(ctx, func(tx *statedb.Tx) error {
		reply, err := tx.UpdateJob(ctx, u)
		res.Kill, res.Retire, res.Repeated = reply.Kill, reply.Retire, reply.Repeated
		return err
	})
	if err != nil {
		return UpdateResult{}, err
	}
	if res.Repeated {
		a.Log.Info("final report repeated", "job_id", u.ID, "minion", u.Minion.Name)
	} else if u.Exit != nil {
		a.Log.Info("job ended", "job_id", u.ID, "exit", *u.Exit, "minion", u.Minion.Name)
		if *u.Exit == 0 {
			// The job's end is recorded: the downstream is finished even if
			// the minion goes away meanwhile (stopped just after its last
			// update, say), within finishTimeout.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
			a.FinishDownstream(fctx, u.ID)
			cancel()
		}
	}
	return res, nil
}

// finishTimeout bounds the Downstream Host's Finish after a job.
const finishTimeout = time.Minute

// FinishDownstream lets the Downstream Host set what needs the pushed
// branches, after job id mirrored its lorry. A failure is logged: the
// mirror itself is there, and the next success tries again.
func (a *App) FinishDownstream(ctx context.Context, id int64) {
	switch a.downstream().(type) {
	case downstream.None, downstream.Local:
		// Their Finish does nothing: spare every job a read.
		return
	}
	var l statedb.Lorry
	err := a.DB.View(ctx, func(tx *statedb.Tx) error {
		j, err := tx.Job(ctx, id)
		if err != nil {
			return err
		}
		l, err = tx.Lorry(ctx, j.Path)
		return err
	})
	if errors.Is(err, statedb.ErrNotFound) {
		return // the job or its lorry is gone: removed, or dropped from the configuration
	}
	if err != nil {
		a.Log.Error("finish downstream repository", "job_id", id, "err", err)
		return
	}
	if err := a.downstream().Finish(ctx, downstreamRepo(l)); err != nil {
		a.Log.Warn("finish downstream repository", "path", l.Path, "err", redact.URLs(err.Error()))
	}
}

// downstreamRepo is what the Downstream Host is told of l. The branch
// that the upstream's HEAD named at the last run wins over the default
// branch an Upstream Host listed, as it is what the mirror has; without
// it, a Gitea or GitLab downstream keeps the branch that the first push
// happened to make the default.
func downstreamRepo(l statedb.Lorry) downstream.Repo {
	branch := l.UpstreamHead
	if branch == "" {
		branch = l.DefaultBranch
	}
	return downstream.Repo{Path: l.Path, Description: l.Description, DefaultBranch: branch}
}

// PretendTime sets the debug clock, and the database's, to now, and
// ticks (Tick) at once: what the new time makes due, or ends, is so from
// the next request on, as the Scheduler would have it within a second. If
// another process is ticking, it waits for it to finish and ticks after.
func (a *App) PretendTime(ctx context.Context, now int64) error {
	if a.FakeClock == nil {
		return fmt.Errorf("this WEBAPP has no debug clock: %w", statedb.ErrInvalid)
	}
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.SetFakeNow(ctx, now) })
	if err != nil {
		return err
	}
	a.FakeClock.Set(now)
	_, err = a.tick(ctx, a.leaseWait())
	return err
}
