package mirror

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/flock"
	"lorrycontroller.dev/lc/githttp"
	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/workarea"
)

// upstream is a git repository served over smart HTTP on loopback.
type upstream struct {
	t    *testing.T
	root string // directory served
	dir  string // the repository, inside root
	url  string
	srv  *httptest.Server
}

func newUpstream(t *testing.T, tls bool) *upstream {
	t.Helper()
	root := t.TempDir()
	u := &upstream{t: t, root: root, dir: filepath.Join(root, "project")}
	gittest.Git(t, "", nil, "init", "-q", "-b", "main", u.dir)
	u.commit("first")
	h, err := githttp.Handler(root)
	if err != nil {
		t.Fatal(err)
	}
	if tls {
		u.srv = httptest.NewTLSServer(h)
	} else {
		u.srv = httptest.NewServer(h)
	}
	t.Cleanup(u.srv.Close)
	u.url = u.srv.URL + "/project"
	return u
}

func (u *upstream) git(args ...string) string {
	u.t.Helper()
	return gittest.Git(u.t, u.dir, nil, args...)
}

func (u *upstream) commit(msg string) string {
	u.t.Helper()
	if err := os.WriteFile(filepath.Join(u.dir, "file"), []byte(msg+"\n"), 0o644); err != nil {
		u.t.Fatal(err)
	}
	u.git("add", "file")
	u.git("commit", "-q", "-m", msg)
	return u.git("rev-parse", "HEAD")
}

// downstream is a bare repository to push to.
func downstream(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "down.git")
	gittest.Git(t, "", nil, "init", "-q", "--bare", dir)
	return dir
}

func refsOf(t *testing.T, gitDir string) map[string]string {
	t.Helper()
	out := gittest.Git(t, gitDir, nil, "for-each-ref", "--format=%(refname) %(objectname)")
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, id, ok := strings.Cut(line, " "); ok {
			refs[name] = id
		}
	}
	return refs
}

func gitSpec(name string, fields map[string]any) lorryspec.Spec {
	raw := map[string]any{"type": "git"}
	for k, v := range fields {
		raw[k] = v
	}
	return lorryspec.Spec{Name: name, Type: "git", Raw: raw}
}

func runSpec(t *testing.T, spec lorryspec.Spec, opts Options) Result {
	t.Helper()
	var out strings.Builder
	opts.Out = &out
	if opts.LockWait == 0 {
		opts.LockWait = time.Second
	}
	// The tests' upstreams are repositories in temporary directories.
	opts.AllowLocalSources = true
	res := Run(context.Background(), spec, opts)
	t.Logf("%s\n%s", res, out.String())
	return res
}

func TestGitMirrorFollowsUpstream(t *testing.T) {
	up := newUpstream(t, false)
	up.git("branch", "dev")
	up.git("tag", "v1")
	down := downstream(t)
	opts := Options{WorkingArea: t.TempDir(), PushURL: down}
	spec := gitSpec("delta/project", map[string]any{"url": up.url})

	res := runSpec(t, spec, opts)
	if res.Err != nil || len(res.Changes.Created) != 3 {
		t.Fatalf("first run = %v; want 3 refs created", res)
	}
	if got, want := refsOf(t, down), refsOf(t, up.dir); !equalRefs(got, want) {
		t.Fatalf("downstream refs = %v; want %v", got, want)
	}
	if got := gittest.Git(t, down, nil, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("downstream HEAD = %s; want the upstream's default branch refs/heads/main", got)
	}

	// New commits, a force-pushed branch, a new tag, a deleted branch.
	up.commit("second")
	up.git("checkout", "-q", "dev")
	up.git("reset", "-q", "--hard", "HEAD")
	up.git("commit", "-q", "--amend", "-m", "rewritten")
	up.git("checkout", "-q", "main")
	up.git("tag", "v2")
	up.git("branch", "gone")
	runSpec(t, spec, opts)
	up.git("branch", "-D", "gone")
	res = runSpec(t, spec, opts)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	got := refsOf(t, down)
	for ref, id := range refsOf(t, up.dir) {
		if got[ref] != id {
			t.Errorf("downstream %s = %s; want %s", ref, got[ref], id)
		}
	}
	if _, ok := got["refs/heads/gone"]; !ok {
		t.Error("a branch deleted upstream was deleted downstream without prune")
	}
	if res = runSpec(t, spec, opts); res.Err != nil || res.Changes.Unchanged != 5 || len(res.Changes.Created)+len(res.Changes.Updated) != 0 {
		t.Errorf("re-run with nothing new = %v; want 5 unchanged", res)
	}

	spec.Raw["prune"] = true
	if res = runSpec(t, spec, opts); res.Err != nil || strings.Join(res.Changes.Deleted, " ") != "refs/heads/gone" {
		t.Errorf("run with prune = %v; want refs/heads/gone deleted", res)
	}
	if _, ok := refsOf(t, down)["refs/heads/gone"]; ok {
		t.Error("prune did not delete the branch downstream")
	}
}

