package proc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A job must end by the end of its lease whatever becomes of the minion
// that runs it. The minion's own lease timer cannot act while the minion
// is stopped (SIGSTOP, a frozen cgroup, a stalled machine), and the job,
// in a process group of its own, runs on meanwhile; its lease ends, the
// WEBAPP ends it as a ghost and hands its lorry to another minion, and the
// two runs would work on one mirror at once.
//
// So each job has a watchdog: a process of its own, outside the minion's
// process group and the job's, that holds the job's deadline and kills
// the job's processes when it passes. The minion moves the deadline on
// after each report that reaches the WEBAPP, through a pipe; a stopped
// minion moves nothing, and a minion that dies closes the pipe, which
// kills the job at once.

// WatchdogArg is the first argument of a watchdog: a program that runs
// jobs starts one by running itself with it, and hands the rest of its
// arguments to WatchdogMain.
const WatchdogArg = "watchdog"

// watchdogFDs are the watchdog's descriptors: the pipe the minion writes
// deadlines to, and a pidfd of the job's leader.
const (
	watchdogPipeFD   = 3
	watchdogLeaderFD = 4
)

// released is the deadline that says the job is over: the watchdog exits
// without killing anything.
const released = 0

// never is the deadline of a job without a lease.
const never = math.MaxInt64

// Watchdog is the minion's end of a job's watchdog.
type Watchdog struct {
	w   *os.File
	cmd *exec.Cmd
}

// WatchdogCommand is how to start the watchdog of job process p.
type WatchdogCommand struct {
	// Program runs the watchdog when given WatchdogArg and then the
	// arguments of WatchdogMain: the minion itself.
	Program string
	// Mark is the job's mark (NewMark), in every process of the job.
	Mark string
	// User is who the job runs as; nil for the minion's own user.
	User *User
	// Deadline is when the job's lease ends; zero for never.
	Deadline time.Time
	// Grace is how long the watchdog waits between SIGTERM and SIGKILL.
	Grace time.Duration
}

// StartWatchdog starts the watchdog of p, which kills p's process group
// and every process carrying c.Mark once c.Deadline has passed, unless
// Renew moves it on first, or at once if this process dies. A job over
// already needs none: its Watchdog does nothing.
//
// It is started from the caller's thread, not from the one that started
// p, which gave up its capabilities for p: the watchdog must keep those
// that let it signal the processes of p's user.
func StartWatchdog(p *Process, c WatchdogCommand) (*Watchdog, error) {
	// Held while the watchdog starts, so that the leader is not reaped
	// and its pidfd closed meanwhile.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pidfd == nil {
		return &Watchdog{}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start watchdog: %w", err)
	}
	defer r.Close()
	args := []string{WatchdogArg, "--pgid", strconv.Itoa(p.pid), "--mark", c.Mark,
		"--grace", c.Grace.String(), "--deadline", strconv.FormatInt(monotonic(c.Deadline), 10)}
	if c.User != nil {
		args = append(args, "--uid", strconv.FormatUint(uint64(c.User.UID), 10), "--gid", strconv.FormatUint(uint64(c.User.GID), 10))
	}
	cmd := exec.Command(c.Program, args...)
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{r, p.pidfd}
	// A group of its own: a stop or an interrupt sent to the minion's
	// group (a terminal's Ctrl-Z) does not reach it. No parent-death
	// signal: it is to outlive a minion that dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("start watchdog: %w", err)
	}
	return &Watchdog{w: w, cmd: cmd}, nil
}

// Renew moves the deadline to end; zero means never.
func (wd *Watchdog) Renew(end time.Time) error {
	if wd.cmd == nil {
		return nil
	}
	return wd.send(monotonic(end))
}

// Release tells the watchdog that the job is over, and waits for it to
// exit. Only the first call has an effect.
func (wd *Watchdog) Release() error {
	if wd.w == nil {
		return nil
	}
	err := wd.send(released)
	wd.w.Close()
	wd.w = nil
	return errors.Join(err, wd.cmd.Wait())
}

func (wd *Watchdog) send(deadline int64) error {
	if wd.w == nil {
		return errors.New("watchdog released")
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(deadline))
	if _, err := wd.w.Write(b[:]); err != nil {
		return fmt.Errorf("renew watchdog: %w", err)
	}
	return nil
}

