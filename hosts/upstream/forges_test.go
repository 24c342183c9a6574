package upstream

import (
	"context"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/hosts/hoststest"
	"lorrycontroller.dev/lc/redact"
)

// A forge's listing that fails says what the host answered, names the
// section key to check, and never shows a token.
func TestForgeListErrors(t *testing.T) {
	type errorCase struct {
		name  string
		extra map[string]any
		fail  int
		want  []string
	}
	// A forge started with its right token, and the SetFail of the fake.
	type started struct {
		section func(extra map[string]any) map[string]any
		setFail func(int)
		opts    ListerOptions
	}
	const glTok, gtTok, ghTok = "glpat-right", "gitea-right-token", "ghp_right"
	forges := []struct {
		forge  string
		start  func(t *testing.T) started
		tokens []string
		cases  []errorCase
	}{
		{forge: "gitlab", start: func(t *testing.T) started {
			f := newGitLab(t, glTok, hoststest.GitLabProjects(5, "g"))
			return started{f.Section, f.SetFail, ListerOptions{}}
		}, tokens: []string{glTok, "glpat-wrong-one"}, cases: []errorCase{
			{name: "wrong token", extra: map[string]any{"private-token": "glpat-wrong-one"},
				want: []string{"gitlab 127.0.0.1:", "401 Unauthorized", `"401 Unauthorized"`, `check "private-token"`}},
			{name: "unknown group", extra: map[string]any{"private-token": glTok, "group": "nope"},
				want: []string{"404 Not Found", `"404 Group Not Found"`, "/api/v4/groups/nope/projects", `check "group"`}},
			{name: "server error", extra: map[string]any{"private-token": glTok}, fail: 500,
				want: []string{"500 Internal Server Error", `"500 Internal Server Error"`}},
			{name: "api-url to nowhere", extra: map[string]any{"api-url": "http://127.0.0.1:1/api/v4"},
				want: []string{"GET http://127.0.0.1:1/api/v4/projects?", "connection refused"}},
		}},
		{forge: "gitea", start: func(t *testing.T) started {
			f := newGitea(t, hoststest.GiteaOptions{Token: gtTok}, hoststest.GiteaRepos(8, "org1"))
			return started{f.Section, f.SetFail, ListerOptions{}}
		}, tokens: []string{gtTok, "gitea-wrong-token"}, cases: []errorCase{
			{name: "wrong token", extra: map[string]any{"token": "gitea-wrong-token"},
				want: []string{"gitea 127.0.0.1:", "401 Unauthorized", `"invalid username, password or token"`, `check "token"`}},
			{name: "unknown organisation", extra: map[string]any{"token": gtTok, "org": "nope"},
				want: []string{"404 Not Found", "The target couldn't be found.", "/api/v1/orgs/nope/repos", `check "org"`}},
			{name: "a user is not an organisation", extra: map[string]any{"token": gtTok, "org": "user1"},
				want: []string{"404 Not Found", "/api/v1/orgs/user1/repos"}},
			{name: "server error", extra: map[string]any{"token": gtTok}, fail: 500,
				want: []string{"500 Internal Server Error", `"internal error"`}},
		}},
		{forge: "github", start: func(t *testing.T) started {
			f := newGitHub(t, "/api/v3", ghTok, "o", hoststest.GitHubRepos(3, "o"), "", nil)
			return started{f.Section, f.SetFail, githubOptions(f, 0)}
		}, tokens: []string{ghTok, "ghp_wrong"}, cases: []errorCase{
			{name: "bad credentials", extra: map[string]any{"org": "o", "token": "ghp_wrong"},
				want: []string{"github 127.0.0.1:", "401 Unauthorized", `"Bad credentials"`, `check "token"`}},
			{name: "unknown organisation", extra: map[string]any{"org": "nope", "token": ghTok},
				want: []string{"404 Not Found", `"Not Found"`, "/api/v3/orgs/nope/repos", `check "org"`}},
			{name: "server error", extra: map[string]any{"org": "o", "token": ghTok}, fail: 502,
				want: []string{"502 Bad Gateway", `"Server Error"`}},
		}},
	}
	for _, fc := range forges {
		for _, tc := range fc.cases {
			t.Run(fc.forge+"/"+tc.name, func(t *testing.T) {
				f := fc.start(t)
				f.setFail(tc.fail)
				l, err := NewLister(upstreamHost(t, f.section(tc.extra)), f.opts)
				if err != nil {
					t.Fatal(err)
				}
				repos, err := l.List(context.Background())
				if err == nil {
					t.Fatalf("got %d repos and no error; want an error", len(repos))
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("got error %q; want it to contain %q", err, w)
					}
				}
				for _, secret := range fc.tokens {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q shows a token", err)
					}
				}
			})
		}
	}
}

