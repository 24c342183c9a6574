package proc

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// KeepInheritedFromChildren marks every descriptor above stderr that this
// process has open close-on-exec, so that a child is given only its
// standard streams and the ExtraFiles of its Command.
//
// Go opens its own descriptors close-on-exec, but those a process
// inherited from whoever started it stay open across exec: a minion
// started with a descriptor of its starter's (a socket, a lock, a
// secret) would otherwise hand it to every job. Call it first thing,
// before anything is started.
func KeepInheritedFromChildren() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	// Kernels before 5.11 lack the flag: one descriptor at a time.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The descriptor of the listing itself is closed by now.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("mark descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}
