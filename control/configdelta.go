package control

import (
	"context"
	"errors"
	"slices"
	"strings"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/statedb"
)

// ConfigChanger is a ConfigReader that can read a commit as a change of
// an earlier one, reading only the .lorry files that differ, as
// *confgit.Source does.
type ConfigChanger interface {
	ReadChange(ctx context.Context, old string, maxFiles int) (*confgit.Delta, error)
}

// deltaFiles is the most .lorry files a commit may change for it to be
// applied as a change; beyond, it is read whole.
const deltaFiles = 1000

// deltaRead is a configuration read as a change of the one applied
// before.
type deltaRead struct {
	d *confgit.Delta
	// state is the configuration applied before.
	state statedb.ConfigState
	// old are the paths that the changed files defined before.
	old []string
}

// readDelta reads the configuration as a change of the commit this
// process applied whole last, when it can: a push of a few .lorry files
// to a CONFGIT of a million lorries then reads and applies those files
// only. It answers nil, and no error, when the configuration is to be
// read whole: nothing applied whole before, or in the database since by
// another process, lorry-controller.conf changed, a file changed that a
// lorries section does not select alone, a changed file skipped before,
// or a lorry path of a changed file that an unchanged file defines (the
// whole read tells which file keeps it).
func (a *configApply) readDelta() (*deltaRead, error) {
	s := a.app
	ch, ok := s.Config.(ConfigChanger)
	if !ok || s.configApplied == "" {
		return nil, nil
	}
	d, err := ch.ReadChange(a.ctx, s.configApplied, deltaFiles)
	if errors.Is(err, confgit.ErrReadWhole) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if d.Config.Commit == s.configApplied {
		return nil, nil
	}
	dr := &deltaRead{d: d}
	changed := map[string]bool{}
	for _, f := range d.Files {
		changed[f] = true
	}
	paths := make([]string, len(d.Config.Lorries))
	for i, l := range d.Config.Lorries {
		paths[i] = l.Path
	}
	whole := false
	err = s.DB.View(a.ctx, func(tx *statedb.Tx) error {
		var err error
		if dr.state, err = tx.ConfigState(a.ctx); err != nil {
			return err
		}
		partial, err := tx.ConfigPartial(a.ctx)
		if err != nil {
			return err
		}
		if partial || dr.state.Commit != s.configApplied ||
			slices.ContainsFunc(dr.state.Errors, func(e statedb.FileError) bool { return changed[e.File] }) {
			whole = true
			return nil
		}
		from, err := tx.LorryFiles(a.ctx, paths)
		if err != nil {
			return err
		}
		for _, f := range from {
			if !changed[f] {
				whole = true
				return nil
			}
		}
		// Of the paths the changed files defined, those the database
		// has from them: the lorries they define now, or defined.
		was, err := tx.LorryFiles(a.ctx, d.OldPaths)
		dr.old = nil // fn may run again (statedb.DB.View)
		for p, f := range was {
			if changed[f] {
				dr.old = append(dr.old, p)
			}
		}
		slices.Sort(dr.old)
		return err
	})
	if err != nil {
		a.applyErr = err
		return nil, err
	}
	if whole {
		return nil, nil
	}
	a.delta = dr
	return dr, nil
}

// applyDelta applies the sections and the lorries of the changed files.
func (a *configApply) applyDelta(dr *deltaRead) (*confgit.Config, error) {
	return a.applyRead(dr.d.Config)
}

// finishDelta removes the lorries that the changed files no longer
// define, and records the configuration as the one in use: the lorries of
// the files that did not change are as they were.
func (a *configApply) finishDelta(ctx context.Context, cfg *confgit.Config, dr *deltaRead) error {
	kept := statedb.Kept{FromPaths: cfg.Kept.Files, Paths: cfg.Kept.Paths}
	if err := a.update(func(tx *statedb.Tx) error { return tx.KeepConfigLorries(ctx, kept) }); err != nil {
		return err
	}
	runtimes := make([]statedb.RuntimeSection, len(cfg.Runtimes))
	for i, rt := range cfg.Runtimes {
		runtimes[i] = statedb.RuntimeSection{Name: rt.Name, Version: rt.Version, ID: rt.ID, Python: rt.Python,
			Path: rt.Path, Commit: cfg.Commit}
	}
	applied := a.count
	a.count = dr.state.Lorries - len(dr.old) + applied
	a.changes.Unchanged = a.count - a.changes.Added - a.changes.Changed
	fileErrors := a.errorsAfter(dr, a.fileErrors(cfg))
	return a.update(func(tx *statedb.Tx) error {
		n, err := tx.RemoveUnseenPaths(ctx, dr.old)
		if err != nil {
			return err
		}
		a.changes.Removed = n
		if err := tx.CompleteConfigLorries(ctx); err != nil {
			return err
		}
		return tx.SetConfigState(ctx, statedb.ConfigState{
			Commit: cfg.Commit, ReadAt: tx.Now, Lorries: a.count, Hosts: len(cfg.Hosts),
			Errors: fileErrors, Changes: a.changes, Runtimes: runtimes,
		})
	})
}

// errorsAfter are the skipped files of the configuration applied before,
// none of them changed, with those of the changed files, by file.
func (a *configApply) errorsAfter(dr *deltaRead, changed []statedb.FileError) []statedb.FileError {
	out := append(slices.Clone(dr.state.Errors), changed...)
	slices.SortStableFunc(out, func(x, y statedb.FileError) int { return strings.Compare(x.File, y.File) })
	return out
}

// filesRead is how many .lorry files were read, -1 for all of them.
func (a *configApply) filesRead() int {
	if a.delta == nil {
		return -1
	}
	return len(a.delta.d.Files)
}
