package routes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"lorrycontroller/minionname"
	"lorrycontroller/statedb"
)

// Minion health, as Bistro names its workers' states.
const (
	// healthNew is a minion whose current process has been heard from
	// once: it has yet to show that it keeps polling.
	healthNew = "NEW"
	// healthHealthy is a minion heard from again within the ghost timeout.
	healthHealthy = "HEALTHY"
	// healthUnhealthy is a minion not heard from for longer than the
	// ghost timeout.
	healthUnhealthy = "UNHEALTHY"
	// healthMustDie is a retired minion: told to exit whenever it asks.
	healthMustDie = "MUST_DIE"
)

// minionHealth tells the health of m at now, given the ghost timeout in
// seconds.
func minionHealth(m statedb.Minion, now, ghostTimeout int64) string {
	switch {
	case m.Retire:
		return healthMustDie
	case now-m.LastSeen > ghostTimeout:
		return healthUnhealthy
	case m.Heard <= 1:
		return healthNew
	}
	return healthHealthy
}

// retireMinion retires the minion named by "minion", with "kill=true" to
// have its job killed, or un-retires it with "retire=false".
func (s *Server) retireMinion(retire bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.readParams(r)
		if err != nil {
			return err
		}
		name, err := p.required("minion")
		if err != nil {
			return err
		}
		if err := minionname.Check(name); err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
		kill, err := boolParam(p, "kill", false)
		if err != nil {
			return err
		}
		if retire, err = boolParam(p, "retire", retire); err != nil {
			return err
		}
		err = s.DB.Update(r.Context(), func(tx *statedb.Tx) error {
			return tx.RetireMinion(r.Context(), name, retire, kill && retire)
		})
		if err != nil {
			return err
		}
		s.Log.Info("minion retired", "minion", name, "retire", retire, "kill", kill && retire)
		return ok(w, map[string]any{"minion": name, "retire": retire, "kill": kill && retire})
	}
}

func boolParam(p params, name string, def bool) (bool, error) {
	v, ok := p[name]
	if !ok || v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errorf(http.StatusBadRequest, "%s %q is not true or false", name, v)
	}
	return b, nil
}

func saidRetireMinion(_ *http.Request, body []byte) string {
	var res struct {
		Minion       string
		Retire, Kill bool
	}
	json.Unmarshal(body, &res)
	switch {
	case !res.Retire:
		return fmt.Sprintf("Minion %s un-retired: it gets jobs again.", res.Minion)
	case res.Kill:
		return fmt.Sprintf("Minion %s retired: it kills its job, if any, and exits.", res.Minion)
	}
	return fmt.Sprintf("Minion %s retired: it finishes its job, if any, and exits.", res.Minion)
}