func equalRefs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestGitRefspecs(t *testing.T) {
	up := newUpstream(t, false)
	up.git("branch", "release")
	up.git("tag", "v1")
	tests := []struct {
		name     string
		refspecs []any
		want     []string // downstream refs
		wantErr  string
	}{
		{name: "one branch", refspecs: []any{"refs/heads/release"}, want: []string{"refs/heads/release"}},
		{name: "short branch name", refspecs: []any{"release"}, want: []string{"refs/heads/release"}},
		{name: "tags only", refspecs: []any{"+refs/tags/*"}, want: []string{"refs/tags/v1"}},
		{name: "renamed", refspecs: []any{"refs/heads/main:refs/heads/trunk"}, want: []string{"refs/heads/trunk"}},
		{name: "matching nothing", refspecs: []any{"+refs/heads/nope/*"}, wantErr: "no ref upstream matches"},
		{name: "negative", refspecs: []any{"^refs/heads/x"}, wantErr: "not usable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			down := downstream(t)
			res := runSpec(t, gitSpec("p", map[string]any{"url": up.url, "refspecs": tc.refspecs}),
				Options{WorkingArea: t.TempDir(), PushURL: down})
			if tc.wantErr != "" {
				if res.Err == nil || !strings.Contains(res.Err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want one containing %q", res.Err, tc.wantErr)
				}
				if refs := refsOf(t, down); len(refs) != 0 {
					t.Errorf("downstream got %v after a failure", refs)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			var got []string
			for ref := range refsOf(t, down) {
				got = append(got, ref)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("downstream refs = %v; want %v", got, tc.want)
			}
		})
	}
}

// A failed fetch pushes nothing and leaves the mirror as it was.
func TestGitFailedFetchKeepsMirror(t *testing.T) {
	up := newUpstream(t, false)
	down := downstream(t)
	area := t.TempDir()
	spec := gitSpec("p", map[string]any{"url": up.url})
	if res := runSpec(t, spec, Options{WorkingArea: area, PushURL: down}); res.Err != nil {
		t.Fatal(res.Err)
	}
	mirrorDir := filepath.Join(workarea.Dir(area, "p"), "git")
	before := refsOf(t, mirrorDir)
	up.commit("unseen")
	up.srv.Close()
	res := runSpec(t, spec, Options{WorkingArea: area, PushURL: down})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "fetch") {
		t.Fatalf("run against a dead upstream = %v; want a fetch error", res.Err)
	}
	if after := refsOf(t, mirrorDir); !equalRefs(before, after) {
		t.Errorf("mirror refs changed from %v to %v", before, after)
	}
	if got := refsOf(t, down); !equalRefs(got, before) {
		t.Errorf("downstream = %v; want it as before %v", got, before)
	}
	missing := gitSpec("p", map[string]any{"url": up.url + "-missing"})
	if res := runSpec(t, missing, Options{WorkingArea: t.TempDir(), PushURL: down}); res.Err == nil {
		t.Error("run of a missing repository succeeded")
	}
}

func TestGitCheckCertificates(t *testing.T) {
	up := newUpstream(t, true)
	spec := gitSpec("p", map[string]any{"url": up.url})
	if res := runSpec(t, spec, Options{WorkingArea: t.TempDir(), PullOnly: true}); res.Err == nil {
		t.Fatal("fetch from a self-signed server succeeded; want certificate verification to fail")
	}
	spec.Raw["check-certificates"] = false
	if res := runSpec(t, spec, Options{WorkingArea: t.TempDir(), PullOnly: true}); res.Err != nil {
		t.Fatalf("fetch with check-certificates false: %v", res.Err)
	}
}

func TestGitMirrorLocked(t *testing.T) {
	up := newUpstream(t, false)
	area := t.TempDir()
	if err := os.MkdirAll(area, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := flock.TryExclusive(workarea.Dir(area, "p") + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	spec := gitSpec("p", map[string]any{"url": up.url})
	res := runSpec(t, spec, Options{WorkingArea: area, PullOnly: true, LockWait: 100 * time.Millisecond})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "another lorry is working on this mirror") {
		t.Fatalf("run on a locked mirror = %v; want a clear lock error", res.Err)
	}
	lock.Unlock()

	// Two runs at once on one mirror: one waits for the other, both succeed.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Run(context.Background(), spec, Options{WorkingArea: area, PullOnly: true, LockWait: time.Minute, AllowLocalSources: true}).Err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Errorf("concurrent runs: %v", err)
	}
}

