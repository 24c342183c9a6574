package venv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"lorrycontroller.dev/lc/flock"
)

// Removal is one thing that GC or a builder's cleanup removed, or would
// have removed but found in use.
type Removal struct {
	Path   string // absolute
	Reason string // why it was to go, if it was for a reason of its own
}

// GCResult is what GC did.
type GCResult struct {
	Removed []Removal
	// InUse were to go but are held by a job (or a build): they are
	// tried again next time.
	InUse []Removal
}

// cleanup is the builder's part: having built s, it removes the other
// environments of the same name that no one uses.
func (c *Cache) cleanup(built slot) {
	slots, err := c.slots(built.name)
	if err != nil {
		c.log.Warn("runtime cleanup", "runtime", built.name, "err", err)
		return
	}
	since := started(built, time.Time{})
	for _, s := range slots {
		if s.version == built.version && s.id == built.id {
			continue
		}
		if info, err := readReady(s.env()); err == nil && started(s, info.Built).After(since) {
			// Asked for after this one: a newer deploy whose jobs
			// come next, while this build was for a job handed out
			// before it.
			continue
		}
		removed, err := c.remove(s)
		switch {
		case err != nil:
			c.log.Warn("runtime cleanup", "runtime", s.String(), "err", err)
		case removed:
			c.log.Info("runtime removed", "runtime", s.String(), "reason", "superseded by "+built.String())
		default:
			c.log.Info("runtime kept", "runtime", s.String(), "reason", "in use")
		}
	}
}

// remove removes the environment s and its lock files if no one uses it.
// It only tries for the locks: it never waits for a job to end.
func (c *Cache) remove(s slot) (bool, error) {
	usage, err := c.locks.tryLockFile(s.usage(), true)
	if errors.Is(err, flock.ErrLocked) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer usage.unlock()
	// With the usage lock held exclusively no Acquire holds the build
	// lock, but a builder that arrives must not start on a directory
	// that is going.
	build, err := c.locks.tryLockFile(s.build(), true)
	if errors.Is(err, flock.ErrLocked) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer build.unlock()
	if err := c.user.RemoveAll(s.env()); err != nil {
		return false, fmt.Errorf("remove %s: %w", s.env(), err)
	}
	// The lock files go while held; flock sees to it that whoever opened
	// them meanwhile tries again on a new file.
	err = errors.Join(os.Remove(s.usage()), os.Remove(s.build()))
	// Gone when empty; an Acquire that meanwhile made them again keeps
	// them.
	os.Remove(s.dir)
	os.Remove(filepath.Dir(s.dir))
	return true, err
}

// slots lists the environments of name, complete or not, and the IDs that
// only have lock files left.
func (c *Cache) slots(name string) ([]slot, error) {
	versions, err := os.ReadDir(filepath.Join(c.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []slot
	for _, v := range versions {
		if !v.IsDir() || component(v.Name()) != nil {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(c.dir, name, v.Name()))
		if err != nil {
			return nil, err
		}
		ids := map[string]bool{}
		for _, e := range entries {
			id := strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".usage"), ".build")
			if hexID.MatchString(id) {
				ids[id] = true
			}
		}
		for id := range ids {
			out = append(out, c.slot(name, v.Name(), id))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// GC removes, for every runtime name, the environments that are not the
// newest of their name, and the newest too if it has not been used for
// keepUnused; it keeps those that a job holds.
//
// The newest is the one whose build started last, not the one that
// completed last: when a deploy follows another quickly, a job handed the
// older runtime just before may finish building it after the newer one is
// built, and the newer one, which every later job is handed, must not go
// for it and be built a second time.
func (c *Cache) GC(keepUnused time.Duration) (GCResult, error) {
	var res GCResult
	names, err := os.ReadDir(c.dir)
	if err != nil {
		return res, fmt.Errorf("runtime cache: %w", err)
	}
	now := c.clock.Now()
	for _, n := range names {
		if !n.IsDir() || component(n.Name()) != nil {
			continue
		}
		slots, err := c.slots(n.Name())
		if err != nil {
			return res, fmt.Errorf("runtime cache %s: %w", n.Name(), err)
		}
		var newest *slot
		var newestBuilt, newestStarted time.Time
		built := map[string]time.Time{}
		for i, s := range slots {
			info, err := readReady(s.env())
			if err != nil {
				continue
			}
			built[s.String()] = info.Built
			if st := started(s, info.Built); newest == nil || st.After(newestStarted) {
				newest, newestBuilt, newestStarted = &slots[i], info.Built, st
			}
		}
		for _, s := range slots {
			var reason string
			switch {
			case newest == nil || s != *newest:
				if _, ok := built[s.String()]; ok {
					reason = "not the newest of " + s.name
				} else {
					reason = "incomplete"
				}
			default:
				used := lastUsed(s, newestBuilt)
				if now.Sub(used) < keepUnused {
					continue
				}
				reason = fmt.Sprintf("unused since %s", used.UTC().Format(time.RFC3339))
			}
			removed, err := c.remove(s)
			if err != nil {
				return res, err
			}
			r := Removal{Path: s.env(), Reason: reason}
			if removed {
				res.Removed = append(res.Removed, r)
			} else {
				res.InUse = append(res.InUse, r)
			}
		}
	}
	return res, nil
}

// started is when the build of s started, as its build lock's time says,
// or else built.
func started(s slot, built time.Time) time.Time {
	info, err := os.Stat(s.build())
	if err != nil {
		return built
	}
	return info.ModTime()
}

// lastUsed is when s was last acquired or released, or built if never.
func lastUsed(s slot, built time.Time) time.Time {
	info, err := os.Stat(s.usage())
	if err != nil || info.ModTime().Before(built) {
		return built
	}
	return info.ModTime()
}
