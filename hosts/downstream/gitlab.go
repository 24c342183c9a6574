package downstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// GitLab keeps mirrors in projects of a GitLab server, through
// its REST API v4 (https://docs.gitlab.com/api/projects/,
// https://docs.gitlab.com/api/groups/). A lorry path "a/b/c" is project c
// of subgroup a/b; missing groups and subgroups are created on the way.
type GitLab struct {
	api        *downstreamAPI
	token      string
	visibility string
	protocol   string
	log        *slog.Logger
}

func newGitLabDownstream(cfg Config, base *url.URL, token string, client *http.Client, log *slog.Logger) *GitLab {
	return &GitLab{
		api: &downstreamAPI{
			name: "GitLab", base: base, client: client,
			authHeader: "PRIVATE-TOKEN", authValue: token,
			message: gitlabDSMessage,
		},
		token:      token,
		visibility: cfg.Visibility,
		protocol:   cfg.PushProtocol,
		log:        log,
	}
}

// gitlabDSProject is the part of GitLab's project object used here.
type gitlabDSProject struct {
	ID                int64  `json:"id"`
	PathWithNamespace string `json:"path_with_namespace"`
	Description       string `json:"description"`
	DefaultBranch     string `json:"default_branch"`
	SSHURLToRepo      string `json:"ssh_url_to_repo"`
	HTTPURLToRepo     string `json:"http_url_to_repo"`
}

// gitlabDSGroup is the part of GitLab's group object used here.
type gitlabDSGroup struct {
	ID       int64  `json:"id"`
	FullPath string `json:"full_path"`
}

type gitlabDSNewGroup struct {
	Name       string `json:"name"`
	Path       string `json:"path"`
	ParentID   int64  `json:"parent_id,omitempty"`
	Visibility string `json:"visibility"`
}

// gitlabDSNewProject has no default_branch: GitLab applies it at creation
// only together with initialize_with_readme, and a mirror must start
// empty, so Finish sets it once the branches are there.
type gitlabDSNewProject struct {
	Name        string `json:"name"`
	Path        string `json:"path"`
	NamespaceID int64  `json:"namespace_id"`
	Visibility  string `json:"visibility"`
	Description string `json:"description,omitempty"`
}

type gitlabDSEdit struct {
	DefaultBranch string `json:"default_branch,omitempty"`
	Description   string `json:"description,omitempty"`
}

// Prepare finds the project of repo.Path, or creates it with its groups,
// and returns the URL to push to.
func (g *GitLab) Prepare(ctx context.Context, repo Repo) (string, error) {
	segs, err := splitDownstreamPath(repo.Path, 2)
	if err != nil {
		return "", err
	}
	p, err := g.project(ctx, repo.Path)
	if apiStatus(err) == http.StatusNotFound {
		p, err = g.create(ctx, repo, segs)
	}
	if err != nil {
		return "", fmt.Errorf("GitLab project %s: %w", repo.Path, err)
	}
	return g.pushURL(p)
}

// Finish sets the project's default branch, and its description, to the
// upstream's when they are known and differ.
func (g *GitLab) Finish(ctx context.Context, repo Repo) error {
	if repo.DefaultBranch == "" && repo.Description == "" {
		return nil
	}
	if _, err := splitDownstreamPath(repo.Path, 2); err != nil {
		return err
	}
	p, err := g.project(ctx, repo.Path)
	if err != nil {
		return fmt.Errorf("GitLab project %s: %w", repo.Path, err)
	}
	var edit gitlabDSEdit
	if repo.DefaultBranch != "" && p.DefaultBranch != repo.DefaultBranch {
		edit.DefaultBranch = repo.DefaultBranch
	}
	if repo.Description != "" && p.Description != repo.Description {
		edit.Description = repo.Description
	}
	if edit == (gitlabDSEdit{}) {
		return nil
	}
	if err := g.api.call(ctx, http.MethodPut, fmt.Sprintf("/api/v4/projects/%d", p.ID), edit, nil); err != nil {
		return fmt.Errorf("GitLab project %s: update: %w", repo.Path, err)
	}
	g.log.Info("downstream project updated", "path", repo.Path,
		"default_branch", edit.DefaultBranch, "description_changed", edit.Description != "")
	return nil
}

// Archive archives the project of path: GitLab keeps it, read-only, and
// refuses pushes to it.
func (g *GitLab) Archive(ctx context.Context, path string) error {
	return g.retire(ctx, path, "archive", http.MethodPost, "/archive")
}

// Delete deletes the project of path.
func (g *GitLab) Delete(ctx context.Context, path string) error {
	return g.retire(ctx, path, "delete", http.MethodDelete, "")
}

func (g *GitLab) retire(ctx context.Context, path, what, method, suffix string) error {
	p, err := g.project(ctx, path)
	if apiStatus(err) == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("GitLab project %s: %w", path, err)
	}
	if err := g.api.call(ctx, method, fmt.Sprintf("/api/v4/projects/%d%s", p.ID, suffix), nil, nil); err != nil {
		return fmt.Errorf("GitLab project %s: %s: %w", path, what, err)
	}
	return nil
}

