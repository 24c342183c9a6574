package downstream

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocalPrepare(t *testing.T) {
	base := t.TempDir()
	l := Local{BaseDir: base}
	url, err := l.Prepare(context.Background(), Repo{Path: "delta/foo/bar"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(base, "delta", "foo", "bar.git"); url != want {
		t.Errorf("push URL = %q; want %q", url, want)
	}
	if _, err := os.Stat(filepath.Join(url, "HEAD")); err != nil {
		t.Errorf("no bare repository at %s: %v", url, err)
	}
	// A second call finds it, and leaves what was pushed there alone.
	marker := filepath.Join(url, "refs", "heads", "keep")
	os.WriteFile(marker, []byte("0000000000000000000000000000000000000000\n"), 0o644)
	if again, err := l.Prepare(context.Background(), Repo{Path: "delta/foo/bar"}); err != nil || again != url {
		t.Errorf("second Prepare = %q, %v; want %q", again, err, url)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("second Prepare touched the repository: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(base, "delta", "foo", ".*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestLocalRefusesEscapes(t *testing.T) {
	base := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	l := Local{BaseDir: base}
	for _, path := range []string{"../x", "a/../../x", "/etc/x", "a//b", "", "a/./b", "a\\b"} {
		if url, err := l.Prepare(context.Background(), Repo{Path: path}); err == nil {
			t.Errorf("Prepare(%q) = %q; want an error", path, url)
		}
	}
	// A symbolic link inside the base directory cannot lead out of it.
	url, err := l.Prepare(context.Background(), Repo{Path: "link/x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, base+string(filepath.Separator)) {
		t.Errorf("Prepare(link/x) = %q; want a place inside %s", url, base)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("Prepare wrote outside the base directory: %v", entries)
	}
}
