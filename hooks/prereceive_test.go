package hooks

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/gittest"
)

// buildWebapp builds the real lorry-controller-webapp, whose check-config
// the pre-receive hook runs.
func buildWebapp(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lorry-controller-webapp")
	out, err := exec.Command("go", "build", "-o", bin, "lorrycontroller.dev/lc/cmd/webapp").CombinedOutput()
	if err != nil {
		t.Fatalf("build the WEBAPP: %v\n%s", err, out)
	}
	return bin
}

// confRepo is a bare CONFGIT repository with the pre-receive hook, and a
// clone of it to push from.
type confRepo struct {
	bare, clone string
}

func newConfRepo(t *testing.T, webapp string) *confRepo {
	t.Helper()
	dir := t.TempDir()
	r := &confRepo{bare: filepath.Join(dir, "confgit.git"), clone: filepath.Join(dir, "clone")}
	gittest.Git(t, dir, nil, "init", "-q", "--bare", "--initial-branch=master", r.bare)
	hook, err := os.ReadFile("pre-receive")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.bare, "hooks", "pre-receive"), hook, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, r.bare, nil, "config", "lorry-controller.webapp", webapp)
	gittest.Git(t, dir, nil, "clone", "-q", r.bare, r.clone)
	return r
}

// commit writes files into the clone (a nil content removes the file)
// and commits them.
func (r *confRepo) commit(t *testing.T, files map[string]*string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(r.clone, name)
		if content == nil {
			gittest.Git(t, r.clone, nil, "rm", "-q", name)
			continue
		}
		if err := os.WriteFile(p, []byte(*content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Git(t, r.clone, nil, "add", "-A")
	gittest.Git(t, r.clone, nil, "commit", "-q", "--allow-empty", "-m", "change")
	return gittest.Git(t, r.clone, nil, "rev-parse", "HEAD")
}

// push pushes the clone's HEAD to branch and returns what the pusher
// sees, and whether the push was refused.
func (r *confRepo) push(t *testing.T, branch string) (string, bool) {
	t.Helper()
	return r.pushRef(t, "HEAD:refs/heads/"+branch)
}

// pushRef pushes refspec, as push does.
func (r *confRepo) pushRef(t *testing.T, refspec string) (string, bool) {
	t.Helper()
	cmd := exec.Command("git", "push", "origin", refspec)
	cmd.Dir = r.clone
	cmd.Env = append(os.Environ(), gittest.GitEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("git push: %v", err)
	}
	return stderr.String(), err != nil
}

// head is the commit of branch in the bare repository, "" for none.
func (r *confRepo) head(t *testing.T, branch string) string {
	t.Helper()
	return r.ref(t, "refs/heads/"+branch)
}

// ref is what ref names in the bare repository, "" for none.
func (r *confRepo) ref(t *testing.T, ref string) string {
	t.Helper()
	out := gittest.Git(t, r.bare, nil, "for-each-ref", "--format=%(objectname)", ref)
	return strings.TrimSpace(out)
}

func text(s string) *string { return &s }

const (
	goodConf   = `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"], "interval": "1h"}, {"type": "gitea", "host": "git.example.com", "org": "o"}]`
	brokenConf = `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"], "interval": "soon"}, {"type": "gitea", "host": "git.example.com", "queue": "nightly"}]`
	goodLorry  = `{"a": {"type": "git", "url": "https://example.com/a.git"}}`
	badLorry   = `{"b": {"type": "gti", "url": "https://example.com/b.git"}}`
)

func TestPreReceive(t *testing.T) {
	os.Unsetenv("LORRY_CONTROLLER_WEBAPP")
	os.Unsetenv("LORRY_CONTROLLER_LORRY_FILES")
	os.Unsetenv("LORRY_CONTROLLER_BRANCH")
	r := newConfRepo(t, buildWebapp(t))

	// A good configuration lands, and the pusher is told it was checked.
	good := r.commit(t, map[string]*string{"lorry-controller.conf": text(goodConf), "a.lorry": text(goodLorry)})
	out, refused := r.push(t, "master")
	if refused || r.head(t, "master") != good {
		t.Fatalf("push of a good configuration: refused %v, master %q; want it at %s\n%s", refused, r.head(t, "master"), good, out)
	}
	if !strings.Contains(out, "1 lorry, 0 scrapers, 1 host") {
		t.Errorf("the pusher sees %q; want the summary of the configuration", out)
	}

	// A broken lorry-controller.conf is refused, with every error.
	r.commit(t, map[string]*string{"lorry-controller.conf": text(brokenConf)})
	out, refused = r.push(t, "master")
	if !refused || r.head(t, "master") != good {
		t.Errorf("push of a broken lorry-controller.conf: refused %v, master %q; want it refused, master at %s\n%s", refused, r.head(t, "master"), good, out)
	}
	for _, want := range []string{
		`error: lorry-controller.conf: section [0] (lorries): key "interval"`,
		`error: lorry-controller.conf: section [1] (gitea): key "queue": no queue section is named "nightly"`,
		"refusing refs/heads/master",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the pusher sees\n%s\nwant it to contain %q", out, want)
		}
	}
	gittest.Git(t, r.clone, nil, "reset", "-q", "--hard", good)

	// A broken lorry-controller.conf and a broken .lorry file: one refused
	// push shows the errors of both, and the .lorry files of a section
	// broken after its globs are read too.
	r.commit(t, map[string]*string{"lorry-controller.conf": text(brokenConf), "b.lorry": text(badLorry)})
	out, refused = r.push(t, "master")
	if !refused || r.head(t, "master") != good {
		t.Errorf("push of a broken lorry-controller.conf and .lorry file: refused %v, master %q; want it refused, master at %s\n%s", refused, r.head(t, "master"), good, out)
	}
	for _, want := range []string{
		`error: lorry-controller.conf: section [0] (lorries): key "interval"`,
		`error: lorry-controller.conf: section [1] (gitea): key "queue": no queue section is named "nightly"`,
		`error: b.lorry: spec "b": unknown type "gti"`,
		"lorry-controller.conf is broken, 3 errors",
		"refusing refs/heads/master: its configuration has the errors above",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the pusher sees\n%s\nwant it to contain %q", out, want)
		}
	}
	gittest.Git(t, r.clone, nil, "reset", "-q", "--hard", good)

	// A broken .lorry file is refused too...
	broken := r.commit(t, map[string]*string{"b.lorry": text(badLorry)})
	out, refused = r.push(t, "master")
	if !refused || r.head(t, "master") != good {
		t.Errorf("push of a broken .lorry file: refused %v, master %q; want it refused\n%s", refused, r.head(t, "master"), out)
	}
	if want := `error: b.lorry: spec "b": unknown type "gti"`; !strings.Contains(out, want) {
		t.Errorf("the pusher sees\n%s\nwant it to contain %q", out, want)
	}

	// ...unless the hook is told to only warn, by git config or by the
	// environment.
	gittest.Git(t, r.bare, nil, "config", "lorry-controller.lorry-files", "warn")
	out, refused = r.push(t, "master")
	if refused || r.head(t, "master") != broken {
		t.Errorf("push of a broken .lorry file, warn only: refused %v, master %q; want it at %s\n%s", refused, r.head(t, "master"), broken, out)
	}
	if want := `warning: b.lorry: spec "b": unknown type "gti"`; !strings.Contains(out, want) {
		t.Errorf("the pusher sees\n%s\nwant it to contain %q", out, want)
	}
	gittest.Git(t, r.bare, nil, "config", "lorry-controller.lorry-files", "refuse")
	r.commit(t, map[string]*string{"b.lorry": nil})
	worse := r.commit(t, map[string]*string{"c.lorry": text(badLorry)})
	if out, refused = r.push(t, "master"); !refused {
		t.Errorf("push of a broken .lorry file with lorry-files refuse: accepted\n%s", out)
	}
	t.Setenv("LORRY_CONTROLLER_LORRY_FILES", "warn")
	if out, refused = r.push(t, "master"); refused || r.head(t, "master") != worse {
		t.Errorf("push with LORRY_CONTROLLER_LORRY_FILES=warn: refused %v; want it accepted\n%s", refused, out)
	}
	os.Unsetenv("LORRY_CONTROLLER_LORRY_FILES")
	r.commit(t, map[string]*string{"c.lorry": nil})
	if out, refused = r.push(t, "master"); refused {
		t.Fatalf("push of the fixed configuration: refused\n%s", out)
	}

	// Only the configuration branch is checked.
	gittest.Git(t, r.bare, nil, "config", "lorry-controller.branch", "master")
	r.commit(t, map[string]*string{"lorry-controller.conf": text(brokenConf)})
	if out, refused = r.push(t, "topic"); refused {
		t.Errorf("push of a broken configuration to another branch: refused\n%s", out)
	}
	if out, refused = r.push(t, "master"); !refused {
		t.Errorf("push of a broken configuration to the configuration branch: accepted\n%s", out)
	}
	t.Setenv("LORRY_CONTROLLER_BRANCH", "topic")
	r.commit(t, map[string]*string{"b.lorry": text(badLorry)})
	if out, refused = r.push(t, "master"); refused {
		t.Errorf("push to master with LORRY_CONTROLLER_BRANCH=topic: refused\n%s", out)
	}
	if out, refused = r.push(t, "topic"); !refused {
		t.Errorf("push to topic with LORRY_CONTROLLER_BRANCH=topic: accepted\n%s", out)
	}
}

