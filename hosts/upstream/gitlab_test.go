package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"lorrycontroller/hosts/hoststest"
	"lorrycontroller/redact"
)

// newGitLab starts a fake GitLab that takes tok and holds projects.
func newGitLab(t testing.TB, tok string, projects []hoststest.GitLabProject) *hoststest.GitLab {
	f := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: tok})
	f.AddProjects(projects)
	return f
}

func TestGitLabList(t *testing.T) {
	const tok = "glpat-0123456789abcdef"
	projects := hoststest.GitLabProjects(250, "gnome")
	var public, gnome, gnomeSub []string
	for _, p := range projects {
		if p.Visibility == "public" {
			public = append(public, p.FullPath())
		}
		switch p.Namespace {
		case "gnome":
			gnome = append(gnome, p.FullPath())
		case "gnome/sub":
			gnome = append(gnome, p.FullPath())
			gnomeSub = append(gnomeSub, p.FullPath())
		}
	}
	var all []string
	for _, p := range projects {
		all = append(all, p.FullPath())
	}
	nested := hoststest.GitLabProjects(600, "a/b")
	var nestedAB []string
	for _, p := range nested {
		if p.Namespace != "a/bish" {
			nestedAB = append(nestedAB, p.FullPath())
		}
	}
	tests := []struct {
		name      string
		projects  []hoststest.GitLabProject // default: projects
		extra     map[string]any
		linkOnly  bool
		want      []string
		wantPath  string // the path of the first request, as sent
		wantQuery url.Values
		wantReqs  int
	}{
		{name: "everything the token sees, keyset", extra: map[string]any{"private-token": tok}, want: all, wantReqs: 3,
			wantPath: "/api/v4/projects", wantQuery: url.Values{"pagination": {"keyset"}, "order_by": {"id"}, "sort": {"asc"}, "per_page": {"100"}}},
		{name: "anonymous sees public projects", want: public, wantReqs: 3, wantPath: "/api/v4/projects"},
		{name: "group with subgroups", extra: map[string]any{"private-token": tok, "group": "gnome"}, want: gnome, wantReqs: 2,
			wantPath: "/api/v4/groups/gnome/projects", wantQuery: url.Values{"include_subgroups": {"true"}, "with_shared": {"false"}, "order_by": {"id"}, "sort": {"asc"}, "per_page": {"100"}}},
		{name: "subgroup path is URL-encoded", extra: map[string]any{"private-token": tok, "group": "gnome/sub"}, want: gnomeSub, wantReqs: 1,
			wantPath: "/api/v4/groups/gnome%2Fsub/projects"},
		{name: "offset pages by Link alone", extra: map[string]any{"private-token": tok, "group": "gnome"}, linkOnly: true, want: gnome, wantReqs: 2},
		{name: "nested group over pages", projects: nested, extra: map[string]any{"private-token": tok, "group": "a/b"}, want: nestedAB, wantReqs: 5,
			wantPath: "/api/v4/groups/a%2Fb/projects"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := projects
			if tc.projects != nil {
				ps = tc.projects
			}
			f := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: tok, LinkOnly: tc.linkOnly})
			f.AddProjects(ps)
			var logs syncBuffer
			l, err := NewLister(upstreamHost(t, f.Section(tc.extra)), ListerOptions{Logger: debugLogger(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			repos, err := l.List(context.Background())
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			got := listPaths(repos)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %d repos %v...; want %d %v...", len(got), firstFew(got), len(want), firstFew(want))
			}
			reqs := f.Requests()
			if len(reqs) != tc.wantReqs {
				t.Errorf("got %d requests; want %d: %v", len(reqs), tc.wantReqs, reqs)
			}
			wantHeader := ""
			if tc.extra["private-token"] != nil {
				wantHeader = tok
			}
			checkCredentialHeader(t, reqs, "PRIVATE-TOKEN", wantHeader, tok)
			if strings.Contains(logs.String(), tok) {
				t.Errorf("the log shows the token:\n%s", logs.String())
			}
			for i, r := range reqs {
				u, _ := url.Parse(r.URL)
				if tc.wantPath != "" && u.EscapedPath() != tc.wantPath {
					t.Errorf("request %d: got path %s; want %s", i, u.EscapedPath(), tc.wantPath)
				}
				for k, v := range tc.wantQuery {
					if got := u.Query()[k]; !reflect.DeepEqual(got, v) {
						t.Errorf("request %d: got query %s=%v; want %v", i, k, got, v)
					}
				}
			}
		})
	}
}

