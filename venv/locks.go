package venv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"lorrycontroller.dev/lc/flock"
)

// waitForever bounds a wait for another process's lock only by the
// caller's context: a build may rightly take many minutes.
const waitForever = 1 << 62

// lockTable is the in-process level of the cache's locks. Goroutines of
// one process queue here, on channels, before the flock that orders them
// against other processes; so they never poll for each other, and a
// goroutine's try fails on what another goroutine holds even before the
// kernel is asked.
type lockTable struct {
	mu    sync.Mutex
	locks map[string]*rwEntry
}

type rwEntry struct {
	readers int
	writer  bool
	// changed is closed, and replaced, whenever the lock is released, to
	// wake the waiters.
	changed chan struct{}
	// refs counts holders and waiters; the entry goes when none is left,
	// so the table does not grow with every runtime ever used.
	refs int
}

func (t *lockTable) entry(path string) *rwEntry {
	if t.locks == nil {
		t.locks = map[string]*rwEntry{}
	}
	e := t.locks[path]
	if e == nil {
		e = &rwEntry{changed: make(chan struct{})}
		t.locks[path] = e
	}
	return e
}

func (t *lockTable) drop(path string, e *rwEntry) {
	if e.refs == 0 {
		delete(t.locks, path)
	}
}

func (e *rwEntry) free(exclusive bool) bool {
	return !e.writer && (!exclusive || e.readers == 0)
}

func (e *rwEntry) take(exclusive bool) {
	if exclusive {
		e.writer = true
	} else {
		e.readers++
	}
}

// lock waits for path's lock in this process.
func (t *lockTable) lock(ctx context.Context, path string, exclusive bool) error {
	t.mu.Lock()
	e := t.entry(path)
	e.refs++
	for !e.free(exclusive) {
		ch := e.changed
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.mu.Lock()
			e.refs--
			t.drop(path, e)
			t.mu.Unlock()
			return ctx.Err()
		}
		t.mu.Lock()
	}
	e.take(exclusive)
	t.mu.Unlock()
	return nil
}

// tryLock takes path's lock in this process if it is free.
func (t *lockTable) tryLock(path string, exclusive bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(path)
	if !e.free(exclusive) {
		t.drop(path, e)
		return false
	}
	e.refs++
	e.take(exclusive)
	return true
}

func (t *lockTable) unlock(path string, exclusive bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.locks[path]
	if exclusive {
		e.writer = false
	} else {
		e.readers--
	}
	close(e.changed)
	e.changed = make(chan struct{})
	e.refs--
	t.drop(path, e)
}

// held is a lock taken on both levels.
type held struct {
	table     *lockTable
	path      string
	exclusive bool
	fl        *flock.Lock
}

// lock waits for the lock on path on both levels, in-process first. The
// directory of path is made if missing, and made again if a cleanup
// removes it in between.
func (t *lockTable) lockFile(ctx context.Context, path string, exclusive bool) (*held, error) {
	if err := t.lock(ctx, path, exclusive); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.unlock(path, exclusive)
			return nil, err
		}
		var fl *flock.Lock
		var err error
		if exclusive {
			fl, err = flock.Exclusive(ctx, path, waitForever)
		} else {
			fl, err = flock.Shared(ctx, path, waitForever)
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.unlock(path, exclusive)
			return nil, err
		}
		return &held{table: t, path: path, exclusive: exclusive, fl: fl}, nil
	}
}

// tryLockFile takes the lock on path on both levels without waiting, or
// fails with flock.ErrLocked.
func (t *lockTable) tryLockFile(path string, exclusive bool) (*held, error) {
	if !t.tryLock(path, exclusive) {
		return nil, fmt.Errorf("lock %s: held in this process: %w", path, flock.ErrLocked)
	}
	var fl *flock.Lock
	var err error
	if exclusive {
		fl, err = flock.TryExclusive(path)
	} else {
		fl, err = flock.TryShared(path)
	}
	if err != nil {
		t.unlock(path, exclusive)
		return nil, err
	}
	return &held{table: t, path: path, exclusive: exclusive, fl: fl}, nil
}

// unlock releases the lock on both levels.
func (h *held) unlock() error {
	err := h.fl.Unlock()
	h.table.unlock(h.path, h.exclusive)
	return err
}

// close drops this process's hold on the lock, leaving it to any child
// that was given the file.
func (h *held) close() error {
	err := h.fl.Close()
	h.table.unlock(h.path, h.exclusive)
	return err
}

// touch records now as the lock file's modification time: the last use of
// what it guards.
func touch(path string, now time.Time) error {
	return os.Chtimes(path, now, now)
}
