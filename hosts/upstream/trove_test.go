package upstream

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/hosts/hoststest"
)

const gitanoLs = `RW baserock/baserock/definitions
R  baserock/baserock/morph

RW delta/linux.git
warning: something odd
R
RW  with spaces/and more
XX delta/evil
RW ../escape
-- delta/hidden
R  delta/gcc-tarball
`

func TestParseGitanoLs(t *testing.T) {
	paths, malformed := parseGitanoLs([]byte(gitanoLs + "RW trailing/cr\r\n"))
	wantPaths := []string{"baserock/baserock/definitions", "baserock/baserock/morph", "delta/linux.git", "delta/hidden", "delta/gcc-tarball", "trailing/cr"}
	wantMalformed := []string{"warning: something odd", "R", "RW  with spaces/and more", "XX delta/evil", "RW ../escape"}
	if !reflect.DeepEqual(paths, wantPaths) {
		t.Errorf("got paths %q; want %q", paths, wantPaths)
	}
	if !reflect.DeepEqual(malformed, wantMalformed) {
		t.Errorf("got malformed lines %q; want %q", malformed, wantMalformed)
	}
}

func TestTroveListHTTP(t *testing.T) {
	f := hoststest.NewGitano(t, gitanoLs, hoststest.GitanoOptions{User: "lorry", Password: "pa55:word"})
	host := f.Host()
	var logs syncBuffer
	sec := f.Section(nil)
	l, err := NewLister(upstreamHost(t, sec), ListerOptions{Logger: debugLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Repo{
		{Path: "baserock/baserock/definitions", CloneURL: "http://" + host + "/git/baserock/baserock/definitions"},
		{Path: "baserock/baserock/morph", CloneURL: "http://" + host + "/git/baserock/baserock/morph"},
		{Path: "delta/linux", CloneURL: "http://" + host + "/git/delta/linux.git"},
		{Path: "delta/hidden", CloneURL: "http://" + host + "/git/delta/hidden"},
		{Path: "delta/gcc-tarball", CloneURL: "http://" + host + "/git/delta/gcc-tarball"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v; want %+v", got, want)
	}
	reqs := f.Requests()
	if len(reqs) != 1 || reqs[0].URL != "/gitano-command.cgi?cmd=ls" {
		t.Errorf("got requests %v; want one GET /gitano-command.cgi?cmd=ls", reqs)
	}
	if log := logs.String(); !strings.Contains(log, "malformed_lines=5") || !strings.Contains(log, "warning: something odd") {
		t.Errorf("got log %q; want the 5 malformed lines reported", log)
	}
	if strings.Contains(logs.String(), "pa55") {
		t.Errorf("the log shows the password:\n%s", logs.String())
	}

	// A wrong password says which key to check, and does not show it.
	sec["auth"] = map[string]any{"username": "lorry", "password": "wrong-pa55"}
	l, err = NewLister(upstreamHost(t, sec), ListerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), `check "auth"`) {
		t.Errorf("got error %v; want a 401 that names \"auth\"", err)
	} else if strings.Contains(err.Error(), "wrong-pa55") {
		t.Errorf("error %q shows the password", err)
	}
}

// installFakeSSH puts an ssh on PATH that records its arguments and
// answers like Gitano's ls over ssh, or fails like ssh does when the key
// is refused.
func installFakeSSH(t *testing.T, out string) (argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	outFile := filepath.Join(dir, "out")
	if err := os.WriteFile(outFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
printf '%s\n' "$@" > "$FAKE_SSH_ARGS"
case "$*" in
*refused.example.com*) echo "git@refused.example.com: Permission denied (publickey)." >&2; exit 255 ;;
esac
cat "$FAKE_SSH_OUT"
`
	if err := os.WriteFile(filepath.Join(dir, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_SSH_ARGS", argsFile)
	t.Setenv("FAKE_SSH_OUT", outFile)
	return argsFile
}

func TestTroveListSSH(t *testing.T) {
	argsFile := installFakeSSH(t, gitanoLs)
	tests := []struct {
		name     string
		sec      map[string]any
		wantArgs []string
		wantURL  string // clone URL of the first repository
	}{
		{name: "default user", sec: map[string]any{"trovehost": "git.baserock.org"},
			wantArgs: []string{"-o", "BatchMode=yes", "git@git.baserock.org", "ls"},
			wantURL:  "ssh://git@git.baserock.org/baserock/baserock/definitions"},
		{name: "other user and port", sec: map[string]any{"host": "trove.example.com:2222", "ssh-user": "mirror"},
			wantArgs: []string{"-o", "BatchMode=yes", "-p", "2222", "mirror@trove.example.com", "ls"},
			wantURL:  "ssh://mirror@trove.example.com:2222/baserock/baserock/definitions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLister(upstreamHost(t, sectionWith(map[string]any{"type": "trove", "protocol": "ssh"}, tc.sec)), ListerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			repos, err := l.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(repos) != 5 || repos[0].CloneURL != tc.wantURL {
				t.Errorf("got %d repos, first %+v; want 5, first with URL %s", len(repos), repos[0], tc.wantURL)
			}
			data, err := os.ReadFile(argsFile)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSpace(string(data)), "\n"); !reflect.DeepEqual(got, tc.wantArgs) {
				t.Errorf("ssh got arguments %q; want %q", got, tc.wantArgs)
			}
		})
	}
}

func TestTroveListSSHFails(t *testing.T) {
	installFakeSSH(t, "")
	l, err := NewLister(upstreamHost(t, map[string]any{"type": "trove", "host": "refused.example.com"}), ListerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.List(context.Background())
	for _, want := range []string{"trove refused.example.com", "git@refused.example.com ls", "exit status 255", "Permission denied (publickey)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got error %v; want it to contain %q", err, want)
		}
	}
}
