// Package scripts holds the shell scripts of the build (the demo, the test
// dependencies); its tests run them.
package scripts

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	for _, pkg := range []string{"subversion", "mercurial", "git-remote-hg", "brz", "cvsps", "cvs"} {
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
