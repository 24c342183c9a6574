// Package flock is an advisory lock on a file, so that processes on one
// machine (two minions running lorry, say) never work on the same thing at
// once. The kernel drops the lock when its holder dies, so a crash never
// leaves a stale lock behind.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLocked means another process holds the lock.
var ErrLocked = errors.New("locked by another process")

// Lock is a held lock on a file.
type Lock struct {
	f *os.File
}

func open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// TryExclusive takes the exclusive lock on path, creating the file if
// needed, or fails at once with ErrLocked.
func TryExclusive(path string) (*Lock, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// pollInterval is how often Exclusive tries again. flock(2) has no timeout,
// and blocking in it would leave a goroutine behind on cancellation.
const pollInterval = 50 * time.Millisecond

// Exclusive waits until it has the exclusive lock on path, up to wait (and
// while ctx lasts). It fails with ErrLocked, saying how long it waited, if
// the lock stays taken.
func Exclusive(ctx context.Context, path string, wait time.Duration) (*Lock, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := TryExclusive(path)
		if !errors.Is(err, ErrLocked) {
			return l, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock %s: waited %v: %w", path, wait, ErrLocked)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// Inherit has every child process started from now on inherit the lock's
// file descriptor across exec, so that the lock stays held while any of
// them runs, even if this process dies. A flock belongs to the open file,
// not to a process: the children then hold it with us, and a child left
// behind by a killed holder keeps the lock until it exits too. Unlock still
// releases it for all of them, so call it only once the children are done.
func (l *Lock) Inherit() error {
	if _, err := unix.FcntlInt(l.f.Fd(), unix.F_SETFD, 0); err != nil {
		return fmt.Errorf("lock %s: let children inherit it: %w", l.f.Name(), err)
	}
	return nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() error {
	err := unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	return errors.Join(err, l.f.Close())
}
