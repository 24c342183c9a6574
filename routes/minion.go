package routes

import (
	"context"
	"errors"
	"lorrycontroller/hosts/downstream"
	"lorrycontroller/minionname"
	"lorrycontroller/redact"
	"net/http"
	"time"

	"lorrycontroller/statedb"
	"lorrycontroller/wire"
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

// leaseTerms go with every answer to a minion about its job.
func (s *Server) leaseTerms() wire.LeaseTerms {
	grace := s.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	// Whole seconds, rounded down: a minion may give up early, never late.
	return wire.LeaseTerms{
		Lease:     max(1, int64(EffectiveLease(s.Lease, s.GhostTimeout).Seconds())),
		KillGrace: int64(grace.Seconds()),
	}
}

func (s *Server) giveMeJob(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	req, err := wire.ParseJobRequest(p)
	if err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	m := statedb.MinionID{Name: req.Minion, Host: req.Host, PID: req.PID,
		Queues: req.Queues, IgnoreQueues: req.IgnoreQueues, Kinds: req.Kinds}
	if err := minionname.Check(m.Name); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	if err := claimMinion(r, m.Name); err != nil {
		return err
	}
	// A job whose downstream cannot be prepared, or a scraper whose files
	// cannot be read, fails at once, and the next due lorry is tried, so
	// one bad downstream never blocks the queue.
	for range maxPrepareTries {
		var a statedb.Assignment
		var retired bool
		err = s.DB.UpdateShared(r.Context(), func(tx *statedb.Tx) error {
			var err error
			if retired, _, err = tx.MinionRetired(r.Context(), m.Name); err != nil {
				return err
			}
			if retired {
				return tx.TouchRetiredMinion(r.Context(), m)
			}
			if err := s.keepHouse(r.Context(), tx); err != nil {
				return err
			}
			if a, err = tx.GiveMeJob(r.Context(), m); err != nil || a.Idle != "" || a.Lorry.Schedule == "" {
				return err
			}
			return s.tickHandedOut(r.Context(), tx, a.Lorry.Path)
		})
		if err != nil {
			s.houseKept.Store(0)
			return err
		}
		if retired {
			// Told at every request until un-retired, so that a retired
			// minion started again by hand exits again.
			s.Log.Info("retired minion told to exit", "minion", m.Name, "pid", m.PID)
			return ok(w, wire.Retired{Retire: true})
		}
		if a.Idle != "" {
			break
		}
		offer := wire.Offer{ID: a.Job.ID, Path: a.Job.Path, Kind: a.Job.Kind, Text: a.Lorry.Text, Timeout: a.Job.Timeout,
			AllowLocalSources: s.AllowLocalSources}
		var why string
		if a.Job.Kind == KindScraper {
			if offer.Scraper, err = s.scraperFor(r.Context(), a.Job, a.Lorry.Text); err != nil {
				why = "read the scraper's files from CONFGIT: " + redact.URLs(err.Error())
			} else if a.Job.Text != "" {
				offer.Text = a.Job.Text
			}
		} else if offer.PushURL, err = s.downstream().Prepare(r.Context(), downstreamRepo(a.Lorry)); err != nil {
			why = "prepare the downstream repository: " + redact.URLs(err.Error())
		}
		if why != "" {
			if err := r.Context().Err(); err != nil {
				return err // the minion is gone; the job is left to the ghost timeout
			}
			s.Log.Error("prepare job", "job_id", a.Job.ID, "path", a.Job.Path, "err", why)
			err = s.DB.Update(r.Context(), func(tx *statedb.Tx) error { return tx.FailJob(r.Context(), a.Job.ID, why) })
			if err != nil {
				return err
			}
			continue
		}
		if a.Again {
			s.Log.Info("job given again", "job_id", a.Job.ID, "path", a.Job.Path, "minion", m.Name)
		} else {
			s.Log.Info("job given", "job_id", a.Job.ID, "path", a.Job.Path, "minion", m.Name)
		}
		limit := s.OutputLimit
		if limit <= 0 {
			limit = statedb.DefaultOutputLimit
		}
		offer.LeaseTerms, offer.OutputLimit = s.leaseTerms(), limit
		return ok(w, offer)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// maxPrepareTries bounds how many jobs one give-me-job fails for want of a
// downstream repository before answering that there is nothing to do.
const maxPrepareTries = 3

func (s *Server) downstream() downstream.Host {
	if s.Downstream == nil {
		return downstream.None{}
	}
	return s.Downstream
}

func (s *Server) jobUpdate(w http.ResponseWriter, r *http.Request) error {
	// The output is streamed from the body into spools, with credentials
	// hidden on the way (git and the tools lorry runs may print the URLs
	// they were given), and read back in pieces as it is stored.
	head, tail := s.DB.OutputCaps()
	// Its other parameters are small but for refs, which may be large.
	b, err := s.readBody(r, maxBody, smallBody+wire.MaxRefsBytes, updateMemory+wire.MaxRefsBytes, streamFields, head, tail)
	if err != nil {
		return err
	}
	defer b.Close()
	p := b.params
	var u statedb.JobUpdate
	for _, f := range streamFields {
		if sp := b.stream(f); sp != nil {
			u.Spooled = append(u.Spooled, sp)
		}
	}
	wu, err := wire.ParseUpdate(p)
	if err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	u.ID, u.Minion = wu.JobID, statedb.MinionID{Name: wu.Minion, PID: wu.PID}
	if u.Minion.Name != "" {
		if err := minionname.Check(u.Minion.Name); err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
	}
	// The job must be this minion's, and the minion the token's: the name
	// is checked against the job's owner when the update is applied.
	if err := claimMinion(r, u.Minion.Name); err != nil {
		return err
	}
	u.Exit, u.DiskUsage, u.CutBytes = wu.Exit, wu.DiskUsage, wu.CutBytes
	u.RuntimeBuilt, u.RuntimeBuildSeconds = wu.RuntimeBuilt, wu.RuntimeBuildSeconds
	u.Head, u.Refs, u.ErrorClass = wu.Head, wu.Refs, wu.ErrorClass
	var kill, retire bool
	err = s.DB.UpdateShared(r.Context(), func(tx *statedb.Tx) error {
		var err error
		if kill, err = tx.UpdateJob(r.Context(), u); err != nil {
			return err
		}
		if u.Minion.Name != "" {
			retire, _, err = tx.MinionRetired(r.Context(), u.Minion.Name)
		}
		return err
	})
	if err != nil {
		return err
	}
	if u.Exit != nil {
		s.Log.Info("job ended", "job_id", u.ID, "exit", *u.Exit, "minion", u.Minion.Name)
		if *u.Exit == 0 {
			// The job's end is recorded: the downstream is finished even if
			// the minion goes away meanwhile (stopped just after its last
			// update, say), within finishTimeout.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), finishTimeout)
			s.finishDownstream(ctx, u.ID)
			cancel()
		}
	}
	return ok(w, wire.UpdateAnswer{Kill: kill, Retire: retire, LeaseTerms: s.leaseTerms()})
}

// finishTimeout bounds the Downstream Host's Finish after a job.
const finishTimeout = time.Minute

// finishDownstream lets the Downstream Host set what needs the pushed
// branches, after job id mirrored its lorry. A failure is logged: the
// mirror itself is there, and the next success tries again.
func (s *Server) finishDownstream(ctx context.Context, id int64) {
	switch s.downstream().(type) {
	case downstream.None, downstream.Local:
		// Their Finish does nothing: spare every job a read.
		return
	}
	var l statedb.Lorry
	err := s.DB.View(ctx, func(tx *statedb.Tx) error {
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
		s.Log.Error("finish downstream repository", "job_id", id, "err", err)
		return
	}
	if err := s.downstream().Finish(ctx, downstreamRepo(l)); err != nil {
		s.Log.Warn("finish downstream repository", "path", l.Path, "err", redact.URLs(err.Error()))
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

func (s *Server) pretendTime(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	now, err := p.int("now")
	if err != nil {
		return err
	}
	err = s.DB.Update(r.Context(), func(tx *statedb.Tx) error { return tx.SetFakeNow(r.Context(), now) })
	if err != nil {
		return err
	}
	s.FakeClock.Set(now)
	return ok(w, map[string]int64{"now": now})
}
