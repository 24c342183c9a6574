package mirror_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cvSvnUpstream is a Subversion repository made with svnadmin and svn.
type cvSvnUpstream struct {
	t    *testing.T
	dir  string // the repository
	url  string
	home string // keeps svn's configuration out of the user's
	wc   string // a working copy of trunk, once checked out
}

func newCvSvnUpstream(t *testing.T) *cvSvnUpstream {
	t.Helper()
	cvNeed(t, cvTool{"svnadmin", "subversion"}, cvTool{"svn", "subversion"}, cvTool{"git-svn", "git-svn"})
	tmp := t.TempDir()
	u := &cvSvnUpstream{t: t, dir: filepath.Join(tmp, "repo"), home: filepath.Join(tmp, "home")}
	u.url = "file://" + u.dir
	cvRun(t, "", nil, "svnadmin", "create", u.dir)
	return u
}

func (u *cvSvnUpstream) svn(args ...string) string {
	u.t.Helper()
	return cvRun(u.t, "", []string{"HOME=" + u.home}, "svn", append([]string{"--non-interactive"}, args...)...)
}

// mkdirs makes directories of the repository in one revision.
func (u *cvSvnUpstream) mkdirs(paths ...string) {
	u.t.Helper()
	args := []string{"mkdir", "--parents", "-m", "layout"}
	for _, p := range paths {
		args = append(args, u.url+"/"+p)
	}
	u.svn(args...)
}

// commitFile commits content as file in the directory trunk.
func (u *cvSvnUpstream) commitFile(trunk, file, content, msg string) {
	u.t.Helper()
	if u.wc == "" {
		u.wc = filepath.Join(u.t.TempDir(), "wc")
		u.svn("checkout", "--quiet", u.url+"/"+trunk, u.wc)
	}
	path := filepath.Join(u.wc, file)
	_, err := os.Stat(path)
	isNew := err != nil
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		u.t.Fatal(err)
	}
	if isNew {
		u.svn("add", "--quiet", path)
	}
	u.svn("commit", "--quiet", "-m", msg, u.wc)
}

// copy makes a branch or tag: an svn copy of from to to.
func (u *cvSvnUpstream) copy(from, to string) {
	u.t.Helper()
	u.svn("copy", "--quiet", "-m", "copy "+from+" to "+to, u.url+"/"+from, u.url+"/"+to)
}

