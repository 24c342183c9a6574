package mirror

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/githttp"
	"lorrycontroller.dev/lc/gittest"
)

// lfsUpstream is an upstream served over smart HTTP with an LFS server
// beside it, whose commits carry LFS pointer files: one object in an
// older commit and one at the tip, oids[0] and oids[1].
type lfsUpstream struct {
	*upstream
	lfs  *githttp.LFS
	oids []string
}

func newLFSUpstream(t *testing.T) *lfsUpstream {
	t.Helper()
	root := t.TempDir()
	u := &upstream{t: t, root: root, dir: filepath.Join(root, "project")}
	gittest.Git(t, "", nil, "init", "-q", "-b", "main", u.dir)
	h, err := githttp.Handler(root)
	if err != nil {
		t.Fatal(err)
	}
	l := &lfsUpstream{upstream: u, lfs: githttp.NewLFS(h)}
	u.srv = httptest.NewServer(l.lfs)
	t.Cleanup(u.srv.Close)
	u.url = u.srv.URL + "/project"
	if err := os.WriteFile(filepath.Join(u.dir, ".gitattributes"), []byte("*.bin filter=lfs diff=lfs merge=lfs -text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A .lfsconfig committed upstream names another LFS server, which
	// lorry does not follow: the endpoint comes from the spec's URL.
	if err := os.WriteFile(filepath.Join(u.dir, ".lfsconfig"), []byte("[lfs]\n\turl = http://127.0.0.1:1/elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u.git("add", ".lfsconfig")
	for i, content := range []string{"old large content\n", "new large content\n"} {
		oid, pointer := l.lfs.Add([]byte(content))
		l.oids = append(l.oids, oid)
		if err := os.WriteFile(filepath.Join(u.dir, "data.bin"), []byte(pointer), 0o644); err != nil {
			t.Fatal(err)
		}
		u.git("add", ".gitattributes", "data.bin")
		u.git("commit", "-q", "-m", "data "+string(rune('1'+i)))
	}
	return l
}

// lfsObject is the path of LFS object oid in the bare repository gitDir.
func lfsObject(gitDir, oid string) string {
	return filepath.Join(gitDir, "lfs", "objects", oid[:2], oid[2:4], oid)
}

// A spec with lfs fetches every LFS object of the mirrored refs, history
// included, and pushes them to a downstream on this machine, into its
// lfs/objects, with the refs.
func TestLFSMirror(t *testing.T) {
	up := newLFSUpstream(t)
	down := downstream(t)
	opts := Options{WorkingArea: t.TempDir(), PushURL: down}
	spec := gitSpec("delta/project", map[string]any{"url": up.url, "lfs": true})
	for _, run := range []string{"first", "again"} {
		res := runSpec(t, spec, opts)
		if res.Err != nil {
			t.Fatalf("%s run: %v", run, res.Err)
		}
		for _, oid := range up.oids {
			data, err := os.ReadFile(lfsObject(down, oid))
			if err != nil {
				t.Fatalf("%s run: downstream LFS object: %v", run, err)
			}
			if !strings.Contains(string(data), "large content") {
				t.Errorf("%s run: downstream LFS object %s holds %q", run, oid, data)
			}
		}
		if got, want := refsOf(t, down), refsOf(t, up.dir); !equalRefs(got, want) {
			t.Errorf("%s run: downstream refs = %v; want %v", run, got, want)
		}
	}
}

// An LFS object that the server lacks or serves corrupt fails the run
// with class lfs, before any ref is pushed.
func TestLFSMissingObject(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(up *lfsUpstream)
	}{
		{name: "missing", spoil: func(up *lfsUpstream) { up.lfs.Remove(up.oids[0]) }},
		{name: "corrupt", spoil: func(up *lfsUpstream) { up.lfs.Put(up.oids[1], []byte("not the content\n")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newLFSUpstream(t)
			tt.spoil(up)
			down := downstream(t)
			opts := Options{WorkingArea: t.TempDir(), PushURL: down}
			res := runSpec(t, gitSpec("delta/project", map[string]any{"url": up.url, "lfs": true}), opts)
			if res.Err == nil || res.ErrorClass != ClassLFS {
				t.Fatalf("run: got %v, class %q; want an error of class %q", res.Err, res.ErrorClass, ClassLFS)
			}
			if s := res.String(); !strings.Contains(s, "FAILED: ") || !strings.HasSuffix(s, "(lfs)") {
				t.Errorf("result line %q; want FAILED: ... (lfs)", s)
			}
			if got := refsOf(t, down); len(got) != 0 {
				t.Errorf("downstream refs = %v; want none pushed", got)
			}
		})
	}
}

func TestLFSEndpoint(t *testing.T) {
	tests := []struct{ url, want string }{
		{"https://git.example.org/foo/bar", "https://git.example.org/foo/bar.git/info/lfs"},
		{"https://git.example.org/foo/bar.git/", "https://git.example.org/foo/bar.git/info/lfs"},
		{"git://git.example.org/foo/bar.git", "https://git.example.org/foo/bar.git/info/lfs"},
		{"ssh://git@git.example.org/foo/bar.git", "ssh://git@git.example.org/foo/bar.git"},
		{"git@git.example.org:foo/bar.git", "ssh://git@git.example.org/foo/bar.git"},
		{"/srv/git/bar.git", "file:///srv/git/bar.git"},
		{"file:///srv/git/bar.git", "file:///srv/git/bar.git"},
	}
	for _, tt := range tests {
		if got := lfsEndpoint(tt.url); got != tt.want {
			t.Errorf("lfsEndpoint(%q) = %q; want %q", tt.url, got, tt.want)
		}
	}
}

// The LFS endpoint of an upstream on loopback is refused unless local
// sources are allowed: git-lfs is not started.
func TestLFSRefusesLocalEndpoint(t *testing.T) {
	up := newLFSUpstream(t)
	var out strings.Builder
	area := t.TempDir()
	spec := gitSpec("delta/project", map[string]any{"url": up.url, "lfs": true})
	res := Run(context.Background(), spec, Options{WorkingArea: area, PullOnly: true, LockWait: time.Second, Out: &out})
	t.Logf("%s\n%s", res, out.String())
	var refusal *localAddrError
	if !errors.As(res.Err, &refusal) || res.ErrorClass != ClassLFS {
		t.Fatalf("got %v, class %q; want the local LFS endpoint refused, class %q", res.Err, res.ErrorClass, ClassLFS)
	}
	if _, err := os.Stat(lfsObject(mirrorOf(area, spec), up.oids[1])); err == nil {
		t.Errorf("an LFS object was fetched from the refused endpoint")
	}
}
