package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"lorrycontroller/hosts/hoststest"
)

// newGitea starts a fake Gitea with the user "user1" that
// hoststest.GiteaRepos gives some of repos to.
func newGitea(t testing.TB, opts hoststest.GiteaOptions, repos []hoststest.GiteaRepo) *hoststest.Gitea {
	f := hoststest.NewGitea(t, opts)
	f.AddUser("user1")
	f.AddRepos(repos)
	return f
}

func TestGiteaList(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef01234567"
	repos := hoststest.GiteaRepos(250, "org1")
	pick := func(keep func(hoststest.GiteaRepo) bool) []string {
		var out []string
		for _, r := range repos {
			if keep(r) {
				out = append(out, r.FullName())
			}
		}
		return out
	}
	all := pick(func(hoststest.GiteaRepo) bool { return true })
	tests := []struct {
		name      string
		extra     map[string]any
		maxItems  int
		noHeaders bool
		want      []string
		wantPath  string
		wantReqs  int
	}{
		{name: "search everything with token", extra: map[string]any{"token": tok}, want: all, wantPath: "/api/v1/repos/search", wantReqs: 5},
		{name: "search anonymously", want: pick(func(r hoststest.GiteaRepo) bool { return !r.Private }), wantPath: "/api/v1/repos/search", wantReqs: 5},
		{name: "organisation", extra: map[string]any{"private-token": tok, "org": "org1"}, want: pick(func(r hoststest.GiteaRepo) bool { return r.Owner == "org1" }),
			wantPath: "/api/v1/orgs/org1/repos", wantReqs: 4},
		{name: "user", extra: map[string]any{"private-token": tok, "user": "user1"}, want: pick(func(r hoststest.GiteaRepo) bool { return r.Owner == "user1" }),
			wantPath: "/api/v1/users/user1/repos", wantReqs: 2},
		{name: "instance with smaller pages", extra: map[string]any{"token": tok}, maxItems: 30, want: all, wantReqs: 9},
		{name: "old instance without headers", extra: map[string]any{"token": tok}, noHeaders: true, want: all, wantReqs: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Link headers name the instance's ROOT_URL, which the lister
			// must not follow to another host.
			f := newGitea(t, hoststest.GiteaOptions{Token: tok, RootURL: "https://gitea.example.com/",
				NoPageHeaders: tc.noHeaders, MaxResponseItems: tc.maxItems}, repos)
			l, err := NewLister(upstreamHost(t, f.Section(tc.extra)), ListerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.List(context.Background())
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if paths := listPaths(got); !reflect.DeepEqual(paths, tc.want) {
				t.Errorf("got %d repos %v...; want %d %v...", len(paths), firstFew(paths), len(tc.want), firstFew(tc.want))
			}
			reqs := f.Requests()
			if len(reqs) != tc.wantReqs {
				t.Errorf("got %d requests; want %d", len(reqs), tc.wantReqs)
			}
			want := ""
			if tc.extra["token"] != nil || tc.extra["private-token"] != nil {
				want = "token " + tok
			}
			checkCredentialHeader(t, reqs, "Authorization", want, tok)
			for i, r := range reqs {
				u, _ := url.Parse(r.URL)
				if tc.wantPath != "" && u.Path != tc.wantPath {
					t.Errorf("request %d: got path %s; want %s", i, u.Path, tc.wantPath)
				}
				if got := u.Query().Get("page"); got != strconv.Itoa(i+1) {
					t.Errorf("request %d: got page %q; want %d", i, got, i+1)
				}
				if got := u.Query().Get("limit"); got != "50" {
					t.Errorf("request %d: got limit %q; want 50", i, got)
				}
			}
		})
	}
}

func TestGiteaRepoFields(t *testing.T) {
	const tok = "gitea-fields-token"
	// Gitea writes an ssh:// URL for any port but 22.
	f := newGitea(t, hoststest.GiteaOptions{Token: tok, SSHPort: 2222},
		[]hoststest.GiteaRepo{{Owner: "o", Name: "a", Description: "The A", DefaultBranch: "trunk"}})
	web := f.URL()
	sshHost := strings.Split(f.Host(), ":")[0]
	tests := []struct {
		name  string
		extra map[string]any
		want  Repo
	}{
		{name: "http", want: Repo{Path: "o/a", CloneURL: web + "/o/a.git", Description: "The A", DefaultBranch: "trunk"}},
		{name: "ssh", extra: map[string]any{"protocol": "ssh", "api-url": web + "/api/v1"},
			want: Repo{Path: "o/a", CloneURL: "ssh://git@" + sshHost + ":2222/o/a.git", Description: "The A", DefaultBranch: "trunk"}},
		{name: "clone with token", extra: map[string]any{"clone-with-token": true},
			want: Repo{Path: "o/a", CloneURL: "http://oauth2:" + tok + "@" + f.Host() + "/o/a.git", Description: "The A", DefaultBranch: "trunk"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLister(upstreamHost(t, f.Section(sectionWith(map[string]any{"token": tok}, tc.extra))), ListerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := []Repo{tc.want}; !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v; want %+v", got, want)
			}
		})
	}
}

func TestGiteaSearchNotOK(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answerJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "search index unavailable"})
	}))
	defer srv.Close()
	l, err := NewLister(upstreamHost(t, map[string]any{"type": "gitea", "host": srv.Listener.Addr().String(), "protocol": "http"}), ListerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.List(context.Background()); err == nil || !strings.Contains(err.Error(), "search index unavailable") {
		t.Errorf("got error %v; want the search error", err)
	}
}
