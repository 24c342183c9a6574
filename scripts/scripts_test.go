// Package scripts holds the shell scripts of the build (the demo, the test
// dependencies); its tests run them.
package scripts

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// toolDir makes a directory of links to the named tools, to stand for a
// PATH on a machine that has those and no others.
func toolDir(t *testing.T, tools ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s is needed to run this test: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A machine without the converters is told, before any test runs, the
// exact line that installs them.
func TestDepsNamesWhatIsMissing(t *testing.T) {
	path := toolDir(t, "bash", "dirname", "id", "git", "make", "gcc", "curl", "systemd-analyze")
	cmd := exec.Command("./deps", "--check")
	cmd.Env = append(os.Environ(), "PATH="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("deps --check with converters missing: got %v, want exit 1; stderr:\n%s", err, stderr.String())
	}
	for _, pkg := range []string{"subversion", "mercurial", "git-remote-hg", "brz", "cvsps", "cvs", "mmdebstrap", "systemd-container"} {
		if !strings.Contains(stderr.String(), " "+pkg) {
			t.Errorf("deps --check does not name %s; stderr:\n%s", pkg, stderr.String())
		}
	}
	if !strings.Contains(stderr.String(), "apt-get install -y --no-install-recommends ") {
		t.Errorf("deps --check does not give the apt-get line; stderr:\n%s", stderr.String())
	}
}

// make test checks its dependencies before it runs a test.
func TestMakeTestChecksDepsFirst(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	out, err := exec.Command("make", "-n", "-C", "..", "test").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n test: %v\n%s", err, out)
	}
	deps := strings.Index(string(out), "scripts/deps")
	gotest := strings.Index(string(out), " test ")
	if deps < 0 || gotest < 0 || deps > gotest {
		t.Errorf("make test does not run scripts/deps before go test; make -n test says:\n%s", out)
	}
}

// makeError matches make's report of an error: "make: ***", or
// "make[1]: ***" when make test runs it.
var makeError = regexp.MustCompile(`make(\[[0-9]+\])?: \*\*\*`)

// make run stops every process it started, and with no error from make,
// whether the signal reaches every process of the terminal's job (Ctrl-C)
// or make alone (a script or a service manager stopping it).
func TestMakeRunStops(t *testing.T) {
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run this test: %v", tool, err)
		}
	}
	// The programs are built first, so that each case waits for the demo
	// alone.
	if out, err := exec.Command("make", "-C", "..", "build").CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		group bool // to every process of make's group, as Ctrl-C does
	}{
		{"SIGTERM to make", syscall.SIGTERM, false},
		{"SIGINT to make", syscall.SIGINT, false},
		{"Ctrl-C", syscall.SIGINT, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			demo := t.TempDir()
			cmd := exec.Command("make", "-C", "..", "--no-print-directory", "run")
			cmd.Env = append(os.Environ(), "DEMO="+demo, "LISTEN=127.0.0.1:0")
			// make leads a process group of its own, as a terminal's job
			// does, so that what it started can be found by the group.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pgid := cmd.Process.Pid
			defer syscall.Kill(-pgid, syscall.SIGKILL)

			// The demo says when everything has started; the rest of its
			// output is read on, so that it never blocks on a full pipe.
			var out bytes.Buffer
			started := make(chan bool, 1)
			done := make(chan struct{})
			go func() {
				defer close(done)
				sc := bufio.NewScanner(stdout)
				said := false
				for sc.Scan() {
					out.WriteString(sc.Text() + "\n")
					if !said && strings.HasPrefix(sc.Text(), "Press Ctrl-C to stop.") {
						said = true
						started <- true
					}
				}
				if !said {
					started <- false
				}
			}()
			if !<-started {
				<-done
				cmd.Wait()
				t.Fatalf("the demo did not start; stdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
			}

			target := pgid
			if tc.group {
				target = -pgid
			}
			if err := syscall.Kill(target, tc.sig); err != nil {
				t.Fatal(err)
			}
			<-done
			err = cmd.Wait()

			// make dies of the signal it was sent, once its recipe has
			// ended; a recipe that failed would have make print an error.
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("make run: got %v, want death by %v", err, tc.sig)
			}
			if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != tc.sig {
				t.Errorf("make run: got %v, want death by %v", err, tc.sig)
			}
			if makeError.MatchString(stderr.String()) {
				t.Errorf("make reported an error; stderr:\n%s", stderr.String())
			}
			if !strings.Contains(out.String(), "Stopping...") {
				t.Errorf("the demo did not say it was stopping; stdout:\n%s", out.String())
			}
			// The script waits for what it started, and make for the
			// script: once make is gone, so must everything else be,
			// the WEBAPP too, which leads a session of its own.
			if left := liveInGroup(pgid); len(left) > 0 {
				t.Errorf("processes of make run are left after it ended: %q", left)
			}
			if left := liveNaming(demo); len(left) > 0 {
				t.Errorf("processes of the demo are left after it ended: %q", left)
			}
			// The WEBAPP is stopped by the script, after the minions,
			// and not by the signal that stopped them: Ctrl-C reaches
			// every process of the terminal's job.
			if m := shutdownWhy.FindStringSubmatch(stderr.String()); m == nil || m[1] != "terminated signal received" {
				t.Errorf("the WEBAPP's shutdown: got %q, want it stopped by the script's SIGTERM; stderr:\n%s", m, stderr.String())
			}
		})
	}
}

// shutdownWhy finds why the WEBAPP says it shut down.
var shutdownWhy = regexp.MustCompile(`msg="shutting down" why="([^"]*)"`)

// liveNaming lists the processes that have not ended whose command line
// holds s, as liveInGroup does.
func liveNaming(s string) []string {
	var found []string
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		b, err := os.ReadFile(c)
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(filepath.Dir(c), "stat"))
		if err != nil {
			continue
		}
		st := string(stat)
		if fields := strings.Fields(st[strings.LastIndexByte(st, ')')+1:]); len(fields) > 0 && fields[0] != "Z" {
			found = append(found, st[:strings.LastIndexByte(st, ')')+1]+" "+strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")))
		}
	}
	return found
}

// liveInGroup lists the processes of process group pgid that have not
// ended, each as its pid, name and command line. An ended process that its
// new parent has yet to reap (a zombie) is no longer running, and is left
// out.
func liveInGroup(pgid int) []string {
	var found []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		b, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(stat), "cmdline"))
			found = append(found, s[:strings.LastIndexByte(s, ')')+1]+" "+
				strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return found
}
