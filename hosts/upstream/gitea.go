package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"lorrycontroller.dev/lc/confgit"
)

// The Gitea lister (Forgejo speaks the same API) follows the Gitea API v1
// documentation:
//
//   - Usage, token authentication and pagination (page and limit, the
//     Link and x-total-count headers):
//     https://docs.gitea.com/development/api-usage
//   - The operations, in the API reference every instance serves at
//     /api/swagger (https://gitea.com/api/swagger): GET /orgs/{org}/repos
//     (orgListRepos), GET /users/{username}/repos (userListRepos) and
//     GET /repos/search (repoSearch, which answers
//     {"ok": true, "data": [...]}).
//
// Section keys (decoded by confgit): "private-token" or "token" (optional), "org" or "user"
// (at most one; neither lists every repository the token can see),
// "api-url" (default <scheme>://<host>/api/v1), "check-certificates",
// "clone-with-token".

// giteaPageSize is the default MAX_RESPONSE_ITEMS of a Gitea instance; one
// that allows fewer answers with fewer, which the paging copes with.
const giteaPageSize = 50

type giteaLister struct {
	api      *upstreamAPI
	org      string
	user     string
	ssh      bool
	cloneTok string
}

func newGiteaLister(h confgit.Host, opts ListerOptions) (Lister, error) {
	org, user := h.Org, h.User
	api, cloneTok, err := newForgeAPI(h, opts, forgeAPIScheme(h.Protocol)+"://"+h.Name+"/api/v1", "Authorization", "token ")
	if err != nil {
		return nil, err
	}
	switch {
	case org != "":
		api.nameKey = "org"
	case user != "":
		api.nameKey = "user"
	}
	return &giteaLister{api: api, org: org, user: user, ssh: h.Protocol == "ssh", cloneTok: cloneTok}, nil
}

type giteaRepo struct {
	FullName      string `json:"full_name"`
	CloneURL      string `json:"clone_url"`
	SSHURL        string `json:"ssh_url"`
	Description   string `json:"description"`
	DefaultBranch string `json:"default_branch"`
}

// List lists the organisation's or the user's repositories, or every
// repository visible to the token.
func (l *giteaLister) List(ctx context.Context) ([]Repo, error) {
	defer l.api.done()
	q := url.Values{"limit": {strconv.Itoa(giteaPageSize)}, "page": {"1"}}
	var path string
	search := false
	switch {
	case l.org != "":
		path = "/orgs/" + url.PathEscape(l.org) + "/repos"
	case l.user != "":
		path = "/users/" + url.PathEscape(l.user) + "/repos"
	default:
		path = "/repos/search"
		search = true
		// Oldest first, so a repository created during the listing lands
		// on the last page instead of shifting the others.
		q.Set("sort", "id")
		q.Set("order", "asc")
	}
	first, err := l.api.endpoint(path, q)
	if err != nil {
		return nil, fmt.Errorf("gitea %s: %w", l.api.host, err)
	}
	// Gitea takes a token as the password of any user name.
	repos, err := l.api.listAll(ctx, first, l.next, cloneAs{l.ssh, "oauth2", l.cloneTok}, func(body []byte) ([]listedRepo, error) {
		list, err := decodeGitea(body, search)
		out := make([]listedRepo, len(list))
		for i, r := range list {
			out[i] = listedRepo{r.FullName, r.CloneURL, r.SSHURL, r.Description, r.DefaultBranch}
		}
		return out, err
	})
	if err != nil {
		return nil, fmt.Errorf("gitea %s: %w", l.api.host, err)
	}
	return repos, nil
}

func decodeGitea(body []byte, search bool) ([]giteaRepo, error) {
	if !search {
		return decodeRepoList[giteaRepo](body)
	}
	var res struct {
		OK    bool        `json:"ok"`
		Error string      `json:"error"`
		Data  []giteaRepo `json:"data"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf(`answer is not a search result {"ok": ..., "data": [...]}: %w`, err)
	}
	if !res.OK {
		return nil, fmt.Errorf("search failed: %q", res.Error)
	}
	return res.Data, nil
}

// next asks for the following page number on the API's own URL. Gitea
// builds its Link targets from its configured ROOT_URL, which behind a
// proxy need not be the address the controller uses; only whether there
// is a next link counts. An instance that sends no Link (one page, or a
// version without it) is asked until x-total-count is reached or a page
// comes back empty; a smaller MAX_RESPONSE_ITEMS than asked for only
// means shorter pages.
func (l *giteaLister) next(cur *url.URL, p *apiPage, _, seen int) (*url.URL, error) {
	n, err := strconv.Atoi(cur.Query().Get("page"))
	if err != nil || n < 1 {
		n = 1
	}
	switch {
	case linkHeaderRel(p.header, "next") != "":
		return pageURL(cur, n+1), nil
	case len(p.header.Values("Link")) > 0:
		return nil, nil
	}
	if total, err := strconv.Atoi(strings.TrimSpace(p.header.Get("X-Total-Count"))); err == nil && seen >= total {
		return nil, nil
	}
	return pageURL(cur, n+1), nil
}
