package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		mode       os.FileMode
		secret     string
		warn, err  bool
	}{
		{name: "private", text: "lct_abc\n", mode: 0o600, secret: "lct_abc"},
		{name: "group", text: "  lct_abc \n", mode: 0o640, secret: "lct_abc"},
		{name: "world readable", text: "lct_abc\n", mode: 0o644, secret: "lct_abc", warn: true},
		{name: "world writable", text: "lct_abc", mode: 0o602, secret: "lct_abc", warn: true},
		{name: "empty", text: "\n", mode: 0o600, err: true},
		{name: "two lines", text: "a\nb\n", mode: 0o600, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			secret, warning, err := Read(path)
			if (err != nil) != tc.err || secret != tc.secret || (warning != "") != tc.warn {
				t.Fatalf("Read = %q, %q, %v; want %q, a warning %v, an error %v", secret, warning, err, tc.secret, tc.warn, tc.err)
			}
		})
	}
	if _, _, err := Read(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("Read of a missing file: no error")
	}
}
