package confgit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5"
)

const simpleConf = `[
  {"type": "lorries", "prefix": "delta", "globs": ["lorries/**/*.lorry"]},
  {"type": "trove", "trovehost": "trove.example.com"}
]`

func readOK(t *testing.T, src *Source) *Config {
	t.Helper()
	cfg, err := src.Read(context.Background())
	if err != nil {
		t.Fatalf("Read: got error %v, want none", err)
	}
	return cfg
}

func TestReadLocalRepository(t *testing.T) {
	tests := []struct {
		name   string
		init   string // branch created by git init
		branch string // Source.Branch
	}{
		{name: "master by default", init: "master"},
		{name: "named branch", init: "trunk", branch: "trunk"},
		{name: "named branch as a ref", init: "trunk", branch: "refs/heads/trunk"},
		{name: "falls back to HEAD when master is missing", init: "main"},
		{name: "falls back to HEAD when the branch is missing", init: "main", branch: "production"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := newTestRepo(t, tc.init)
			commit := repo.commit(map[string]string{
				ConfFile:              simpleConf,
				"lorries/a.lorry":     `{"a": {"type": "git", "url": "https://example.com/a.git"}}`,
				"lorries/sub/b.lorry": "b:\n  type: git\n  url: https://example.com/b.git\n",
			})
			cfg := readOK(t, &Source{Dir: repo.dir, Branch: tc.branch})
			if cfg.Commit != commit {
				t.Errorf("got commit %s, want %s", cfg.Commit, commit)
			}
			if got, want := lorryPaths(cfg), []string{"delta/a", "delta/b"}; !reflect.DeepEqual(got, want) {
				t.Errorf("got lorries %v, want %v", got, want)
			}
			if len(cfg.Hosts) != 1 || cfg.Hosts[0].Name != "trove.example.com" {
				t.Errorf("got hosts %+v, want trove.example.com", cfg.Hosts)
			}
		})
	}
}

func TestReadPrefersBranchOverHEAD(t *testing.T) {
	repo := newTestRepo(t, "master")
	onMaster := repo.commit(map[string]string{ConfFile: `[]`})
	runGit(t, repo.dir, nil, "checkout", "-q", "-b", "work")
	repo.commit(map[string]string{ConfFile: `[{"type": "gitlab", "host": "h"}]`})
	cfg := readOK(t, &Source{Dir: repo.dir})
	if cfg.Commit != onMaster || len(cfg.Hosts) != 0 {
		t.Errorf("got commit %s with %d hosts, want master's commit %s with none", cfg.Commit, len(cfg.Hosts), onMaster)
	}
}

func TestReadIgnoresWorkingTree(t *testing.T) {
	repo := newTestRepo(t, "master")
	commit := repo.commit(map[string]string{
		ConfFile:          simpleConf,
		"lorries/a.lorry": `{"a": {"type": "git", "url": "https://example.com/a.git"}}`,
	})
	// Uncommitted edits, staged and not, and an untracked file.
	repo.write(map[string]string{
		ConfFile:            `[{"type": "broken"`,
		"lorries/a.lorry":   `{"changed": {"type": "git", "url": "x"}}`,
		"lorries/new.lorry": `{"new": {"type": "git", "url": "x"}}`,
	})
	runGit(t, repo.dir, nil, "add", "lorries/a.lorry")

	cfg := readOK(t, &Source{Dir: repo.dir})
	if cfg.Commit != commit {
		t.Errorf("got commit %s, want %s", cfg.Commit, commit)
	}
	if got, want := lorryPaths(cfg), []string{"delta/a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got lorries %v, want only the committed %v", got, want)
	}
}

func TestReadBareRepositoryWithoutURL(t *testing.T) {
	repo := newTestRepo(t, "master")
	commit := repo.commit(map[string]string{ConfFile: simpleConf, "lorries/a.lorry": `{"a": {"type": "git", "url": "u"}}`})
	bare := filepath.Join(t.TempDir(), "bare.git")
	runGit(t, "", nil, "clone", "-q", "--bare", repo.dir, bare)
	cfg := readOK(t, &Source{Dir: bare})
	if cfg.Commit != commit || len(cfg.Lorries) != 1 {
		t.Errorf("got commit %s and lorries %v, want %s and [delta/a]", cfg.Commit, lorryPaths(cfg), commit)
	}
}

