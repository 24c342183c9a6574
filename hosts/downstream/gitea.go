package downstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Gitea keeps mirrors in repositories of a Gitea server, through
// its API v1 (https://docs.gitea.com/api/). Gitea has organisations but no
// subgroups; GiteaRepoName says where a lorry path goes.
type Gitea struct {
	api        *downstreamAPI
	token      string
	visibility string
	protocol   string
	log        *slog.Logger
}

func newGiteaDownstream(cfg Config, base *url.URL, token string, client *http.Client, log *slog.Logger) *Gitea {
	return &Gitea{
		api: &downstreamAPI{
			name: "Gitea", base: base, client: client,
			authHeader: "Authorization", authValue: "token " + token,
			message: giteaDSMessage,
		},
		token:      token,
		visibility: cfg.Visibility,
		protocol:   cfg.PushProtocol,
		log:        log,
	}
}

// giteaDSRepo is the part of Gitea's Repository object used here.
type giteaDSRepo struct {
	ID            int64  `json:"id"`
	FullName      string `json:"full_name"`
	Description   string `json:"description"`
	DefaultBranch string `json:"default_branch"`
	SSHURL        string `json:"ssh_url"`
	CloneURL      string `json:"clone_url"`
}

// giteaDSOrg is the part of Gitea's Organization object used here; older
// servers name it in "username" only.
type giteaDSOrg struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	UserName string `json:"username"`
}

type giteaDSNewOrg struct {
	UserName   string `json:"username"`
	Visibility string `json:"visibility"`
}

// giteaDSNewRepo carries default_branch when it is known: Gitea keeps it
// for an empty repository, unlike GitLab.
type giteaDSNewRepo struct {
	Name          string `json:"name"`
	Description   string `json:"description,omitempty"`
	Private       bool   `json:"private"`
	DefaultBranch string `json:"default_branch,omitempty"`
}

type giteaDSEdit struct {
	DefaultBranch string `json:"default_branch,omitempty"`
	Description   string `json:"description,omitempty"`
}

// giteaDSNamePattern is what Gitea accepts in a repository name.
var giteaDSNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// GiteaRepoName maps a lorry path to the organisation and the repository
// that hold its mirror on Gitea. The first segment is the organisation;
// the other segments, joined with "--", are the repository name:
// "delta/gnome/glib" is repository "gnome--glib" of organisation "delta",
// and "delta/glib" is "glib" of "delta".
//
// So that two lorries never share a repository, the mapping is one-to-one:
// a path whose segments after the first contain "--", or start or end
// with "-", could be read two ways and is refused. Those segments must
// also be valid Gitea names (letters, digits, "-", "_" and "."). Gitea
// compares names without regard to case; Prepare refuses a repository
// whose name differs from the mapped one in case.
func GiteaRepoName(path string) (org, repo string, err error) {
	segs, err := splitDownstreamPath(path, 2)
	if err != nil {
		return "", "", err
	}
	for _, seg := range segs[1:] {
		switch {
		case strings.Contains(seg, "--") || strings.HasPrefix(seg, "-") || strings.HasSuffix(seg, "-"):
			return "", "", fmt.Errorf("downstream path %q: segment %q would make the Gitea repository name ambiguous (segments are joined with \"--\", so none may contain \"--\" or start or end with \"-\")", path, seg)
		case !giteaDSNamePattern.MatchString(seg):
			return "", "", fmt.Errorf("downstream path %q: segment %q has characters Gitea does not allow in a repository name (letters, digits, \"-\", \"_\" and \".\" only)", path, seg)
		}
	}
	return segs[0], strings.Join(segs[1:], "--"), nil
}

// Prepare finds the repository of repo.Path, or creates it and its
// organisation, and returns the URL to push to.
func (g *Gitea) Prepare(ctx context.Context, repo Repo) (string, error) {
	org, name, err := GiteaRepoName(repo.Path)
	if err != nil {
		return "", err
	}
	r, err := g.repo(ctx, org, name)
	if apiStatus(err) == http.StatusNotFound {
		r, err = g.create(ctx, org, name, repo)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", giteaDSWhat(org, name, repo.Path), err)
	}
	return g.pushURL(r)
}

// Finish sets the repository's default branch, and its description, to
// the upstream's when they are known and differ.
func (g *Gitea) Finish(ctx context.Context, repo Repo) error {
	if repo.DefaultBranch == "" && repo.Description == "" {
		return nil
	}
	org, name, err := GiteaRepoName(repo.Path)
	if err != nil {
		return err
	}
	r, err := g.repo(ctx, org, name)
	if err != nil {
		return fmt.Errorf("%s: %w", giteaDSWhat(org, name, repo.Path), err)
	}
	var edit giteaDSEdit
	if repo.DefaultBranch != "" && r.DefaultBranch != repo.DefaultBranch {
		edit.DefaultBranch = repo.DefaultBranch
	}
	if repo.Description != "" && r.Description != repo.Description {
		edit.Description = repo.Description
	}
	if edit == (giteaDSEdit{}) {
		return nil
	}
	if err := g.api.call(ctx, http.MethodPatch, giteaDSRepoPath(org, name), edit, nil); err != nil {
		return fmt.Errorf("%s: update: %w", giteaDSWhat(org, name, repo.Path), err)
	}
	g.log.Info("downstream repository updated", "path", repo.Path, "repo", org+"/"+name,
		"default_branch", edit.DefaultBranch, "description_changed", edit.Description != "")
	return nil
}

// Archive archives the repository of path: Gitea keeps it, read-only,
// and refuses pushes to it.
func (g *Gitea) Archive(ctx context.Context, path string) error {
	return g.retire(ctx, path, "archive", http.MethodPatch, giteaDSArchive{Archived: true})
}

