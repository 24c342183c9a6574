package workarea

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// unescape inverts Name for names that were not shortened; it shows that
// Name loses nothing, and so that distinct paths get distinct names.
func unescape(t testing.TB, name string) string {
	t.Helper()
	if name == emptyName {
		return ""
	}
	var b []byte
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b = append(b, name[i])
			continue
		}
		if i+3 > len(name) {
			t.Fatalf("name %q: truncated escape at %d", name, i)
		}
		v, err := hex.DecodeString(name[i+1 : i+3])
		if err != nil {
			t.Fatalf("name %q: bad escape at %d: %v", name, i, err)
		}
		b = append(b, v[0])
		i += 2
	}
	return string(b)
}

func checkName(t testing.TB, path, name string) {
	t.Helper()
	if name == "" || name == "." || name == ".." {
		t.Fatalf("Name(%q): got %q, want a usable directory name", path, name)
	}
	if strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, ".") {
		t.Fatalf("Name(%q): got %q, want no separator, NUL or leading dot", path, name)
	}
	if len(name) > maxName {
		t.Fatalf("Name(%q): got %d bytes, want at most %d", path, len(name), maxName)
	}
	if filepath.Base(name) != name || filepath.Clean(name) != name {
		t.Fatalf("Name(%q): got %q, which is not a single clean element", path, name)
	}
	if strings.Contains(name, longMark) {
		if !strings.HasSuffix(name, "%%"+hexSHA(path)) {
			t.Fatalf("Name(%q): got %q, want the shortened form to end in the path's hash", path, name)
		}
		return
	}
	if got := unescape(t, name); got != path {
		t.Fatalf("unescape(Name(%q)) = unescape(%q): got %q, want the path back", path, name, got)
	}
}

func hexSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestName(t *testing.T) {
	tests := []struct {
		name string
		path string
		want string
	}{
		{name: "plain", path: "delta/foo/bar", want: "delta%2Ffoo%2Fbar"},
		{name: "allowed punctuation", path: "a.b_c-D9", want: "a.b_c-D9"},
		{name: "empty", path: "", want: "%"},
		{name: "dot", path: ".", want: "%2E"},
		{name: "dot dot", path: "..", want: "%2E."},
		{name: "leading dot", path: ".git", want: "%2Egit"},
		{name: "inner dot kept", path: "a/.git", want: "a%2F.git"},
		{name: "percent", path: "50%", want: "50%25"},
		{name: "space and colon", path: "a b:c", want: "a%20b%3Ac"},
		{name: "backslash", path: `a\b`, want: "a%5Cb"},
		{name: "non-ASCII bytes", path: "é", want: "%C3%A9"},
		{name: "NUL", path: "a\x00", want: "a%00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Name(tt.path)
			if got != tt.want {
				t.Errorf("Name(%q): got %q, want %q", tt.path, got, tt.want)
			}
			checkName(t, tt.path, got)
		})
	}
}

func TestNameDistinct(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{name: "slash and escaped slash", a: "a/b", b: "a%2Fb"},
		{name: "slash and underscore", a: "a/b", b: "a_b"},
		{name: "leading dot and escaped dot", a: ".a", b: "%2Ea"},
		{name: "empty and percent", a: "", b: "%"},
		{name: "case", a: "Foo", b: "foo"},
		{name: "long paths with the same prefix", a: strings.Repeat("x", 300) + "1", b: strings.Repeat("x", 300) + "2"},
		{name: "long and its hashed form", a: strings.Repeat("y", 300), b: Name(strings.Repeat("y", 300))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			na, nb := Name(tt.a), Name(tt.b)
			if na == nb {
				t.Errorf("Name(%q) and Name(%q): got %q for both, want different names", tt.a, tt.b, na)
			}
		})
	}
}

func TestNameLong(t *testing.T) {
	tests := []struct {
		name string
		path string
	}{
		{name: "plain", path: strings.Repeat("a", 400)},
		{name: "escapes", path: strings.Repeat("a/", 200)},
		{name: "escape at the cut", path: strings.Repeat("a", longPrefix-1) + strings.Repeat("/", 100)},
		{name: "escape one before the cut", path: strings.Repeat("a", longPrefix-2) + strings.Repeat("/", 100)},
		{name: "just fits", path: strings.Repeat("b", maxName)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Name(tt.path)
			checkName(t, tt.path, got)
			if got != Name(tt.path) {
				t.Errorf("Name(%q) is not stable", tt.path)
			}
		})
	}
}

func TestDir(t *testing.T) {
	if got, want := Dir("/srv/work", "delta/foo"), "/srv/work/delta%2Ffoo"; got != want {
		t.Errorf("Dir: got %q, want %q", got, want)
	}
}

func FuzzName(f *testing.F) {
	for _, s := range []string{"", ".", "..", "/", "delta/foo/bar", "%2F", ".git", "a\x00b", strings.Repeat("ab/", 120)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		checkName(t, path, Name(path))
		// A different path must get a different name.
		other := path + "/"
		if Name(other) == Name(path) {
			t.Fatalf("Name(%q) and Name(%q) are both %q", path, other, Name(path))
		}
	})
}

// du reports what du(1) says, or skips when du is missing.
func du(t *testing.T, dir string) int64 {
	t.Helper()
	out, err := exec.Command("du", "-s", "-B1", dir).Output()
	if err != nil {
		t.Skipf("du: %v", err)
	}
	n, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func blocks(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

func TestDiskUsage(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "repo")
	big := bytes.Repeat([]byte("x"), 100_000)
	mustWrite := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite("a", big)
	mustWrite("sub/b", big[:5000])
	mustWrite("sub/deeper/c", nil)
	// Data outside, reachable only through a symlink, must not count.
	outside := filepath.Join(base, "outside")
	if err := os.WriteFile(outside, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(dir, "sub", "dirlink")); err != nil {
		t.Fatal(err)
	}
	// A hard link is counted once.
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "sub", "a-again")); err != nil {
		t.Fatal(err)
	}

	got, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, p := range []string{"", "a", "sub", "sub/b", "sub/deeper", "sub/deeper/c", "link", "sub/dirlink"} {
		want += blocks(t, filepath.Join(dir, p))
	}
	if got != want {
		t.Errorf("DiskUsage: got %d, want %d (sum of allocated blocks)", got, want)
	}
	if got < int64(len(big)) {
		t.Errorf("DiskUsage: got %d, want at least the %d bytes written", got, len(big))
	}
	if d := du(t, dir); got != d {
		t.Errorf("DiskUsage: got %d, want %d as du reports", got, d)
	}
}

func TestDiskUsageMissing(t *testing.T) {
	got, err := DiskUsage(filepath.Join(t.TempDir(), "never-created"))
	if err != nil || got != 0 {
		t.Errorf("DiskUsage of a missing dir: got %d, %v; want 0, nil", got, err)
	}
}

func TestDiskUsageFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, bytes.Repeat([]byte("z"), 9000), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := DiskUsage(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := blocks(t, p); got != want {
		t.Errorf("DiskUsage of a file: got %d, want %d", got, want)
	}
}
