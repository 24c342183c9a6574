package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "status.html")
	for _, tc := range []struct {
		name string
		data string
		perm fs.FileMode
	}{
		{name: "new file", data: "first\n", perm: 0o640},
		{name: "replaced, with other permissions", data: strings.Repeat("second\n", 10000), perm: 0o604},
		{name: "replaced by nothing", data: "", perm: 0o600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := WriteFile(name, []byte(tc.data), tc.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(name)
			if err != nil || string(got) != tc.data {
				t.Errorf("content = %d bytes, %v; want the %d bytes written", len(got), err, len(tc.data))
			}
			info, err := os.Stat(name)
			if err != nil || info.Mode() != tc.perm {
				t.Errorf("mode = %v, %v; want %v", info.Mode(), err, tc.perm)
			}
			if got := entries(t, dir); len(got) != 1 || got[0] != "status.html" {
				t.Errorf("directory holds %q; want only status.html", got)
			}
		})
	}
}

func TestWriteFileFails(t *testing.T) {
	t.Run("the name is taken by a directory", func(t *testing.T) {
		dir := t.TempDir()
		name := filepath.Join(dir, "taken")
		if err := os.MkdirAll(filepath.Join(name, "inside"), 0o755); err != nil {
			t.Fatal(err)
		}
		err := WriteFile(name, []byte("data"), 0o644)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != name {
			t.Fatalf("err = %v; want a path error naming %s", err, name)
		}
		if strings.Contains(pe.Err.Error(), dir) {
			t.Errorf("the cause %q names a path; want none", pe.Err)
		}
		if got := entries(t, dir); len(got) != 1 || got[0] != "taken" {
			t.Errorf("directory holds %q after the failure; want only taken, no temporary file", got)
		}
		if got := entries(t, name); len(got) != 1 || got[0] != "inside" {
			t.Errorf("the directory in the way holds %q; want it untouched", got)
		}
	})
	t.Run("no such directory", func(t *testing.T) {
		name := filepath.Join(t.TempDir(), "missing", "status.html")
		err := WriteFile(name, []byte("data"), 0o644)
		var pe *fs.PathError
		if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != name {
			t.Errorf("err = %v; want a path error naming %s, that it does not exist", err, name)
		}
	})
}
