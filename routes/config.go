package routes

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"lorrycontroller/confgit"
	"lorrycontroller/forgehook"
	"lorrycontroller/redact"
	"lorrycontroller/statedb"
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
	res, err := s.applyConfiguration(r.Context())
	if err != nil {
		return err
	}
	return ok(w, res)
}

// applyConfiguration fetches CONFGIT and applies it to the run queue in one
// transaction. A configuration that cannot be read or is broken changes
// nothing but the record of the failure.
func (s *Server) applyConfiguration(ctx context.Context) (readConfigResult, error) {
	s.configMu.Lock()
	defer s.configMu.Unlock()
	var res readConfigResult
	cfg, err := s.Config.Read(ctx)
	if err != nil {
		return res, s.configFailed(ctx, err)
	}
	if s.CheckHost != nil {
		for _, h := range cfg.Hosts {
			if err := s.CheckHost(h); err != nil {
				return res, s.configFailed(ctx, fmt.Errorf("host %q: %w", h.Name, err))
			}
		}
	}
	lorries := make([]statedb.NewLorry, len(cfg.Lorries))
	for i, l := range cfg.Lorries {
		lorries[i] = statedb.NewLorry{
			Path: l.Path, Text: l.Text, Kind: KindLorry, FromPath: l.File,
			Interval: int64(l.Interval.Seconds()), Timeout: int64(l.Timeout.Seconds()),
			Schedule: l.Schedule, UpstreamURL: forgehook.SpecURL(l.Text),
			MaxBackoff: int64(l.MaxBackoff.Seconds()), HardFailAfter: l.HardFailAfter,
		}
		// A scraper records the commit it was read from, whose files its
		// next job is handed with the runtime of that same commit.
		if l.Kind == KindScraper {
			lorries[i].Kind, lorries[i].CommitID = KindScraper, cfg.Commit
			lorries[i].Runtime = statedb.Runtime{Name: l.Runtime.Name, Version: l.Runtime.Version,
				ID: l.Runtime.ID, Python: l.Runtime.Python}
		}
	}
	runtimes := make([]statedb.RuntimeSection, len(cfg.Runtimes))
	for i, rt := range cfg.Runtimes {
		runtimes[i] = statedb.RuntimeSection{Name: rt.Name, Version: rt.Version, ID: rt.ID, Python: rt.Python,
			Path: rt.Path, Commit: cfg.Commit}
	}
	hosts := make([]statedb.Host, len(cfg.Hosts))
	for i, h := range cfg.Hosts {
		hosts[i] = statedb.Host{
			Name: h.Name, Type: h.Type, Protocol: h.Protocol,
			LsInterval: int64(h.LsInterval.Seconds()), Interval: int64(h.Interval.Seconds()),
			Timeout: int64(h.Timeout.Seconds()), Section: h.Section,
		}
	}
	queues := statedb.QueueConfig{Queues: make([]statedb.Queue, len(cfg.Queues)),
		Lorries: map[string]string{}, Hosts: map[string]string{}}
	for i, q := range cfg.Queues {
		queues.Queues[i] = statedb.Queue{Name: q.Name, Threads: q.Threads, Sort: q.Sort, Schedule: q.Schedule}
	}
	for _, l := range cfg.Lorries {
		if l.Queue != confgit.DefaultQueue {
			queues.Lorries[l.Path] = l.Queue
		}
	}
	for _, h := range cfg.Hosts {
		queues.Hosts[h.Name] = h.Queue
	}
	fileErrors := make([]statedb.FileError, len(cfg.Errors))
	for i, e := range cfg.Errors {
		fileErrors[i] = statedb.FileError{File: e.File, Error: e.Error}
	}
	var changes statedb.LorryChanges
	err = s.DB.Update(ctx, func(tx *statedb.Tx) error {
		var err error
		// New schedules are ticked at the next hand-out, whatever the
		// second.
		s.houseKept.Store(0)
		kept := statedb.Kept{FromPaths: cfg.Kept.Files, Paths: cfg.Kept.Paths}
		// A scheduled entry is first due at its first event from now,
		// not at once; never, if it has none left (the configuration
		// refuses such a schedule when read, but a clock set far
		// forward since can still find one).
		for i, l := range cfg.Lorries {
			if l.Cron != nil {
				first, ok := l.Cron.FirstMatch(tx.Now)
				if !ok {
					first = statedb.NoEvent
				}
				lorries[i].FirstDue = first
			}
		}
		if changes, err = tx.SetConfigLorries(ctx, lorries, kept); err != nil {
			return err
		}
		if _, err := tx.SetConfigHosts(ctx, hosts); err != nil {
			return err
		}
		if err := tx.SetConfigQueues(ctx, queues); err != nil {
			return err
		}
		return tx.SetConfigState(ctx, statedb.ConfigState{
			Commit: cfg.Commit, ReadAt: tx.Now, Lorries: len(lorries), Hosts: len(hosts),
			Errors: fileErrors, Changes: changes, Runtimes: runtimes,
		})
	})
	if err != nil {
		return res, err
	}
	s.Log.Info("configuration applied", "commit", cfg.Commit, "lorries", len(lorries), "hosts", len(hosts),
		"added", changes.Added, "changed", changes.Changed, "removed", changes.Removed, "skipped", len(fileErrors))
	for _, e := range fileErrors {
		s.Log.Warn("configuration file skipped", "file", e.File, "err", e.Error)
	}
	return readConfigResult{
		OK: true, Commit: cfg.Commit, Lorries: len(lorries), Hosts: len(hosts), Errors: fileErrors,
		Added: changes.Added, Changed: changes.Changed, Removed: changes.Removed,
	}, nil
}

// configFailed records why reading the configuration failed, and returns
// the error to answer with.
func (s *Server) configFailed(ctx context.Context, err error) error {
	msg := redact.URLs(err.Error())
	s.Log.Error("read configuration", "err", msg)
	recErr := s.DB.Update(ctx, func(tx *statedb.Tx) error {
		st, err := tx.ConfigState(ctx)
		if err != nil {
			return err
		}
		st.Failure, st.FailAt = msg, tx.Now
		return tx.SetConfigState(ctx, st)
	})
	if recErr != nil {
		return errors.Join(err, recErr)
	}
	var fetchErr *confgit.FetchError
	switch {
	case errors.Is(err, confgit.ErrBadConf):
		return errorf(http.StatusBadRequest, "%s", msg)
	case errors.As(err, &fetchErr):
		return errorf(http.StatusBadGateway, "%s", msg)
	case errors.Is(err, context.Canceled):
		return err
	}
	// The local clone is unusable: the detail (paths) is for the log and
	// the status page, which admins read.
	return errorf(http.StatusInternalServerError,
		"the local CONFGIT clone cannot be read; the WEBAPP log and status warning_msg say why")
}

// KindLorry is the kind of job that runs lorry on a spec.
const KindLorry = "lorry"
