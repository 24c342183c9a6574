package proc

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// WithUmask runs fn on a thread of its own whose umask is mask, so that
// what fn makes, and what the children it starts make, have the modes
// mask allows whatever the process's umask is (a unit's UMask=0027).
//
// A repository shared by a group needs that: git makes each directory
// group-writable and setgid with chmod when the umask did not, and
// systemd's RestrictSUIDSGID= refuses every chmod that sets a setgid bit.
// Made under the right umask in a setgid directory, a directory has its
// modes already and git leaves it be.
//
// The umask is the thread's alone (unshare CLONE_FS), and the thread is
// thrown away afterwards, as in User.Do. Where the thread may not have
// its own (a container's seccomp profile refusing unshare), fn runs
// under the process's umask: callers still set the modes they need.
// fn must do its work, and start its children, on the calling goroutine.
func WithUmask(mask int, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with the goroutine.
		if unix.Unshare(unix.CLONE_FS) == nil {
			unix.Umask(mask)
		}
		done <- fn()
	}()
	return <-done
}
