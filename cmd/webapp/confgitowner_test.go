package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A CONFGIT on the WEBAPP's machine that another user owns, as the
// repository of a git server there is, is read: it is the admin's own.
func TestReadConfgitOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a repository to another user takes root")
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "confgit-origin")
	makeRepo(t, repo, map[string]string{
		"lorry-controller.conf": `[{"type": "lorries", "prefix": "up", "globs": ["*.lorry"]}]` + "\n",
		"a.lorry":               specs("a", 2),
	})
	// nobody's, as a git server's repository is another user's.
	err := filepath.WalkDir(repo, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, 65534, 65534)
	})
	if err != nil {
		t.Fatal(err)
	}
	wdir := filepath.Join(dir, "webapp")
	if err := os.Mkdir(wdir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := startWebapp(t, wdir, startOpts{args: []string{"--confgit-url", "file://" + repo, "--insecure-no-auth"}})
	code, m := postJSON(t, w.url+"/1.0/read-configuration", nil)
	if code != 200 || m["lorries"] != float64(2) {
		t.Fatalf("read-configuration = %d %v, want 200 with 2 lorries\n%s", code, m, w.log(t))
	}
}