// listFake is a fake forge started for a listing test.
type listFake struct {
	section  func(extra map[string]any) map[string]any
	requests func() []hoststest.Request
	opts     ListerOptions
	// web is the fake's base URL, host its host and port.
	web, host string
}

// listForge is what the listing tests expect of every forge: the
// header that carries the token, and what each request has.
type listForge struct {
	name, token string
	// header carries credential on every request when the section has
	// a token, and is empty on every request when it has none.
	header, credential string
	// anyOrder compares the paths listed as a set.
	anyOrder bool
	// eachRequest checks what every request of a listing has.
	eachRequest func(t *testing.T, i int, r hoststest.Request, u *url.URL)
}

// listCase is a listing of a fake and what it should give.
type listCase struct {
	name     string
	start    func(t *testing.T) listFake
	extra    map[string]any
	want     []string
	wantReqs int
	// wantPath is the path of every request as sent, wantPaths that of
	// each request in turn.
	wantPath  string
	wantPaths []string
	wantQuery url.Values // in every request
}

// checkList lists the fake of tc and checks the paths listed, the
// requests made, where the token went, and that the log never shows it.
func checkList(t *testing.T, fc listForge, tc listCase) {
	t.Helper()
	f := tc.start(t)
	var logs syncBuffer
	opts := f.opts
	opts.Logger = debugLogger(&logs)
	l, err := NewLister(upstreamHost(t, f.section(tc.extra)), opts)
	if err != nil {
		t.Fatal(err)
	}
	repos, err := l.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	got, want := listPaths(repos), tc.want
	if fc.anyOrder {
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %d repos %v...; want %d %v...", len(got), firstFew(got), len(want), firstFew(want))
	}
	reqs := f.requests()
	if tc.wantPaths != nil && tc.wantReqs == 0 {
		tc.wantReqs = len(tc.wantPaths)
	}
	if len(reqs) != tc.wantReqs {
		t.Errorf("got %d requests; want %d: %v", len(reqs), tc.wantReqs, reqs)
	}
	wantHeader := ""
	if tc.extra["token"] != nil || tc.extra["private-token"] != nil {
		wantHeader = fc.credential
	}
	checkCredentialHeader(t, reqs, fc.header, wantHeader, fc.token)
	if strings.Contains(logs.String(), fc.token) {
		t.Errorf("the log shows the token:\n%s", logs.String())
	}
	var paths []string
	for i, r := range reqs {
		u, _ := url.Parse(r.URL)
		paths = append(paths, u.EscapedPath())
		if tc.wantPath != "" && u.EscapedPath() != tc.wantPath {
			t.Errorf("request %d: got path %s; want %s", i, u.EscapedPath(), tc.wantPath)
		}
		for k, v := range tc.wantQuery {
			if got := u.Query()[k]; !reflect.DeepEqual(got, v) {
				t.Errorf("request %d: got query %s=%v; want %v", i, k, got, v)
			}
		}
		if fc.eachRequest != nil {
			fc.eachRequest(t, i, r, u)
		}
	}
	if tc.wantPaths != nil && !reflect.DeepEqual(paths, tc.wantPaths) {
		t.Errorf("got request paths %v; want %v", paths, tc.wantPaths)
	}
}

const (
	glListTok = "glpat-0123456789abcdef"
	gtListTok = "0123456789abcdef0123456789abcdef01234567"
	ghListTok = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
)

