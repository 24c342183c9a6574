package hoststest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/hosts/hoststest"
)

// sourceRepo makes a repository with branches main and trunk, trunk one
// commit ahead.
func sourceRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gittest.Git(t, dir, nil, "init", "--quiet", "-b", "main")
	os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644)
	gittest.Git(t, dir, nil, "add", "README")
	gittest.Git(t, dir, nil, "commit", "--quiet", "-m", "first")
	gittest.Git(t, dir, nil, "branch", "trunk")
	gittest.Git(t, dir, nil, "checkout", "--quiet", "trunk")
	os.WriteFile(filepath.Join(dir, "README"), []byte("hello again\n"), 0o644)
	gittest.Git(t, dir, nil, "commit", "--quiet", "-am", "second")
	return dir
}

// tryGit runs git in dir and returns its combined output and error,
// for the calls that are meant to fail.
func tryGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gittest.GitEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func writeToken(t *testing.T, tok string) string {
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// pushTarget is a fake that a downstream is pointed at.
type pushTarget interface {
	URL() string
}

// The push URL a downstream gets from a fake is a real repository: a
// mirror pushed there can be fetched back, Finish moves its HEAD to the
// upstream's default branch, and only the token lets a push in.
func TestDownstreamPushTarget(t *testing.T) {
	const tok = "s3cr3t-token"
	tests := []struct {
		name  string
		start func(t *testing.T) (target pushTarget, typ string, apiDefault func() string)
		path  string
		repo  string // path of the repository on the fake
		// wantBefore is the default branch once pushed, before Finish:
		// GitLab creates an empty project on its own default branch and
		// then takes main, which HEAD names; Gitea takes the first
		// branch pushed, with main put first, whatever it was created
		// with.
		wantBefore string
	}{
		{name: "gitlab", path: "delta/gnome/glib", repo: "delta/gnome/glib", wantBefore: "main", start: func(t *testing.T) (pushTarget, string, func() string) {
			f := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: tok, ServeGit: true})
			return f, downstream.TypeGitLab, func() string { p, _ := f.Project("delta/gnome/glib"); return p.DefaultBranch }
		}},
		{name: "gitea", path: "delta/gnome/glib", repo: "delta/gnome--glib", wantBefore: "main", start: func(t *testing.T) (pushTarget, string, func() string) {
			f := hoststest.NewGitea(t, hoststest.GiteaOptions{Token: tok, ServeGit: true})
			return f, downstream.TypeGitea, func() string { r, _ := f.Repo("delta", "gnome--glib"); return r.DefaultBranch }
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, typ, apiDefault := tc.start(t)
			d, err := downstream.New(downstream.Config{Type: typ, Host: f.URL(), TokenFile: writeToken(t, tok), PushProtocol: "https"})
			if err != nil {
				t.Fatal(err)
			}
			repo := downstream.Repo{Path: tc.path, DefaultBranch: "trunk", Description: "GLib"}
			pushURL, err := d.Prepare(context.Background(), repo)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			src := sourceRepo(t)

			anonymous := f.URL() + "/" + tc.repo + ".git"
			if out, err := tryGit(src, "push", anonymous, "refs/heads/*:refs/heads/*"); err == nil {
				t.Errorf("push without credentials succeeded:\n%s", out)
			}
			wrong := strings.Replace(pushURL, tok, "wrong-token", 1)
			if out, err := tryGit(src, "push", wrong, "refs/heads/*:refs/heads/*"); err == nil {
				t.Errorf("push with a wrong token succeeded:\n%s", out)
			}

			gittest.Git(t, src, nil, "push", "--quiet", pushURL, "refs/heads/*:refs/heads/*")
			want := gittest.Git(t, src, nil, "rev-parse", "trunk")
			if got := gittest.Git(t, src, nil, "ls-remote", pushURL, "refs/heads/trunk"); !strings.HasPrefix(got, want) {
				t.Errorf("ls-remote trunk = %q; want %s", got, want)
			}
			if got := apiDefault(); got != tc.wantBefore {
				t.Errorf("default branch before Finish = %q; want %s", got, tc.wantBefore)
			}
			if err := d.Finish(context.Background(), repo); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			if got := apiDefault(); got != "trunk" {
				t.Errorf("default branch after Finish = %q; want trunk", got)
			}
			if got := gittest.Git(t, src, nil, "ls-remote", "--symref", pushURL, "HEAD"); !strings.HasPrefix(got, "ref: refs/heads/trunk\tHEAD") {
				t.Errorf("ls-remote --symref HEAD = %q; want HEAD to name trunk", got)
			}
			clone := filepath.Join(t.TempDir(), "clone")
			gittest.Git(t, src, nil, "clone", "--quiet", pushURL, clone)
			if got := gittest.Git(t, clone, nil, "rev-parse", "HEAD"); got != want {
				t.Errorf("a clone checks out %s; want trunk's %s", got, want)
			}
		})
	}
}

