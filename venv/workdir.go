package venv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"lorrycontroller.dev/lc/flock"
	"lorrycontroller.dev/lc/proc"
)

// ScrapersDir is the directory, in a minion's working area, of the
// scrapers' working directories: one per minion, WORKING-AREA/scrapers/NAME,
// locked by NAME.lock beside it.
const ScrapersDir = "scrapers"

// WorkDir is a minion's scraper working directory, held exclusively so that
// no other minion of the same name works there and GC leaves it alone.
type WorkDir struct {
	// Path is the directory, empty when locked.
	Path string
	lock *flock.Lock
}

// LockWorkDir takes the working directory of the minion called name in
// workingArea, and empties it: whatever is there is left from a job that
// ended. It fails with flock.ErrLocked if another process holds it: a
// minion of the same name, or a job of an earlier one still running.
//
// With a user u, the jobs run as u: the directory is u's, made in a
// directory shared with u (proc.User.ShareDir) beside a lock that stays
// the minion's.
func LockWorkDir(workingArea, name string, u *proc.User) (*WorkDir, error) {
	if err := component(name); err != nil {
		return nil, fmt.Errorf("scraper working directory for minion %q: %w", name, err)
	}
	base := filepath.Join(workingArea, ScrapersDir)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("scraper working directory: %w", err)
	}
	if err := u.ShareDir(base); err != nil {
		return nil, fmt.Errorf("scraper working directory: %w", err)
	}
	l, err := flock.TryExclusive(filepath.Join(base, name+".lock"))
	if err != nil {
		return nil, fmt.Errorf("scraper working directory for minion %s: %w", name, err)
	}
	dir := filepath.Join(base, name)
	if err := u.RemoveAll(dir); err != nil {
		l.Unlock()
		return nil, fmt.Errorf("empty scraper working directory: %w", err)
	}
	if err := u.Do(func() error { return os.Mkdir(dir, 0o755) }); err != nil {
		l.Unlock()
		return nil, fmt.Errorf("scraper working directory: %w", err)
	}
	return &WorkDir{Path: dir, lock: l}, nil
}

// File is the open lock file, for the job's process (exec.Cmd's
// ExtraFiles), so that the directory stays held while the job lives.
func (w *WorkDir) File() *os.File { return w.lock.File() }

// Close drops this process's hold; a process given File keeps its own.
func (w *WorkDir) Close() error { return w.lock.Close() }

// GCWorkDirs removes the scraper working directories in workingArea that
// no minion or job holds; u is the user the jobs ran as, if any.
func GCWorkDirs(workingArea string, u *proc.User) (GCResult, error) {
	var res GCResult
	base := filepath.Join(workingArea, ScrapersDir)
	entries, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("scraper working directories: %w", err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		n := strings.TrimSuffix(e.Name(), ".lock")
		if component(n) == nil {
			names[n] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		dir, lockPath := filepath.Join(base, n), filepath.Join(base, n+".lock")
		r := Removal{Path: dir, Reason: "no minion holds it"}
		l, err := flock.TryExclusive(lockPath)
		if errors.Is(err, flock.ErrLocked) {
			res.InUse = append(res.InUse, Removal{Path: dir})
			continue
		}
		if err != nil {
			return res, err
		}
		err = u.RemoveAll(dir)
		if err == nil {
			err = os.Remove(lockPath)
		}
		l.Unlock()
		if err != nil {
			return res, fmt.Errorf("remove %s: %w", dir, err)
		}
		res.Removed = append(res.Removed, r)
	}
	return res, nil
}
