package routes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"lorrycontroller.dev/lc/forgehook"
	"lorrycontroller.dev/lc/statedb"
)

// Push-triggered runs: a forge's push hook, or an admin's run-now, makes a
// lorry due at once and first in the queue; while a job of it runs, the
// lorry runs once more as soon as that job ends, however many pushes came
// meanwhile.

// hookBodyLimit bounds a hook's body: a push of many commits is some
// hundreds of KiB at most, as the forges cut the commit list short.
const hookBodyLimit = 1 << 20

// runNowAnswer is what run-now, and a push hook for each lorry, answers.
type runNowAnswer struct {
	Path                  string `json:"path"`
	Due                   bool   `json:"due,omitempty"`
	QueuedAfterCurrentRun bool   `json:"queued_after_current_run,omitempty"`
	HardFailed            bool   `json:"hard_failed,omitempty"`
}

func answerRunNow(r statedb.RunNow) runNowAnswer {
	return runNowAnswer{Path: r.Path, Due: r.Due, QueuedAfterCurrentRun: r.QueuedAfterCurrentRun, HardFailed: r.HardFailed}
}

func (s *Server) runNow(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	path, err := p.required("path")
	if err != nil {
		return err
	}
	res, err := s.RunNow(r.Context(), path)
	if err != nil {
		return err
	}
	if res.HardFailed {
		return errorf(http.StatusConflict, "lorry %s is hard-failed: POST /1.0/retry-lorry with path to run it again", path)
	}
	return ok(w, answerRunNow(res))
}

func saidRunNow(r *http.Request, body []byte) string {
	var a runNowAnswer
	json.Unmarshal(body, &a)
	if a.QueuedAfterCurrentRun {
		return fmt.Sprintf("%s is running; it runs again as soon as this run ends.", a.Path)
	}
	return fmt.Sprintf("%s is due now, first in the run queue.", r.PostFormValue("path"))
}

// hookAnswer is what a push hook answers.
type hookAnswer struct {
	Event   string `json:"event"`
	Ignored bool   `json:"ignored,omitempty"`
	// Repeat: the hook was acted on before (a forge's redelivery, or a
	// replay), and is not again.
	Repeat  bool           `json:"repeat,omitempty"`
	Lorries []runNowAnswer `json:"lorries"`
}

// hook serves the push hook of forge. Anyone may post to it: it is
// authenticated by the forge's secret or signature, not by a token.
func (s *Server) hook(forge string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if len(s.HookSecret) == 0 {
			return errorf(http.StatusForbidden, "push hooks are off: the WEBAPP has no --hook-secret-file")
		}
		body, err := s.readRaw(r, hookBodyLimit)
		if err != nil {
			return err
		}
		if err := forgehook.Verify(forge, s.HookSecret, r.Header, body); err != nil {
			s.Log.Warn("push hook refused", "forge", forge, "remote_addr", r.RemoteAddr, "err", err)
			w.Header().Set("WWW-Authenticate", hookChallenge(forge))
			return errorf(http.StatusUnauthorized, "%v", err)
		}
		ev, err := forgehook.Parse(forge, r.Header, body)
		if err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
		ans := hookAnswer{Event: ev.Name, Lorries: []runNowAnswer{}}
		if ev.Ping {
			return ok(w, ans)
		}
		if !ev.Push {
			ans.Ignored = true
			return writeJSON(w, http.StatusAccepted, ans)
		}
		ctx := r.Context()
		keys := forgehook.DeliveryKeys(forge, r.Header, body)
		runs, repeat, err := s.Pushed(ctx, forge, keys, ev.URLs)
		if err != nil {
			return err
		}
		ans.Repeat = repeat
		for _, res := range runs {
			ans.Lorries = append(ans.Lorries, answerRunNow(res))
		}
		if ans.Repeat {
			s.Log.Warn("push hook repeated: not acted on again", "forge", forge, "event", ev.Name, "ref", ev.Ref,
				"remote_addr", r.RemoteAddr, "delivery", keys[0])
			return ok(w, ans)
		}
		paths := make([]string, len(ans.Lorries))
		for i, l := range ans.Lorries {
			paths[i] = l.Path
		}
		s.Log.Info("push hook", "forge", forge, "event", ev.Name, "ref", ev.Ref,
			"upstream", ev.URLs[0], "lorries", strings.Join(paths, " "))
		return ok(w, ans)
	}
}

// hookChallenge is the challenge of a push hook's 401 (RFC 9110 asks for
// one with every 401): the forge's secret header, or its signature of the
// body, rather than a token.
func hookChallenge(forge string) string {
	if forge == forgehook.GitLab {
		return `GitLab-Token realm="lorry-controller push hooks", header="X-Gitlab-Token"`
	}
	header := "X-Hub-Signature-256"
	if forge == forgehook.Gitea {
		header = "X-Gitea-Signature"
	}
	return `HMAC-SHA256 realm="lorry-controller push hooks", header="` + header + `"`
}
