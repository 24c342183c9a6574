package upstream

import (
	"context"
	"strings"
	"testing"

	"lorrycontroller/hosts/hoststest"
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
