package routes

import (
	"net/http"
	"sort"
	"strconv"
)

type minionView struct {
	minionJSON
	State, Class string
	JobPath      string
}

type minionsView struct {
	pageBase
	AliveWithin int64
	Minions     []minionView
	// Hosts are the minion hosts, and any other capped host, with their
	// caps on running jobs.
	Hosts []hostCapView
}

type hostCapView struct {
	Host    string
	MaxJobs string // "" when there is no cap
	Running int
}

func (s *Server) minionsHTML(w http.ResponseWriter, r *http.Request) error {
	v := minionsView{AliveWithin: s.aliveWithin()}
	read, err := s.Minions(r.Context())
	if err != nil {
		return err
	}
	v.Now = read.Now
	for _, m := range read.Minions {
		mv := minionView{minionJSON: minionWire(m, v.Now, v.AliveWithin), JobPath: read.JobPaths[m.Name]}
		alive := v.Now-m.LastSeen <= v.AliveWithin
		switch {
		case !alive:
			mv.State, mv.Class = minionSilent, "s-stale"
		case m.JobID != nil:
			mv.State, mv.Class = minionBusy, "s-running"
		default:
			mv.State, mv.Class = minionIdle, "s-ok"
		}
		v.Minions = append(v.Minions, mv)
	}
	v.Hosts = hostCaps(v.Minions, read.HostLimits)
	v.pageBase = livePage(w, r, "Minions", "minions", v.Now)
	return writePage(w, http.StatusOK, "minions.html", v)
}

// hostCaps lists the hosts of minions and the capped hosts, by name.
func hostCaps(minions []minionView, caps map[string]int64) []hostCapView {
	byHost := map[string]*hostCapView{}
	for h, n := range caps {
		byHost[h] = &hostCapView{Host: h, MaxJobs: strconv.FormatInt(n, 10)}
	}
	for _, m := range minions {
		hc := byHost[m.Host]
		if hc == nil {
			hc = &hostCapView{Host: m.Host}
			byHost[m.Host] = hc
		}
		if m.JobID != nil {
			hc.Running++
		}
	}
	out := make([]hostCapView, 0, len(byHost))
	for _, hc := range byHost {
		out = append(out, *hc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}
