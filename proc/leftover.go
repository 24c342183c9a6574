package proc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// MarkVar is the environment variable that marks every process of one job.
const MarkVar = "LORRY_CONTROLLER_JOB"

// NewMark returns a "MarkVar=value" entry, unique to one job, to add to the
// environment of the job's leader. Every process the job starts inherits
// it, whatever group or session it moves to, so that KillMarked can find
// the job's processes after the minion that started them has died.
func NewMark() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a job mark: %w", err)
	}
	return MarkVar + "=" + hex.EncodeToString(b), nil
}

// killRescan bounds how long KillMarked waits for the processes it killed
// in one pass before it looks again.
const killRescan = 100 * time.Millisecond

// KillMarked kills with SIGKILL every process of this user whose
// environment holds mark, and returns their pids once they are gone (or
// when ctx is done, with its error).
//
// The minion that started a job may have died without killing it: the
// parent-death signal reaches only the leader, and the rest of the job,
// re-parented to init, would go on working on a mirror that the next run
// of the lorry would work on too. A recorded process group id is not
// enough to find them again: once the group is empty its number can be
// reused by an unrelated process. The mark is unique to the job, so only
// the job's processes carry it. Each one is signalled through a pidfd
// opened before its environment is read, so that a process that dies and
// whose pid is reused in between is never signalled: the pidfd refers to
// the dead one, and the signal fails.
//
// With a user u, the environments are read as u (User.Do): a minion that
// runs its jobs as --job-user may read the environment of no process of
// another user, but a thread of it acting as that user may.
func KillMarked(ctx context.Context, mark string, u *User) ([]int, error) {
	if mark == "" {
		return nil, errors.New("kill marked processes: empty mark")
	}
	var killed []int
	for {
		// A process that forked while the last pass killed its
		// parent is found by the next one.
		var fds, pids []int
		err := u.Do(func() (err error) {
			fds, pids, err = signalMarked(mark)
			return err
		})
		if err != nil {
			return killed, err
		}
		if len(fds) == 0 {
			return killed, nil
		}
		killed = append(killed, pids...)
		err = waitExited(ctx, fds)
		for _, fd := range fds {
			unix.Close(fd)
		}
		if err != nil {
			return killed, fmt.Errorf("wait for marked processes %v: %w", pids, err)
		}
	}
}

// signalMarked sends SIGKILL to every live process carrying mark and
// returns pidfds of them to wait on.
func signalMarked(mark string) (fds, pids []int, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	want := []byte(mark)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		// Unreadable (another user's) or empty (a zombie): not ours to
		// kill, or dead already.
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !hasEntry(env, want) {
			unix.Close(fd)
			continue
		}
		if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
			unix.Close(fd)
			continue
		}
		fds = append(fds, fd)
		pids = append(pids, pid)
	}
	return fds, pids, nil
}

// hasEntry says whether the NUL-separated environment env holds entry.
func hasEntry(env, entry []byte) bool {
	for len(env) > 0 {
		var e []byte
		e, env, _ = bytes.Cut(env, []byte{0})
		if bytes.Equal(e, entry) {
			return true
		}
	}
	return false
}

// waitExited waits until every pidfd in fds is readable, which it becomes
// when its process has exited, or until killRescan has passed.
func waitExited(ctx context.Context, fds []int) error {
	deadline := time.Now().Add(killRescan)
	for _, fd := range fds {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			left := time.Until(deadline)
			if left <= 0 {
				return nil
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(pfd, int(left.Milliseconds())+1)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return err
			}
			if n > 0 {
				break
			}
		}
	}
	return nil
}
