package mirror

import (
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/workarea"
)

// An hg upstream over HTTP that requires a user and password is
// converted, and neither reaches a command line, git-remote-hg's
// included, nor stays in the conversion's configuration.
func TestHgCredentialsNotOnCommandLine(t *testing.T) {
	for _, tool := range []string{"hg", "git-remote-hg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	hgEnv := append(os.Environ(), "HGRCPATH=", "HGPLAIN=1", "HGUSER=Test <test@example.com>")
	hg := func(args ...string) {
		t.Helper()
		cmd := exec.Command("hg", args...)
		cmd.Env = hgEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hg %v: %v\n%s", args, err, out)
		}
	}
	hg("init", repo)
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hg("-R", repo, "commit", "--addremove", "--quiet", "-m", "one")

	backend := hgServe(t, repo, hgEnv)
	up := newAuthServer(t, httputil.NewSingleHostReverseProxy(backend), "hguser")

	down := downstream(t)
	area := t.TempDir()
	spec := lorryspec.Spec{Name: "up/hg", Type: "hg", Raw: map[string]any{"type": "hg", "url": up.url("/")}}
	res := runSpec(t, spec, Options{WorkingArea: area, PushURL: down})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := gittest.Git(t, down, nil, "show", "master:README"); got != "one" {
		t.Errorf("downstream master:README = %q; want %q", got, "one")
	}
	up.check("hg upstream")
	noFileHolds(t, workarea.Dir(area, spec.Name), up.token)

	// A conversion made when its source file named the URL with the
	// credentials is continued, and the file no longer names them.
	hgDir := filepath.Join(workarea.Dir(area, spec.Name), "hg")
	if err := os.WriteFile(filepath.Join(hgDir, "source"), []byte(up.url("/")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hgDir, "test-mark"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := runSpec(t, spec, Options{WorkingArea: area, PushURL: down}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if _, err := os.Stat(filepath.Join(hgDir, "test-mark")); err != nil {
		t.Errorf("the conversion was not continued: %v", err)
	}
	noFileHolds(t, workarea.Dir(area, spec.Name), up.token)
	config, err := os.ReadFile(filepath.Join(workarea.Dir(area, spec.Name), "hg", "git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(regexp.QuoteMeta(up.token)).Match(config) {
		t.Errorf("the conversion's configuration holds the password:\n%s", config)
	}
}