var (
	gitlabList = listForge{name: "gitlab", token: glListTok, header: "PRIVATE-TOKEN", credential: glListTok,
		// GitLab lists by id, not in the order projects were added.
		anyOrder: true}
	giteaList = listForge{name: "gitea", token: gtListTok, header: "Authorization", credential: "token " + gtListTok,
		eachRequest: func(t *testing.T, i int, r hoststest.Request, u *url.URL) {
			if got := u.Query().Get("page"); got != strconv.Itoa(i+1) {
				t.Errorf("request %d: got page %q; want %d", i, got, i+1)
			}
			if got := u.Query().Get("limit"); got != "50" {
				t.Errorf("request %d: got limit %q; want 50", i, got)
			}
		}}
	githubList = listForge{name: "github", token: ghListTok, header: "Authorization", credential: "Bearer " + ghListTok,
		eachRequest: func(t *testing.T, i int, r hoststest.Request, u *url.URL) {
			if got := u.Query().Get("per_page"); got != "100" {
				t.Errorf("request %s: got per_page %q; want 100", r.URL, got)
			}
			for h, want := range map[string]string{"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"} {
				if got := r.Header.Get(h); got != want {
					t.Errorf("request %s: got %s %q; want %q", r.URL, h, got, want)
				}
			}
		}}
)

// The fakes of the listing tests, and what each lists.
var (
	glProjects  = hoststest.GitLabProjects(250, "gnome")
	gtRepos     = hoststest.GiteaRepos(250, "org1")
	ghOrgRepos  = hoststest.GitHubRepos(250, "baserock")
	ghUserRepos = hoststest.GitHubRepos(7, "alice")
)

func startGitLabList(opts hoststest.GitLabOptions, projects []hoststest.GitLabProject) func(t *testing.T) listFake {
	return func(t *testing.T) listFake {
		opts.Token = glListTok
		f := hoststest.NewGitLab(t, opts)
		f.AddProjects(projects)
		return listFake{f.Section, f.Requests, ListerOptions{}, f.URL(), f.Host()}
	}
}

func startGiteaList(opts hoststest.GiteaOptions) func(t *testing.T) listFake {
	return func(t *testing.T) listFake {
		// Link headers name the instance's ROOT_URL, which the lister
		// must not follow to another host.
		opts.Token, opts.RootURL = gtListTok, "https://gitea.example.com/"
		f := newGitea(t, opts, gtRepos)
		return listFake{f.Section, f.Requests, ListerOptions{}, f.URL(), f.Host()}
	}
}

func startGitHubList(prefix string) func(t *testing.T) listFake {
	return func(t *testing.T) listFake {
		f := newGitHub(t, prefix, ghListTok, "baserock", ghOrgRepos, "alice", ghUserRepos)
		return listFake{f.Section, f.Requests, githubOptions(f, 0), f.URL(), f.Host()}
	}
}

func gitlabPaths(projects []hoststest.GitLabProject, keep func(hoststest.GitLabProject) bool) []string {
	var out []string
	for _, p := range projects {
		if keep(p) {
			out = append(out, p.FullPath())
		}
	}
	return out
}

func giteaPaths(keep func(hoststest.GiteaRepo) bool) []string {
	var out []string
	for _, r := range gtRepos {
		if keep(r) {
			out = append(out, r.FullName())
		}
	}
	return out
}

func githubPaths(owner string, repos []hoststest.GitHubRepo) []string {
	out := make([]string, len(repos))
	for i, r := range repos {
		out[i] = owner + "/" + r.Name
	}
	return out
}

