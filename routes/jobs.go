package routes

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
)

func (s *Server) listRunningJobs(w http.ResponseWriter, r *http.Request) error {
	ids, err := s.RunningJobIDs(r.Context())
	if err != nil {
		return err
	}
	return ok(w, map[string][]int64{"running_jobs": list(ids)})
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	ids, err := s.JobIDs(r.Context())
	if err != nil {
		return err
	}
	return ok(w, map[string][]int64{"job_ids": list(ids)})
}

func (s *Server) job(w http.ResponseWriter, r *http.Request) error {
	id, err := parseJobID(chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	d, err := s.Job(r.Context(), id)
	if err != nil {
		return err
	}
	answer := jobWire(d.Job, d.Output)
	answer.Refs = d.Refs.Cut() // every list [], never null
	return ok(w, answer)
}

// onJob makes a handler that does change to the job named by the job_id
// parameter and answers {"job_id": id, key: true}.
func (s *Server) onJob(key string, change func(context.Context, int64) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.readParams(r)
		if err != nil {
			return err
		}
		id, err := p.jobID()
		if err != nil {
			return err
		}
		if err := change(r.Context(), id); err != nil {
			return err
		}
		return ok(w, map[string]any{"job_id": id, key: true})
	}
}

func (s *Server) stopJob(w http.ResponseWriter, r *http.Request) error {
	return s.onJob("kill", s.StopJob)(w, r)
}

func (s *Server) removeJob(w http.ResponseWriter, r *http.Request) error {
	return s.onJob("removed", s.RemoveJob)(w, r)
}

func (s *Server) removeGhostJobs(w http.ResponseWriter, r *http.Request) error {
	ids, err := s.RemoveGhostJobs(r.Context())
	if err != nil {
		return err
	}
	return ok(w, map[string][]int64{"removed": list(ids)})
}

func (s *Server) removeOldJobs(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	maxAge, err := p.seconds("max_age")
	if err != nil {
		return err
	}
	n, age, err := s.RemoveOldJobs(r.Context(), maxAge)
	if err != nil {
		return err
	}
	return ok(w, map[string]int64{"removed": n, "max_age": age})
}
