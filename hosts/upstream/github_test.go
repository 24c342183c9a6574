package upstream

import (
	"context"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"lorrycontroller/hosts/hoststest"
)

// newGitHub starts a fake GitHub that takes tok, with one organisation
// and, if user is not "", one user.
func newGitHub(t testing.TB, prefix, tok, org string, orgRepos []hoststest.GitHubRepo, user string, userRepos []hoststest.GitHubRepo) *hoststest.GitHub {
	f := hoststest.NewGitHub(t, hoststest.GitHubOptions{Prefix: prefix, Token: tok})
	f.AddOrg(org, orgRepos)
	if user != "" {
		f.AddUser(user, userRepos)
	}
	return f
}

func githubOptions(f *hoststest.GitHub, maxWait time.Duration) ListerOptions {
	return ListerOptions{Now: f.Clock().Now, Sleep: f.Clock().Sleep, MaxRateLimitWait: maxWait}
}

func TestGitHubList(t *testing.T) {
	const tok = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	orgRepos := hoststest.GitHubRepos(250, "baserock")
	userRepos := hoststest.GitHubRepos(7, "alice")
	names := func(owner string, repos []hoststest.GitHubRepo) []string {
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
			f := newGitHub(t, tc.prefix, tok, "baserock", orgRepos, "alice", userRepos)
			l, err := NewLister(upstreamHost(t, f.Section(tc.extra)), githubOptions(f, 0))
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
			reqs := f.Requests()
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
	f := newGitHub(t, "/api/v3", tok, "o", []hoststest.GitHubRepo{{Name: "a", Description: "The A", DefaultBranch: "dev"}, {Name: "b"}}, "", nil)
	web := f.URL()
	sshHost := strings.Split(f.Host(), ":")[0]
	tests := []struct {
		name  string
		extra map[string]any
		want  []Repo
	}{
		{name: "http", want: []Repo{{Path: "o/a", CloneURL: web + "/o/a.git", Description: "The A", DefaultBranch: "dev"}, {Path: "o/b", CloneURL: web + "/o/b.git"}}},
		{name: "ssh", extra: map[string]any{"protocol": "ssh", "api-url": web + "/api/v3"},
			want: []Repo{{Path: "o/a", CloneURL: "git@" + sshHost + ":o/a.git", Description: "The A", DefaultBranch: "dev"}, {Path: "o/b", CloneURL: "git@" + sshHost + ":o/b.git"}}},
		{name: "clone with token", extra: map[string]any{"clone-with-token": true},
			want: []Repo{{Path: "o/a", CloneURL: "http://x-access-token:" + tok + "@" + f.Host() + "/o/a.git", Description: "The A", DefaultBranch: "dev"},
				{Path: "o/b", CloneURL: "http://x-access-token:" + tok + "@" + f.Host() + "/o/b.git"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLister(upstreamHost(t, f.Section(sectionWith(map[string]any{"org": "o", "token": tok}, tc.extra))), githubOptions(f, 0))
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
			f := newGitHub(t, "/api/v3", "ghp_rate", "o", hoststest.GitHubRepos(250, "o"), "", nil)
			f.LimitUntil(f.Clock().Now().Add(tc.limitFor))
			f.LimitEveryCall(tc.extendBy)
			f.SecondaryLimit(tc.secondary, tc.retryAfter)
			l, err := NewLister(upstreamHost(t, f.Section(map[string]any{"org": "o", "token": "ghp_rate"})), githubOptions(f, tc.maxWait))
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
			if got := f.Clock().Slept(); !reflect.DeepEqual(got, tc.wantSlept) {
				t.Errorf("slept %v; want %v", got, tc.wantSlept)
			}
			if got := len(f.Requests()); got != tc.wantReqs {
				t.Errorf("got %d requests; want %d", got, tc.wantReqs)
			}
		})
	}
}

// A listing cancelled while it waits for a rate limit stops at once.
func TestGitHubRateLimitWaitCancelled(t *testing.T) {
	f := newGitHub(t, "/api/v3", "", "o", hoststest.GitHubRepos(3, "o"), "", nil)
	f.LimitUntil(f.Clock().Now().Add(30 * time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	sleep := func(ctx context.Context, d time.Duration) error {
		cancel()
		return sleepContext(ctx, d)
	}
	l, err := NewLister(upstreamHost(t, f.Section(map[string]any{"org": "o"})), ListerOptions{Now: f.Clock().Now, Sleep: sleep})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.List(ctx); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("got error %v; want the cancellation", err)
	}
	if got := len(f.Requests()); got != 1 {
		t.Errorf("got %d requests; want 1", got)
	}
}
