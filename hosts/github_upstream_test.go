package hosts

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGitHub answers the GitHub REST API calls the lister makes, the way
// GitHub documents them:
//
//   - GET /orgs/{org}/repos and GET /users/{username}/repos
//     (https://docs.github.com/en/rest/repos/repos); per_page defaults to
//     30 and is at most 100;
//   - pagination by the Link header only
//     (https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api),
//     whose targets after the first page are the owner's numeric routes,
//     /organizations/{id}/repos and /user/{id}/repos, as api.github.com
//     gives them;
//   - errors: 401 {"message":"Bad credentials",...} for a wrong token,
//     404 {"message":"Not Found",...} for an unknown owner;
//   - the primary rate limit
//     (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api):
//     403 with x-ratelimit-remaining 0, x-ratelimit-reset in Unix seconds
//     and the "API rate limit exceeded" body; the secondary one as 429 with
//     retry-after.
//
// prefix is "" for api.github.com and "/api/v3" for GitHub Enterprise.
type fakeGitHub struct {
	srv    *httptest.Server
	prefix string
	token  string
	owners map[string][]fakeGitHubRepo // by route: orgs/x, organizations/1000, users/y, user/1001
	ids    map[string]int              // numeric id of the orgs/x and users/y routes
	logins map[string]string           // login of every route
	clock  *fakeClock
	log    requestLog

	mu           sync.Mutex
	limitedUntil time.Time     // primary limit: refuse until then
	extendBy     time.Duration // if set, every request is limited for this long more
	secondary    int           // answer this many requests with 429 retry-after
	retryAfter   int
	fail         int
}

type fakeGitHubRepo struct {
	Name, Description, DefaultBranch string
}

func newFakeGitHub(t testing.TB, prefix string, orgs, users map[string][]fakeGitHubRepo) *fakeGitHub {
	f := &fakeGitHub{prefix: prefix, owners: map[string][]fakeGitHubRepo{}, ids: map[string]int{}, logins: map[string]string{}, clock: newFakeClock()}
	id := 1000
	add := func(route, numericRoute, name string, repos []fakeGitHubRepo) {
		num := numericRoute + "/" + strconv.Itoa(id)
		f.owners[route+"/"+name], f.owners[num] = repos, repos
		f.logins[route+"/"+name], f.logins[num] = name, name
		f.ids[route+"/"+name] = id
		id++
	}
	for name, repos := range orgs {
		add("orgs", "organizations", name, repos)
	}
	for name, repos := range users {
		add("users", "user", name, repos)
	}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) host() string { return f.srv.Listener.Addr().String() }

func fakeGitHubRepos(n int, owner string) []fakeGitHubRepo {
	out := make([]fakeGitHubRepo, n)
	for i := range out {
		out[i] = fakeGitHubRepo{Name: fmt.Sprintf("%s-r%03d", owner, i), Description: "repo " + strconv.Itoa(i), DefaultBranch: "main"}
	}
	return out
}

