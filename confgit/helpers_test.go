package confgit

import (
	"os"
	"path/filepath"
	"testing"

	"lorrycontroller.dev/lc/gittest"
)

func runGit(tb testing.TB, dir string, stdin []byte, args ...string) string {
	tb.Helper()
	return gittest.Git(tb, dir, stdin, args...)
}

// testRepo is a non-bare repository made with the git CLI, standing in for
// the repository an admin pushes to.
type testRepo struct {
	tb  testing.TB
	dir string
}

func newTestRepo(tb testing.TB, branch string) *testRepo {
	tb.Helper()
	dir := tb.TempDir()
	runGit(tb, dir, nil, "init", "-q", "--initial-branch="+branch)
	return &testRepo{tb: tb, dir: dir}
}

func (r *testRepo) write(files map[string]string) {
	r.tb.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.tb.Fatal(err)
		}
	}
}

// commit writes files, commits everything and returns the commit id.
func (r *testRepo) commit(files map[string]string) string {
	r.tb.Helper()
	r.write(files)
	runGit(r.tb, r.dir, nil, "add", "-A")
	runGit(r.tb, r.dir, nil, "commit", "-q", "--allow-empty", "-m", "change")
	return runGit(r.tb, r.dir, nil, "rev-parse", "HEAD")
}