// A listing over pages gives every repository the token sees, or that
// anyone sees without one, of the whole host or of one group,
// organisation or user, with the token in a header only.
func TestForgeList(t *testing.T) {
	glAll := startGitLabList(hoststest.GitLabOptions{}, glProjects)
	gtAll := startGiteaList(hoststest.GiteaOptions{})
	ghAll := startGitHubList("")
	forges := []struct {
		listForge
		cases []listCase
	}{
		{gitlabList, []listCase{
			{name: "everything the token sees", start: glAll, extra: map[string]any{"private-token": glListTok},
				want: gitlabPaths(glProjects, func(hoststest.GitLabProject) bool { return true }), wantReqs: 3, wantPath: "/api/v4/projects"},
			{name: "anonymous sees public projects", start: glAll,
				want: gitlabPaths(glProjects, func(p hoststest.GitLabProject) bool { return p.Visibility == "public" }), wantReqs: 3, wantPath: "/api/v4/projects"},
			{name: "group with subgroups", start: glAll, extra: map[string]any{"private-token": glListTok, "group": "gnome"},
				want: gitlabPaths(glProjects, func(p hoststest.GitLabProject) bool { return p.Namespace == "gnome" || p.Namespace == "gnome/sub" }), wantReqs: 2,
				wantPath: "/api/v4/groups/gnome/projects", wantQuery: url.Values{"include_subgroups": {"true"}, "with_shared": {"false"}, "order_by": {"id"}, "sort": {"asc"}, "per_page": {"100"}}},
		}},
		{giteaList, []listCase{
			{name: "everything the token sees", start: gtAll, extra: map[string]any{"token": gtListTok},
				want: giteaPaths(func(hoststest.GiteaRepo) bool { return true }), wantReqs: 5, wantPath: "/api/v1/repos/search"},
			{name: "anonymous sees public repositories", start: gtAll,
				want: giteaPaths(func(r hoststest.GiteaRepo) bool { return !r.Private }), wantReqs: 5, wantPath: "/api/v1/repos/search"},
			{name: "organisation", start: gtAll, extra: map[string]any{"private-token": gtListTok, "org": "org1"},
				want: giteaPaths(func(r hoststest.GiteaRepo) bool { return r.Owner == "org1" }), wantReqs: 4, wantPath: "/api/v1/orgs/org1/repos"},
			{name: "user", start: gtAll, extra: map[string]any{"private-token": gtListTok, "user": "user1"},
				want: giteaPaths(func(r hoststest.GiteaRepo) bool { return r.Owner == "user1" }), wantReqs: 2, wantPath: "/api/v1/users/user1/repos"},
		}},
		{githubList, []listCase{
			{name: "organisation over pages", start: ghAll, extra: map[string]any{"org": "baserock", "token": ghListTok}, want: githubPaths("baserock", ghOrgRepos),
				wantPaths: []string{"/orgs/baserock/repos", "/organizations/1000/repos", "/organizations/1000/repos"}},
			{name: "user", start: ghAll, extra: map[string]any{"user": "alice", "private-token": ghListTok}, want: githubPaths("alice", ghUserRepos),
				wantPaths: []string{"/users/alice/repos"}},
			{name: "anonymous", start: ghAll, extra: map[string]any{"user": "alice"}, want: githubPaths("alice", ghUserRepos),
				wantPaths: []string{"/users/alice/repos"}},
		}},
	}
	for _, fc := range forges {
		for _, tc := range fc.cases {
			t.Run(fc.name+"/"+tc.name, func(t *testing.T) { checkList(t, fc.listForge, tc) })
		}
	}
}