// monotonic is t on CLOCK_MONOTONIC, in nanoseconds, which the minion
// and the watchdog share and which no one sets; never for zero. It reads
// the clock before measuring the time left until t, so that a pause in
// between makes the deadline earlier, never later.
func monotonic(t time.Time) int64 {
	if t.IsZero() {
		return never
	}
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return max(ts.Nano()+int64(time.Until(t)), released+1)
}

// WatchdogMain is the watchdog process: args are what StartWatchdog gave
// after WatchdogArg. It returns the process's exit status.
func WatchdogMain(args []string) int {
	// Signals meant for the minion's unit or terminal are not its: it
	// ends when the minion releases it or dies.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	c, err := parseWatchdog(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lorry-controller-minion watchdog:", err)
		return 2
	}
	why := c.wait(os.NewFile(watchdogPipeFD, "deadlines"))
	if why == "" {
		return 0
	}
	fmt.Fprintf(os.Stderr, "lorry-controller-minion watchdog: %s: killing job (process group %d)\n", why, c.pgid)
	c.kill(os.NewFile(watchdogLeaderFD, "leader"))
	return 0
}

type watchdog struct {
	pgid     int
	mark     string
	user     *User
	grace    time.Duration
	deadline int64
}

func parseWatchdog(args []string) (*watchdog, error) {
	c := &watchdog{}
	var uid, gid int64 = -1, -1
	for len(args) >= 2 {
		name, v := args[0], args[1]
		args = args[2:]
		var err error
		switch name {
		case "--pgid":
			c.pgid, err = strconv.Atoi(v)
		case "--mark":
			c.mark = v
		case "--grace":
			c.grace, err = time.ParseDuration(v)
		case "--deadline":
			c.deadline, err = strconv.ParseInt(v, 10, 64)
		case "--uid":
			uid, err = strconv.ParseInt(v, 10, 64)
		case "--gid":
			gid, err = strconv.ParseInt(v, 10, 64)
		default:
			return nil, fmt.Errorf("unknown argument %s", name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(args) != 0 || c.pgid <= 1 || c.mark == "" {
		return nil, errors.New("usage: watchdog --pgid PGID --mark MARK --grace DURATION --deadline NS [--uid UID --gid GID]")
	}
	if uid >= 0 {
		c.user = &User{Name: strconv.FormatInt(uid, 10), UID: uint32(uid), GID: uint32(gid)}
	}
	return c, nil
}

// wait waits for the deadline, moving it as the minion says, and says
// why the job is to be killed: "" when the minion released it.
func (c *watchdog) wait(pipe *os.File) string {
	deadlines := make(chan int64)
	go func() {
		defer close(deadlines)
		var b [8]byte
		for {
			if _, err := io.ReadFull(pipe, b[:]); err != nil {
				return
			}
			deadlines <- int64(binary.BigEndian.Uint64(b[:]))
		}
	}()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		if c.deadline != never {
			t.Reset(time.Duration(c.deadline - now()))
		}
		select {
		case d, ok := <-deadlines:
			switch {
			case !ok:
				return "the minion is gone"
			case d == released:
				return ""
			}
			c.deadline = d
		case <-t.C:
			if now() >= c.deadline {
				return "the job's lease ended without a report reaching the WEBAPP"
			}
		}
	}
}

func now() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// kill sends SIGTERM to the job's group, and after the grace SIGKILL to
// the group and to every process carrying the job's mark. The group is
// signalled only while its leader is unreaped (leader, a pidfd, still
// takes a signal), so that its id cannot be another's: a leader reaped
// by another parent frees its pid for reuse.
func (c *watchdog) kill(leader *os.File) {
	signalGroup := func(sig unix.Signal) {
		if unix.PidfdSendSignal(int(leader.Fd()), 0, nil, 0) == nil {
			_ = unix.Kill(-c.pgid, sig)
		}
	}
	signalGroup(unix.SIGTERM)
	// The grace ends early if the leader exits; the rest of the group
	// gets no longer than it.
	pfd := []unix.PollFd{{Fd: int32(leader.Fd()), Events: unix.POLLIN}}
	for end := time.Now().Add(c.grace); time.Now().Before(end); {
		n, err := unix.Poll(pfd, int(time.Until(end).Milliseconds())+1)
		if n > 0 || err != nil && !errors.Is(err, unix.EINTR) {
			break
		}
	}
	signalGroup(unix.SIGKILL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := KillMarked(ctx, c.mark, c.user); err != nil {
		fmt.Fprintln(os.Stderr, "lorry-controller-minion watchdog:", err)
	}
}
