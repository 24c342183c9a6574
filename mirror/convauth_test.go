package mirror

import (
	"bytes"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/workarea"
)

// convRun runs name with args in dir, with env added to the test's
// environment, and fails the test if it fails.
func convRun(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// needTools skips the test unless every tool is installed.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

// noFileHolds fails the test if a file under dir holds secret.
func noFileHolds(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s holds the password after the run", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A bzr branch over HTTP that requires a user and password is
// converted, then pulled again, and neither reaches a command line of
// brz, nor stays in a file of the working area. The user's own Breezy
// configuration is still read.
func TestBzrCredentialsNotOnCommandLine(t *testing.T) {
	needTools(t, "brz")
	tmp := t.TempDir()
	brzEnv := []string{"BRZ_EMAIL=Test <test@example.com>", "BRZ_HOME=" + filepath.Join(tmp, "upstream-home")}
	trunk := filepath.Join(tmp, "branches", "trunk")
	convRun(t, tmp, brzEnv, "brz", "init", "--quiet", "--create-prefix", trunk)
	commit := func(content, msg string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(trunk, "README"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		convRun(t, trunk, brzEnv, "brz", "add", "--quiet", "README")
		convRun(t, trunk, brzEnv, "brz", "commit", "--quiet", "-m", msg)
	}
	commit("one\n", "one")
	// Breezy reads a branch over plain HTTP as files.
	up := newAuthServer(t, http.FileServer(http.Dir(filepath.Join(tmp, "branches"))), "bzruser")

	// The user's configuration has credentials of its own, for another
	// host.
	userHome := filepath.Join(tmp, "user-home")
	if err := os.MkdirAll(filepath.Join(userHome, "breezy"), 0o700); err != nil {
		t.Fatal(err)
	}
	own := "[elsewhere]\nhost = bzr.example.com\nuser = someone\npassword = other\n"
	if err := os.WriteFile(filepath.Join(userHome, "breezy", "authentication.conf"), []byte(own), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BRZ_HOME", userHome)

	down := downstream(t)
	area := t.TempDir()
	spec := lorryspec.Spec{Name: "up/bzr", Type: "bzr", Raw: map[string]any{"type": "bzr", "url": up.url("/trunk")}}
	for _, run := range []string{"branch", "pull"} {
		if run == "pull" {
			commit("one\ntwo\n", "two")
			// A copy made before kept the URL with its credentials as
			// its parent.
			conf := filepath.Join(workarea.Dir(area, spec.Name), "bzr", "repo", workarea.Name("master"), ".bzr", "branch", "branch.conf")
			if err := os.WriteFile(conf, []byte("parent_location = "+up.url("/trunk")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res := runSpec(t, spec, Options{WorkingArea: area, PushURL: down})
		if res.Err != nil {
			t.Fatalf("%s run: %v", run, res.Err)
		}
	}
	if got := gittest.Git(t, down, nil, "show", "master:README"); got != "one\ntwo" {
		t.Errorf("downstream master:README = %q; want %q", got, "one\ntwo")
	}
	up.check("bzr upstream")
	noFileHolds(t, workarea.Dir(area, spec.Name), up.token)
}

func TestBzrCredentials(t *testing.T) {
	tests := []struct {
		url, plain, auth string
	}{
		{"https://u:p%40ss@bzr.example.com/trunk", "https://bzr.example.com/trunk",
			"[lorry-url]\nhost = \"bzr.example.com\"\nuser = \"u\"\npassword = \"p@ss\"\n"},
		{"http://tok@bzr.example.com:8080/b", "http://bzr.example.com:8080/b",
			"[lorry-url]\nhost = \"bzr.example.com\"\nport = \"8080\"\nuser = \"tok\"\n"},
		{`https://u:a%22b@h/x`, "https://h/x", "[lorry-url]\nhost = \"h\"\nuser = \"u\"\npassword = 'a\"b'\n"},
		{"bzr+ssh://u:pw@h/x", "bzr+ssh://h/x", "[lorry-url]\nhost = \"h\"\nuser = \"u\"\npassword = \"pw\"\n"},
		{"bzr+ssh://u@h/x", "bzr+ssh://u@h/x", ""},
		{"lp:project", "lp:project", ""},
		{"/srv/bzr/trunk", "/srv/bzr/trunk", ""},
	}
	for _, tt := range tests {
		plain, auth, err := bzrCredentials(tt.url)
		if err != nil || plain != tt.plain || auth != tt.auth {
			t.Errorf("bzrCredentials(%q) = %q, %q, %v; want %q, %q", tt.url, plain, auth, err, tt.plain, tt.auth)
		}
	}
	if _, _, err := bzrCredentials("https://u:a%0Ab@h/x"); err == nil {
		t.Errorf("a password with a line break: no error")
	}
}

func TestCvsRootCredentials(t *testing.T) {
	tests := []struct {
		root, plain, pass string
	}{
		{":pserver:anon:s3cret pw@cvs.example.com:/cvsroot", ":pserver:anon@cvs.example.com:/cvsroot",
			"/1 :pserver:anon@cvs.example.com:2401/cvsroot AZwh d,r:3\n:pserver:anon@cvs.example.com:/cvsroot AZwh d,r:3\n"},
		{":pserver:u:r@cvs.example.com:2402/cvs/root", ":pserver:u@cvs.example.com:2402/cvs/root",
			"/1 :pserver:u@cvs.example.com:2402/cvs/root A \n"},
		{":PSERVER:u:p@w@cvs.example.com/r", ":pserver:u@cvs.example.com:/r",
			"/1 :pserver:u@cvs.example.com:2401/r A:)3\n:pserver:u@cvs.example.com:/r A:)3\n"},
		{":pserver:anonymous@cvs.example.com:/cvsroot", ":pserver:anonymous@cvs.example.com:/cvsroot", ""},
		{":EXTSSH:u@cvs.example.com:/cvsroot", ":ext:u@cvs.example.com:/cvsroot", ""},
		{"cvs.example.com:/cvsroot", ":ext:cvs.example.com:/cvsroot", ""},
		{"/srv/cvsroot", "/srv/cvsroot", ""},
		{":local:/srv/cvsroot", "/srv/cvsroot", ""},
	}
	for _, tt := range tests {
		r, err := parseCvsRoot(tt.root)
		if err != nil || r.plain() != tt.plain || r.passLines() != tt.pass {
			t.Errorf("parseCvsRoot(%q) = %q, %q, %v; want %q, %q", tt.root, r.plain(), r.passLines(), err, tt.plain, tt.pass)
		}
	}
	for _, root := range []string{
		":pserver::p@h:/r", ":pserver:u:a\nb@h:/r",
		":ext:u:p@cvs.example.com:/cvsroot", ":SSH:u:p@h:/r", ":server:u:p@h:/r", "u:p@h:/r",
		":gserver:u:p@h:/r", ":kserver:h:/r", ":pserver:a@b:p@h:/r", ":pserver:a b@h:/r",
	} {
		if _, err := parseCvsRoot(root); err == nil {
			t.Errorf("parseCvsRoot(%q): no error", root)
		}
	}
}
