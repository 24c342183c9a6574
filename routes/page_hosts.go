package routes

import (
	"net/http"
)

type hostsView struct {
	pageBase
	Hosts []hostView
}

func (s *Server) hostsHTML(w http.ResponseWriter, r *http.Request) error {
	var v hostsView
	hosts, now, err := s.Hosts(r.Context())
	if err != nil {
		return err
	}
	v.Now = now
	for _, h := range hosts {
		v.Hosts = append(v.Hosts, hostRow(hostWire(h)))
	}
	v.pageBase = livePage(w, r, "Upstream hosts", "hosts", v.Now)
	return writePage(w, http.StatusOK, "hosts.html", v)
}
