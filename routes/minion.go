package routes

import (
	"errors"
	"net/http"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/minionname"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

// offerWire is the answer to give-me-job that hands out o.
func offerWire(o *control.Offer) wire.Offer {
	return wire.Offer{ID: o.Job.ID, Path: o.Job.Path, Kind: o.Job.Kind, Text: o.Text, Timeout: o.Job.Timeout,
		PushURL: o.PushURL, Scraper: o.Scraper, AllowLocalSources: o.AllowLocalSources, LeaseTerms: o.LeaseTerms,
		OutputLimit: o.OutputLimit}
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
	h, err := s.HandOut(r.Context(), m)
	switch {
	case err != nil:
		return err
	case h.Retire:
		return ok(w, wire.Retired{Retire: true})
	case h.Offer == nil:
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return ok(w, offerWire(h.Offer))
}

func (s *Server) jobUpdate(w http.ResponseWriter, r *http.Request) error {
	// The output is streamed from the body into spools, with credentials
	// hidden on the way (git and the tools lorry runs may print the URLs
	// they were given), and read back in pieces as it is stored.
	head, tail := s.OutputCaps()
	// Its other parameters are small but for refs, which may be large.
	b, err := s.readBody(r, maxBody, smallBody+wire.MaxRefsBytes, updateMemory+wire.MaxRefsBytes, streamFields, head, tail)
	if err != nil {
		return err
	}
	defer b.Close()
	p := b.params
	var u statedb.JobUpdate
	u.StdoutSpool, u.StderrSpool = b.sentStream("stdout"), b.sentStream("stderr")
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
	u.StdoutOffset, u.StderrOffset = wu.StdoutOffset, wu.StderrOffset
	u.RuntimeBuilt, u.RuntimeBuildSeconds = wu.RuntimeBuilt, wu.RuntimeBuildSeconds
	u.Head, u.Refs, u.ErrorClass, u.Stopping = wu.Head, wu.Refs, wu.ErrorClass, wu.Stopping
	res, err := s.UpdateJob(r.Context(), u)
	var gap *statedb.OutputGapError
	if errors.As(err, &gap) {
		// Answered with what the WEBAPP has, which the minion sends
		// again from.
		writeJSON(w, http.StatusRequestedRangeNotSatisfiable,
			wire.UpdateGap{Error: gap.Error(), StdoutOffset: gap.StdoutBytes, StderrOffset: gap.StderrBytes})
		return nil
	}
	if err != nil {
		return err
	}
	return ok(w, wire.UpdateAnswer{Kill: res.Kill, Retire: res.Retire, LeaseTerms: res.LeaseTerms})
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
	if err := s.PretendTime(r.Context(), now); err != nil {
		return err
	}
	return ok(w, map[string]int64{"now": now})
}