func firstFew(s []string) []string { return s[:min(3, len(s))] }

func TestGitLabRepoFields(t *testing.T) {
	const tok = "glpat-fields"
	f := newGitLab(t, tok, []hoststest.GitLabProject{
		{Namespace: "g", Path: "a", Description: "The A", DefaultBranch: "master"},
		{Namespace: "g/s", Path: "empty"},
	})
	web := f.URL()
	sshHost := strings.Split(f.Host(), ":")[0]
	tests := []struct {
		name  string
		extra map[string]any
		want  []Repo
	}{
		{name: "http", want: []Repo{
			{Path: "g/a", CloneURL: web + "/g/a.git", Description: "The A", DefaultBranch: "master"},
			{Path: "g/s/empty", CloneURL: web + "/g/s/empty.git"},
		}},
		{name: "ssh", extra: map[string]any{"protocol": "ssh", "api-url": web + "/api/v4"}, want: []Repo{
			{Path: "g/a", CloneURL: "git@" + sshHost + ":g/a.git", Description: "The A", DefaultBranch: "master"},
			{Path: "g/s/empty", CloneURL: "git@" + sshHost + ":g/s/empty.git"},
		}},
		{name: "clone with token", extra: map[string]any{"clone-with-token": true}, want: []Repo{
			{Path: "g/a", CloneURL: "http://oauth2:" + tok + "@" + f.Host() + "/g/a.git", Description: "The A", DefaultBranch: "master"},
			{Path: "g/s/empty", CloneURL: "http://oauth2:" + tok + "@" + f.Host() + "/g/s/empty.git"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLister(upstreamHost(t, f.Section(sectionWith(map[string]any{"private-token": tok}, tc.extra))), ListerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v; want %+v", got, tc.want)
			}
		})
	}
	if got := redact.URLs("http://oauth2:" + tok + "@h/g/a.git"); strings.Contains(got, tok) {
		t.Errorf("redact.URLs left the token in %q", got)
	}
}

// Above 10,000 records GitLab stops counting; the listing must not need
// the count.
func TestGitLabLargeGroupWithoutTotals(t *testing.T) {
	projects := hoststest.GitLabProjects(12_600, "big")
	f := newGitLab(t, "glpat-big", projects)
	l, err := NewLister(upstreamHost(t, f.Section(map[string]any{"group": "big", "private-token": "glpat-big"})), ListerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	repos, err := l.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, p := range projects {
		if strings.HasPrefix(p.Namespace+"/", "big/") {
			want++
		}
	}
	if want <= 10000 {
		t.Fatalf("the group has %d projects; the test needs more than 10,000", want)
	}
	if len(repos) != want {
		t.Errorf("got %d repos; want %d", len(repos), want)
	}
	if got, wantReqs := len(f.Requests()), (want+99)/100; got != wantReqs {
		t.Errorf("got %d requests; want %d", got, wantReqs)
	}
}

// PRIVATE-TOKEN is not a header net/http drops on a redirect to another
// host, so the lister must refuse such redirects itself.
func TestGitLabRedirectKeepsToken(t *testing.T) {
	const tok = "glpat-redirected"
	// The other host is a GitLab too, that would answer the token.
	other := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: tok})
	// "localhost" reaches the same listener under another host name.
	otherURL := strings.Replace(other.URL(), "127.0.0.1", "localhost", 1)
	srv := httptest.NewServer(http.RedirectHandler(otherURL+"/api/v4/projects", http.StatusFound))
	defer srv.Close()
	l, err := NewLister(upstreamHost(t, map[string]any{"type": "gitlab", "host": srv.Listener.Addr().String(), "protocol": "http", "private-token": tok}), ListerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "redirect to another host") {
		t.Errorf("got error %v; want a refused redirect", err)
	}
	for _, r := range other.Requests() {
		if r.Header.Get("PRIVATE-TOKEN") != "" {
			t.Errorf("the other host got the token")
		}
	}
}