// The objects of a push wait in git's quarantine while pre-receive runs,
// loose or, past receive.unpackLimit, in a pack: check-config finds them
// either way.
func TestPreReceivePackedPush(t *testing.T) {
	os.Unsetenv("LORRY_CONTROLLER_WEBAPP")
	os.Unsetenv("LORRY_CONTROLLER_LORRY_FILES")
	os.Unsetenv("LORRY_CONTROLLER_BRANCH")
	r := newConfRepo(t, buildWebapp(t))
	gittest.Git(t, r.bare, nil, "config", "receive.unpackLimit", "1")
	files := map[string]*string{"lorry-controller.conf": text(goodConf), "a.lorry": text(goodLorry)}
	good := r.commit(t, files)
	if out, refused := r.push(t, "master"); refused || r.head(t, "master") != good {
		t.Fatalf("packed push of a good configuration: refused %v\n%s", refused, out)
	}
	packs, _ := filepath.Glob(filepath.Join(r.bare, "objects", "pack", "*.pack"))
	if len(packs) == 0 {
		t.Fatal("the push left no pack; want one, to show that a pack in quarantine is read")
	}
	r.commit(t, map[string]*string{"b.lorry": text(badLorry)})
	out, refused := r.push(t, "master")
	if !refused || !strings.Contains(out, `b.lorry: spec "b"`) {
		t.Errorf("packed push of a broken .lorry file: refused %v; want it refused naming b.lorry\n%s", refused, out)
	}
}