// Delete deletes the repository of path.
func (g *Gitea) Delete(ctx context.Context, path string) error {
	return g.retire(ctx, path, "delete", http.MethodDelete, nil)
}

type giteaDSArchive struct {
	Archived bool `json:"archived"`
}

func (g *Gitea) retire(ctx context.Context, path, what, method string, body any) error {
	org, name, err := GiteaRepoName(path)
	if err != nil {
		return err
	}
	if _, err := g.repo(ctx, org, name); apiStatus(err) == http.StatusNotFound {
		return nil
	} else if err != nil {
		return fmt.Errorf("%s: %w", giteaDSWhat(org, name, path), err)
	}
	if err := g.api.call(ctx, method, giteaDSRepoPath(org, name), body, nil); err != nil {
		return fmt.Errorf("%s: %s: %w", giteaDSWhat(org, name, path), what, err)
	}
	return nil
}

// repo looks a repository up. Gitea finds it under a name that differs in
// case, and redirects from a name it was renamed from; either belongs to
// something else, so it is refused rather than pushed to.
func (g *Gitea) repo(ctx context.Context, org, name string) (giteaDSRepo, error) {
	var r giteaDSRepo
	if err := g.api.call(ctx, http.MethodGet, giteaDSRepoPath(org, name), nil, &r); err != nil {
		return r, err
	}
	if r.FullName != org+"/"+name {
		return r, fmt.Errorf("found as repository %s (renamed, or differing in case); refusing to push there", r.FullName)
	}
	return r, nil
}

func (g *Gitea) create(ctx context.Context, org, name string, repo Repo) (giteaDSRepo, error) {
	if err := g.ensureOrg(ctx, org); err != nil {
		return giteaDSRepo{}, err
	}
	var r giteaDSRepo
	err := g.api.call(ctx, http.MethodPost, "/api/v1/orgs/"+url.PathEscape(org)+"/repos", giteaDSNewRepo{
		Name: name, Description: repo.Description,
		Private:       g.visibility == "private",
		DefaultBranch: repo.DefaultBranch,
	}, &r)
	if err != nil {
		if apiStatus(err) == http.StatusConflict {
			// Made by someone else since it was looked up.
			return g.repo(ctx, org, name)
		}
		return r, fmt.Errorf("create repository: %w", err)
	}
	if r.FullName != org+"/"+name {
		return r, fmt.Errorf("created as repository %s instead", r.FullName)
	}
	g.log.Info("downstream repository created", "path", repo.Path, "repo", r.FullName, "visibility", g.visibility)
	return r, nil
}

// ensureOrg creates the organisation when it is missing. Its visibility
// follows the configuration: internal is Gitea's "limited", visible to
// signed-in users.
func (g *Gitea) ensureOrg(ctx context.Context, org string) error {
	err := g.org(ctx, org)
	if apiStatus(err) != http.StatusNotFound {
		return err
	}
	visibility := g.visibility
	if visibility == "internal" {
		visibility = "limited"
	}
	err = g.api.call(ctx, http.MethodPost, "/api/v1/orgs", giteaDSNewOrg{UserName: org, Visibility: visibility}, nil)
	if err != nil {
		if apiStatus(err) == http.StatusUnprocessableEntity && strings.Contains(err.Error(), "already exists") {
			// Made by someone else since it was looked up; a user of
			// that name is not an organisation and stays an error.
			if g.org(ctx, org) == nil {
				return nil
			}
		}
		return fmt.Errorf("create organisation %s: %w", org, err)
	}
	g.log.Info("downstream organisation created", "org", org, "visibility", visibility)
	return nil
}

func (g *Gitea) org(ctx context.Context, org string) error {
	var o giteaDSOrg
	if err := g.api.call(ctx, http.MethodGet, "/api/v1/orgs/"+url.PathEscape(org), nil, &o); err != nil {
		return err
	}
	name := o.Name
	if name == "" {
		name = o.UserName
	}
	if name != org {
		return fmt.Errorf("organisation %s is found as %s, which differs in case", org, name)
	}
	return nil
}

func (g *Gitea) pushURL(r giteaDSRepo) (string, error) {
	if g.protocol == "https" {
		// Gitea takes a token as the password whatever the user name.
		return httpsPushURL(r.CloneURL, "oauth2", g.token)
	}
	if r.SSHURL == "" {
		return "", fmt.Errorf("Gitea gives no ssh URL for repository %s (is its ssh server disabled?)", r.FullName)
	}
	return r.SSHURL, nil
}

// giteaDSWhat names the repository of a lorry path in messages, with the
// path when the name differs from it.
func giteaDSWhat(org, name, path string) string {
	if org+"/"+name == path {
		return "Gitea repository " + path
	}
	return "Gitea repository " + org + "/" + name + " (for " + path + ")"
}

func giteaDSRepoPath(org, name string) string {
	return "/api/v1/repos/" + url.PathEscape(org) + "/" + url.PathEscape(name)
}

// giteaDSMessage reads Gitea's error bodies, {"message": "...", "url":
// "..."}, with "errors" added by validation and not-found answers.
func giteaDSMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
		Errors  []any  `json:"errors"`
	}
	if json.Unmarshal(body, &e) != nil || (e.Message == "" && len(e.Errors) == 0) {
		return plainMessage(body)
	}
	parts := []string{}
	if e.Message != "" {
		parts = append(parts, e.Message)
	}
	for _, v := range e.Errors {
		if s, ok := v.(string); ok && s != "" && s != e.Message {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}
