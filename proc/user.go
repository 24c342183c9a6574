package proc

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// User is a user, other than the minion's own, that children run as: the
// minion's --job-user. Switching to it takes CAP_SETUID and CAP_SETGID,
// and signalling its processes CAP_KILL; root has all three.
type User struct {
	Name string
	UID  uint32
	GID  uint32
	Home string
}

// Do runs fn with file system access checked as u's: on a thread of its
// own whose file system user and group (setfsuid, setfsgid) are u's, so
// that what fn creates belongs to u and what u made is open to fn as it
// is to u, whatever the modes. A nil u runs fn as it is.
//
// The ids are the thread's alone: the thread is thrown away afterwards
// (the goroutine exits locked to it), so no other goroutine ever runs
// with them. fn must do its work on the calling goroutine.
func (u *User) Do(fn func() error) error {
	if u == nil {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with the goroutine.
		if err := u.becomeOnThread(); err != nil {
			done <- err
			return
		}
		done <- fn()
	}()
	return <-done
}

// becomeOnThread sets this thread's file system ids to u's and checks
// that they took: setfsuid(2) reports no error, only the id it had.
func (u *User) becomeOnThread() error {
	unix.Setfsgid(int(u.GID))
	unix.Setfsuid(int(u.UID))
	gid, _ := unix.SetfsgidRetGid(-1)
	uid, _ := unix.SetfsuidRetUid(-1)
	if uint32(uid) != u.UID || uint32(gid) != u.GID {
		return fmt.Errorf("act as user %s (%d:%d): not permitted without CAP_SETUID and CAP_SETGID", u.Name, u.UID, u.GID)
	}
	return nil
}

// ShareDir makes dir, which this process owns, a directory that u may add
// entries to but not remove or rename those of others: group u's, mode
// 1770 (sticky). It fails unless this process may give dir u's group:
// root, or a user who is a member of it.
func (u *User) ShareDir(dir string) error {
	if u == nil {
		return nil
	}
	if err := os.Lchown(dir, -1, int(u.GID)); err != nil {
		return fmt.Errorf("give %s to the group of %s: %w (the minion's user must own it and be in that group)", dir, u.Name, err)
	}
	if err := os.Chmod(dir, 0o770|os.ModeSticky); err != nil {
		return fmt.Errorf("share %s with %s: %w", dir, u.Name, err)
	}
	return nil
}

// dropCapabilities clears the calling thread's inheritable and ambient
// capabilities, so that a child it forks holds none of the minion's
// capabilities once it has executed its program. Under systemd's
// AmbientCapabilities= the minion got CAP_SETUID, CAP_SETGID and
// CAP_KILL as ambient ones, and so as inheritable ones too: execve
// passes the ambient set on to any program, and the inheritable one to a
// program whose file carries them (cap_setuid+ei), which would make a job
// any user, the minion's included.
//
// With a user to run as, it also clears the thread's bounding set where
// the thread may (CAP_SETPCAP), so that no file capability can raise the
// job's. The minion's unit grants no CAP_SETPCAP: there the bounding set
// stays the unit's CapabilityBoundingSet=, and the empty inheritable set
// is what keeps a file's capabilities from the job.
func dropCapabilities(u *User) error {
	// Kernels without ambient capabilities (before 4.3) have none to clear.
	err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	setpcap := data[unix.CAP_SETPCAP/32].Effective&(1<<(unix.CAP_SETPCAP%32)) != 0
	if data[0].Inheritable != 0 || data[1].Inheritable != 0 {
		data[0].Inheritable, data[1].Inheritable = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("clear inheritable capabilities: %w", err)
		}
	}
	if u == nil || !setpcap {
		return nil
	}
	// 64: every capability the set can hold, newer ones than this
	// package knows included.
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		// EINVAL: a capability this kernel does not know.
		if err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("clear bounding capability %d: %w", c, err)
		}
	}
	return nil
}

// RemoveAll removes path and everything under it, as this process and as
// u: a tree where each has made files of its own, in directories of the
// other's, needs both. A nil u removes as this process alone.
func (u *User) RemoveAll(path string) error {
	if err := os.RemoveAll(path); err == nil || u == nil {
		return err
	}
	if err := u.Do(func() error { return os.RemoveAll(path) }); err == nil {
		return nil
	}
	return os.RemoveAll(path)
}
