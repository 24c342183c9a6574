package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// What WithUmask's fn makes, and what its children make, have its mask;
// the rest of the process keeps its own.
func TestWithUmask(t *testing.T) {
	old := syscall.Umask(0o027)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := t.TempDir()
	var child string
	err := WithUmask(0o007, func() error {
		if err := os.Mkdir(filepath.Join(dir, "made"), 0o777); err != nil {
			return err
		}
		out, err := exec.Command("sh", "-c", "umask").Output()
		child = strings.TrimSpace(string(out))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if child != "0007" {
		t.Errorf("child's umask: got %s, want 0007", child)
	}
	if fi, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Fatal(err)
	} else if got := fi.Mode().Perm(); got != 0o770 {
		t.Errorf("directory made under the mask: mode %o, want 770", got)
	}
	if got := syscall.Umask(0o027); got != 0o027 {
		t.Errorf("process's umask after WithUmask: got %o, want 27", got)
	}
	out, err := exec.Command("sh", "-c", "umask").Output()
	if err != nil || strings.TrimSpace(string(out)) != "0027" {
		t.Errorf("a child started afterwards has umask %q, %v; want 0027", out, err)
	}
}
