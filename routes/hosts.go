package routes

import (
	"net/http"

	"lorrycontroller.dev/lc/control"
)

// lsResult is what listing one host did.
type lsResult struct {
	Host    string   `json:"host"`
	OK      bool     `json:"ok"`
	Repos   int      `json:"repos"`
	Added   int      `json:"added"`
	Changed int      `json:"changed"`
	Removed int      `json:"removed"`
	Skipped []string `json:"skipped"`
	// Vanished says what became of the downstream repositories of the
	// repositories gone from the listing, by the host's on-vanish.
	Vanished []vanishResult `json:"vanished,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// vanishResult is what was done to the downstream repository of one
// lorry whose repository vanished from its host's listing.
type vanishResult struct {
	Path   string `json:"path"`
	Action string `json:"action"` // kept, archived or deleted
	Error  string `json:"error,omitempty"`
}

func lsWire(l control.HostListing) lsResult {
	res := lsResult{Host: l.Host, OK: l.OK, Repos: l.Repos, Added: l.Added, Changed: l.Changed,
		Removed: l.Removed, Skipped: list(l.Skipped), Error: l.Error}
	for _, v := range l.Vanished {
		res.Vanished = append(res.Vanished, vanishResult{Path: v.Path, Action: v.Action, Error: v.Error})
	}
	return res
}

func (s *Server) lsHosts(force bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		listed, err := s.ListDueHosts(r.Context(), force)
		if err != nil {
			return err
		}
		res := make([]lsResult, len(listed))
		for i, l := range listed {
			res[i] = lsWire(l)
		}
		return ok(w, map[string][]lsResult{"hosts": res})
	}
}