func (f *fakeGitHub) rateHeaders(w http.ResponseWriter, remaining int, reset time.Time) {
	w.Header().Set("X-RateLimit-Limit", "5000")
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	w.Header().Set("X-RateLimit-Used", strconv.Itoa(5000-remaining))
	w.Header().Set("X-RateLimit-Resource", "core")
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.log.add(r)
	f.mu.Lock()
	now := f.clock.Now()
	limitedUntil, secondary := f.limitedUntil, f.secondary > 0
	if secondary {
		f.secondary--
	}
	if f.extendBy > 0 { // a limit that never lifts
		f.limitedUntil = now.Add(f.extendBy)
		limitedUntil = f.limitedUntil
	}
	f.mu.Unlock()
	const docs = "https://docs.github.com/rest"
	switch {
	case f.fail != 0:
		answerJSON(w, f.fail, map[string]string{"message": "Server Error"})
		return
	case r.Header.Get("Authorization") != "" && r.Header.Get("Authorization") != "Bearer "+f.token:
		answerJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials", "documentation_url": docs, "status": "401"})
		return
	case now.Before(limitedUntil):
		f.rateHeaders(w, 0, limitedUntil)
		answerJSON(w, http.StatusForbidden, map[string]string{
			"message":           "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
			"status":            "403",
		})
		return
	case secondary:
		w.Header().Set("Retry-After", strconv.Itoa(f.retryAfter))
		answerJSON(w, http.StatusTooManyRequests, map[string]string{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
			"status":            "429",
		})
		return
	}
	f.rateHeaders(w, 4999, now.Add(time.Hour))
	p := strings.TrimPrefix(r.URL.Path, f.prefix+"/")
	owner, ok := strings.CutSuffix(p, "/repos")
	repos, known := f.owners[owner]
	if !strings.HasPrefix(r.URL.Path, f.prefix+"/") || !ok || !known {
		answerJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found",
			"documentation_url": "https://docs.github.com/rest/repos/repos#list-organization-repositories", "status": "404"})
		return
	}
	q := r.URL.Query()
	perPage, _ := strconv.Atoi(q.Get("per_page"))
	if perPage <= 0 {
		perPage = 30
	}
	perPage = min(perPage, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	total := len(repos)
	pages := max((total+perPage-1)/perPage, 1)
	lo := min((page-1)*perPage, total)
	items := repos[lo:min(lo+perPage, total)]

	numeric := owner
	if id, ok := f.ids[owner]; ok {
		route := map[string]string{"orgs": "organizations", "users": "user"}[owner[:strings.IndexByte(owner, '/')]]
		numeric = route + "/" + strconv.Itoa(id)
	}
	link := func(n int, rel string) string {
		nq := r.URL.Query()
		nq.Set("page", strconv.Itoa(n))
		return fmt.Sprintf(`<http://%s%s/%s/repos?%s>; rel="%s"`, r.Host, f.prefix, numeric, nq.Encode(), rel)
	}
	var links []string
	if page > 1 {
		links = append(links, link(page-1, "prev"))
	}
	if page < pages {
		links = append(links, link(page+1, "next"), link(pages, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	login := f.logins[owner]
	web := "http://" + r.Host
	out := make([]map[string]any, len(items))
	for i, repo := range items {
		var desc any = repo.Description
		if repo.Description == "" {
			desc = nil
		}
		out[i] = map[string]any{
			"id":             lo + i + 1,
			"node_id":        "R_x",
			"name":           repo.Name,
			"full_name":      login + "/" + repo.Name,
			"owner":          map[string]any{"login": login},
			"private":        false,
			"html_url":       web + "/" + login + "/" + repo.Name,
			"description":    desc,
			"fork":           false,
			"url":            web + f.prefix + "/repos/" + login + "/" + repo.Name,
			"git_url":        "git://" + r.Host + "/" + login + "/" + repo.Name + ".git",
			"ssh_url":        "git@" + strings.Split(r.Host, ":")[0] + ":" + login + "/" + repo.Name + ".git",
			"clone_url":      web + "/" + login + "/" + repo.Name + ".git",
			"default_branch": repo.DefaultBranch,
			"archived":       false,
			"visibility":     "public",
		}
	}
	answerJSON(w, http.StatusOK, out)
}

func githubOptions(f *fakeGitHub, maxWait time.Duration) ListerOptions {
	return ListerOptions{Now: f.clock.Now, Sleep: f.clock.Sleep, MaxRateLimitWait: maxWait}
}

func TestGitHubList(t *testing.T) {
	const tok = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	orgRepos := fakeGitHubRepos(250, "baserock")
	userRepos := fakeGitHubRepos(7, "alice")
	names := func(owner string, repos []fakeGitHubRepo) []string {
		out := make([]string, len(repos))
		for i, r := range repos {
			out[i] = owner + "/" + r.Name
		}
		return out
	}
	tests := []struct {
		name      string
		prefix    string
		extra     map[string]any
		want      []string
		wantPaths []string
	}{
		{name: "organisation over pages", extra: map[string]any{"org": "baserock", "token": tok}, want: names("baserock", orgRepos),
			wantPaths: []string{"/orgs/baserock/repos", "/organizations/1000/repos", "/organizations/1000/repos"}},
		{name: "user", extra: map[string]any{"user": "alice", "private-token": tok}, want: names("alice", userRepos),
			wantPaths: []string{"/users/alice/repos"}},
		{name: "anonymous", extra: map[string]any{"user": "alice"}, want: names("alice", userRepos),
			wantPaths: []string{"/users/alice/repos"}},
		{name: "enterprise under /api/v3", prefix: "/api/v3", extra: map[string]any{"org": "baserock", "token": tok}, want: names("baserock", orgRepos),
			wantPaths: []string{"/api/v3/orgs/baserock/repos", "/api/v3/organizations/1000/repos", "/api/v3/organizations/1000/repos"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, tc.prefix, map[string][]fakeGitHubRepo{"baserock": orgRepos}, map[string][]fakeGitHubRepo{"alice": userRepos})
			f.token = tok
			sec := sectionWith(map[string]any{"type": "github", "host": f.host(), "protocol": "http"}, tc.extra)
			if tc.prefix == "" {
				sec["api-url"] = f.srv.URL
			}
			l, err := NewLister(upstreamHost(t, sec), githubOptions(f, 0))
			if err != nil {
				t.Fatal(err)
			}
			repos, err := l.List(context.Background())
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if got := listPaths(repos); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %d repos %v...; want %d %v...", len(got), firstFew(got), len(tc.want), firstFew(tc.want))
			}
			reqs := f.log.all()
			var paths []string
			for _, r := range reqs {
				u, _ := url.Parse(r.URL)
				paths = append(paths, u.Path)
				if got := u.Query().Get("per_page"); got != "100" {
					t.Errorf("request %s: got per_page %q; want 100", r.URL, got)
				}
				for h, want := range map[string]string{"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"} {
					if got := r.Header.Get(h); got != want {
						t.Errorf("request %s: got %s %q; want %q", r.URL, h, got, want)
					}
				}
			}
			if !reflect.DeepEqual(paths, tc.wantPaths) {
				t.Errorf("got request paths %v; want %v", paths, tc.wantPaths)
			}
			want := ""
			if tc.extra["token"] != nil || tc.extra["private-token"] != nil {
				want = "Bearer " + tok
			}
			checkCredentialHeader(t, reqs, "Authorization", want, tok)
		})
	}
}

func TestGitHubAPIBase(t *testing.T) {
	tests := []struct {
		name string
		sec  map[string]any
		want string
	}{
		{name: "github.com", sec: map[string]any{"host": "github.com"}, want: "https://api.github.com"},
		{name: "github.com in capitals", sec: map[string]any{"host": "GitHub.com", "protocol": "ssh"}, want: "https://api.github.com"},
		{name: "enterprise", sec: map[string]any{"host": "ghe.example.com"}, want: "https://ghe.example.com/api/v3"},
		{name: "enterprise over http", sec: map[string]any{"host": "ghe.example.com:8080", "protocol": "http"}, want: "http://ghe.example.com:8080/api/v3"},
		{name: "override", sec: map[string]any{"host": "github.com", "api-url": "https://proxy.example.com/gh/"}, want: "https://proxy.example.com/gh"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLister(upstreamHost(t, sectionWith(map[string]any{"type": "github", "org": "o"}, tc.sec)), ListerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := l.(*githubLister).api.base.String(); got != tc.want {
				t.Errorf("got API base %s; want %s", got, tc.want)
			}
		})
	}
}

func TestGitHubRepoFields(t *testing.T) {
	const tok = "ghp_fields"
	f := newFakeGitHub(t, "/api/v3", map[string][]fakeGitHubRepo{"o": {{Name: "a", Description: "The A", DefaultBranch: "dev"}, {Name: "b"}}}, nil)
	f.token = tok
	web := "http://" + f.host()
	sshHost := strings.Split(f.host(), ":")[0]
	tests := []struct {
		name  string
		extra map[string]any
		want  []Repo
	}{
		{name: "http", want: []Repo{{Path: "o/a", CloneURL: web + "/o/a.git", Description: "The A", DefaultBranch: "dev"}, {Path: "o/b", CloneURL: web + "/o/b.git"}}},
		{name: "ssh", extra: map[string]any{"protocol": "ssh", "api-url": web + "/api/v3"},
			want: []Repo{{Path: "o/a", CloneURL: "git@" + sshHost + ":o/a.git", Description: "The A", DefaultBranch: "dev"}, {Path: "o/b", CloneURL: "git@" + sshHost + ":o/b.git"}}},
		{name: "clone with token", extra: map[string]any{"clone-with-token": true},
			want: []Repo{{Path: "o/a", CloneURL: "http://x-access-token:" + tok + "@" + f.host() + "/o/a.git", Description: "The A", DefaultBranch: "dev"},
				{Path: "o/b", CloneURL: "http://x-access-token:" + tok + "@" + f.host() + "/o/b.git"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sec := sectionWith(map[string]any{"type": "github", "host": f.host(), "protocol": "http", "org": "o", "token": tok}, tc.extra)
			l, err := NewLister(upstreamHost(t, sec), githubOptions(f, 0))
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
}

func TestGitHubErrors(t *testing.T) {
	const tok = "ghp_right"
	tests := []struct {
		name  string
		extra map[string]any
		fail  int
		want  []string
	}{
		{name: "bad credentials", extra: map[string]any{"org": "o", "token": "ghp_wrong"},
			want: []string{"github 127.0.0.1:", "401 Unauthorized", `"Bad credentials"`, `check "token"`}},
		{name: "unknown organisation", extra: map[string]any{"org": "nope", "token": tok},
			want: []string{"404 Not Found", `"Not Found"`, "/api/v3/orgs/nope/repos", `check "org"`}},
		{name: "server error", extra: map[string]any{"org": "o", "token": tok}, fail: 502,
			want: []string{"502 Bad Gateway", `"Server Error"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "/api/v3", map[string][]fakeGitHubRepo{"o": fakeGitHubRepos(3, "o")}, nil)
			f.token = tok
			f.fail = tc.fail
			sec := sectionWith(map[string]any{"type": "github", "host": f.host(), "protocol": "http"}, tc.extra)
			l, err := NewLister(upstreamHost(t, sec), githubOptions(f, 0))
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
			if strings.Contains(err.Error(), "ghp_wrong") || strings.Contains(err.Error(), tok) {
				t.Errorf("error %q shows a token", err)
			}
		})
	}
}

func TestGitHubRateLimit(t *testing.T) {
	tests := []struct {
		name       string
		limitFor   time.Duration // primary limit from the start for this long
		extendBy   time.Duration // limits every request for this long
		secondary  int
		retryAfter int
		maxWait    time.Duration
		wantSlept  []time.Duration
		wantReqs   int
		wantErr    []string
	}{
		{name: "primary limit within the bound", limitFor: 30 * time.Second, maxWait: time.Minute,
			wantSlept: []time.Duration{30 * time.Second}, wantReqs: 4},
		{name: "secondary limit with retry-after", secondary: 1, retryAfter: 5, maxWait: time.Minute,
			wantSlept: []time.Duration{5 * time.Second}, wantReqs: 4},
		{name: "reset beyond the bound", limitFor: time.Hour, maxWait: time.Minute, wantReqs: 1,
			wantErr: []string{"rate limited by 127.0.0.1:", "until 2023-11-14T23:13:20Z", "in 1h0m0s", "waits at most 1m0s"}},
		{name: "never waits", limitFor: 10 * time.Second, maxWait: -1, wantReqs: 1,
			wantErr: []string{"until 2023-11-14T22:13:30Z", "does not wait"}},
		{name: "still limited after waiting", limitFor: 10 * time.Second, extendBy: 10 * time.Second, maxWait: time.Minute,
			wantSlept: []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}, wantReqs: 4,
			wantErr: []string{"still rate limited after 3 waits"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "/api/v3", map[string][]fakeGitHubRepo{"o": fakeGitHubRepos(250, "o")}, nil)
			f.token = "ghp_rate"
			f.limitedUntil = f.clock.Now().Add(tc.limitFor)
			f.extendBy = tc.extendBy
			f.secondary, f.retryAfter = tc.secondary, tc.retryAfter
			sec := map[string]any{"type": "github", "host": f.host(), "protocol": "http", "org": "o", "token": "ghp_rate"}
			l, err := NewLister(upstreamHost(t, sec), githubOptions(f, tc.maxWait))
			if err != nil {
				t.Fatal(err)
			}
			repos, err := l.List(context.Background())
			if tc.wantErr == nil {
				if err != nil || len(repos) != 250 {
					t.Errorf("got %d repos, error %v; want 250 and no error", len(repos), err)
				}
			} else {
				if err == nil {
					t.Fatalf("got %d repos and no error; want an error", len(repos))
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("got error %q; want it to contain %q", err, w)
					}
				}
			}
			if got := f.clock.Slept(); !reflect.DeepEqual(got, tc.wantSlept) {
				t.Errorf("slept %v; want %v", got, tc.wantSlept)
			}
			if got := len(f.log.all()); got != tc.wantReqs {
				t.Errorf("got %d requests; want %d", got, tc.wantReqs)
			}
		})
	}
}

// A listing cancelled while it waits for a rate limit stops at once.
func TestGitHubRateLimitWaitCancelled(t *testing.T) {
	f := newFakeGitHub(t, "/api/v3", map[string][]fakeGitHubRepo{"o": fakeGitHubRepos(3, "o")}, nil)
	f.limitedUntil = f.clock.Now().Add(30 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	sleep := func(ctx context.Context, d time.Duration) error {
		cancel()
		return sleepContext(ctx, d)
	}
	sec := map[string]any{"type": "github", "host": f.host(), "protocol": "http", "org": "o"}
	l, err := NewLister(upstreamHost(t, sec), ListerOptions{Now: f.clock.Now, Sleep: sleep})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.List(ctx); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("got error %v; want the cancellation", err)
	}
	if got := len(f.log.all()); got != 1 {
		t.Errorf("got %d requests; want 1", got)
	}
}
