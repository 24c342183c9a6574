package mirror_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cvBzrUpstream is a Bazaar trunk branch, with a feature branch of it,
// made with brz.
type cvBzrUpstream struct {
	t              *testing.T
	trunk, feature string
	env            []string
}

func newCvBzrUpstream(t *testing.T) *cvBzrUpstream {
	t.Helper()
	cvNeed(t, cvTool{"brz", "brz"})
	tmp := t.TempDir()
	u := &cvBzrUpstream{
		t:       t,
		trunk:   filepath.Join(tmp, "trunk"),
		feature: filepath.Join(tmp, "feature"),
		env:     []string{"BRZ_EMAIL=Test <test@example.com>", "BRZ_HOME=" + filepath.Join(tmp, "home")},
	}
	u.brz(tmp, "init", "--quiet", u.trunk)
	u.commitFile(u.trunk, "README", "one\n", "one")
	u.brz(u.trunk, "tag", "--quiet", "v1")
	u.brz(tmp, "branch", "--quiet", u.trunk, u.feature)
	u.commitFile(u.feature, "FEATURE", "feature\n", "on feature")
	return u
}

func (u *cvBzrUpstream) brz(dir string, args ...string) string {
	u.t.Helper()
	return cvRun(u.t, dir, u.env, "brz", args...)
}

func (u *cvBzrUpstream) commitFile(branch, file, content, msg string) {
	u.t.Helper()
	path := filepath.Join(branch, file)
	_, err := os.Stat(path)
	isNew := err != nil
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		u.t.Fatal(err)
	}
	if isNew {
		u.brz(branch, "add", "--quiet", file)
	}
	u.brz(branch, "commit", "--quiet", "-m", msg)
}

// TestBzrMirrorFollowsUpstream converts the branches of a spec, then
// only the revisions that came after, and a branch added to the spec.
func TestBzrMirrorFollowsUpstream(t *testing.T) {
	t.Parallel()
	u := newCvBzrUpstream(t)
	m := newCvMirror(t, "bzr", map[string]any{
		"url":      u.trunk,
		"branches": map[string]any{"feature": u.feature},
	})
	m.mustRun()
	first := m.refs()
	cvCheckNames(t, "refs after the first run", first, "refs/heads/master", "refs/heads/feature", "refs/tags/v1")
	if got := m.show("master", "README"); got != "one" {
		t.Errorf("master:README = %q, want %q", got, "one")
	}
	if got := m.show("feature", "FEATURE"); got != "feature" {
		t.Errorf("feature:FEATURE = %q, want %q", got, "feature")
	}
	// The history the branches share is converted once.
	if got, want := m.parent("feature"), first["refs/heads/master"]; got != want {
		t.Errorf("parent of feature = %s, want master %s", got, want)
	}
	if got, want := first["refs/tags/v1"], first["refs/heads/master"]; got != want {
		t.Errorf("v1 = %s, want master %s", got, want)
	}

	m.checkFailureKeepsMirror(u.trunk)

	u.commitFile(u.trunk, "README", "two\n", "two")
	u.brz(u.trunk, "tag", "--quiet", "v2")
	// A branch with no revisions of its own, added to the spec.
	later := filepath.Join(filepath.Dir(u.trunk), "later")
	u.brz(filepath.Dir(u.trunk), "branch", "--quiet", u.trunk, later)
	m.spec.Raw["branches"] = map[string]any{"feature": u.feature, "later": later}
	m.markState("bzr")
	res, out := m.mustRun()
	second := m.refs()
	cvCheckNames(t, "refs after the second run", second,
		"refs/heads/master", "refs/heads/feature", "refs/heads/later", "refs/tags/v1", "refs/tags/v2")
	cvCheckKept(t, first, second, "refs/heads/feature", "refs/tags/v1")
	if got, want := m.parent("master"), first["refs/heads/master"]; got != want {
		t.Errorf("parent of the new master = %s, want the old master %s", got, want)
	}
	if got := m.show("master", "README"); got != "two" {
		t.Errorf("master:README = %q, want %q", got, "two")
	}
	for _, ref := range []string{"refs/heads/later", "refs/tags/v2"} {
		if got, want := second[ref], second["refs/heads/master"]; got != want {
			t.Errorf("%s = %s, want master %s", ref, got, want)
		}
	}
	m.checkStateKept("bzr")
	// brz says how many revisions each export has that were not
	// exported before. Branches go in the order of their names: later
	// brings trunk's new revision, and master, exported after it, none.
	var counts []string
	for _, line := range strings.Split(out, "\n") {
		if _, n, ok := strings.Cut(line, "Starting export of "); ok {
			counts = append(counts, n)
		}
	}
	if want := []string{"0 revisions ...", "1 revisions ...", "0 revisions ..."}; !slices.Equal(counts, want) {
		t.Errorf("second run exported (feature, later, master): got %q, want %q\noutput:\n%s", counts, want, out)
	}
	if want := []string{"refs/heads/later", "refs/tags/v2"}; !slices.Equal(res.Changes.Created, want) {
		t.Errorf("created: got %v, want %v", res.Changes.Created, want)
	}
	if want := []string{"refs/heads/master"}; !slices.Equal(res.Changes.Updated, want) {
		t.Errorf("updated: got %v, want %v", res.Changes.Updated, want)
	}

	// Upstream takes its last revision back: master follows.
	u.brz(u.trunk, "uncommit", "--quiet", "--force")
	m.mustRun()
	if got, want := m.refs()["refs/heads/master"], first["refs/heads/master"]; got != want {
		t.Errorf("master after upstream's uncommit = %s, want the first master %s", got, want)
	}
}

// TestBzrNeedsFastimport runs a bzr spec with brz but without the Python
// module its fast-export needs.
func TestBzrNeedsFastimport(t *testing.T) {
	cvNeed(t, cvTool{"brz", "brz"})
	upstream := filepath.Join(t.TempDir(), "trunk")
	cvRun(t, "", []string{"BRZ_HOME=" + t.TempDir()}, "brz", "init", "--quiet", upstream)
	fake := filepath.Join(t.TempDir(), "fastimport")
	if err := os.MkdirAll(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	module := `raise ModuleNotFoundError("No module named 'fastimport'", name="fastimport")` + "\n"
	if err := os.WriteFile(filepath.Join(fake, "__init__.py"), []byte(module), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", filepath.Dir(fake))
	m := newCvMirror(t, "bzr", map[string]any{"url": upstream})
	res, out := m.run()
	want := `bzr specs need the fastimport Python module: install the Debian package "python3-fastimport"`
	if res.Err == nil || res.Err.Error() != want {
		t.Errorf("error:\ngot  %v\nwant %s\noutput:\n%s", res.Err, want, out)
	}
}

// A branch URL that starts with "-" is a location brz cannot find, not
// an option of brz branch.
func TestBzrURLIsNoOption(t *testing.T) {
	t.Parallel()
	cvNeed(t, cvTool{"brz", "brz"})
	m := newCvMirror(t, "bzr", map[string]any{"url": "--version"})
	res, out := m.run()
	if res.Err == nil || !strings.Contains(out, "Not a branch") {
		t.Errorf("got %v; want brz to find no branch at --version\noutput:\n%s", res.Err, out)
	}
}
