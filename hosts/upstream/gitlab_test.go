package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/hosts/hoststest"
)

// newGitLab starts a fake GitLab that takes tok and holds projects.
func newGitLab(t testing.TB, tok string, projects []hoststest.GitLabProject) *hoststest.GitLab {
	f := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: tok})
	f.AddProjects(projects)
	return f
}

// GitLab pages by keyset where it can, and else by offset, following
// the Link header; a group's path is one URL-encoded segment.
func TestGitLabListPaging(t *testing.T) {
	nested := hoststest.GitLabProjects(600, "a/b")
	tests := []listCase{
		{name: "keyset", start: startGitLabList(hoststest.GitLabOptions{}, glProjects), extra: map[string]any{"private-token": glListTok},
			want: gitlabPaths(glProjects, func(hoststest.GitLabProject) bool { return true }), wantReqs: 3, wantPath: "/api/v4/projects",
			wantQuery: url.Values{"pagination": {"keyset"}, "order_by": {"id"}, "sort": {"asc"}, "per_page": {"100"}}},
		{name: "offset pages by Link alone", start: startGitLabList(hoststest.GitLabOptions{LinkOnly: true}, glProjects),
			extra: map[string]any{"private-token": glListTok, "group": "gnome"},
			want:  gitlabPaths(glProjects, func(p hoststest.GitLabProject) bool { return p.Namespace == "gnome" || p.Namespace == "gnome/sub" }), wantReqs: 2},
		{name: "subgroup path is URL-encoded", start: startGitLabList(hoststest.GitLabOptions{}, glProjects),
			extra: map[string]any{"private-token": glListTok, "group": "gnome/sub"},
			want:  gitlabPaths(glProjects, func(p hoststest.GitLabProject) bool { return p.Namespace == "gnome/sub" }), wantReqs: 1,
			wantPath: "/api/v4/groups/gnome%2Fsub/projects"},
		{name: "nested group over pages", start: startGitLabList(hoststest.GitLabOptions{}, nested),
			extra: map[string]any{"private-token": glListTok, "group": "a/b"},
			want:  gitlabPaths(nested, func(p hoststest.GitLabProject) bool { return p.Namespace != "a/bish" }), wantReqs: 5,
			wantPath: "/api/v4/groups/a%2Fb/projects"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkList(t, gitlabList, tc) })
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