// Each repository listed has its path, a clone URL over the section's
// protocol, with the token in it if the section says so, and the
// description and default branch the host gave.
func TestForgeRepoFields(t *testing.T) {
	type hostNames struct{ web, sshHost, hostport string }
	forges := []struct {
		forge   string
		token   string
		apiPath string
		start   func(t *testing.T, tok string) (listFake, map[string]any)
		// want is what each case lists, by its name.
		want func(h hostNames, tok string) map[string][]Repo
	}{
		{forge: "gitlab", token: "glpat-fields", apiPath: "/api/v4",
			start: func(t *testing.T, tok string) (listFake, map[string]any) {
				f := newGitLab(t, tok, []hoststest.GitLabProject{
					{Namespace: "g", Path: "a", Description: "The A", DefaultBranch: "master"},
					{Namespace: "g/s", Path: "empty"},
				})
				return listFake{f.Section, f.Requests, ListerOptions{}, f.URL(), f.Host()}, map[string]any{"private-token": tok}
			},
			want: func(h hostNames, tok string) map[string][]Repo {
				return map[string][]Repo{
					"http": {{Path: "g/a", CloneURL: h.web + "/g/a.git", Description: "The A", DefaultBranch: "master"},
						{Path: "g/s/empty", CloneURL: h.web + "/g/s/empty.git"}},
					"ssh": {{Path: "g/a", CloneURL: "git@" + h.sshHost + ":g/a.git", Description: "The A", DefaultBranch: "master"},
						{Path: "g/s/empty", CloneURL: "git@" + h.sshHost + ":g/s/empty.git"}},
					"clone with token": {{Path: "g/a", CloneURL: "http://oauth2:" + tok + "@" + h.hostport + "/g/a.git", Description: "The A", DefaultBranch: "master"},
						{Path: "g/s/empty", CloneURL: "http://oauth2:" + tok + "@" + h.hostport + "/g/s/empty.git"}},
				}
			}},
		{forge: "gitea", token: "gitea-fields-token", apiPath: "/api/v1",
			start: func(t *testing.T, tok string) (listFake, map[string]any) {
				// Gitea writes an ssh:// URL for any port but 22.
				f := newGitea(t, hoststest.GiteaOptions{Token: tok, SSHPort: 2222},
					[]hoststest.GiteaRepo{{Owner: "o", Name: "a", Description: "The A", DefaultBranch: "trunk"}})
				return listFake{f.Section, f.Requests, ListerOptions{}, f.URL(), f.Host()}, map[string]any{"token": tok}
			},
			want: func(h hostNames, tok string) map[string][]Repo {
				return map[string][]Repo{
					"http":             {{Path: "o/a", CloneURL: h.web + "/o/a.git", Description: "The A", DefaultBranch: "trunk"}},
					"ssh":              {{Path: "o/a", CloneURL: "ssh://git@" + h.sshHost + ":2222/o/a.git", Description: "The A", DefaultBranch: "trunk"}},
					"clone with token": {{Path: "o/a", CloneURL: "http://oauth2:" + tok + "@" + h.hostport + "/o/a.git", Description: "The A", DefaultBranch: "trunk"}},
				}
			}},
		{forge: "github", token: "ghp_fields", apiPath: "/api/v3",
			start: func(t *testing.T, tok string) (listFake, map[string]any) {
				f := newGitHub(t, "/api/v3", tok, "o", []hoststest.GitHubRepo{{Name: "a", Description: "The A", DefaultBranch: "dev"}, {Name: "b"}}, "", nil)
				return listFake{f.Section, f.Requests, githubOptions(f, 0), f.URL(), f.Host()}, map[string]any{"org": "o", "token": tok}
			},
			want: func(h hostNames, tok string) map[string][]Repo {
				return map[string][]Repo{
					"http": {{Path: "o/a", CloneURL: h.web + "/o/a.git", Description: "The A", DefaultBranch: "dev"}, {Path: "o/b", CloneURL: h.web + "/o/b.git"}},
					"ssh":  {{Path: "o/a", CloneURL: "git@" + h.sshHost + ":o/a.git", Description: "The A", DefaultBranch: "dev"}, {Path: "o/b", CloneURL: "git@" + h.sshHost + ":o/b.git"}},
					"clone with token": {{Path: "o/a", CloneURL: "http://x-access-token:" + tok + "@" + h.hostport + "/o/a.git", Description: "The A", DefaultBranch: "dev"},
						{Path: "o/b", CloneURL: "http://x-access-token:" + tok + "@" + h.hostport + "/o/b.git"}},
				}
			}},
	}
	for _, fc := range forges {
		t.Run(fc.forge, func(t *testing.T) {
			f, base := fc.start(t, fc.token)
			web := f.web
			h := hostNames{web: web, sshHost: strings.Split(f.host, ":")[0], hostport: f.host}
			want := fc.want(h, fc.token)
			cases := []struct {
				name  string
				extra map[string]any
			}{
				{name: "http"},
				{name: "ssh", extra: map[string]any{"protocol": "ssh", "api-url": web + fc.apiPath}},
				{name: "clone with token", extra: map[string]any{"clone-with-token": true}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					l, err := NewLister(upstreamHost(t, f.section(sectionWith(base, tc.extra))), f.opts)
					if err != nil {
						t.Fatal(err)
					}
					got, err := l.List(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want[tc.name]) {
						t.Errorf("got %+v; want %+v", got, want[tc.name])
					}
					for _, r := range got {
						if red := redact.URLs(r.CloneURL); strings.Contains(red, fc.token) {
							t.Errorf("redact.URLs left the token in %q", red)
						}
					}
				})
			}
		})
	}
}

func firstFew(s []string) []string { return s[:min(3, len(s))] }
