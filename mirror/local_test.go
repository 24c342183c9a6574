package mirror

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"lorrycontroller.dev/lc/gittest"
)

// A local downstream that another user owns, as the WEBAPP owns those it
// makes for jobs that run as --job-user, is pushed to and its refs are
// listed, through a symbolic link and a name that the shell would split.
func TestLocalDownstreamOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: giving the downstream to another user takes root (CI runs this as root)")
	}
	up := newUpstream(t, false)
	real := filepath.Join(t.TempDir(), "it's mine")
	down := filepath.Join(real, "down.git")
	gittest.Git(t, "", nil, "init", "-q", "--bare", "--shared=group", down)
	if out, err := exec.Command("chown", "-R", "54321:54321", real).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}

	for _, url := range []string{down, filepath.Join(link, "down.git"), "file://" + down} {
		up.commit(url)
		res := runSpec(t, gitSpec("delta/project", map[string]any{"url": up.url}), Options{WorkingArea: t.TempDir(), PushURL: url})
		if res.Err != nil {
			t.Fatalf("push to %s: %v", url, res.Err)
		}
		want := gittest.Git(t, up.dir, nil, "rev-parse", "HEAD")
		if got := gittest.Git(t, "", nil, "--git-dir", down, "rev-parse", "refs/heads/main"); got != want {
			t.Errorf("push to %s: downstream main = %s, want %s", url, got, want)
		}
		if res.Refs == nil {
			t.Errorf("push to %s: no ref changes: the downstream's refs were not listed", url)
		}
	}
}