// GitLab refuses a default branch the repository does not have.
func TestGitLabDefaultBranchMustExist(t *testing.T) {
	const tok = "s3cr3t-token"
	f := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: tok, ServeGit: true})
	d, err := downstream.New(downstream.Config{Type: downstream.TypeGitLab, Host: f.URL(), Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	repo := downstream.Repo{Path: "delta/foo", DefaultBranch: "nope"}
	if _, err := d.Prepare(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	err = d.Finish(context.Background(), repo)
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request: Could not set the default branch") {
		t.Errorf("Finish = %v; want GitLab's refusal", err)
	}
}

// A fake that serves git is an upstream too: public repositories clone
// anonymously, private ones need the token.
func TestUpstreamServesGit(t *testing.T) {
	const tok = "s3cr3t-token"
	f := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: tok, ServeGit: true})
	f.AddProject(hoststest.GitLabProject{Namespace: "g", Path: "public"})
	f.AddProject(hoststest.GitLabProject{Namespace: "g", Path: "secret", Visibility: "private"})
	src := sourceRepo(t)
	for _, p := range []string{"g/public", "g/secret"} {
		u := strings.Replace(f.URL(), "://", "://oauth2:"+tok+"@", 1) + "/" + p + ".git"
		gittest.Git(t, src, nil, "push", "--quiet", u, "main")
	}
	dir := t.TempDir()
	gittest.Git(t, dir, nil, "clone", "--quiet", "--bare", f.URL()+"/g/public.git", "public")
	if out, err := tryGit(dir, "clone", "--bare", f.URL()+"/g/secret.git", "secret"); err == nil {
		t.Errorf("anonymous clone of a private project succeeded:\n%s", out)
	}
	if p, _ := f.Project("g/public"); p.DefaultBranch != "main" {
		t.Errorf("after the first push, default branch = %q; want main", p.DefaultBranch)
	}

	// The listing says the project is no longer empty.
	resp, err := http.Get(f.APIURL() + "/projects/" + url.PathEscape("g/public"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		EmptyRepo     bool   `json:"empty_repo"`
		DefaultBranch string `json:"default_branch"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.EmptyRepo || got.DefaultBranch != "main" {
		t.Errorf("project = %+v, %v; want not empty, default branch main", got, err)
	}
}

// The first push into an empty repository sets its default branch the
// way each host does: Gitea takes the first branch created in the order
// git sent the updates, with master or main moved to the front of each
// batch of 30; GitLab takes HEAD's branch, else main, else master, else
// the first by name. Later pushes leave it alone.
func TestFirstPushDefaultBranch(t *testing.T) {
	const tok = "s3cr3t-token"
	tests := []struct {
		name     string
		branches []string
		refspecs []string // pushed first; the second push is all branches
		gitea    string
		gitlab   string
	}{
		{name: "sorted by name", branches: []string{"trunk", "side"}, refspecs: []string{"refs/heads/*:refs/heads/*"}, gitea: "side", gitlab: "side"},
		{name: "in the order pushed", branches: []string{"trunk", "side"}, refspecs: []string{"trunk", "side"}, gitea: "trunk", gitlab: "side"},
		{name: "main first", branches: []string{"alpha", "main"}, refspecs: []string{"refs/heads/*:refs/heads/*"}, gitea: "main", gitlab: "main"},
		{name: "master over main", branches: []string{"alpha", "main", "master"}, refspecs: []string{"refs/heads/*:refs/heads/*"}, gitea: "master", gitlab: "main"},
		{name: "master pushed before main", branches: []string{"alpha", "main", "master"}, refspecs: []string{"master", "main", "alpha"}, gitea: "master", gitlab: "main"},
		{name: "main beyond the first batch", branches: append(manyBranches(35), "main"), refspecs: []string{"refs/heads/*:refs/heads/*"}, gitea: "b00", gitlab: "main"},
		{name: "tags first", branches: []string{"trunk"}, refspecs: []string{"refs/tags/*:refs/tags/*"}, gitea: "trunk", gitlab: "trunk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			gittest.Git(t, src, nil, "init", "--quiet", "-b", tc.branches[0])
			gittest.Git(t, src, nil, "commit", "--quiet", "--allow-empty", "-m", "first")
			gittest.Git(t, src, nil, "tag", "v1")
			for _, b := range tc.branches[1:] {
				gittest.Git(t, src, nil, "branch", b)
			}
			gitea := hoststest.NewGitea(t, hoststest.GiteaOptions{Token: tok, ServeGit: true})
			gitea.AddRepo(hoststest.GiteaRepo{Owner: "delta", Name: "p"})
			gitlab := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: tok, ServeGit: true})
			gitlab.AddProject(hoststest.GitLabProject{Namespace: "delta", Path: "p"})
			for _, host := range []struct {
				name, url, want string
				api             func() string
			}{
				{"gitea", gitea.URL(), tc.gitea, func() string { r, _ := gitea.Repo("delta", "p"); return r.DefaultBranch }},
				{"gitlab", gitlab.URL(), tc.gitlab, func() string { p, _ := gitlab.Project("delta/p"); return p.DefaultBranch }},
			} {
				u := strings.Replace(host.url, "://", "://oauth2:"+tok+"@", 1) + "/delta/p.git"
				gittest.Git(t, src, nil, append([]string{"push", "--quiet", u}, tc.refspecs...)...)
				gittest.Git(t, src, nil, "push", "--quiet", u, "refs/heads/*:refs/heads/*")
				if got := host.api(); got != host.want {
					t.Errorf("%s: default branch = %q; want %q", host.name, got, host.want)
				}
				if got := gittest.Git(t, src, nil, "ls-remote", "--symref", u, "HEAD"); !strings.HasPrefix(got, "ref: refs/heads/"+host.want+"\t") {
					t.Errorf("%s: ls-remote --symref HEAD = %q; want HEAD to name %s", host.name, got, host.want)
				}
			}
		})
	}
}

func manyBranches(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("b%02d", i)
	}
	return out
}

// A downstream that archives a repository leaves it readable, and the
// fakes then refuse pushes to it, as GitLab and Gitea do; one that
// deletes it leaves nothing.
func TestArchiveAndDelete(t *testing.T) {
	const tok = "s3cr3t-token"
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) (url string, d downstream.Host, exists func() (bool, bool))
	}{
		{"gitlab", func(t *testing.T) (string, downstream.Host, func() (bool, bool)) {
			f := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: tok, ServeGit: true})
			f.AddProject(hoststest.GitLabProject{Namespace: "mirror", Path: "glib", Visibility: "private"})
			d, err := downstream.New(downstream.Config{Type: downstream.TypeGitLab, Host: f.URL(),
				TokenFile: writeToken(t, tok), PushProtocol: "https"})
			if err != nil {
				t.Fatal(err)
			}
			return f.URL(), d, func() (bool, bool) { p, ok := f.Project("mirror/glib"); return ok, p.Archived }
		}},
		{"gitea", func(t *testing.T) (string, downstream.Host, func() (bool, bool)) {
			f := hoststest.NewGitea(t, hoststest.GiteaOptions{Token: tok, ServeGit: true})
			f.AddRepo(hoststest.GiteaRepo{Owner: "mirror", Name: "glib", Private: true})
			d, err := downstream.New(downstream.Config{Type: downstream.TypeGitea, Host: f.URL(),
				TokenFile: writeToken(t, tok), PushProtocol: "https"})
			if err != nil {
				t.Fatal(err)
			}
			return f.URL(), d, func() (bool, bool) { r, ok := f.Repo("mirror", "glib"); return ok, r.Archived }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, d, state := tc.start(t)
			r := d.(downstream.Retirer)
			pushURL, err := d.Prepare(ctx, downstream.Repo{Path: "mirror/glib"})
			if err != nil {
				t.Fatal(err)
			}
			src := sourceRepo(t)
			gittest.Git(t, src, nil, "push", "--quiet", pushURL, "main")
			if err := r.Archive(ctx, "mirror/glib"); err != nil {
				t.Fatalf("Archive: %v", err)
			}
			if exists, archived := state(); !exists || !archived {
				t.Errorf("after Archive: exists %v, archived %v; want both", exists, archived)
			}
			if out, err := tryGit(src, "push", pushURL, "trunk"); err == nil {
				t.Errorf("push to an archived repository succeeded:\n%s", out)
			}
			gittest.Git(t, src, nil, "ls-remote", pushURL, "refs/heads/main")
			if err := r.Delete(ctx, "mirror/glib"); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if exists, _ := state(); exists {
				t.Errorf("after Delete the repository is still there")
			}
			// Nothing there: nothing to do.
			if err := r.Archive(ctx, "mirror/glib"); err != nil {
				t.Errorf("Archive of no repository = %v; want nil", err)
			}
			if err := r.Delete(ctx, "mirror/glib"); err != nil {
				t.Errorf("Delete of no repository = %v; want nil", err)
			}
		})
	}
}
