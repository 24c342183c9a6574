package routes

import (
	"context"
	"net/http"
	"time"
)

// healthCheckTimeout bounds a health check: a state database that does not
// answer in time is as bad as one that fails.
const healthCheckTimeout = 5 * time.Second

// withTimeout gives h's request a deadline.
func withTimeout(d time.Duration, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		return h(w, r.WithContext(ctx))
	}
}

// reclaimAfter runs h, then gives the space that h freed in the state
// database back to the file system, so that removing old jobs shrinks the
// file rather than only leaving room in it. The removal stands even if
// reclaiming fails; that is logged.
func (s *Server) reclaimAfter(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := h(w, r); err != nil {
			return err
		}
		start := time.Now()
		before, after, err := s.DB.Reclaim(r.Context())
		if err != nil {
			s.Log.Error("reclaim database space", "err", err)
			return nil
		}
		s.Log.Info("database space reclaimed", "bytes_before", before.FileBytes, "bytes_after", after.FileBytes,
			"duration_ms", time.Since(start).Milliseconds())
		return nil
	}
}