func TestReadCloneAndFetch(t *testing.T) {
	upstream := newTestRepo(t, "master")
	first := upstream.commit(map[string]string{
		ConfFile:          simpleConf,
		"lorries/a.lorry": `{"a": {"type": "git", "url": "https://example.com/a.git"}}`,
	})
	dir := filepath.Join(t.TempDir(), "confgit")
	src := &Source{Dir: dir, URL: upstream.dir}

	cfg := readOK(t, src)
	if cfg.Commit != first {
		t.Fatalf("first read: got commit %s, want %s", cfg.Commit, first)
	}
	if _, err := os.Stat(filepath.Join(dir, "lorries")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("clone has a checked-out working tree (stat: %v); want a bare clone", err)
	}

	second := upstream.commit(map[string]string{"lorries/b.lorry": `{"b": {"type": "git", "url": "https://example.com/b.git"}}`})
	cfg = readOK(t, src)
	if cfg.Commit != second {
		t.Errorf("after a new upstream commit: got commit %s, want %s", cfg.Commit, second)
	}
	if got, want := lorryPaths(cfg), []string{"delta/a", "delta/b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after a new upstream commit: got lorries %v, want %v", got, want)
	}

	// History rewritten upstream: the fetch is forced.
	runGit(t, upstream.dir, nil, "reset", "-q", "--hard", first)
	third := upstream.commit(map[string]string{"lorries/c.lorry": `{"c": {"type": "git", "url": "https://example.com/c.git"}}`})
	cfg = readOK(t, src)
	if cfg.Commit != third {
		t.Errorf("after a forced update: got commit %s, want %s", cfg.Commit, third)
	}
	if got, want := lorryPaths(cfg), []string{"delta/a", "delta/c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after a forced update: got lorries %v, want %v", got, want)
	}

	// A new Source on the same Dir fetches rather than clones.
	fourth := upstream.commit(map[string]string{ConfFile: `[]`})
	cfg = readOK(t, &Source{Dir: dir, URL: upstream.dir})
	if cfg.Commit != fourth || len(cfg.Lorries) != 0 {
		t.Errorf("reopened: got commit %s with %d lorries, want %s with none", cfg.Commit, len(cfg.Lorries), fourth)
	}
}

func TestReadCloneBranchFallback(t *testing.T) {
	tests := []struct {
		name       string
		branch     string
		wantBranch string // the upstream branch whose commit must be read
	}{
		{name: "master missing, remote HEAD used", branch: "", wantBranch: "main"},
		{name: "named branch", branch: "other", wantBranch: "other"},
		{name: "named branch missing, remote HEAD used", branch: "gone", wantBranch: "main"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			upstream := newTestRepo(t, "main")
			commits := map[string]string{}
			commits["main"] = upstream.commit(map[string]string{ConfFile: `[{"type": "gitea", "host": "main.example.com"}]`})
			runGit(t, upstream.dir, nil, "checkout", "-q", "-b", "other")
			commits["other"] = upstream.commit(map[string]string{ConfFile: `[{"type": "gitea", "host": "other.example.com"}]`})
			runGit(t, upstream.dir, nil, "checkout", "-q", "main")

			cfg := readOK(t, &Source{Dir: t.TempDir(), URL: upstream.dir, Branch: tc.branch})
			if cfg.Commit != commits[tc.wantBranch] {
				t.Errorf("got commit %s, want %s (branch %s)", cfg.Commit, commits[tc.wantBranch], tc.wantBranch)
			}
		})
	}
}

func TestReadBranchCreatedLater(t *testing.T) {
	upstream := newTestRepo(t, "main")
	onMain := upstream.commit(map[string]string{ConfFile: `[]`})
	src := &Source{Dir: t.TempDir(), URL: upstream.dir}
	if cfg := readOK(t, src); cfg.Commit != onMain {
		t.Fatalf("got commit %s, want main's %s", cfg.Commit, onMain)
	}
	runGit(t, upstream.dir, nil, "checkout", "-q", "-b", "master")
	onMaster := upstream.commit(map[string]string{ConfFile: `[{"type": "gitlab", "host": "h"}]`})
	runGit(t, upstream.dir, nil, "checkout", "-q", "main")
	if cfg := readOK(t, src); cfg.Commit != onMaster {
		t.Errorf("got commit %s, want the new master's %s", cfg.Commit, onMaster)
	}
}

