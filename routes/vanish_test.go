package routes

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/hosts/hoststest"
)

// configureVanishHost configures one GitLab upstream host with the
// on-vanish given ("" for none).
func (ts *testServer) configureVanishHost(t *testing.T, onVanish string) {
	t.Helper()
	h := confgit.Host{Name: "gl.example", Type: "gitlab", Protocol: "https", LsInterval: time.Hour,
		Interval: time.Hour, Timeout: time.Minute, OnVanish: onVanish,
		Section: `{"host":"gl.example","type":"gitlab"}`}
	if onVanish != "" {
		h.Section = `{"host":"gl.example","on-vanish":"` + onVanish + `","type":"gitlab"}`
	}
	ts.conf.cfg = &confgit.Config{Commit: "c1", Hosts: []confgit.Host{h}}
	if code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{}); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
}

func dsTokenFile(t *testing.T, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A repository vanishing from a host's listing has its downstream
// repository kept, archived or deleted by the host's on-vanish, on GitLab
// and Gitea downstreams; repositories still listed are not touched.
func TestOnVanish(t *testing.T) {
	const token = "ds-t0ken"
	gitlab := func(t *testing.T) (downstream.Host, func(string) (bool, bool)) {
		f := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: token})
		for _, p := range []string{"a", "b"} {
			f.AddProject(hoststest.GitLabProject{Namespace: "mirror", Path: p, Visibility: "private"})
		}
		d, err := downstream.New(downstream.Config{Type: downstream.TypeGitLab, Host: f.URL(), TokenFile: dsTokenFile(t, token)})
		if err != nil {
			t.Fatal(err)
		}
		return d, func(path string) (bool, bool) {
			p, ok := f.Project(path)
			return ok, p.Archived
		}
	}
	gitea := func(t *testing.T) (downstream.Host, func(string) (bool, bool)) {
		f := hoststest.NewGitea(t, hoststest.GiteaOptions{Token: token})
		for _, p := range []string{"a", "b"} {
			f.AddRepo(hoststest.GiteaRepo{Owner: "mirror", Name: p, Private: true})
		}
		d, err := downstream.New(downstream.Config{Type: downstream.TypeGitea, Host: f.URL(), TokenFile: dsTokenFile(t, token)})
		if err != nil {
			t.Fatal(err)
		}
		return d, func(path string) (bool, bool) {
			owner, name, _ := downstream.GiteaRepoName(path)
			r, ok := f.Repo(owner, name)
			return ok, r.Archived
		}
	}
	for _, tc := range []struct {
		name, onVanish, action string
		make                   func(*testing.T) (downstream.Host, func(string) (bool, bool))
		exists, archived       bool
	}{
		{"gitlab default", "", "kept", gitlab, true, false},
		{"gitlab keep", "keep", "kept", gitlab, true, false},
		{"gitlab archive", "archive", "archived", gitlab, true, true},
		{"gitlab delete", "delete", "deleted", gitlab, false, false},
		{"gitea keep", "keep", "kept", gitea, true, false},
		{"gitea archive", "archive", "archived", gitea, true, true},
		{"gitea delete", "delete", "deleted", gitea, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t)
			fake := &fakeHost{repos: []string{"a", "b"}}
			down, repo := tc.make(t)
			ts.ListHost, ts.Downstream = fake.list, down
			ts.configureVanishHost(t, tc.onVanish)
			if code, res := ts.call(t, "POST", "/1.0/force-ls-hosts", url.Values{}); code != 200 {
				t.Fatalf("ls = %d %v", code, res)
			}
			fake.mu.Lock()
			fake.repos = []string{"a"}
			fake.mu.Unlock()
			code, res := ts.call(t, "POST", "/1.0/force-ls-hosts", url.Values{})
			h := res["hosts"].([]any)[0].(map[string]any)
			if code != 200 || h["removed"] != 1.0 {
				t.Fatalf("ls after b vanished = %d %v", code, res)
			}
			v, _ := h["vanished"].([]any)
			if len(v) != 1 || v[0].(map[string]any)["path"] != "mirror/b" || v[0].(map[string]any)["action"] != tc.action {
				t.Errorf("vanished = %v; want mirror/b %s", h["vanished"], tc.action)
			}
			if exists, archived := repo("mirror/b"); exists != tc.exists || archived != tc.archived {
				t.Errorf("mirror/b: exists %v, archived %v; want %v, %v", exists, archived, tc.exists, tc.archived)
			}
			if exists, archived := repo("mirror/a"); !exists || archived {
				t.Errorf("mirror/a, still listed: exists %v, archived %v; want it as it was", exists, archived)
			}
			_, st := ts.call(t, "GET", "/1.0/status", nil)
			if got, want := st["hosts"].([]any)[0].(map[string]any)["vanished"], tc.action+" mirror/b"; got != want {
				t.Errorf("status hosts.0.vanished = %v; want %q", got, want)
			}
		})
	}
}

// A downstream that cannot archive keeps the repository and says so.
func TestOnVanishDownstreamCannot(t *testing.T) {
	ts := newTestServer(t)
	fake := &fakeHost{repos: []string{"a", "b"}}
	ts.ListHost, ts.Downstream = fake.list, &recordingDownstream{}
	ts.configureVanishHost(t, "archive")
	ts.call(t, "POST", "/1.0/force-ls-hosts", url.Values{})
	fake.mu.Lock()
	fake.repos = []string{"a"}
	fake.mu.Unlock()
	_, res := ts.call(t, "POST", "/1.0/force-ls-hosts", url.Values{})
	v := res["hosts"].([]any)[0].(map[string]any)["vanished"].([]any)[0].(map[string]any)
	if v["action"] != "kept" || v["error"] != "the downstream cannot archive or delete repositories" {
		t.Errorf("vanished = %v; want kept, with why", v)
	}
	b := newBrowser(t, ts)
	if page := b.page("/1.0/hosts-html", 200); !strings.Contains(page, "kept mirror/b (archive: the downstream cannot archive or delete repositories)") {
		t.Errorf("hosts page does not say what became of mirror/b")
	}
}