// project looks a project up by its full path. GitLab also finds a
// project under a path that differs in case or that it was renamed from;
// such a project belongs to another lorry (or to none), so it is refused
// rather than pushed to.
func (g *GitLab) project(ctx context.Context, path string) (gitlabDSProject, error) {
	var p gitlabDSProject
	if err := g.api.call(ctx, http.MethodGet, "/api/v4/projects/"+gitlabDSID(path), nil, &p); err != nil {
		return p, err
	}
	if p.PathWithNamespace != path {
		return p, fmt.Errorf("found as project %s (renamed, or differing in case); refusing to push there", p.PathWithNamespace)
	}
	return p, nil
}

// group looks a group up by its full path, like project.
func (g *GitLab) group(ctx context.Context, path string) (gitlabDSGroup, error) {
	var grp gitlabDSGroup
	// with_projects=false spares GitLab listing the group's projects.
	if err := g.api.call(ctx, http.MethodGet, "/api/v4/groups/"+gitlabDSID(path)+"?with_projects=false", nil, &grp); err != nil {
		return grp, err
	}
	if grp.FullPath != path {
		return grp, fmt.Errorf("found as group %s (renamed, or differing in case); refusing to use it", grp.FullPath)
	}
	return grp, nil
}

// create makes the missing groups along segs and then the project.
func (g *GitLab) create(ctx context.Context, repo Repo, segs []string) (gitlabDSProject, error) {
	var parent int64
	for i := 1; i < len(segs); i++ {
		id, err := g.ensureGroup(ctx, segs[:i], parent)
		if err != nil {
			return gitlabDSProject{}, err
		}
		parent = id
	}
	name := segs[len(segs)-1]
	var p gitlabDSProject
	err := g.api.call(ctx, http.MethodPost, "/api/v4/projects", gitlabDSNewProject{
		Name: name, Path: name, NamespaceID: parent,
		Visibility: g.visibility, Description: repo.Description,
	}, &p)
	if err != nil {
		if apiStatus(err) == http.StatusBadRequest && strings.Contains(err.Error(), "has already been taken") {
			// Made by someone else since it was looked up.
			return g.project(ctx, repo.Path)
		}
		return p, fmt.Errorf("create project: %w", err)
	}
	if p.PathWithNamespace != repo.Path {
		return p, fmt.Errorf("created as project %s instead", p.PathWithNamespace)
	}
	g.log.Info("downstream project created", "path", repo.Path, "visibility", g.visibility)
	return p, nil
}

// ensureGroup returns the id of the group at segs, creating it under
// parent (0: at the top) when it is missing.
func (g *GitLab) ensureGroup(ctx context.Context, segs []string, parent int64) (int64, error) {
	path := strings.Join(segs, "/")
	grp, err := g.group(ctx, path)
	if err == nil {
		return grp.ID, nil
	}
	if apiStatus(err) != http.StatusNotFound {
		return 0, fmt.Errorf("group %s: %w", path, err)
	}
	name := segs[len(segs)-1]
	err = g.api.call(ctx, http.MethodPost, "/api/v4/groups", gitlabDSNewGroup{
		Name: name, Path: name, ParentID: parent, Visibility: g.visibility,
	}, &grp)
	if err != nil {
		if apiStatus(err) == http.StatusBadRequest && strings.Contains(err.Error(), "has already been taken") {
			// Made by someone else since it was looked up; a user's
			// namespace of that name is not found and stays an error.
			if again, againErr := g.group(ctx, path); againErr == nil {
				return again.ID, nil
			}
		}
		return 0, fmt.Errorf("create group %s: %w", path, err)
	}
	g.log.Info("downstream group created", "group", path, "visibility", g.visibility)
	return grp.ID, nil
}

func (g *GitLab) pushURL(p gitlabDSProject) (string, error) {
	if g.protocol == "https" {
		// GitLab takes a token as the password of any user name over
		// https; "oauth2" is the name its documentation uses.
		return httpsPushURL(p.HTTPURLToRepo, "oauth2", g.token)
	}
	if p.SSHURLToRepo == "" {
		return "", fmt.Errorf("GitLab gives no ssh URL for project %s", p.PathWithNamespace)
	}
	return p.SSHURLToRepo, nil
}

// gitlabDSID is a full path as the :id of a GitLab API route: URL-encoded
// whole, slashes included (https://docs.gitlab.com/api/rest/#namespaced-paths).
func gitlabDSID(path string) string {
	return url.PathEscape(path)
}

// gitlabDSMessage reads GitLab's error bodies: {"message": "404 Project Not
// Found"}, validation failures as {"message": {"path": ["has already been
// taken"]}}, and parameter errors as {"error": "name is missing"}.
func gitlabDSMessage(body []byte) string {
	var e struct {
		Message          json.RawMessage `json:"message"`
		Error            string          `json:"error"`
		ErrorDescription string          `json:"error_description"`
	}
	if json.Unmarshal(body, &e) != nil {
		return plainMessage(body)
	}
	var parts []string
	if len(e.Message) > 0 {
		var s string
		var fields map[string]json.RawMessage
		switch {
		case json.Unmarshal(e.Message, &s) == nil:
			parts = append(parts, s)
		case json.Unmarshal(e.Message, &fields) == nil:
			keys := make([]string, 0, len(fields))
			for k := range fields {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				var list []string
				if json.Unmarshal(fields[k], &list) == nil {
					parts = append(parts, k+" "+strings.Join(list, ", "))
				} else {
					parts = append(parts, k+" "+string(fields[k]))
				}
			}
		default:
			parts = append(parts, string(e.Message))
		}
	}
	for _, s := range []string{e.Error, e.ErrorDescription} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return plainMessage(body)
	}
	return strings.Join(parts, "; ")
}
