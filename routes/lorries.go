package routes

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"lorrycontroller.dev/lc/statedb"
)

// The paged listing of lorries for tools: where status answers the whole
// run queue at once, lorries answers a page of it in path order, filtered,
// and the path to go on after.

const (
	// lorriesLimit is the page lorries answers when not asked for one.
	lorriesLimit = 100
	// lorriesMaxLimit bounds the page: a page is read into memory whole,
	// within one read transaction.
	lorriesMaxLimit = 1000
)

// lorriesJSON is the answer to lorries. Next is the after of the next
// page, null when this page is the last.
type lorriesJSON struct {
	Lorries []lorryJSON `json:"lorries"`
	Next    *string     `json:"next"`
}

// listLorries answers a page of lorries in path order: those in state,
// in queue and whose path begins with prefix (each if given), after the
// path after, at most limit of them.
func (s *Server) listLorries(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	l := statedb.LorryListing{State: q.Get("state"), Queue: q.Get("queue"), Prefix: q.Get("prefix"),
		After: q.Get("after"), Limit: lorriesLimit}
	if l.State != "" && !slices.Contains(statedb.States, l.State) {
		return errorf(http.StatusBadRequest, "state %q is none of %s", l.State, strings.Join(statedb.States, ", "))
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > lorriesMaxLimit {
			return errorf(http.StatusBadRequest, "limit %q is not a number from 1 to %d", v, lorriesMaxLimit)
		}
		l.Limit = n
	}
	page, next, err := s.ListLorries(r.Context(), l)
	if err != nil {
		return err
	}
	out := lorriesJSON{Lorries: make([]lorryJSON, len(page))}
	for i, lorry := range page {
		out.Lorries[i] = lorryWire(lorry)
	}
	if next != "" {
		out.Next = &next
	}
	return ok(w, out)
}
