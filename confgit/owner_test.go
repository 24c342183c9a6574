package confgit

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// nobody is the user id that a test gives CONFGIT to, so that the reader
// is another user than its owner.
const nobody = 65534

// giveTo gives dir and everything in it to uid, as a git server's
// repositories belong to the server's user.
func giveTo(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A CONFGIT on this machine that another user owns, as a git server's
// repository is, is read and fetched from all the same: it is the
// admin's own, whoever owns its files.
func TestReadLocalURLOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a repository to another user takes root")
	}
	upstream := newTestRepo(t, "master")
	first := upstream.commit(map[string]string{ConfFile: simpleConf, "lorries/a.lorry": `{"a": {"type": "git", "url": "u"}}`})
	bare := filepath.Join(t.TempDir(), "confgit.git")
	runGit(t, "", nil, "clone", "-q", "--bare", upstream.dir, bare)
	giveTo(t, bare, nobody)
	giveTo(t, upstream.dir, nobody)

	for _, tc := range []struct{ name, url string }{
		{name: "bare path", url: bare},
		{name: "bare file URL", url: "file://" + bare},
		{name: "working tree", url: upstream.dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &Source{Dir: filepath.Join(t.TempDir(), "confgit"), URL: tc.url}
			if cfg := readOK(t, src); cfg.Commit != first || len(cfg.Lorries) != 1 {
				t.Errorf("got commit %s with lorries %v, want %s with [delta/a]", cfg.Commit, lorryPaths(cfg), first)
			}
		})
	}

	// A later fetch brings what was pushed since.
	src := &Source{Dir: filepath.Join(t.TempDir(), "confgit"), URL: "file://" + bare}
	readOK(t, src)
	giveTo(t, upstream.dir, 0)
	second := upstream.commit(map[string]string{"lorries/b.lorry": `{"b": {"type": "git", "url": "u"}}`})
	runGit(t, "", nil, "-c", "safe.directory=*", "--git-dir", bare, "fetch", "-q", upstream.dir, "+master:master")
	giveTo(t, bare, nobody)
	if cfg := readOK(t, src); cfg.Commit != second || len(cfg.Lorries) != 2 {
		t.Errorf("after a push: got commit %s with lorries %v, want %s with two", cfg.Commit, lorryPaths(cfg), second)
	}
}
