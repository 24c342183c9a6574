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

// open opens the lock file, made readable by its owner alone: a process
// that may open a lock file may take the lock, and hold up its owner.
func open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// TryExclusive takes the exclusive lock on path, creating the file if
// needed, or fails at once with ErrLocked.
func TryExclusive(path string) (*Lock, error) {
	return try(path, unix.LOCK_EX)
}

// TryShared takes a shared lock on path, creating the file if needed, or
// fails at once with ErrLocked if another process holds the exclusive lock.
// Any number of shared locks are held at once; none while an exclusive one
// is.
func TryShared(path string) (*Lock, error) {
	return try(path, unix.LOCK_SH)
}

// TryExclusiveDir takes the exclusive lock on the directory dir, which
// must exist, or fails at once with ErrLocked. The directory itself is
// locked: no lock file is left in it, or beside it, to get in the way of
// what it holds.
func TryExclusiveDir(dir string) (*Lock, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return &Lock{f: f}, nil
}

// try locks path in mode how without blocking.
//
// The holder of an exclusive lock may remove the lock file, for example
// with the directory it guards. A process that opened the file just before
// would then lock a file that no longer has a name while the next one
// creates and locks a new file: two holders. So once locked, try checks
// that path still names the file it locked, and starts again if not.
func try(path string, how int) (*Lock, error) {
	for {
		f, err := open(path)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("lock %s: %w", path, ErrLocked)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		same, err := named(f, path)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if same {
			return &Lock{f: f}, nil
		}
		f.Close()
	}
}

// named reports whether path still names the open file f.
func named(f *os.File, path string) (bool, error) {
	var held, now unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &held); err != nil {
		return false, err
	}
	if err := unix.Stat(path, &now); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	return held.Dev == now.Dev && held.Ino == now.Ino, nil
}

// pollInterval is how often Exclusive tries again. flock(2) has no timeout,
// and blocking in it would leave a goroutine behind on cancellation.
const pollInterval = 50 * time.Millisecond

// Exclusive waits until it has the exclusive lock on path, up to wait (and
// while ctx lasts). It fails with ErrLocked, saying how long it waited, if
// the lock stays taken.
func Exclusive(ctx context.Context, path string, wait time.Duration) (*Lock, error) {
	return poll(ctx, path, wait, TryExclusive)
}

// Shared waits until it has a shared lock on path, up to wait (and while ctx
// lasts), like Exclusive.
func Shared(ctx context.Context, path string, wait time.Duration) (*Lock, error) {
	return poll(ctx, path, wait, TryShared)
}

func poll(ctx context.Context, path string, wait time.Duration, try func(string) (*Lock, error)) (*Lock, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := try(path)
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

// File is the open lock file. A child process given it (exec.Cmd's
// ExtraFiles) shares the lock: it stays held while any process has the file
// open, so a job that outlives its starter still holds it.
func (l *Lock) File() *os.File { return l.f }

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

// Unlock releases the lock, also for any child that was given File.
func (l *Lock) Unlock() error {
	err := unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	return errors.Join(err, l.f.Close())
}

// Close closes this process's copy of the lock file. The lock is released
// once no other process has the file open either: unlike Unlock, Close
// leaves the lock to a child that was given File and still runs.
func (l *Lock) Close() error {
	return l.f.Close()
}
