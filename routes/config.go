package routes

import (
	"context"
	"errors"
	"net/http"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
)

// readConfigResult is the answer to read-configuration.
type readConfigResult struct {
	OK      bool                `json:"ok"`
	Commit  string              `json:"commit"`
	Lorries int                 `json:"lorries"`
	Hosts   int                 `json:"hosts"`
	Errors  []statedb.FileError `json:"errors"`
	Added   int                 `json:"added"`
	Changed int                 `json:"changed"`
	Removed int                 `json:"removed"`
}

// DefaultConfigWait is how long read-configuration waits for the
// configuration to be applied before it answers 202 Accepted, the
// application going on; ?wait= sets it per request.
const DefaultConfigWait = time.Minute

// maxConfigWait bounds ?wait=.
const maxConfigWait = time.Hour

// readConfigAccepted is the answer to a read-configuration that has not
// ended within its wait: it goes on, and status shows how far it is.
type readConfigAccepted struct {
	OK       bool                    `json:"ok"`
	Applying *control.ConfigProgress `json:"applying"`
}

func (s *Server) readConfiguration(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	secs, err := p.seconds("wait")
	if err != nil {
		return err
	}
	wait := DefaultConfigWait
	if secs != nil {
		wait = min(time.Duration(*secs)*time.Second, maxConfigWait)
	}
	// The application runs to its end whatever happens to this request.
	run := s.StartConfiguration(r.Context())
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-run.Done():
	case <-timer.C:
		// A caller who joined the run after the one under way is shown
		// that one's progress.
		p, ok := s.ConfigRunning()
		if !ok {
			p = run.Progress()
		}
		return writeJSON(w, http.StatusAccepted, readConfigAccepted{OK: true, Applying: &p})
	case <-r.Context().Done():
		return context.Cause(r.Context())
	}
	res, err := run.Result()
	if err != nil {
		return configError(err)
	}
	return ok(w, readConfigResult{
		OK: true, Commit: res.Commit, Lorries: res.Lorries, Hosts: res.Hosts, Errors: list(res.Errors),
		Added: res.Added, Changed: res.Changed, Removed: res.Removed,
	})
}

// configError is the error that answers a configuration that could not
// be read or is broken.
func configError(err error) error {
	var failed *control.ConfigFailed
	if !errors.As(err, &failed) {
		return err
	}
	var fetchErr *confgit.FetchError
	switch {
	case errors.Is(err, confgit.ErrBadConf):
		return errorf(http.StatusBadRequest, "%s", failed.Msg)
	case errors.As(err, &fetchErr):
		return errorf(http.StatusBadGateway, "%s", failed.Msg)
	case errors.Is(err, context.Canceled):
		return err
	}
	// The local clone is unusable: the detail (paths) is for the log and
	// the status page, which admins read.
	return errorf(http.StatusInternalServerError,
		"the local CONFGIT clone cannot be read; the WEBAPP log and status warning_msg say why")
}
