package routes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"lorrycontroller.dev/lc/minionname"
)

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
		if err := s.RetireMinion(r.Context(), name, retire, kill); err != nil {
			return err
		}
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
