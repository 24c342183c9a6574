package routes

import (
	"context"
	"lorrycontroller/hosts"
	"lorrycontroller/redact"
	"net/http"
	"strconv"

	"lorrycontroller/statedb"
)

// jobOffer is the answer to give-me-job.
type jobOffer struct {
	JobID   int64  `json:"job_id"`
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	Timeout int64  `json:"timeout"`
	PushURL string `json:"push_url"`
}

func minionParams(p params) (statedb.MinionID, error) {
	m := statedb.MinionID{Name: p["minion"], Host: p["host"]}
	if p["pid"] != "" {
		pid, err := p.int("pid")
		if err != nil {
			return m, err
		}
		m.PID = pid
	}
	return m, nil
}

func (s *Server) giveMeJob(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	m, err := minionParams(p)
	if err != nil {
		return err
	}
	if m.Host == "" || m.PID == 0 {
		return errorf(http.StatusBadRequest, "give-me-job needs host and pid")
	}
	if m.Name == "" {
		m.Name = m.Host + "-" + strconv.FormatInt(m.PID, 10)
	}
	// A job whose downstream cannot be prepared fails at once, and the next
	// due lorry is tried, so one bad downstream never blocks the queue.
	for range maxPrepareTries {
		var a statedb.Assignment
		err = s.DB.Update(r.Context(), func(tx *statedb.Tx) error {
			var err error
			a, err = tx.GiveMeJob(r.Context(), m)
			return err
		})
		if err != nil {
			return err
		}
		if a.Idle != "" {
			break
		}
		pushURL, err := s.downstream().Prepare(r.Context(), downstreamRepo(a.Lorry))
		if err != nil {
			why := "prepare the downstream repository: " + redact.URLs(err.Error())
			s.Log.Error("downstream", "job_id", a.Job.ID, "path", a.Job.Path, "err", why)
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
		return ok(w, jobOffer{
			JobID: a.Job.ID, Path: a.Job.Path, Kind: a.Job.Kind, Text: a.Lorry.Text, Timeout: a.Job.Timeout,
			PushURL: pushURL,
		})
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// maxPrepareTries bounds how many jobs one give-me-job fails for want of a
// downstream repository before answering that there is nothing to do.
const maxPrepareTries = 3

func (s *Server) downstream() hosts.Downstream {
	if s.Downstream == nil {
		return hosts.None{}
	}
	return s.Downstream
}

func (s *Server) jobUpdate(w http.ResponseWriter, r *http.Request) error {
	// The output is streamed from the body into spools, with credentials
	// hidden on the way (git and the tools lorry runs may print the URLs
	// they were given), and read back in pieces as it is stored.
	head, tail := s.DB.OutputCaps()
	b, err := s.readBody(r, maxBody, updateMemory, streamFields, head, tail)
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
	if u.ID, err = p.jobID(); err != nil {
		return err
	}
	if u.Minion, err = minionParams(p); err != nil {
		return err
	}
	switch e := p["exit"]; e {
	case "", "no":
	default:
		n, err := strconv.ParseInt(e, 10, 64)
		if err != nil {
			return errorf(http.StatusBadRequest, "exit %q is neither \"no\" nor an exit code", e)
		}
		u.Exit = &n
	}
	if u.DiskUsage, err = p.optionalInt("disk_usage"); err != nil {
		return err
	}
	var kill bool
	err = s.DB.Update(r.Context(), func(tx *statedb.Tx) error {
		var err error
		kill, err = tx.UpdateJob(r.Context(), u)
		return err
	})
	if err != nil {
		return err
	}
	if u.Exit != nil {
		s.Log.Info("job ended", "job_id", u.ID, "exit", *u.Exit, "minion", u.Minion.Name)
		if *u.Exit == 0 {
			s.finishDownstream(r.Context(), u.ID)
		}
	}
	return ok(w, map[string]bool{"kill": kill})
}

// finishDownstream lets the Downstream Host set what needs the pushed
// branches, after job id mirrored its lorry. A failure is logged: the
// mirror itself is there, and the next success tries again.
func (s *Server) finishDownstream(ctx context.Context, id int64) {
	switch s.downstream().(type) {
	case hosts.None, hosts.Local:
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
	if err != nil {
		return // the lorry is gone from the configuration
	}
	if err := s.downstream().Finish(ctx, downstreamRepo(l)); err != nil {
		s.Log.Warn("finish downstream repository", "path", l.Path, "err", redact.URLs(err.Error()))
	}
}

func downstreamRepo(l statedb.Lorry) hosts.DownstreamRepo {
	return hosts.DownstreamRepo{Path: l.Path, Description: l.Description, DefaultBranch: l.DefaultBranch}
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
