package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv makes the test binary act as a parent that starts a child with
// Start, prints the child's pid and then waits to be killed.
const helperEnv = "PROC_TEST_HELPER_PARENT"

// capsEnv makes the test binary act as a minion that starts a job as
// the user whose uid and gid it holds ("uid:gid"), prints the job's
// capabilities and exits.
const capsEnv = "PROC_TEST_CAPS_JOB"

func TestMain(m *testing.M) {
	if ids := os.Getenv(capsEnv); ids != "" {
		var uid, gid uint32
		fmt.Sscanf(ids, "%d:%d", &uid, &gid)
		caps, err := jobCaps(&User{Name: "job", UID: uid, GID: gid})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Print(caps)
		os.Exit(0)
	}
	if os.Getenv(helperEnv) == "1" {
		p, err := Start(Command{Name: "sh", Args: []string{"-c", "sleep 1000"}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(p.Pid())
		select {}
	}
	os.Exit(m.Run())
}

// waitDone fails the test if p has not finished within a generous bound; the
// bound only keeps a broken implementation from hanging the test run.
func waitDone(t *testing.T, p *Process) int {
	t.Helper()
	select {
	case <-p.Done():
		return p.Wait()
	case <-time.After(30 * time.Second):
		p.Kill(0)
		t.Fatalf("child %d did not finish", p.Pid())
		return -1
	}
}

// gone reports whether pid no longer runs. Orphans are reparented to a PID 1
// that may never reap them, so a zombie counts as gone.
func gone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state == 'Z' || state == 'X'
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err == nil && bytes.HasSuffix(data, []byte("\n")) {
			return data
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitStdout reads p's stdout until it contains want.
func waitStdout(t *testing.T, p *Process, want string) {
	t.Helper()
	var out []byte
	deadline := time.Now().Add(30 * time.Second)
	for !bytes.Contains(out, []byte(want)) {
		if time.Now().After(deadline) {
			p.Kill(0)
			t.Fatalf("stdout: got %q, want it to contain %q", out, want)
		}
		o, _ := p.NewOutput()
		out = append(out, o...)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{name: "success", script: "exit 0", want: 0},
		{name: "failure", script: "exit 3", want: 3},
		{name: "high status", script: "exit 200", want: 200},
		{name: "killed by itself", script: "kill -KILL $$", want: 128 + 9},
		{name: "terminated by itself", script: "kill -TERM $$", want: 128 + 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(Command{Name: "sh", Args: []string{"-c", tt.script}})
			if err != nil {
				t.Fatal(err)
			}
			if got := waitDone(t, p); got != tt.want {
				t.Errorf("exit code: got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestStartMissingProgram(t *testing.T) {
	p, err := Start(Command{Name: filepath.Join(t.TempDir(), "no-such-program")})
	if err == nil {
		t.Fatalf("got process %d, want an error", p.Pid())
	}
}

func TestEnvAndDir(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(Command{
		Name: "sh",
		Args: []string{"-c", `echo "$GREETING"; pwd`},
		Env:  []string{"GREETING=hello", "PATH=" + os.Getenv("PATH")},
		Dir:  dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	out, _ := p.NewOutput()
	want := "hello\n" + dir + "\n"
	if string(out) != want {
		t.Errorf("stdout: got %q, want %q", out, want)
	}
}

// The child inherits ExtraFiles from descriptor 3 on, open.
func TestExtraFiles(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.WriteString("from the parent\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	p, err := Start(Command{Name: "sh", Args: []string{"-c", "cat <&3"}, ExtraFiles: []*os.File{r}})
	if err != nil {
		t.Fatal(err)
	}
	if exit := waitDone(t, p); exit != 0 {
		_, stderr := p.NewOutput()
		t.Fatalf("exit: got %d, want 0; stderr %q", exit, stderr)
	}
	out, _ := p.NewOutput()
	if string(out) != "from the parent\n" {
		t.Errorf("stdout: got %q, want what the parent wrote to descriptor 3", out)
	}
}

func TestOwnProcessGroup(t *testing.T) {
	p, err := Start(Command{Name: "sh", Args: []string{"-c", "sleep 1000"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill(0)
	pgid, err := unix.Getpgid(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if pgid != p.Pid() {
		t.Errorf("process group: got %d, want %d", pgid, p.Pid())
	}
	if pgid == unix.Getpgrp() {
		t.Errorf("child shares the test's process group %d", pgid)
	}
}

// TestOutputWhileRunning checks that output arrives while the child runs,
// separately per stream, and that each call returns only what is new.
func TestOutputWhileRunning(t *testing.T) {
	dir := t.TempDir()
	next := filepath.Join(dir, "next")
	script := `echo out1; echo err1 >&2
while [ ! -e "$1" ]; do sleep 0.01; done
echo out2; echo err2 >&2; exit 4`
	p, err := Start(Command{Name: "sh", Args: []string{"-c", script, "sh", next}})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr []byte
	deadline := time.Now().Add(30 * time.Second)
	for string(stdout) != "out1\n" || string(stderr) != "err1\n" {
		if time.Now().After(deadline) {
			t.Fatalf("output while running: got %q and %q, want %q and %q", stdout, stderr, "out1\n", "err1\n")
		}
		o, e := p.NewOutput()
		stdout, stderr = append(stdout, o...), append(stderr, e...)
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-p.Done():
		t.Fatal("child finished before it was told to")
	default:
	}
	if o, e := p.NewOutput(); len(o)+len(e) != 0 {
		t.Errorf("second read: got %q and %q, want nothing new", o, e)
	}
	if err := os.WriteFile(next, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := waitDone(t, p); got != 4 {
		t.Errorf("exit code: got %d, want 4", got)
	}
	o, e := p.NewOutput()
	if string(o) != "out2\n" || string(e) != "err2\n" {
		t.Errorf("output after exit: got %q and %q, want %q and %q", o, e, "out2\n", "err2\n")
	}
}

func TestKill(t *testing.T) {
	tests := []struct {
		name   string
		script string
		grace  time.Duration
		want   int
	}{
		{name: "term", script: "echo ready; sleep 1000", grace: time.Minute, want: 128 + 15},
		{name: "term trapped escalates to kill", script: "trap '' TERM; echo ready; while :; do sleep 0.05; done", grace: 200 * time.Millisecond, want: 128 + 9},
		{name: "term handled", script: "trap 'echo bye; exit 7' TERM; echo ready; while :; do sleep 0.05; done", grace: time.Minute, want: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(Command{Name: "sh", Args: []string{"-c", tt.script}})
			if err != nil {
				t.Fatal(err)
			}
			// The trap must be in place before the signal is sent.
			waitStdout(t, p, "ready\n")
			start := time.Now()
			p.Kill(tt.grace)
			p.Kill(tt.grace) // idempotent
			got := waitDone(t, p)
			if got != tt.want {
				t.Errorf("exit code: got %d, want %d", got, tt.want)
			}
			if tt.want == 128+9 && time.Since(start) < tt.grace {
				t.Errorf("killed after %v, want no earlier than the grace %v", time.Since(start), tt.grace)
			}
			p.Kill(tt.grace) // after exit: no effect, no panic
		})
	}
}

// TestKillReachesGrandchild checks that Kill signals the whole group, not
// only the leader.
func TestKillReachesGrandchild(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := `sleep 1000 & echo $! > "$1"; wait`
	p, err := Start(Command{Name: "sh", Args: []string{"-c", script, "sh", pidFile}})
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(waitFile(t, pidFile))))
	if err != nil {
		t.Fatal(err)
	}
	if gone(grandchild) {
		t.Fatalf("grandchild %d is not running before the kill", grandchild)
	}
	p.Kill(time.Minute)
	if got, want := waitDone(t, p), 128+15; got != want {
		t.Errorf("exit code: got %d, want %d", got, want)
	}
	waitGone(t, grandchild)
}

// TestLeftoverGroupKilled checks that helpers left in the group by a leader
// that exits on its own neither survive it nor hold up Wait by keeping the
// output pipes open.
func TestLeftoverGroupKilled(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := `sleep 1000 & echo $! > "$1"; echo leader done`
	p, err := Start(Command{Name: "sh", Args: []string{"-c", script, "sh", pidFile}})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitDone(t, p); got != 0 {
		t.Errorf("exit code: got %d, want 0", got)
	}
	if err := p.Err(); err != nil {
		t.Errorf("wait: got %v, want no error", err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(waitFile(t, pidFile))))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, grandchild)
	if out, _ := p.NewOutput(); string(out) != "leader done\n" {
		t.Errorf("stdout: got %q, want %q", out, "leader done\n")
	}
}

// TestEscapedPipeHolder checks that a process that left the group but keeps
// the output pipes open delays Wait only by a bounded time.
func TestEscapedPipeHolder(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := `setsid sh -c 'echo $$ > "$1"; exec sleep 1000' sh "$1" & while [ ! -s "$1" ]; do sleep 0.01; done; echo leader done`
	p, err := Start(Command{Name: "sh", Args: []string{"-c", script, "sh", pidFile}})
	if err != nil {
		t.Fatal(err)
	}
	escaped, err := strconv.Atoi(strings.TrimSpace(string(waitFile(t, pidFile))))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(escaped, syscall.SIGKILL)
	if got := waitDone(t, p); got != 0 {
		t.Errorf("exit code: got %d, want 0", got)
	}
	if err := p.Err(); !errors.Is(err, exec.ErrWaitDelay) {
		t.Errorf("wait: got %v, want %v", err, exec.ErrWaitDelay)
	}
	if out, _ := p.NewOutput(); string(out) != "leader done\n" {
		t.Errorf("stdout: got %q, want %q", out, "leader done\n")
	}
}

// TestParentDeath re-executes the test binary as a parent that starts a child
// and is then SIGKILLed: the child must die with it.
func TestParentDeath(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(exe, "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"=1")
	helper.Stderr = os.Stderr
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("read child pid from helper: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child pid: got %q: %v", line, err)
	}
	if gone(child) {
		t.Fatalf("child %d is not running before its parent dies", child)
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	waitGone(t, child)
}

// TestStarterThreadExit checks the parent-death signal is tied to the child's
// lifetime rather than to the thread of whoever called Start: the caller's
// goroutine here is locked to its thread and exits, which ends the thread.
func TestStarterThreadExit(t *testing.T) {
	dir := t.TempDir()
	next := filepath.Join(dir, "next")
	script := `while [ ! -e "$1" ]; do sleep 0.01; done; echo alive`
	type result struct {
		p   *Process
		tid int
		err error
	}
	var r result
	// The runtime parks the main thread instead of ending it, so a
	// goroutine that happened to run there proves nothing: try again.
	for attempt := 0; ; attempt++ {
		ch := make(chan result)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			p, err := Start(Command{Name: "sh", Args: []string{"-c", script, "sh", next}})
			ch <- result{p, unix.Gettid(), err}
		}()
		r = <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.tid != os.Getpid() {
			break
		}
		r.p.Kill(0)
		waitDone(t, r.p)
		if attempt == 20 {
			t.Fatal("every starting goroutine ran on the main thread")
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", r.tid)); err != nil {
			break
		}
		if time.Now().After(deadline) {
			r.p.Kill(0)
			t.Fatalf("thread %d of the starting goroutine did not end", r.tid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(next, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := waitDone(t, r.p); got != 0 {
		t.Errorf("exit code: got %d, want 0", got)
	}
	if out, _ := r.p.NewOutput(); string(out) != "alive\n" {
		t.Errorf("stdout: got %q, want %q", out, "alive\n")
	}
}

// jobCaps starts a job as u that prints the capability lines of its
// /proc/self/status, and returns them.
func jobCaps(u *User) (string, error) {
	p, err := Start(Command{Name: "grep", Args: []string{"^Cap", "/proc/self/status"}, User: u})
	if err != nil {
		return "", err
	}
	code := p.Wait()
	out, errOut := p.NewOutput()
	if code != 0 {
		return "", fmt.Errorf("grep exit %d: %s", code, errOut)
	}
	return string(out), nil
}

// capSets parses the lines of jobCaps into set name -> mask.
func capSets(t *testing.T, lines string) map[string]string {
	t.Helper()
	sets := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		name, mask, ok := strings.Cut(l, ":\t")
		if !ok {
			t.Fatalf("capability line %q", l)
		}
		sets[name] = mask
	}
	return sets
}

const noCaps = "0000000000000000"

// The test's users: the minion's and the jobs', ids no one else uses.
const (
	testMinionID = 61741
	testJobID    = 61742
)

// A job run as another user starts with no capabilities in any set,
// though the minion that starts it holds CAP_SETUID, CAP_SETGID and
// CAP_KILL as ambient, and so inheritable, ones, as under its unit's
// AmbientCapabilities=: with any inheritable one left, a program whose
// file carries it (cap_setuid+ei) would get it back. That minion lacks
// CAP_SETPCAP and so keeps the bounding set it was given.
func TestJobUserCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: starting the minion as another user with capabilities takes root (CI runs this as root)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir, whose parent only root may enter.
	dir, err := os.MkdirTemp("", "jobcaps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "proc.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	minion := exec.Command(exe)
	minion.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d", capsEnv, testJobID, testJobID))
	minion.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: testMinionID, Gid: testMinionID, Groups: []uint32{}},
		AmbientCaps: []uintptr{unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_KILL},
	}
	var stderr bytes.Buffer
	minion.Stderr = &stderr
	out, err := minion.Output()
	if err != nil {
		t.Fatalf("minion: %v\n%s", err, stderr.Bytes())
	}
	sets := capSets(t, string(out))
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if sets[set] != noCaps {
			t.Errorf("job's %s: got %s, want %s", set, sets[set], noCaps)
		}
	}
}

// A minion that may clear the bounding set (CAP_SETPCAP: here root)
// starts a job as another user with it empty too.
func TestJobUserBoundingSet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: starting a job as another user takes root (CI runs this as root)")
	}
	out, err := jobCaps(&User{Name: "job", UID: testJobID, GID: testJobID})
	if err != nil {
		t.Fatal(err)
	}
	sets := capSets(t, out)
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if sets[set] != noCaps {
			t.Errorf("job's %s: got %s, want %s", set, sets[set], noCaps)
		}
	}
}
