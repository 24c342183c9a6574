package upstream

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"lorrycontroller.dev/lc/confgit"
)

// The GitLab lister follows the GitLab REST API v4 documentation:
//
//   - List all projects, GET /projects:
//     https://docs.gitlab.com/api/projects/#list-all-projects
//   - List a group's projects, GET /groups/:id/projects:
//     https://docs.gitlab.com/api/groups/#list-projects
//   - Pagination (offset and keyset, the x-next-page and Link headers, and
//     x-total left out above 10,000 records):
//     https://docs.gitlab.com/api/rest/#pagination
//   - The PRIVATE-TOKEN header:
//     https://docs.gitlab.com/api/rest/authentication/
//
// Section keys (decoded by confgit): "private-token" (optional: without it
// only public projects are listed), "group" (a group's full path, such as
// "gnome/extra"; without it every project the token can see), "api-url"
// (default <scheme>://<host>/api/v4), "check-certificates",
// "clone-with-token".

type gitlabLister struct {
	api      *upstreamAPI
	group    string
	ssh      bool
	cloneTok string
}

func newGitLabLister(h confgit.Host, opts ListerOptions) (Lister, error) {
	api, cloneTok, err := newForgeAPI(h, opts, forgeAPIScheme(h.Protocol)+"://"+h.Name+"/api/v4", "PRIVATE-TOKEN", "")
	if err != nil {
		return nil, err
	}
	if h.Group != "" {
		api.nameKey = "group"
	}
	return &gitlabLister{api: api, group: h.Group, ssh: h.Protocol == "ssh", cloneTok: cloneTok}, nil
}

// gitlabProject holds the fields of a project that a lorry needs; the
// simple representation an anonymous caller gets has them all.
type gitlabProject struct {
	PathWithNamespace string `json:"path_with_namespace"`
	HTTPURLToRepo     string `json:"http_url_to_repo"`
	SSHURLToRepo      string `json:"ssh_url_to_repo"`
	Description       string `json:"description"`
	DefaultBranch     string `json:"default_branch"`
}

// List lists every project visible to the token, archived ones included,
// or every project of the group and its subgroups.
//
// Without a group it asks for keyset pagination ordered by id, which the
// projects endpoint supports for exactly this: offset pagination of
// /projects stops at an offset of 50,000 on large instances. Older
// GitLabs ignore the parameter and page by offset, which the same loop
// follows. Group listings page by offset, ordered by id so that a project
// created during the listing goes to the end instead of shifting pages;
// projects merely shared with the group live elsewhere and are left out.
func (l *gitlabLister) List(ctx context.Context) ([]Repo, error) {
	defer l.api.done()
	q := url.Values{"per_page": {"100"}, "order_by": {"id"}, "sort": {"asc"}}
	path := "/projects"
	if l.group != "" {
		path = "/groups/" + url.PathEscape(l.group) + "/projects"
		q.Set("include_subgroups", "true")
		q.Set("with_shared", "false")
	} else {
		q.Set("pagination", "keyset")
	}
	first, err := l.api.endpoint(path, q)
	if err != nil {
		return nil, fmt.Errorf("gitlab %s: %w", l.api.host, err)
	}
	// GitLab takes any user name with a token as the password; "oauth2"
	// is the one its documentation uses.
	repos, err := l.api.listAll(ctx, first, l.next, cloneAs{l.ssh, "oauth2", l.cloneTok}, func(body []byte) ([]listedRepo, error) {
		projects, err := decodeRepoList[gitlabProject](body)
		out := make([]listedRepo, len(projects))
		for i, p := range projects {
			out[i] = listedRepo{p.PathWithNamespace, p.HTTPURLToRepo, p.SSHURLToRepo, p.Description, p.DefaultBranch}
		}
		return out, err
	})
	if err != nil {
		return nil, fmt.Errorf("gitlab %s: %w", l.api.host, err)
	}
	return repos, nil
}

// next follows x-next-page when GitLab gives one (it is empty on the last
// page), and otherwise the Link header's next, which is all that keyset
// pagination gives. x-total and x-total-pages are never needed.
func (l *gitlabLister) next(cur *url.URL, p *apiPage, _, _ int) (*url.URL, error) {
	if np := strings.TrimSpace(p.header.Get("X-Next-Page")); np != "" {
		if n, err := strconv.Atoi(np); err == nil && n > 0 {
			return pageURL(cur, n), nil
		}
	}
	if target := linkHeaderRel(p.header, "next"); target != "" {
		return l.api.follow(cur, target)
	}
	return nil, nil
}
