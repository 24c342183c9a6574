package upstream

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/hosts/hoststest"
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

// GitHub Enterprise serves its API under /api/v3.
func TestGitHubListEnterprise(t *testing.T) {
	checkList(t, githubList, listCase{start: startGitHubList("/api/v3"), extra: map[string]any{"org": "baserock", "token": ghListTok},
		want:      githubPaths("baserock", ghOrgRepos),
		wantPaths: []string{"/api/v3/orgs/baserock/repos", "/api/v3/organizations/1000/repos", "/api/v3/organizations/1000/repos"}})
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