func TestReadCache(t *testing.T) {
	upstream := newTestRepo(t, "master")
	upstream.commit(map[string]string{
		ConfFile:          simpleConf,
		"lorries/a.lorry": `{"a": {"type": "git", "url": "https://example.com/a.git"}}`,
	})
	src := &Source{Dir: t.TempDir(), URL: upstream.dir}
	first := readOK(t, src)
	cached := src.cached

	// What a caller does with its copy must not leak into the cache.
	first.Lorries[0].Path = "mangled"
	first.Hosts[0].Prefixmap["x"] = "y"
	first.Hosts[0].Ignore = append(first.Hosts[0].Ignore, "z")

	second := readOK(t, src)
	if src.cached != cached {
		t.Errorf("unchanged commit: the cached Config was rebuilt, want it reused")
	}
	if second.Commit != first.Commit || second.Lorries[0].Path != "delta/a" || len(second.Hosts[0].Prefixmap) != 0 || len(second.Hosts[0].Ignore) != 0 {
		t.Errorf("unchanged commit: got %+v, want the first result as it was read", second)
	}

	upstream.commit(map[string]string{"lorries/b.lorry": `{"b": {"type": "git", "url": "u"}}`})
	third := readOK(t, src)
	if src.cached == cached {
		t.Errorf("new commit: the cached Config was reused, want it rebuilt")
	}
	if got, want := lorryPaths(third), []string{"delta/a", "delta/b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("new commit: got lorries %v, want %v", got, want)
	}
}

func TestReadBrokenConf(t *testing.T) {
	upstream := newTestRepo(t, "master")
	good := upstream.commit(map[string]string{ConfFile: simpleConf, "lorries/a.lorry": `{"a": {"type": "git", "url": "u"}}`})
	src := &Source{Dir: t.TempDir(), URL: upstream.dir}
	readOK(t, src)

	bad := upstream.commit(map[string]string{ConfFile: `[{"type": "lorries", "prefix": "delta"}]`})
	cfg, err := src.Read(context.Background())
	if err == nil {
		t.Fatalf("got %+v, want an error", cfg)
	}
	if cfg != nil {
		t.Errorf("got a Config alongside error %v, want nil", err)
	}
	var ce *ConfError
	if !errors.Is(err, ErrBadConf) || !errors.As(err, &ce) || ce.Key != "globs" {
		t.Errorf("got error %v, want a *ConfError about key globs", err)
	}
	if !strings.Contains(err.Error(), bad) {
		t.Errorf("got error %q, want it to name commit %s", err, bad)
	}
	var fe *FetchError
	if errors.As(err, &fe) {
		t.Errorf("got a FetchError for a broken configuration: %v", err)
	}

	// Fixing the configuration upstream is picked up as usual.
	upstream.commit(map[string]string{ConfFile: simpleConf})
	if cfg := readOK(t, src); cfg.Commit == good || len(cfg.Lorries) != 1 {
		t.Errorf("after the fix: got commit %s with lorries %v, want a new commit with [delta/a]", cfg.Commit, lorryPaths(cfg))
	}
}

