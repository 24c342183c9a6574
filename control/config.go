package control

import (
	"context"
	"errors"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/forgehook"
	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

// ConfigResult is what applying the configuration did.
type ConfigResult struct {
	Commit  string
	Lorries int
	Hosts   int
	Errors  []statedb.FileError
	Added   int
	Changed int
	Removed int
}

// configBatch is how many lorries of the configuration are read and
// applied at a time: a commit of 100,000 lorries is never held whole, by
// the WEBAPP or by one transaction.
const configBatch = 1000

// ApplyConfiguration fetches CONFGIT and applies it to the run queue. A
// configuration that cannot be read or is broken changes nothing but the
// record of the failure.
//
// The lorries are applied in batches, a transaction each, as they are
// read, and the lorries the configuration no longer defines are removed
// only after all of them, so that a hand-out meanwhile finds every lorry
// as it was or as the configuration has it, and every lorry that either
// defines. A read that fails halfway removes nothing; the next one
// completes it.
//
// It holds the lease LeaseConfig throughout, renewed in every
// transaction; if another process holds it, it waits up to LeaseWait for
// it and then answers an ErrBusy error, changing nothing.
//
// It waits for the run of StartConfiguration, or for ctx to end, which
// leaves the run going.
func (a *App) ApplyConfiguration(ctx context.Context) (ConfigResult, error) {
	run := a.StartConfiguration(ctx)
	select {
	case <-run.Done():
		return run.Result()
	case <-ctx.Done():
		return ConfigResult{}, context.Cause(ctx)
	}
}

// applyLocked applies the configuration under the lease, noting its
// progress in run.
func (a *App) applyLocked(ctx context.Context, run *ConfigRun) (ConfigResult, error) {
	a.configMu.Lock()
	defer a.configMu.Unlock()
	ctx, ok, err := a.takeLease(ctx, LeaseConfig, a.leaseWait())
	if err != nil {
		return ConfigResult{}, err
	}
	if !ok {
		return ConfigResult{}, busy("applying the configuration")
	}
	defer a.releaseLease(ctx, LeaseConfig)
	return a.applyConfiguration(ctx, run)
}

func (a *App) applyConfiguration(ctx context.Context, run *ConfigRun) (ConfigResult, error) {
	if a.firstApply == 0 {
		a.firstApply = a.DB.Now()
	}
	ap := &configApply{app: a, ctx: ctx, batch: a.ConfigBatch, run: run}
	if ap.batch <= 0 {
		ap.batch = configBatch
	}
	var cfg *confgit.Config
	dr, err := ap.readDelta()
	switch st, ok := a.Config.(ConfigStreamer); {
	case dr != nil || err != nil:
		if err == nil {
			cfg, err = ap.applyDelta(dr)
		}
	case ok:
		ap.mayKeep = true
		cfg, err = st.ReadEach(ctx, ap.batch, ap.sections, ap.lorries)
	default:
		cfg, err = ap.readWhole(ctx)
	}
	if err == nil && !ap.unchanged {
		if dr != nil {
			err = ap.finishDelta(ctx, cfg, dr)
		} else {
			err = ap.finish(ctx, cfg)
		}
	}
	if ap.begun {
		// The paths seen so far are let go of, whatever happened.
		end := context.WithoutCancel(ctx)
		if endErr := a.DB.Update(end, func(tx *statedb.Tx) error {
			if err := a.checkLease(end, tx, LeaseConfig); err != nil {
				return err
			}
			return tx.EndConfigLorries(end)
		}); endErr != nil {
			err, ap.applyErr = errors.Join(err, endErr), endErr
		}
	}
	if err != nil {
		if ap.applyErr != nil {
			return ConfigResult{}, err
		}
		return ConfigResult{}, a.configFailed(ctx, err)
	}
	if ap.unchanged {
		return ap.same(ctx)
	}
	a.configApplied = cfg.Commit
	fileErrors := ap.fileErrors(cfg)
	if dr != nil {
		fileErrors = ap.errorsAfter(dr, fileErrors)
	}
	ch := ap.changes
	a.Log.Info("configuration applied", "commit", cfg.Commit, "lorries", ap.count, "hosts", len(cfg.Hosts),
		"added", ch.Added, "changed", ch.Changed, "removed", ch.Removed, "skipped", len(fileErrors), "batches", ap.batches,
		"files_read", ap.filesRead())
	for _, e := range fileErrors {
		a.Log.Warn("configuration file skipped", "file", e.File, "err", e.Error)
	}
	return ConfigResult{
		Commit: cfg.Commit, Lorries: ap.count, Hosts: len(cfg.Hosts), Errors: fileErrors,
		Added: ch.Added, Changed: ch.Changed, Removed: ch.Removed,
	}, nil
}

// configApply is one application of a configuration, batch by batch.
type configApply struct {
	app   *App
	ctx   context.Context // the caller's
	batch int
	run   *ConfigRun // its progress is noted here
	// delta is the configuration read as a change of the one before,
	// nil when it is read whole.
	delta *deltaRead
	// mayKeep says that a commit already applied whole may be left as
	// it is, without reading its files.
	mayKeep   bool
	unchanged bool // it was, and nothing was read
	begun     bool // BeginConfigLorries ran
	// applyErr is the error of a transaction, as opposed to one of
	// reading the configuration.
	applyErr error
	commit   string
	changes  statedb.LorryChanges
	count    int // lorries applied
	batches  int // transactions that applied them
}

// readWhole reads a configuration from a ConfigReader that hands it out
// whole, and applies its lorries in batches all the same.
func (a *configApply) readWhole(ctx context.Context) (*confgit.Config, error) {
	cfg, err := a.app.Config.Read(ctx)
	if err != nil {
		return nil, err
	}
	return a.applyRead(cfg)
}

// applyRead applies a configuration read whole: its sections, then its
// lorries in batches.
func (a *configApply) applyRead(cfg *confgit.Config) (*confgit.Config, error) {
	if err := a.sections(cfg); err != nil {
		return nil, err
	}
	for rest := cfg.Lorries; len(rest) > 0; {
		n := min(a.batch, len(rest))
		if err := a.lorries(rest[:n]); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return cfg, nil
}

// sections checks the configuration's sections and, unless its commit is
// the one applied last, starts applying it: its hosts and queues first,
// so that its lorries find their queues.
func (a *configApply) sections(cfg *confgit.Config) error {
	s := a.app
	if err := CheckSections(cfg, s.CheckHost); err != nil {
		return err
	}
	a.commit = cfg.Commit
	a.run.setCommit(cfg.Commit)
	if a.mayKeep && cfg.Commit != "" {
		var st struct {
			statedb.ConfigState
			partial bool
		}
		err := s.DB.View(a.ctx, func(tx *statedb.Tx) error {
			var err error
			if st.ConfigState, err = tx.ConfigState(a.ctx); err != nil {
				return err
			}
			st.partial, err = tx.ConfigPartial(a.ctx)
			return err
		})
		if err != nil {
			a.applyErr = err
			return err
		}
		// Another process may have begun applying a configuration since,
		// and not finished. A commit applied whole is left as it is if
		// this process applied it, or another did while this one ran:
		// a process started since (a new version, say) applies it again.
		if st.Commit == cfg.Commit && !st.partial && (cfg.Commit == s.configApplied || st.ReadAt >= s.firstApply) {
			a.unchanged = true
			return confgit.ErrSkipFiles
		}
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
		Hosts: map[string]string{}, LorriesPlaced: true}
	for i, q := range cfg.Queues {
		queues.Queues[i] = statedb.Queue{Name: q.Name, Threads: q.Threads, Sort: q.Sort, Schedule: q.Schedule}
	}
	for _, h := range cfg.Hosts {
		queues.Hosts[h.Name] = h.Queue
	}
	// Until this apply ends, the lorries are part this commit's and part
	// the last's.
	s.configApplied = ""
	return a.update(func(tx *statedb.Tx) error {
		if err := tx.BeginConfigLorries(a.ctx); err != nil {
			return err
		}
		a.begun = true
		if _, err := tx.SetConfigHosts(a.ctx, hosts); err != nil {
			return err
		}
		return tx.SetConfigQueues(a.ctx, queues)
	})
}

// lorries applies one batch of the configuration's lorries.
func (a *configApply) lorries(batch []confgit.Lorry) error {
	lorries := make([]statedb.NewLorry, len(batch))
	for i, l := range batch {
		lorries[i] = statedb.NewLorry{
			Path: l.Path, Text: l.Text, Kind: wire.KindLorry, FromPath: l.File,
			Interval: int64(l.Interval.Seconds()), Timeout: int64(l.Timeout.Seconds()),
			Schedule: l.Schedule, UpstreamURL: forgehook.SpecURL(l.Text),
			MaxBackoff: int64(l.MaxBackoff.Seconds()), HardFailAfter: l.HardFailAfter,
			Queue: l.Queue,
		}
		if lorries[i].Queue == "" {
			lorries[i].Queue = statedb.DefaultQueue
		}
		// A scraper records the commit it was read from, whose files its
		// next job is handed with the runtime of that same commit.
		if l.Kind == wire.KindScraper {
			lorries[i].Kind, lorries[i].CommitID = wire.KindScraper, a.commit
			lorries[i].Runtime = statedb.Runtime{Name: l.Runtime.Name, Version: l.Runtime.Version,
				ID: l.Runtime.ID, Python: l.Runtime.Python}
		}
	}
	return a.update(func(tx *statedb.Tx) error {
		// A scheduled entry is first due at its first event from now,
		// not at once; never, if it has none left (the configuration
		// refuses such a schedule when read, but a clock set far
		// forward since can still find one).
		for i, l := range batch {
			if l.Cron != nil {
				first, ok := l.Cron.FirstMatch(tx.Now)
				if !ok {
					first = statedb.NoEvent
				}
				lorries[i].FirstDue = first
			}
		}
		ch, err := tx.AddConfigLorries(a.ctx, lorries)
		if err != nil {
			return err
		}
		a.changes.Added += ch.Added
		a.changes.Changed += ch.Changed
		a.changes.Unchanged += ch.Unchanged
		a.count += len(lorries)
		a.batches++
		a.run.addLorries(len(lorries))
		return nil
	})
}

// finish removes the lorries that the configuration no longer defines, a
// batch at a time, and records the configuration as the one in use.
func (a *configApply) finish(ctx context.Context, cfg *confgit.Config) error {
	kept := statedb.Kept{FromPaths: cfg.Kept.Files, Paths: cfg.Kept.Paths}
	if err := a.update(func(tx *statedb.Tx) error { return tx.KeepConfigLorries(ctx, kept) }); err != nil {
		return err
	}
	runtimes := make([]statedb.RuntimeSection, len(cfg.Runtimes))
	for i, rt := range cfg.Runtimes {
		runtimes[i] = statedb.RuntimeSection{Name: rt.Name, Version: rt.Version, ID: rt.ID, Python: rt.Python,
			Path: rt.Path, Commit: cfg.Commit}
	}
	fileErrors := a.fileErrors(cfg)
	for after, done := "", false; !done; {
		err := a.update(func(tx *statedb.Tx) error {
			n, last, err := tx.RemoveUnseenLorries(ctx, after, a.batch)
			if err != nil {
				return err
			}
			a.changes.Removed += n
			after, done = last, last == ""
			if !done {
				return nil
			}
			if err := tx.CompleteConfigLorries(ctx); err != nil {
				return err
			}
			return tx.SetConfigState(ctx, statedb.ConfigState{
				Commit: cfg.Commit, ReadAt: tx.Now, Lorries: a.count, Hosts: len(cfg.Hosts),
				Errors: fileErrors, Changes: a.changes, Runtimes: runtimes,
			})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// same answers for a commit applied whole before, whose files were not
// read again: nothing but the configuration can have changed the lorries
// it defines.
func (a *configApply) same(ctx context.Context) (ConfigResult, error) {
	var st statedb.ConfigState
	err := a.app.DB.Update(ctx, func(tx *statedb.Tx) error {
		if err := a.app.checkLease(ctx, tx, LeaseConfig); err != nil {
			return err
		}
		var err error
		if st, err = tx.ConfigState(ctx); err != nil {
			return err
		}
		st.ReadAt, st.Changes = tx.Now, statedb.LorryChanges{Unchanged: st.Lorries}
		st.Failure, st.FailAt = "", 0
		return tx.SetConfigState(ctx, st)
	})
	if err != nil {
		return ConfigResult{}, err
	}
	a.app.Log.Info("configuration applied", "commit", st.Commit, "lorries", st.Lorries, "hosts", st.Hosts, "unchanged", true)
	return ConfigResult{Commit: st.Commit, Lorries: st.Lorries, Hosts: st.Hosts, Errors: st.Errors}, nil
}

// update runs fn in a write transaction of its own, and remembers its
// error as one of applying.
func (a *configApply) update(fn func(*statedb.Tx) error) error {
	err := a.app.DB.Update(a.ctx, func(tx *statedb.Tx) error {
		if err := a.app.checkLease(a.ctx, tx, LeaseConfig); err != nil {
			return err
		}
		return fn(tx)
	})
	if err != nil {
		a.applyErr = err
	}
	return err
}

// fileErrors are the configuration's skipped files, as stored, logged
// and answered: their errors quote specs, so the credentials of URLs in
// them are hidden.
func (a *configApply) fileErrors(cfg *confgit.Config) []statedb.FileError {
	out := make([]statedb.FileError, len(cfg.Errors))
	for i, e := range cfg.Errors {
		out[i] = statedb.FileError{File: e.File, Error: redact.URLs(e.Error)}
	}
	return out
}

// ConfigFailed is the error of a configuration that could not be read
// or is broken: Err is why, and Msg says it without the credentials of
// URLs. The failure is recorded for the status page.
type ConfigFailed struct {
	Msg string
	Err error
}

func (e *ConfigFailed) Error() string { return e.Msg }
func (e *ConfigFailed) Unwrap() error { return e.Err }

// configFailed records why reading the configuration failed, and returns
// the error to answer with: a *ConfigFailed unless recording failed too.
func (a *App) configFailed(ctx context.Context, err error) error {
	msg := redact.URLs(err.Error())
	a.Log.Error("read configuration", "err", msg)
	recErr := a.DB.Update(ctx, func(tx *statedb.Tx) error {
		if err := a.checkLease(ctx, tx, LeaseConfig); err != nil {
			return err
		}
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
	return &ConfigFailed{Msg: msg, Err: err}
}
