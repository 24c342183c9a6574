package mirror_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// cvCvsUpstream is a local CVS repository with one module, made with cvs.
type cvCvsUpstream struct {
	t      *testing.T
	root   string // CVSROOT
	module string
	wc     string // a working copy of HEAD
	env    []string
}

func newCvCvsUpstream(t *testing.T) *cvCvsUpstream {
	t.Helper()
	cvNeed(t, cvTool{"cvs", "cvs"}, cvTool{"cvsps", "cvsps"}, cvTool{"git-cvsimport", "git-cvs"})
	tmp := t.TempDir()
	u := &cvCvsUpstream{t: t, root: filepath.Join(tmp, "cvsroot"), module: "mod", wc: filepath.Join(tmp, "wc")}
	u.env = []string{"CVSROOT=" + u.root, "HOME=" + filepath.Join(tmp, "home")}
	u.cvs(tmp, "init")
	imp := filepath.Join(tmp, "import")
	if err := os.MkdirAll(imp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(imp, "README"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u.cvs(imp, "import", "-m", "one", u.module, "vendor", "start")
	u.cvs(tmp, "checkout", "-d", u.wc, u.module)
	return u
}

func (u *cvCvsUpstream) cvs(dir string, args ...string) string {
	u.t.Helper()
	return cvRun(u.t, dir, u.env, "cvs", append([]string{"-Q"}, args...)...)
}

// commitFile commits content as file in the working copy.
func (u *cvCvsUpstream) commitFile(file, content, msg string) {
	u.t.Helper()
	path := filepath.Join(u.wc, file)
	_, err := os.Stat(path)
	isNew := err != nil
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		u.t.Fatal(err)
	}
	if isNew {
		u.cvs(u.wc, "add", file)
	}
	u.cvs(u.wc, "commit", "-m", msg)
}

// cvNextSecond waits for the clock to pass into the next second. CVS
// dates commits to the second, and cvsimport takes a commit in the same
// second as the last one it converted on a branch for converted already.
func cvNextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now))
}

// TestCvsMirrorFollowsUpstream converts a module, then only the commits
// that came after, with a new branch and tag.
func TestCvsMirrorFollowsUpstream(t *testing.T) {
	t.Parallel()
	u := newCvCvsUpstream(t)
	u.commitFile("README", "one\ntwo\n", "two")
	u.cvs(u.wc, "tag", "v1")

	m := newCvMirror(t, "cvs", map[string]any{"url": u.root, "module": u.module})
	m.mustRun()
	first := m.refs()
	// cvs import made the vendor branch, with the release tag "start".
	cvCheckNames(t, "refs after the first run", first,
		"refs/heads/master", "refs/heads/vendor", "refs/tags/start", "refs/tags/v1")
	if got := m.show("master", "README"); got != "one\ntwo" {
		t.Errorf("master:README = %q, want %q", got, "one\ntwo")
	}
	if got := m.subject("master"); got != "two" {
		t.Errorf("master's subject = %q, want %q", got, "two")
	}
	if got, want := first["refs/tags/v1"], first["refs/heads/master"]; got != want {
		t.Errorf("v1 = %s, want master %s", got, want)
	}

	m.checkFailureKeepsMirror(u.root)

	cvNextSecond()
	u.commitFile("README", "one\ntwo\nthree\n", "three")
	u.cvs(u.wc, "tag", "v2")
	u.cvs(u.wc, "tag", "-b", "stable")
	u.cvs(u.wc, "update", "-r", "stable")
	u.commitFile("STABLE", "stable\n", "on stable")
	m.markState("cvs")
	res, out := m.mustRun()
	second := m.refs()
	cvCheckNames(t, "refs after the second run", second,
		"refs/heads/master", "refs/heads/vendor", "refs/heads/stable",
		"refs/tags/start", "refs/tags/v1", "refs/tags/v2")
	cvCheckKept(t, first, second, "refs/heads/vendor", "refs/tags/start", "refs/tags/v1")
	if got, want := m.parent("master"), first["refs/heads/master"]; got != want {
		t.Errorf("parent of the new master = %s, want the old master %s", got, want)
	}
	if got := m.show("master", "README"); got != "one\ntwo\nthree" {
		t.Errorf("master:README = %q, want %q", got, "one\ntwo\nthree")
	}
	if got, want := m.parent("stable"), second["refs/heads/master"]; got != want {
		t.Errorf("parent of stable = %s, want master %s", got, want)
	}
	if got := m.show("stable", "STABLE"); got != "stable" {
		t.Errorf("stable:STABLE = %q, want %q", got, "stable")
	}
	m.checkStateKept("cvs")
	// cvsimport reports each commit it makes.
	if got := strings.Count(out, "Committed patch"); got != 2 {
		t.Errorf("second run made %d commits, want the 2 new ones\noutput:\n%s", got, out)
	}
	if want := []string{"refs/heads/stable", "refs/tags/v2"}; !slices.Equal(res.Changes.Created, want) {
		t.Errorf("created: got %v, want %v", res.Changes.Created, want)
	}
	if want := []string{"refs/heads/master"}; !slices.Equal(res.Changes.Updated, want) {
		t.Errorf("updated: got %v, want %v", res.Changes.Updated, want)
	}
}

// TestCvsModuleIsNoOption gives a module that starts with "-", which
// cvsimport must take for the module, whatever it looks like as an
// option. cvsps, which cvsimport then runs, takes no such module, so the
// run fails there, and not with cvsimport's usage.
func TestCvsModuleIsNoOption(t *testing.T) {
	t.Parallel()
	u := newCvCvsUpstream(t)
	m := newCvMirror(t, "cvs", map[string]any{"url": u.root, "module": "-vmod"})
	res, out := m.run()
	if res.Err == nil {
		t.Fatalf("run of module -vmod succeeded; want cvsps to refuse it\noutput:\n%s", out)
	}
	if strings.Contains(out, "usage: git cvsimport") || !strings.Contains(out, "cvsps reported error") {
		t.Errorf("cvsimport did not take -vmod for the module\noutput:\n%s", out)
	}
}