func TestReadFailures(t *testing.T) {
	notEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(notEmpty, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	emptyUpstream := filepath.Join(t.TempDir(), "empty.git")
	runGit(t, "", nil, "init", "-q", "--bare", emptyUpstream)
	noCommits := newTestRepo(t, "master")

	tests := []struct {
		name      string
		src       *Source
		wantFetch bool
		wantErr   string
	}{
		{name: "no Dir", src: &Source{URL: "x"}, wantErr: "directory not set"},
		{name: "missing upstream", src: &Source{Dir: t.TempDir(), URL: filepath.Join(t.TempDir(), "nope")}, wantFetch: true, wantErr: "fetch CONFGIT from"},
		{name: "empty upstream", src: &Source{Dir: t.TempDir(), URL: emptyUpstream}, wantFetch: true, wantErr: "empty"},
		{name: "Dir neither empty nor a repository", src: &Source{Dir: notEmpty, URL: emptyUpstream}, wantErr: "not a git repository and not empty"},
		{name: "no URL and no repository", src: &Source{Dir: t.TempDir()}, wantErr: "repository does not exist"},
		{name: "no URL and no commits", src: &Source{Dir: noCommits.dir}, wantErr: "HEAD names no commit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.src.Read(context.Background())
			if err == nil {
				t.Fatalf("got %+v, want an error containing %q", cfg, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got error %q, want it to contain %q", err, tc.wantErr)
			}
			var fe *FetchError
			if got := errors.As(err, &fe); got != tc.wantFetch {
				t.Errorf("errors.As(%v, *FetchError) = %v, want %v", err, got, tc.wantFetch)
			}
			if errors.Is(err, ErrBadConf) {
				t.Errorf("error %v matches ErrBadConf, want it not to", err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(notEmpty, "precious")); err != nil {
		t.Errorf("the non-empty Dir was disturbed: %v", err)
	}
}

func TestFetchErrorHidesPassword(t *testing.T) {
	src := &Source{Dir: t.TempDir(), URL: "http://user:hunter2@127.0.0.1:1/confgit.git"}
	_, err := src.Read(context.Background())
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("got error %v, want one without the password", err)
	}
}

func TestReadCancelled(t *testing.T) {
	upstream := newTestRepo(t, "master")
	upstream.commit(map[string]string{ConfFile: simpleConf})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Source{Dir: t.TempDir(), URL: upstream.dir}).Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("got error %v, want context.Canceled", err)
	}
}

func TestReadConcurrently(t *testing.T) {
	upstream := newTestRepo(t, "master")
	commit := upstream.commit(map[string]string{ConfFile: simpleConf, "lorries/a.lorry": `{"a": {"type": "git", "url": "u"}}`})
	src := &Source{Dir: t.TempDir(), URL: upstream.dir}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			cfg, err := src.Read(context.Background())
			if err == nil && cfg.Commit != commit {
				err = errors.New("got commit " + cfg.Commit + ", want " + commit)
			}
			if err == nil {
				cfg.Lorries[0].Path = "each caller owns its copy"
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestReadBranchDeletedUpstream(t *testing.T) {
	upstream := newTestRepo(t, "master")
	onMaster := upstream.commit(map[string]string{ConfFile: `[]`})
	runGit(t, upstream.dir, nil, "checkout", "-q", "-b", "production")
	onProduction := upstream.commit(map[string]string{ConfFile: `[{"type": "gitlab", "host": "h"}]`})
	runGit(t, upstream.dir, nil, "checkout", "-q", "master")

	src := &Source{Dir: t.TempDir(), URL: upstream.dir, Branch: "production"}
	if cfg := readOK(t, src); cfg.Commit != onProduction {
		t.Fatalf("got commit %s, want production's %s", cfg.Commit, onProduction)
	}
	runGit(t, upstream.dir, nil, "branch", "-q", "-D", "production")
	if cfg := readOK(t, src); cfg.Commit != onMaster {
		t.Errorf("after deleting the branch upstream: got commit %s, want the remote HEAD's %s", cfg.Commit, onMaster)
	}
}

func TestFetchNothingNew(t *testing.T) {
	upstream := newTestRepo(t, "master")
	upstream.commit(map[string]string{ConfFile: simpleConf})
	dir := t.TempDir()
	readOK(t, &Source{Dir: dir, URL: upstream.dir})
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing may be rewritten when nothing changed upstream.
	if updated, err := fetch(context.Background(), dir, repo, upstream.dir); updated || err != nil {
		t.Errorf("fetch with nothing new: got updated %v, error %v; want false, nil", updated, err)
	}
	upstream.commit(map[string]string{"x": "y"})
	if updated, err := fetch(context.Background(), dir, repo, upstream.dir); !updated || err != nil {
		t.Errorf("fetch of a new commit: got updated %v, error %v; want true, nil", updated, err)
	}
}

func TestReadRepacksManyPacks(t *testing.T) {
	old := maxPacks
	maxPacks = 3
	t.Cleanup(func() { maxPacks = old })

	upstream := newTestRepo(t, "master")
	dir := t.TempDir()
	src := &Source{Dir: dir, URL: upstream.dir}
	want := []string{}
	for i := range 6 {
		name := fmt.Sprintf("l%d", i)
		upstream.commit(map[string]string{
			ConfFile:                     simpleConf,
			"lorries/" + name + ".lorry": fmt.Sprintf(`{%q: {"type": "git", "url": "u"}}`, name),
		})
		want = append(want, "delta/"+name)
		cfg := readOK(t, src)
		if got := lorryPaths(cfg); !reflect.DeepEqual(got, want) {
			t.Fatalf("read %d: got lorries %v, want %v", i, got, want)
		}
		packs, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
		if err != nil {
			t.Fatal(err)
		}
		if len(packs) > maxPacks+1 {
			t.Errorf("read %d: got %d packs, want at most %d", i, len(packs), maxPacks+1)
		}
	}
	runGit(t, dir, nil, "fsck", "--strict")
}

func TestReadLinkedWorktree(t *testing.T) {
	repo := newTestRepo(t, "master")
	onMaster := repo.commit(map[string]string{ConfFile: simpleConf, "lorries/a.lorry": `{"a": {"type": "git", "url": "u"}}`})
	wt := filepath.Join(t.TempDir(), "wt")
	runGit(t, repo.dir, nil, "worktree", "add", "-q", "-b", "side", wt)
	cfg := readOK(t, &Source{Dir: wt})
	if cfg.Commit != onMaster || len(cfg.Lorries) != 1 {
		t.Errorf("got commit %s with lorries %v, want master's %s with [delta/a]", cfg.Commit, lorryPaths(cfg), onMaster)
	}
}

func TestReadEachHandsOutBatches(t *testing.T) {
	upstream := newTestRepo(t, "master")
	files := map[string]string{ConfFile: simpleConf, "lorries/broken.lorry": `{`}
	for i := range 7 {
		files[fmt.Sprintf("lorries/f%d.lorry", i)] = fmt.Sprintf(`{"z%d": {"type": "git", "url": "u"}, "a%d": {"type": "git", "url": "u"}}`, i, i)
	}
	commit := upstream.commit(files)
	src := &Source{Dir: t.TempDir(), URL: upstream.dir}
	var batches [][]string
	var hosts int
	cfg, err := src.ReadEach(context.Background(), 3, func(c *Config) error {
		hosts = len(c.Hosts)
		if len(batches) > 0 || c.Commit != commit {
			t.Errorf("sections got commit %q after %d batches; want %s before any", c.Commit, len(batches), commit)
		}
		return nil
	}, func(ls []Lorry) error {
		var paths []string
		for _, l := range ls {
			paths = append(paths, l.Path)
		}
		batches = append(batches, paths)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Two files (four lorries) make a batch of about 3; the lorries come
	// in the order of their files, by path within a batch.
	want := [][]string{{"delta/a0", "delta/a1", "delta/z0", "delta/z1"}, {"delta/a2", "delta/a3", "delta/z2", "delta/z3"},
		{"delta/a4", "delta/a5", "delta/z4", "delta/z5"}, {"delta/a6", "delta/z6"}}
	if !reflect.DeepEqual(batches, want) {
		t.Errorf("batches = %v; want %v", batches, want)
	}
	if cfg.Commit != commit || hosts != 1 || len(cfg.Hosts) != 1 || len(cfg.Lorries) != 0 ||
		!reflect.DeepEqual(cfg.Kept.Files, []string{"lorries/broken.lorry"}) || len(cfg.Errors) != 1 {
		t.Errorf("ReadEach = %+v; want commit %s, its host, no lorries, the broken file kept and its error", cfg, commit)
	}
	if src.cached != nil {
		t.Errorf("ReadEach kept the configuration it read")
	}

	// ErrSkipFiles ends the read before any file; an error of each ends it
	// and is returned as it is.
	batches = nil
	if _, err := src.ReadEach(context.Background(), 3, func(*Config) error { return ErrSkipFiles },
		func(ls []Lorry) error { batches = append(batches, nil); return nil }); err != nil || len(batches) != 0 {
		t.Errorf("ErrSkipFiles: %v, %d batches; want no error and none", err, len(batches))
	}
	stop := errors.New("stop")
	if _, err := src.ReadEach(context.Background(), 3, func(*Config) error { return nil },
		func([]Lorry) error { return stop }); err != stop {
		t.Errorf("each failing: %v; want its error", err)
	}
}

// ReadEach reads the next batch while each applies the one before, on
// another goroutine: each still gets the batches one at a time and in
// order. An error of each stops the reading, and a panic of each is
// raised again by ReadEach.
func TestReadEachReadsAheadOfEach(t *testing.T) {
	upstream := newTestRepo(t, "master")
	files := map[string]string{ConfFile: simpleConf}
	for i := range 20 {
		files[fmt.Sprintf("lorries/f%02d.lorry", i)] = fmt.Sprintf(`{"p%02d": {"type": "git", "url": "u"}}`, i)
	}
	upstream.commit(files)
	src := &Source{Dir: t.TempDir(), URL: upstream.dir}

	var got []string
	var inEach atomic.Int32
	_, err := src.ReadEach(context.Background(), 1, func(*Config) error { return nil }, func(ls []Lorry) error {
		if inEach.Add(1) != 1 {
			t.Error("each called again before it returned")
		}
		defer inEach.Add(-1)
		got = append(got, ls[0].Path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 || got[0] != "delta/p00" || got[19] != "delta/p19" {
		t.Errorf("each got %v; want the 20 lorries in order", got)
	}

	stop := errors.New("stop")
	var calls atomic.Int32
	if _, err := src.ReadEach(context.Background(), 1, func(*Config) error { return nil },
		func([]Lorry) error { calls.Add(1); return stop }); err != stop {
		t.Errorf("each failing: %v; want its error", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("each called %d times after its first failed; want once", n)
	}

	defer func() {
		if v := recover(); v != "boom" {
			t.Errorf("ReadEach with each panicking: recovered %v; want its panic", v)
		}
	}()
	src.ReadEach(context.Background(), 1, func(*Config) error { return nil }, func([]Lorry) error { panic("boom") })
	t.Error("ReadEach returned after each panicked")
}