// TestSvnMirrorFollowsUpstream converts a repository of the standard
// layout, then only the revisions that came after.
func TestSvnMirrorFollowsUpstream(t *testing.T) {
	t.Parallel()
	u := newCvSvnUpstream(t)
	u.mkdirs("trunk", "branches", "tags")           // r1
	u.commitFile("trunk", "README", "one\n", "one") // r2
	u.copy("trunk", "branches/stable")              // r3
	u.copy("trunk", "tags/v1.0")                    // r4

	m := newCvMirror(t, "svn", map[string]any{"url": u.url})
	m.mustRun()
	first := m.refs()
	cvCheckNames(t, "refs after the first run", first, "refs/heads/master", "refs/heads/stable", "refs/tags/v1.0")
	if got := m.show("master", "README"); got != "one" {
		t.Errorf("master:README = %q, want %q", got, "one")
	}
	if got := m.subject("master"); got != "one" {
		t.Errorf("master's subject = %q, want %q", got, "one")
	}
	if got := m.show("stable", "README"); got != "one" {
		t.Errorf("stable:README = %q, want %q", got, "one")
	}
	if got := m.subject("v1.0"); got != "copy trunk to tags/v1.0" {
		t.Errorf("v1.0's subject = %q, want the svn tag's copy", got)
	}

	m.checkFailureKeepsMirror(u.dir)

	u.commitFile("trunk", "README", "two\n", "two") // r5
	u.copy("trunk", "branches/next")                // r6
	u.copy("trunk", "tags/v2.0")                    // r7
	m.markState("svn")
	res, out := m.mustRun()
	second := m.refs()
	cvCheckNames(t, "refs after the second run", second,
		"refs/heads/master", "refs/heads/stable", "refs/heads/next", "refs/tags/v1.0", "refs/tags/v2.0")
	cvCheckKept(t, first, second, "refs/heads/stable", "refs/tags/v1.0")
	if got := m.parent("master"); got != first["refs/heads/master"] {
		t.Errorf("parent of the new master = %s, want the old master %s", got, first["refs/heads/master"])
	}
	if got := m.show("master", "README"); got != "two" {
		t.Errorf("master:README = %q, want %q", got, "two")
	}
	if got := m.show("next", "README"); got != "two" {
		t.Errorf("next:README = %q, want %q", got, "two")
	}
	m.checkStateKept("svn")
	// git-svn reports each revision it converts as "rN = <commit>".
	if !strings.Contains(out, "r5 = ") || strings.Contains(out, "r2 = ") {
		t.Errorf("second run: got output\n%s\nwant r5 to r7 converted, not r1 to r4 again", out)
	}
	if want := []string{"refs/heads/next", "refs/tags/v2.0"}; !slices.Equal(res.Changes.Created, want) {
		t.Errorf("created: got %v, want %v", res.Changes.Created, want)
	}
	if want := []string{"refs/heads/master"}; !slices.Equal(res.Changes.Updated, want) {
		t.Errorf("updated: got %v, want %v", res.Changes.Updated, want)
	}

	// Nothing new upstream: nothing changes.
	res, _ = m.mustRun()
	if c := res.Changes; len(c.Created)+len(c.Updated)+len(c.Deleted) != 0 {
		t.Errorf("third run: got changes %+v, want none", c)
	}
}

// TestSvnLayouts maps layouts other than the standard one.
func TestSvnLayouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// dirs are trunk, branches and tags in the repository; "" for
		// none.
		dirs   [3]string
		layout any
		want   []string
		// trunkWins: an svn branch named master is not taken for trunk.
		trunkWins bool
	}{
		{
			name:   "standard by name",
			dirs:   [3]string{"trunk", "branches", "tags"},
			layout: "standard",
			want:   []string{"refs/heads/master", "refs/heads/stable", "refs/tags/v1"},
		},
		{
			name:   "custom",
			dirs:   [3]string{"code/main", "code/work", "code/releases"},
			layout: map[string]any{"trunk": "code/main", "branches": "code/work/*", "tags": "code/releases/*"},
			want:   []string{"refs/heads/master", "refs/heads/stable", "refs/tags/v1"},
		},
		{
			name:   "trunk only",
			dirs:   [3]string{"code/main", "code/work", ""},
			layout: map[string]any{"trunk": "code/main"},
			want:   []string{"refs/heads/master"},
		},
		{
			name:      "branch named master",
			dirs:      [3]string{"trunk", "branches", ""},
			layout:    "standard",
			want:      []string{"refs/heads/master"},
			trunkWins: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := newCvSvnUpstream(t)
			var dirs []string
			for _, d := range tt.dirs {
				if d != "" {
					dirs = append(dirs, d)
				}
			}
			u.mkdirs(dirs...)
			u.commitFile(tt.dirs[0], "README", "one\n", "on trunk")
			branch := "stable"
			if tt.trunkWins {
				branch = "master"
			}
			if tt.dirs[1] != "" {
				u.copy(tt.dirs[0], tt.dirs[1]+"/"+branch)
			}
			if tt.dirs[2] != "" {
				u.copy(tt.dirs[0], tt.dirs[2]+"/v1")
			}

			m := newCvMirror(t, "svn", map[string]any{"url": u.url, "layout": tt.layout})
			m.mustRun()
			cvCheckNames(t, "refs", m.refs(), tt.want...)
			if got := m.subject("master"); got != "on trunk" {
				t.Errorf("master's subject = %q, want trunk's %q", got, "on trunk")
			}
		})
	}
}
