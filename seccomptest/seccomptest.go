// Package seccomptest gives a test's process the system call filter of
// systemd's RestrictSUIDSGID=, which the units set: chmod and mkdir that
// would set a setuid or setgid bit fail with EPERM. A test runs a child
// under it (the test binary started again, which calls Restrict first)
// to see that the child works as it would under its unit.
package seccomptest

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Env, set to "1" in a child's environment, tells the child to call
// Restrict first; it is how tests pass the filter on.
const Env = "LORRY_TEST_RESTRICT_SUIDSGID"

// ErrUnsupported says that this machine's architecture has no filter
// here.
var ErrUnsupported = errors.New("seccomptest: no filter for this architecture")

// Restrict puts every thread of this process, and every process it starts
// from then on, under the filter. It sets no_new_privs, as the units'
// NoNewPrivileges= does.
func Restrict() error {
	if runtime.GOARCH != "amd64" {
		return ErrUnsupported
	}
	prog := filter()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}

// The offsets of struct seccomp_data: the call's number, the
// architecture, and the low half of each argument (little-endian).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// filter is the BPF program: for each call that takes a mode, EPERM when
// the mode has S_ISUID or S_ISGID, and everything else allowed.
func filter() []unix.SockFilter {
	calls := []struct {
		nr  uint32
		arg uint32 // the mode's argument
	}{
		{unix.SYS_CHMOD, 1}, {unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2},
		{unix.SYS_MKDIR, 1}, {unix.SYS_MKDIRAT, 2},
		{unix.SYS_MKNOD, 1}, {unix.SYS_MKNODAT, 2},
	}
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	// 0: load arch; 1: not x86-64, allow; 2: load nr; then one jump per
	// call to its check; allow; two instructions per call (load the
	// mode, test it); allow; refuse. BPF jumps only forward.
	n := len(calls)
	allow := 3 + n
	check := func(i int) int { return allow + 1 + 2*i }
	allow2 := allow + 1 + 2*n
	deny := allow2 + 1
	p := []unix.SockFilter{
		{Code: ld, K: offArch},
		{Code: jeq, K: unix.AUDIT_ARCH_X86_64, Jt: 0, Jf: uint8(allow - 2)},
		{Code: ld, K: offNr},
	}
	for i, c := range calls {
		at := len(p)
		p = append(p, unix.SockFilter{Code: jeq, K: c.nr, Jt: uint8(check(i) - at - 1)})
	}
	p = append(p, unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW})
	for _, c := range calls {
		at := len(p) + 1 // the test's index
		p = append(p,
			unix.SockFilter{Code: ld, K: offArgs + 8*c.arg},
			unix.SockFilter{Code: jset, K: unix.S_ISUID | unix.S_ISGID, Jt: uint8(deny - at - 1), Jf: uint8(allow2 - at - 1)},
		)
	}
	p = append(p,
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	)
	return p
}
