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
