package routes

import (
	"net/http"

	"lorrycontroller.dev/lc/statedb"
)

type hostsView struct {
	pageBase
	Hosts []hostView
}

func (s *Server) hostsHTML(w http.ResponseWriter, r *http.Request) error {
	var v hostsView
	err := s.DB.View(r.Context(), func(tx *statedb.Tx) error {
		v.Now = tx.Now
		hosts, err := tx.Hosts(r.Context())
		v.Hosts = nil // fn may run again (statedb.DB.View)
		for _, h := range hosts {
			v.Hosts = append(v.Hosts, hostRow(hostWire(h)))
		}
		return err
	})
	if err != nil {
		return err
	}
	v.pageBase = livePage(w, r, "Upstream hosts", "hosts", v.Now)
	return writePage(w, http.StatusOK, "hosts.html", v)
}
