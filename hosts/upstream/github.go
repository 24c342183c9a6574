package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"lorrycontroller.dev/lc/confgit"
)

// The GitHub lister follows the GitHub REST API documentation (API version
// 2022-11-28):
//
//   - List organization repositories, GET /orgs/{org}/repos:
//     https://docs.github.com/en/rest/repos/repos#list-organization-repositories
//   - List repositories for a user, GET /users/{username}/repos:
//     https://docs.github.com/en/rest/repos/repos#list-repositories-for-a-user
//   - Pagination by the Link header:
//     https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api
//   - Rate limits, and waiting for x-ratelimit-reset or retry-after:
//     https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
//   - Authenticating with a bearer token, and the Accept and
//     X-GitHub-Api-Version headers:
//     https://docs.github.com/en/rest/authentication/authenticating-to-the-rest-api
//
// GitHub Enterprise Server serves the same API under /api/v3:
// https://docs.github.com/en/enterprise-server@latest/rest/quickstart
//
// Section keys (decoded by confgit): "org" or "user" (exactly one), "private-token" or "token"
// (optional, but GitHub allows 60 anonymous requests an hour), "api-url"
// (default https://api.github.com for github.com, <scheme>://<host>/api/v3
// for GitHub Enterprise), "check-certificates", "clone-with-token".

type githubLister struct {
	api      *upstreamAPI
	path     string
	ssh      bool
	cloneTok string
}

func newGitHubLister(h confgit.Host, opts ListerOptions) (Lister, error) {
	var path string
	switch {
	case h.Org != "":
		path = "/orgs/" + url.PathEscape(h.Org) + "/repos"
	case h.User != "":
		path = "/users/" + url.PathEscape(h.User) + "/repos"
	default:
		return nil, hostError(h, "org", errors.New(`missing: a github section needs "org" or "user"`))
	}
	def := forgeAPIScheme(h.Protocol) + "://" + h.Name + "/api/v3"
	if strings.EqualFold(h.Name, "github.com") {
		def = "https://api.github.com"
	}
	api, cloneTok, err := newForgeAPI(h, opts, def, "Authorization", "Bearer ")
	if err != nil {
		return nil, err
	}
	api.nameKey = "org"
	if h.User != "" {
		api.nameKey = "user"
	}
	api.header.Set("Accept", "application/vnd.github+json")
	api.header.Set("X-GitHub-Api-Version", "2022-11-28")
	return &githubLister{api: api, path: path, ssh: h.Protocol == "ssh", cloneTok: cloneTok}, nil
}

type githubRepo struct {
	FullName      string `json:"full_name"`
	CloneURL      string `json:"clone_url"`
	SSHURL        string `json:"ssh_url"`
	Description   string `json:"description"`
	DefaultBranch string `json:"default_branch"`
}

// List lists the organisation's or the user's repositories: all those of
// an organisation the token can see, and those a user owns.
func (l *githubLister) List(ctx context.Context) ([]Repo, error) {
	defer l.api.done()
	// Oldest first, so a repository created during the listing lands on
	// the last page instead of shifting the others.
	q := url.Values{"per_page": {"100"}, "sort": {"created"}, "direction": {"asc"}}
	first, err := l.api.endpoint(l.path, q)
	if err != nil {
		return nil, fmt.Errorf("github %s: %w", l.api.host, err)
	}
	// "x-access-token" is the user name GitHub documents for tokens in
	// clone URLs; it works for personal access tokens too.
	repos, err := l.api.listAll(ctx, first, l.next, cloneAs{l.ssh, "x-access-token", l.cloneTok}, func(body []byte) ([]listedRepo, error) {
		list, err := decodeRepoList[githubRepo](body)
		out := make([]listedRepo, len(list))
		for i, r := range list {
			out[i] = listedRepo{r.FullName, r.CloneURL, r.SSHURL, r.Description, r.DefaultBranch}
		}
		return out, err
	})
	if err != nil {
		return nil, fmt.Errorf("github %s: %w", l.api.host, err)
	}
	return repos, nil
}

// next follows the Link header only, as GitHub asks: its next page may be
// at another path (/organizations/{id}/repos) than the first.
func (l *githubLister) next(cur *url.URL, p *apiPage, _, _ int) (*url.URL, error) {
	if target := linkHeaderRel(p.header, "next"); target != "" {
		return l.api.follow(cur, target)
	}
	return nil, nil
}
