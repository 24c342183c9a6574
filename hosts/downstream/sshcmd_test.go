package downstream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeDSSSH writes an ssh program into a new directory. Each run appends
// its arguments to the returned log, one per line, then an empty line;
// prints stderr on its standard error; and exits with exit. With hang, it
// sleeps instead, in a child process, as a stuck connection would.
func fakeDSSSH(t *testing.T, stderr string, exit int, hang bool) (dir, logPath string) {
	t.Helper()
	dir = t.TempDir()
	logPath = filepath.Join(dir, "calls")
	errPath := filepath.Join(dir, "stderr")
	if err := os.WriteFile(errPath, []byte(stderr), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n" +
		"for a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '" + logPath + "'\n" +
		"printf '\\n' >> '" + logPath + "'\n"
	if hang {
		script += "sleep 30\n"
	}
	script += "cat '" + errPath + "' >&2\n" +
		"exit " + strconv.Itoa(exit) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, logPath
}

// fakeDSSSHCalls reads the arguments of each run of the fake ssh.
func fakeDSSSHCalls(t *testing.T, logPath string) [][]string {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var calls [][]string
	for _, call := range strings.Split(strings.TrimSuffix(string(data), "\n\n"), "\n\n") {
		calls = append(calls, strings.Split(call, "\n"))
	}
	return calls
}

func TestDownstreamSSHTimeout(t *testing.T) {
	dir, logPath := fakeDSSSH(t, "", 0, true)
	s := downstreamSSH{program: filepath.Join(dir, "ssh"), user: "git", host: "trove.example.com", timeout: 300 * time.Millisecond}
	start := time.Now()
	_, err := s.run(context.Background(), "create", "delta/foo")
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Errorf("run = %v; want a timeout error", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("run took %s; want it stopped near its timeout", took)
	}
	if sshAlreadyExists(err) {
		t.Errorf("a timeout counts as already exists")
	}
	if calls := fakeDSSSHCalls(t, logPath); len(calls) != 1 {
		t.Errorf("ssh ran %d times; want 1", len(calls))
	}
}

func TestDownstreamSSHCancelled(t *testing.T) {
	dir, _ := fakeDSSSH(t, "", 0, true)
	s := downstreamSSH{program: filepath.Join(dir, "ssh"), user: "git", host: "trove.example.com", timeout: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.run(ctx, "create", "delta/foo")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("run = %v; want the context's error", err)
	}
}

func TestDownstreamSSHMissingProgram(t *testing.T) {
	s := downstreamSSH{program: filepath.Join(t.TempDir(), "no-ssh"), user: "git", host: "trove.example.com", timeout: time.Minute}
	_, err := s.run(context.Background(), "create", "delta/foo")
	if err == nil || !strings.Contains(err.Error(), "no-ssh") {
		t.Errorf("run = %v; want an error naming the program", err)
	}
}

func TestCheckSSHPath(t *testing.T) {
	tests := []struct {
		name, path string
		ok         bool
	}{
		{name: "plain", path: "delta/gnome/glib", ok: true},
		{name: "punctuation kept", path: "delta/gtk+/gtk_doc-1.0", ok: true},
		{name: "space", path: "delta/foo bar"},
		{name: "quote", path: "delta/foo'bar"},
		{name: "semicolon", path: "delta/foo;reboot"},
		{name: "leading dash", path: "-oProxyCommand=x/foo"},
		{name: "climbs", path: "delta/../foo"},
		{name: "absolute", path: "/delta/foo"},
	}
	for _, tc := range tests {
		err := checkSSHPath(tc.path)
		if tc.ok && err != nil {
			t.Errorf("%s: checkSSHPath(%q) = %v; want nil", tc.name, tc.path, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("%s: checkSSHPath(%q) = nil; want an error", tc.name, tc.path)
		}
	}
}
