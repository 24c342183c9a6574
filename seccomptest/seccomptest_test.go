package seccomptest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv(Env) == "1" {
		if err := Restrict(); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(3)
		}
		dir := os.Args[len(os.Args)-1]
		if err := os.Mkdir(filepath.Join(dir, "plain"), 0o755); err != nil {
			os.Stderr.WriteString("plain mkdir: " + err.Error() + "\n")
			os.Exit(4)
		}
		if err := os.Chmod(filepath.Join(dir, "plain"), 0o770); err != nil {
			os.Stderr.WriteString("plain chmod: " + err.Error() + "\n")
			os.Exit(4)
		}
		if err := syscall.Chmod(filepath.Join(dir, "plain"), 0o2770); !errors.Is(err, syscall.EPERM) {
			os.Stderr.WriteString("setgid chmod not refused\n")
			os.Exit(5)
		}
		// A child inherits the filter.
		if out, err := exec.Command("chmod", "g+s", filepath.Join(dir, "plain")).CombinedOutput(); err == nil {
			os.Stderr.WriteString("a child's setgid chmod not refused: " + string(out) + "\n")
			os.Exit(6)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Under the filter, chmod and mkdir work but for the setuid and setgid
// bits, for the process and its children.
func TestRestrict(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, "-test.run=^$", dir)
	cmd.Env = append(os.Environ(), Env+"=1")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 3 {
		t.Skipf("no filter here: %s", out)
	}
	if err != nil {
		t.Fatalf("child under the filter: %v\n%s", err, out)
	}
	fi, err := os.Stat(filepath.Join(dir, "plain"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSetgid != 0 {
		t.Errorf("mode %v: the setgid bit was set under the filter", fi.Mode())
	}
}