// A mirror that a crash left unusable is rebuilt by the next run.
func TestGitRecoversBrokenMirror(t *testing.T) {
	up := newUpstream(t, false)
	area := t.TempDir()
	down := downstream(t)
	spec := gitSpec("p", map[string]any{"url": up.url})
	if res := runSpec(t, spec, Options{WorkingArea: area, PushURL: down}); res.Err != nil {
		t.Fatal(res.Err)
	}
	mirrorDir := filepath.Join(workarea.Dir(area, "p"), "git")
	for _, f := range []string{"HEAD", "objects"} {
		if err := os.RemoveAll(filepath.Join(mirrorDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	// A half-made mirror from a crash during creation is cleared too.
	if err := os.MkdirAll(mirrorDir+".new", 0o755); err != nil {
		t.Fatal(err)
	}
	up.commit("after crash")
	if res := runSpec(t, spec, Options{WorkingArea: area, PushURL: down}); res.Err != nil {
		t.Fatalf("run after the mirror broke: %v", res.Err)
	}
	if got, want := refsOf(t, down)["refs/heads/main"], up.git("rev-parse", "HEAD"); got != want {
		t.Errorf("downstream main = %s; want %s", got, want)
	}
}

func TestPushTargets(t *testing.T) {
	up := newUpstream(t, false)
	base := t.TempDir()
	gittest.Git(t, "", nil, "init", "-q", "--bare", filepath.Join(base, "a", "b.git"))
	spec := gitSpec("a/b", map[string]any{"url": up.url})
	if res := runSpec(t, spec, Options{WorkingArea: t.TempDir(), MirrorBaseURLPush: base}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if refs := refsOf(t, filepath.Join(base, "a", "b.git")); refs["refs/heads/main"] == "" {
		t.Errorf("--mirror-base-url-push: downstream refs = %v", refs)
	}
}

// The mirror's HEAD, and so the result's Head and a local downstream's
// HEAD, follow the upstream's HEAD from the first clone through later
// fetches, as the refspecs name it in the mirror.
func TestGitHeadFollowsUpstream(t *testing.T) {
	up := newUpstream(t, false)
	up.git("branch", "-m", "main", "trunk")
	up.git("branch", "side")
	down := downstream(t)
	area := t.TempDir()
	spec := gitSpec("p", map[string]any{"url": up.url})
	for _, want := range []string{"trunk", "side", "trunk"} {
		up.git("symbolic-ref", "HEAD", "refs/heads/"+want)
		res := runSpec(t, spec, Options{WorkingArea: area, PushURL: down})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if res.Head != want {
			t.Errorf("with upstream HEAD %s: Head = %q; want %q", want, res.Head, want)
		}
		if got := gittest.Git(t, down, nil, "symbolic-ref", "HEAD"); got != "refs/heads/"+want {
			t.Errorf("with upstream HEAD %s: downstream HEAD = %s; want refs/heads/%s", want, got, want)
		}
	}

	tests := []struct {
		name     string
		refspecs []any
		want     string
	}{
		{name: "all branches", refspecs: []any{"+refs/heads/*:refs/heads/*"}, want: "trunk"},
		{name: "short name", refspecs: []any{"trunk", "side"}, want: "trunk"},
		{name: "renamed", refspecs: []any{"refs/heads/trunk:refs/heads/main"}, want: "main"},
		{name: "renamed by pattern", refspecs: []any{"refs/heads/*:refs/heads/up/*"}, want: "up/trunk"},
		{name: "default branch not mirrored", refspecs: []any{"side"}, want: ""},
	}
	up.git("symbolic-ref", "HEAD", "refs/heads/trunk")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runSpec(t, gitSpec("p", map[string]any{"url": up.url, "refspecs": tc.refspecs}),
				Options{WorkingArea: t.TempDir(), PullOnly: true})
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Head != tc.want {
				t.Errorf("Head = %q; want %q", res.Head, tc.want)
			}
		})
	}
}

func TestSymrefHead(t *testing.T) {
	tests := []struct{ name, out, want string }{
		{name: "branch", out: "ref: refs/heads/trunk\tHEAD\n1234abcd\tHEAD\n", want: "refs/heads/trunk"},
		{name: "detached", out: "1234abcd\tHEAD\n", want: ""},
		{name: "nothing", out: "", want: ""},
	}
	for _, tc := range tests {
		if got := symrefHead(tc.out); got != tc.want {
			t.Errorf("%s: symrefHead(%q) = %q; want %q", tc.name, tc.out, got, tc.want)
		}
	}
}

// TestGitChildrenHoldLock checks that the programs a run starts inherit the
// mirror's lock, so that one left running by a killed lorry keeps the next
// run off the mirror.
func TestGitChildrenHoldLock(t *testing.T) {
	up := newUpstream(t, false)
	area := t.TempDir()
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin, out := t.TempDir(), filepath.Join(t.TempDir(), "held")
	lockPath := workarea.Dir(area, "p") + ".lock"
	wrapper := `#!/bin/sh
for fd in /proc/$$/fd/*; do
  if [ "$(readlink "$fd")" = ` + shellQuote(lockPath) + ` ]; then echo "$*" >> ` + shellQuote(out) + `; fi
done
exec ` + shellQuote(realGit) + ` "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	res := runSpec(t, gitSpec("p", map[string]any{"url": up.url}), Options{WorkingArea: area, PullOnly: true})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no git run held the lock: %v", err)
	}
	if !strings.Contains(string(data), "clone") {
		t.Errorf("git runs holding the lock:\n%s\nwant the clone among them", data)
	}
}
