package routes

import (
	"net/http"
)

func (s *Server) setQueue(running bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := s.SetRunning(r.Context(), running); err != nil {
			return err
		}
		return ok(w, map[string]bool{"running_queue": running})
	}
}

func (s *Server) listQueue(w http.ResponseWriter, r *http.Request) error {
	q, err := s.QueuePaths(r.Context())
	if err != nil {
		return err
	}
	return ok(w, map[string][]string{"queue": list(q)})
}

func (s *Server) move(top bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.readParams(r)
		if err != nil {
			return err
		}
		path, err := p.required("path")
		if err != nil {
			return err
		}
		q, err := s.Move(r.Context(), path, top)
		if err != nil {
			return err
		}
		return ok(w, map[string][]string{"queue": list(q)})
	}
}

// retryLorry is Retry now: the lorry's failure streak ends, and it is due
// at once, whether hard-failed, backing off or neither.
func (s *Server) retryLorry(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	path, err := p.required("path")
	if err != nil {
		return err
	}
	l, err := s.RetryLorry(r.Context(), path)
	if err != nil {
		return err
	}
	return ok(w, lorryWire(l))
}

func (s *Server) lorry(w http.ResponseWriter, r *http.Request) error {
	path, err := lorryPath(r, "/1.0/lorry/")
	if err != nil {
		return err
	}
	l, err := s.Lorry(r.Context(), path)
	if err != nil {
		return err
	}
	return ok(w, lorryWire(l))
}

func (s *Server) getMaxJobs(w http.ResponseWriter, r *http.Request) error {
	n, err := s.MaxJobs(r.Context())
	if err != nil {
		return err
	}
	return ok(w, map[string]*int64{"max_jobs": n})
}

func (s *Server) setMaxJobs(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	n, err := p.optionalInt("max_jobs")
	if err != nil {
		return err
	}
	if err := s.SetMaxJobs(r.Context(), n); err != nil {
		return err
	}
	return ok(w, map[string]*int64{"max_jobs": n})
}
