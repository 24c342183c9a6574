package mirror_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cvHgUpstream is a Mercurial repository made with hg.
type cvHgUpstream struct {
	t   *testing.T
	dir string
	env []string
}

func newCvHgUpstream(t *testing.T) *cvHgUpstream {
	t.Helper()
	cvNeed(t, cvTool{"hg", "mercurial"}, cvTool{"git-remote-hg", "git-remote-hg"})
	tmp := t.TempDir()
	u := &cvHgUpstream{
		t:   t,
		dir: filepath.Join(tmp, "repo"),
		// No configuration but the user's name.
		env: []string{"HGRCPATH=" + filepath.Join(tmp, "hgrc"), "HGPLAIN=1", "HGUSER=Test <test@example.com>"},
	}
	cvRun(t, tmp, u.env, "hg", "init", u.dir)
	return u
}

func (u *cvHgUpstream) hg(args ...string) string {
	u.t.Helper()
	return cvRun(u.t, u.dir, u.env, "hg", args...)
}

func (u *cvHgUpstream) commitFile(file, content, msg string) {
	u.t.Helper()
	path := filepath.Join(u.dir, file)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		u.t.Fatal(err)
	}
	u.hg("commit", "--addremove", "--quiet", "-m", msg)
}

// TestHgMirrorFollowsUpstream converts named branches, bookmarks and
// tags, then only the changesets that came after.
func TestHgMirrorFollowsUpstream(t *testing.T) {
	t.Parallel()
	u := newCvHgUpstream(t)
	u.commitFile("README", "one\n", "one")
	u.hg("tag", "v1")      // a changeset on default that adds .hgtags
	u.hg("bookmark", "bm") // at the tag's changeset
	u.hg("branch", "--quiet", "stable")
	u.commitFile("STABLE", "stable\n", "on stable")

	m := newCvMirror(t, "hg", map[string]any{"url": u.dir})
	m.mustRun()
	first := m.refs()
	cvCheckNames(t, "refs after the first run", first,
		"refs/heads/master", "refs/heads/branches/default", "refs/heads/branches/stable", "refs/heads/bm", "refs/tags/v1")
	if got := m.subject("master"); got != "Added tag v1 for changeset "+u.hg("log", "-r", "v1", "-T", "{node|short}") {
		t.Errorf("master's subject = %q, want the tagging changeset, the tip of default", got)
	}
	if got, want := first["refs/heads/master"], first["refs/heads/branches/default"]; got != want {
		t.Errorf("master = %s, want branches/default %s", got, want)
	}
	if got := m.show("v1", "README"); got != "one" {
		t.Errorf("v1:README = %q, want %q", got, "one")
	}
	if got := m.show("branches/stable", "STABLE"); got != "stable" {
		t.Errorf("branches/stable:STABLE = %q, want %q", got, "stable")
	}

	m.checkFailureKeepsMirror(u.dir)

	u.hg("update", "--quiet", "default")
	u.commitFile("README", "two\n", "two")
	u.hg("tag", "v2")
	u.hg("bookmark", "topic")
	m.markState("hg")
	res, out := m.mustRun()
	second := m.refs()
	cvCheckNames(t, "refs after the second run", second,
		"refs/heads/master", "refs/heads/branches/default", "refs/heads/branches/stable",
		"refs/heads/bm", "refs/heads/topic", "refs/tags/v1", "refs/tags/v2")
	cvCheckKept(t, first, second, "refs/heads/branches/stable", "refs/heads/bm", "refs/tags/v1")
	if got := m.show("v2", "README"); got != "two" {
		t.Errorf("v2:README = %q, want %q", got, "two")
	}
	if got, want := m.parent("v2"), first["refs/heads/master"]; got != want {
		t.Errorf("parent of v2 = %s, want the old master %s", got, want)
	}
	m.checkStateKept("hg")
	// Mercurial reports what the pull into git-remote-hg's clone brought.
	if !strings.Contains(out, "added 2 changesets") {
		t.Errorf("second run: got output\n%s\nwant the 2 new changesets pulled, not all 5", out)
	}
	if want := []string{"refs/heads/topic", "refs/tags/v2"}; !slices.Equal(res.Changes.Created, want) {
		t.Errorf("created: got %v, want %v", res.Changes.Created, want)
	}
	if want := []string{"refs/heads/branches/default", "refs/heads/master"}; !slices.Equal(res.Changes.Updated, want) {
		t.Errorf("updated: got %v, want %v", res.Changes.Updated, want)
	}
}