// docBlock is the code block of docs/operations.md that follows the
// first line containing after, without its indent.
func docBlock(t *testing.T, after string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), after)
	if !ok {
		t.Fatalf("docs/operations.md has no %q", after)
	}
	var block []string
	for _, line := range strings.Split(rest, "\n")[1:] {
		switch {
		case strings.HasPrefix(line, "    "):
			block = append(block, strings.TrimPrefix(line, "    "))
		case line == "" && len(block) == 0:
		default:
			if len(block) == 0 {
				t.Fatalf("docs/operations.md has no code block after %q", after)
			}
			return strings.Join(block, "\n") + "\n"
		}
	}
	t.Fatalf("docs/operations.md ends in the code block after %q", after)
	return ""
}

// installedHook is where docs/operations.md has the wrappers find the
// installed pre-receive hook.
const installedHook = "/usr/local/share/lorry-controller/hooks/pre-receive"

// What the pre-receive hook lets through unread, what it does without
// settings, and the wrappers docs/operations.md gives for Gitea and
// GitLab, which set them in the environment.
func TestPreReceiveRefsAndSettings(t *testing.T) {
	os.Unsetenv("LORRY_CONTROLLER_WEBAPP")
	os.Unsetenv("LORRY_CONTROLLER_LORRY_FILES")
	os.Unsetenv("LORRY_CONTROLLER_BRANCH")
	webapp := buildWebapp(t)
	good := map[string]*string{"lorry-controller.conf": text(goodConf), "a.lorry": text(goodLorry)}
	broken := map[string]*string{"lorry-controller.conf": text(brokenConf)}

	t.Run("tags and deletions", func(t *testing.T) {
		r := newConfRepo(t, webapp)
		// Not the branch HEAD names, which git itself keeps from deletion.
		gittest.Git(t, r.bare, nil, "config", "lorry-controller.branch", "conf")
		r.commit(t, good)
		if out, refused := r.push(t, "conf"); refused {
			t.Fatalf("push of a good configuration: refused\n%s", out)
		}
		bad := r.commit(t, broken)
		if out, refused := r.push(t, "conf"); !refused {
			t.Fatalf("push of a broken configuration: accepted\n%s", out)
		}
		if out, refused := r.pushRef(t, "HEAD:refs/tags/conf"); refused || r.ref(t, "refs/tags/conf") != bad {
			t.Errorf("push of a tag of a broken configuration: refused %v; want it let through\n%s", refused, out)
		}
		if out, refused := r.pushRef(t, ":refs/heads/conf"); refused || r.head(t, "conf") != "" {
			t.Errorf("deletion of the configuration branch: refused %v; want it let through\n%s", refused, out)
		}
	})

	t.Run("no checker", func(t *testing.T) {
		r := newConfRepo(t, webapp)
		r.commit(t, good)
		t.Setenv("LORRY_CONTROLLER_WEBAPP", "/nonexistent")
		out, refused := r.push(t, "master")
		if !refused || r.head(t, "master") != "" {
			t.Errorf("push with LORRY_CONTROLLER_WEBAPP=/nonexistent: refused %v; want it refused\n%s", refused, out)
		}
		if want := "refusing refs/heads/master: its configuration cannot be checked with /nonexistent"; !strings.Contains(out, want) {
			t.Errorf("the pusher sees\n%s\nwant it to contain %q", out, want)
		}
	})

	// Without a branch set, master and the branch HEAD names are checked.
	t.Run("default branches", func(t *testing.T) {
		r := newConfRepo(t, webapp)
		gittest.Git(t, r.bare, nil, "symbolic-ref", "HEAD", "refs/heads/main")
		r.commit(t, broken)
		for _, tc := range []struct {
			branch  string
			refused bool
		}{{"master", true}, {"main", true}, {"topic", false}} {
			if out, refused := r.push(t, tc.branch); refused != tc.refused {
				t.Errorf("push of a broken configuration to %s: refused %v; want %v\n%s", tc.branch, refused, tc.refused, out)
			}
		}
	})

	// The wrapper for Gitea, as the doc gives it, with the installed hook
	// where the doc has it: its settings win over the repository's.
	t.Run("Gitea wrapper", func(t *testing.T) {
		r := newConfRepo(t, webapp)
		hook := filepath.Join(t.TempDir(), "pre-receive")
		os.Rename(filepath.Join(r.bare, "hooks", "pre-receive"), hook)
		wrapper := docBlock(t, "hands the push on to the installed one:")
		if !strings.Contains(wrapper, installedHook) {
			t.Fatalf("the Gitea wrapper\n%s\ndoes not run %s", wrapper, installedHook)
		}
		wrapper = strings.ReplaceAll(wrapper, installedHook, hook)
		if err := os.WriteFile(filepath.Join(r.bare, "hooks", "pre-receive"), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
		gittest.Git(t, r.bare, nil, "config", "lorry-controller.branch", "topic")
		gittest.Git(t, r.bare, nil, "config", "lorry-controller.lorry-files", "warn")
		r.commit(t, good)
		r.commit(t, map[string]*string{"b.lorry": text(badLorry)})
		if out, refused := r.push(t, "topic"); refused {
			t.Errorf("push of a broken .lorry file to topic through the Gitea wrapper (branch master): refused\n%s", out)
		}
		out, refused := r.push(t, "master")
		if !refused || !strings.Contains(out, `error: b.lorry: spec "b"`) {
			t.Errorf("push of a broken .lorry file to master through the Gitea wrapper (lorry-files refuse): refused %v; want refused, naming b.lorry\n%s", refused, out)
		}
	})

	// The hook that the doc's commands for GitLab make, run from a
	// directory of its own as Gitaly does.
	t.Run("GitLab wrapper", func(t *testing.T) {
		r := newConfRepo(t, webapp)
		hook := filepath.Join(t.TempDir(), "pre-receive")
		os.Rename(filepath.Join(r.bare, "hooks", "pre-receive"), hook)
		var printf string
		for _, line := range strings.Split(docBlock(t, "relative path\"):"), "\n") {
			if strings.HasPrefix(line, "printf ") {
				printf = strings.TrimSuffix(line, " \\")
			}
		}
		if !strings.Contains(printf, installedHook) {
			t.Fatalf("the GitLab commands have no printf of a wrapper that runs %s", installedHook)
		}
		wrapper := filepath.Join(r.bare, "hooks", "pre-receive")
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(printf, installedHook, hook)+" >"+wrapper)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", printf, err, out)
		}
		if err := os.Chmod(wrapper, 0o755); err != nil {
			t.Fatal(err)
		}
		r.commit(t, broken)
		if out, refused := r.push(t, "master"); refused {
			t.Errorf("push of a broken configuration to master through the GitLab wrapper (branch main): refused\n%s", out)
		}
		if out, refused := r.push(t, "main"); !refused {
			t.Errorf("push of a broken configuration to main through the GitLab wrapper: accepted\n%s", out)
		}
	})
}
