package routes

import (
	"context"
	"errors"
	"net/http"

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

func (s *Server) readConfiguration(w http.ResponseWriter, r *http.Request) error {
	res, err := s.ApplyConfiguration(r.Context())
	if err != nil {
		return configError(err)
	}
	return ok(w, readConfigResult{
		OK: true, Commit: res.Commit, Lorries: res.Lorries, Hosts: res.Hosts, Errors: res.Errors,
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
