package routes

import (
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
	p, err := readParams(r)
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
		pushURL, err := s.downstream().Prepare(r.Context(), hosts.DownstreamRepo{Path: a.Job.Path})
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
	p, err := readParams(r)
	if err != nil {
		return err
	}
	u := statedb.JobUpdate{Stdout: []byte(p["stdout"]), Stderr: []byte(p["stderr"])}
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
	}
	return ok(w, map[string]bool{"kill": kill})
}

func (s *Server) pretendTime(w http.ResponseWriter, r *http.Request) error {
	p, err := readParams(r)
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
