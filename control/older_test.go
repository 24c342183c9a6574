package control

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// confCommit commits, in the repository at dir, a configuration of one
// .lorry file defining paths, and returns the commit id.
func confCommit(t *testing.T, dir string, paths ...string) string {
	t.Helper()
	spec := "{"
	for i, p := range paths {
		if i > 0 {
			spec += ","
		}
		spec += `"` + p + `": {"type": "git", "url": "https://example.invalid/` + p + `.git"}`
	}
	files := map[string]string{
		"lorry-controller.conf": `[{"type": "lorries", "prefix": "conf", "globs": ["*.lorry"]}]` + "\n",
		"all.lorry":             spec + "}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Git(t, dir, nil, "add", "-A")
	gittest.Git(t, dir, nil, "commit", "-q", "-m", "configuration")
	return gittest.Git(t, dir, nil, "rev-parse", "HEAD")
}

// TestOlderConfigNotApplied: two WEBAPPs on one database, each with its
// own clone of CONFGIT. B applies a commit; A, whose clone's branch is
// behind B's, reads an older commit and applies nothing of it, answering
// ErrOlderConfig: the lorries stay the newer commit's. A commit that is
// not older (newer, beside it on another history, or one of which A's
// clone holds nothing of the newer's) is applied.
func TestOlderConfigNotApplied(t *testing.T) {
	ctx := context.Background()
	origin := t.TempDir()
	gittest.Git(t, origin, nil, "init", "-q", "-b", "master")
	c1 := confCommit(t, origin, "old/a")
	behind := filepath.Join(t.TempDir(), "behind")
	gittest.Git(t, "", nil, "clone", "-q", "--bare", origin, behind)
	c2 := confCommit(t, origin, "new/a", "new/b")

	place := dbtest.Place(t)
	fake := &clock.Fake{}
	fake.Set(1000)
	a, _, _ := newAppAt(t, place, fake)
	b, _, _ := newAppAt(t, place, fake)
	a.Owner, b.Owner = "A", "B"
	b.Config = &confgit.Source{Dir: filepath.Join(t.TempDir(), "b"), URL: origin}
	lorries := func() []string {
		t.Helper()
		var paths []string
		err := a.DB.View(ctx, func(tx *statedb.Tx) error {
			ls, err := tx.Lorries(ctx)
			paths = nil
			for _, l := range ls {
				paths = append(paths, l.Path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(paths)
		return paths
	}
	apply := func(who *App, want string) {
		t.Helper()
		if res, err := who.ApplyConfiguration(ctx); err != nil || res.Commit != want {
			t.Fatalf("%s's apply: %+v, %v; want %s applied", who.Owner, res, err, want)
		}
	}

	// A's clone holds nothing of the commit applied: it cannot tell its
	// own commit older, and applies it.
	apply(b, c2)
	a.Config = &confgit.Source{Dir: behind}
	apply(a, c1)
	if got := lorries(); !slices.Equal(got, []string{"conf/old/a"}) {
		t.Errorf("lorries %q; want conf/old/a", got)
	}

	// A's clone holds the newer commit, its branch behind it.
	apply(b, c2)
	gittest.Git(t, behind, nil, "fetch", "-q", origin, "master")
	_, err := a.ApplyConfiguration(ctx)
	if !errors.Is(err, ErrOlderConfig) || !errors.Is(err, statedb.ErrConflict) {
		t.Errorf("A's apply of the older commit: %v; want ErrOlderConfig", err)
	}
	if got := lorries(); !slices.Equal(got, []string{"conf/new/a", "conf/new/b"}) {
		t.Errorf("lorries after A's apply of the older commit %q; want conf/new/a, conf/new/b", got)
	}

	// A newer commit than the one applied is applied, and then B's,
	// older, is not.
	c3 := confCommit(t, origin, "newest/a")
	gittest.Git(t, behind, nil, "fetch", "-q", origin, "master:master")
	apply(a, c3)
	b.Config = &confgit.Source{Dir: filepath.Join(t.TempDir(), "b2")}
	gittest.Git(t, "", nil, "clone", "-q", "--bare", origin, b.Config.(*confgit.Source).Dir)
	gittest.Git(t, b.Config.(*confgit.Source).Dir, nil, "update-ref", "refs/heads/master", c2)
	if _, err := b.ApplyConfiguration(ctx); !errors.Is(err, ErrOlderConfig) {
		t.Errorf("B's apply of a commit older than A's: %v; want ErrOlderConfig", err)
	}

	// CONFGIT's branch forced onto another history: its commit is not
	// older, and is applied.
	gittest.Git(t, origin, nil, "checkout", "-q", "--orphan", "forced")
	gittest.Git(t, origin, nil, "rm", "-q", "-r", "--cached", ".")
	forced := confCommit(t, origin, "forced/a")
	gittest.Git(t, origin, nil, "branch", "-q", "-f", "master", forced)
	b.Config = &confgit.Source{Dir: filepath.Join(t.TempDir(), "b3"), URL: origin}
	apply(b, forced)
	if got := lorries(); !slices.Equal(got, []string{"conf/forced/a"}) {
		t.Errorf("lorries after the forced commit %q; want conf/forced/a", got)
	}
}
