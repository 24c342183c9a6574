// Package proc runs the child processes of a minion: each child leads its own
// process group, dies with its parent, can be stopped with SIGTERM followed by
// SIGKILL, and has its output collected in the background so that the caller's
// loop never blocks on a pipe.
//
// Linux only: it relies on process groups, the parent-death signal and
// waitid(WNOWAIT).
package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DeathSignal is what a child receives when the minion dies without killing
// it first. SIGKILL, because the child leads its own process group and so a
// TERM sent by the kernel would reach only the leader: a leader that handles
// TERM badly could survive and be mirrored a second time by another minion.
const DeathSignal = syscall.SIGKILL

// pipeDrain bounds how long Wait keeps reading the output pipes after the
// group has been killed. Only a process that left the group (setsid) can
// still hold them open then, and it must not keep the job alive.
const pipeDrain = 2 * time.Second

// Command describes a child to start.
type Command struct {
	Name string   // program, looked up in PATH when it has no slash
	Args []string // arguments after the program name
	Env  []string // environment; nil means the parent's
	Dir  string   // working directory; empty means the parent's

	// ExtraFiles are inherited by the child as descriptors 3, 4, ...,
	// open across exec, as in exec.Cmd: the locks and pipes a job keeps
	// for as long as any of its processes lives.
	ExtraFiles []*os.File

	// User, when set, is who the child runs as, with that user's group
	// and no other: the minion's --job-user.
	User *User
}

// Process is a running (or finished) child started by Start.
type Process struct {
	pid int

	stdout, stderr buffer

	// mu orders signals against reaping: while exited is false the leader
	// has not been reaped, so its pid, which is the group id, cannot have
	// been reused and a signal to the group cannot hit a stranger.
	mu     sync.Mutex
	exited bool
	// pidfd refers to the leader from its start until it is reaped, for
	// its watchdog (StartWatchdog); nil after.
	pidfd *os.File

	killOnce sync.Once
	done     chan struct{}
	exit     int
	waitErr  error
}

// Start starts c as the leader of a new process group with DeathSignal as
// its parent-death signal.
//
// Linux sends the parent-death signal when the thread that forked the child
// exits, not when the process does, and the Go runtime ends threads whose
// goroutine exits while locked to them (runtime.LockOSThread). A child
// forked from an arbitrary goroutine could therefore be killed at a random
// moment. Start forks from a goroutine locked to its thread and keeps that
// goroutine, and so the thread, busy waiting for the child until the child
// has exited. The child gets none of the minion's ambient or inheritable
// capabilities, nor, run as another user by a minion that may clear it,
// any bounding set.
func Start(c Command) (*Process, error) {
	cmd := exec.Command(c.Name, c.Args...)
	cmd.Env = c.Env
	cmd.Dir = c.Dir
	cmd.ExtraFiles = c.ExtraFiles
	p := &Process{done: make(chan struct{}), exit: -1}
	cmd.Stdout = &p.stdout
	cmd.Stderr = &p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: DeathSignal}
	if c.User != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.User.UID, Gid: c.User.GID, Groups: []uint32{}}
	}
	cmd.WaitDelay = pipeDrain

	started := make(chan error, 1)
	go p.run(cmd, c.User, started)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	return p, nil
}

func (p *Process) run(cmd *exec.Cmd, u *User, started chan<- error) {
	// No UnlockOSThread: the thread ends with this goroutine, so that
	// the capabilities dropped for the child are dropped on no thread
	// that the minion goes on using.
	runtime.LockOSThread()

	if err := dropCapabilities(u); err != nil {
		started <- err
		return
	}
	if err := cmd.Start(); err != nil {
		started <- err
		return
	}
	p.pid = cmd.Process.Pid
	// Opened before this goroutine can reap the leader, so that it
	// refers to the job's leader, not to a process given its pid later.
	if fd, err := unix.PidfdOpen(p.pid, 0); err == nil {
		p.pidfd = os.NewFile(uintptr(fd), "pidfd")
	}
	started <- nil

	// Wait for the leader to exit but leave it a zombie, so that the
	// group id stays ours while the rest of the group is killed: helpers
	// left behind by the job would otherwise outlive it, holding its
	// working area and its output pipes.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	p.mu.Lock()
	p.exited = true
	_ = unix.Kill(-p.pid, unix.SIGKILL)
	p.mu.Unlock()

	err := cmd.Wait()
	p.mu.Lock()
	if p.pidfd != nil {
		p.pidfd.Close()
		p.pidfd = nil
	}
	p.mu.Unlock()
	p.exit = exitCode(cmd, err)
	if errors.Is(err, exec.ErrWaitDelay) {
		p.waitErr = err
	}
	close(p.done)
}

// exitCode follows the shell: the exit status, or 128 plus the signal number
// when a signal ended the process.
func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return -1
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
	return cmd.ProcessState.ExitCode()
}

// Pid is the process id of the child, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// NewOutput returns what the child wrote to stdout and to stderr since the
// previous call. It never blocks on the child.
func (p *Process) NewOutput() (stdout, stderr []byte) {
	return p.stdout.take(), p.stderr.take()
}

// Kill sends SIGTERM to the child's process group and, if the child has not
// exited after grace, SIGKILL to the group. It does not wait; use Done or
// Wait for that. Only the first call has an effect.
func (p *Process) Kill(grace time.Duration) {
	p.killOnce.Do(func() {
		p.signalGroup(unix.SIGTERM)
		go func() {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-p.done:
			case <-t.C:
				p.signalGroup(unix.SIGKILL)
			}
		}()
	})
}

func (p *Process) signalGroup(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return
	}
	_ = unix.Kill(-p.pid, sig)
}

// Done is closed when the child has exited, its group has been killed and
// its output has been collected.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for Done and returns the exit code: the child's exit status, or
// 128 plus the signal number if a signal ended it.
func (p *Process) Wait() int {
	<-p.done
	return p.exit
}

// Err reports, once Done is closed, whether output may be missing because
// something outside the group kept the pipes open (exec.ErrWaitDelay).
func (p *Process) Err() error {
	<-p.done
	return p.waitErr
}

// buffer collects one output stream of the child.
type buffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *buffer) Write(data []byte) (int, error) {
	b.mu.Lock()
	b.buf = append(b.buf, data...)
	b.mu.Unlock()
	return len(data), nil
}

func (b *buffer) take() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.buf
	b.buf = nil
	return out
}
