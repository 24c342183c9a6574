package routes

import (
	"errors"
	"net/http"
	"sort"
	"strconv"

	"lorrycontroller.dev/lc/statedb"
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
	err := s.DB.View(r.Context(), func(tx *statedb.Tx) error {
		v.Now = tx.Now
		v.Minions = nil // fn may run again (statedb.DB.View)
		minions, err := tx.Minions(r.Context())
		if err != nil {
			return err
		}
		for _, m := range minions {
			mv := minionView{minionJSON: minionWire(m, tx.Now, v.AliveWithin)}
			alive := tx.Now-m.LastSeen <= v.AliveWithin
			switch {
			case !alive:
				mv.State, mv.Class = minionSilent, "s-stale"
			case m.JobID != nil:
				mv.State, mv.Class = minionBusy, "s-running"
			default:
				mv.State, mv.Class = minionIdle, "s-ok"
			}
			if m.JobID != nil {
				j, err := tx.Job(r.Context(), *m.JobID)
				switch {
				case err == nil:
					mv.JobPath = j.Path
				case !errors.Is(err, statedb.ErrNotFound):
					return err
				}
			}
			v.Minions = append(v.Minions, mv)
		}
		caps, err := tx.HostLimits(r.Context())
		if err != nil {
			return err
		}
		v.Hosts = hostCaps(v.Minions, caps)
		return nil
	})
	if err != nil {
		return err
	}
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
