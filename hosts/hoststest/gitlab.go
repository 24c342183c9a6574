package hoststest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// GitLab answers the GitLab REST API v4 calls that the controller makes,
// both as an Upstream Host that is listed and as a Downstream Host whose
// groups and projects are created, the way GitLab documents them:
//
//   - GET /api/v4/projects, with offset or keyset pagination
//     (https://docs.gitlab.com/api/projects/#list-all-projects): without a
//     token only public projects, with a valid PRIVATE-TOKEN all of them,
//     with a wrong one 401 {"message":"401 Unauthorized"}
//     (https://docs.gitlab.com/api/rest/troubleshooting/#status-codes);
//   - GET /api/v4/groups/:id/projects with the group's path URL-encoded
//     and include_subgroups (https://docs.gitlab.com/api/groups/#list-projects);
//     an unknown group is 404 {"message":"404 Group Not Found"}, an
//     unknown route 404 {"error":"404 Not Found"};
//   - pagination (https://docs.gitlab.com/api/rest/#pagination): per_page
//     20 by default and at most 100; offset pages carry x-page,
//     x-per-page, x-next-page (empty on the last page), x-prev-page,
//     x-total and x-total-pages (both left out above 10,000 records) and
//     a Link header with prev, next, first and last (no last above
//     10,000); keyset pages (pagination=keyset, order_by=id) carry only a
//     Link rel="next" with id_after, and keyset with another order is 405;
//   - GET, POST and PUT of projects and groups
//     (https://docs.gitlab.com/api/projects/ "Get a single project",
//     "Create a project", "Edit a project";
//     https://docs.gitlab.com/api/groups/ "Get a single group", "Create a
//     group", parent_id for subgroups), a path as :id URL-encoded whole,
//     slashes included (https://docs.gitlab.com/api/rest/#namespaced-paths);
//     201 on create, 400 on validation errors with GitLab's bodies, 401,
//     403 and 404.
//
// Like GitLab, it finds paths without regard to case. Groups and projects
// have ids of their own sequences, from 1.
//
// With GitLabOptions.ServeGit, every project is a real bare repository
// served over smart HTTP at its http_url_to_repo, which takes pushes
// authenticated with the token as the password of any user name, as GitLab
// does; setting default_branch then moves the repository's HEAD, and
// refuses a branch that does not exist.
type GitLab struct {
	forge
	ssh  string // host of ssh_url_to_repo
	opts GitLabOptions

	// guarded by mu
	lastGroupID  int64
	groups       map[string]*gitlabGroup // by lower-case full path
	groupsByID   map[int64]*gitlabGroup
	projects     repoIndex[gitlabProject] // by full path
	projectsByID map[int64]*gitlabProject
	listings     map[gitlabListingKey][]*gitlabProject
}

// GitLabOptions configure a fake GitLab.
type GitLabOptions struct {
	// Token is the one valid PRIVATE-TOKEN. "" accepts none: requests
	// without a token are anonymous, any token is refused.
	Token string
	// SSHHost is the host in ssh_url_to_repo; "" is the address the fake
	// listens on, without the port.
	SSHHost string
	// LinkOnly leaves the x-* headers out of offset pages, as some
	// proxies do, so that only Link says where the next page is.
	LinkOnly bool
	// TLS serves HTTPS, with a certificate that no authority vouches for.
	TLS bool
	// ServeGit makes every project a bare repository served over smart
	// HTTP at its http_url_to_repo, pushes included.
	ServeGit bool
}

// GitLabProject is a project of a fake GitLab.
type GitLabProject struct {
	// ID is the project's id, set by the fake; AddProject ignores it.
	ID int64
	// Namespace is the full path of the project's group, such as
	// "gnome/sub"; its groups are created as needed.
	Namespace     string
	Path          string
	Description   string
	DefaultBranch string // "" for an empty project, which GitLab shows as null
	// Visibility is private, internal or public; AddProject takes "" as
	// public, so that anonymous listings see the project.
	Visibility string
	Archived   bool
}

// FullPath is the project's path_with_namespace.
func (p GitLabProject) FullPath() string { return p.Namespace + "/" + p.Path }

type gitlabGroup struct {
	id                   int64
	name, path, fullPath string
	parentID             int64
	visibility           string
}

type gitlabProject struct {
	GitLabProject
	namespaceID int64
	empty       bool
	json        []byte // as listed, made once until the project changes
}

type gitlabListingKey struct {
	group                    int64 // 0 for all projects
	subgroups, authed, idAsc bool
}

// NewGitLab starts a fake GitLab with no groups and no projects.
func NewGitLab(tb testing.TB, opts GitLabOptions) *GitLab {
	tb.Helper()
	f := &GitLab{
		opts:   opts,
		groups: map[string]*gitlabGroup{}, groupsByID: map[int64]*gitlabGroup{},
		projects:     newRepoIndex(func(p *gitlabProject) string { return p.FullPath() }),
		projectsByID: map[int64]*gitlabProject{},
	}
	f.init(tb, opts.Token, opts.ServeGit)
	f.auth = gitlabAuth
	f.mux = http.NewServeMux()
	f.mux.HandleFunc("GET /api/v4/projects", f.listProjects)
	f.mux.HandleFunc("POST /api/v4/projects", f.createProject)
	f.mux.HandleFunc("GET /api/v4/projects/{id}", f.getProject)
	f.mux.HandleFunc("PUT /api/v4/projects/{id}", f.editProject)
	f.mux.HandleFunc("POST /api/v4/projects/{id}/archive", f.archiveProject)
	f.mux.HandleFunc("DELETE /api/v4/projects/{id}", f.deleteProject)
	f.mux.HandleFunc("GET /api/v4/groups/{id}", f.getGroup)
	f.mux.HandleFunc("POST /api/v4/groups", f.createGroup)
	f.mux.HandleFunc("GET /api/v4/groups/{id}/projects", f.listProjects)
	f.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		answerJSON(w, http.StatusNotFound, map[string]string{"error": "404 Not Found"})
	})
	f.start(tb, f, opts.TLS)
	f.ssh = opts.SSHHost
	if f.ssh == "" {
		f.ssh = hostOnly(f.Host())
	}
	return f
}

// APIURL is the base of the API, <URL>/api/v4: an "api-url".
func (f *GitLab) APIURL() string { return f.URL() + "/api/v4" }

// Section is a gitlab host section for lorry-controller.conf that lists
// this fake, with the keys of extra added.
func (f *GitLab) Section(extra map[string]any) map[string]any {
	return f.section("gitlab", nil, extra)
}

// SetCanCreateGroups(false) answers group creation with 403, as GitLab
// does for a user who may not create groups.
func (f *GitLab) SetCanCreateGroups(can bool) { f.locked(func() { f.refuseCreate = !can }) }

// BeforeCreateProject has fn run when a project creation arrives, before
// the fake looks at it, so that a test can make the project appear
// meanwhile. fn may call the fake's methods.
func (f *GitLab) BeforeCreateProject(fn func()) { f.locked(func() { f.beforeCreate = fn }) }

// AddGroup adds a group and its missing parents, as an administrator
// would have made them, private; it returns the group's id.
func (f *GitLab) AddGroup(fullPath string) (id int64) {
	f.locked(func() { id = f.addGroup(fullPath).id })
	return id
}

// AddProject adds a project, and the groups of its namespace that are
// missing; it returns the project's id.
func (f *GitLab) AddProject(p GitLabProject) (id int64) {
	f.locked(func() { id = f.addProject(p) })
	return id
}

// AddProjects adds many projects at once.
func (f *GitLab) AddProjects(ps []GitLabProject) {
	f.locked(func() {
		for _, p := range ps {
			f.addProject(p)
		}
	})
}

// RemoveProject deletes the project at fullPath, and its repository; it
// reports whether there was one.
func (f *GitLab) RemoveProject(fullPath string) (removed bool) {
	f.locked(func() {
		p := f.projects.remove(fullPath)
		if p == nil {
			return
		}
		delete(f.projectsByID, p.ID)
		f.listings = nil
		f.removeGit(p.FullPath())
		removed = true
	})
	return removed
}

// Project returns the project at fullPath (in any case) as it stands.
func (f *GitLab) Project(fullPath string) (GitLabProject, bool) {
	var p gitlabProject
	var ok bool
	f.locked(func() { p, ok = f.projects.copyOf(fullPath) })
	return p.GitLabProject, ok
}

// GitLabProjects makes n public projects spread over group, its subgroup
// group/sub and a sibling group whose name starts the same, group+"ish";
// every seventh is private.
func GitLabProjects(n int, group string) []GitLabProject {
	out := make([]GitLabProject, n)
	for i := range out {
		ns := group
		switch i % 5 {
		case 3:
			ns = group + "/sub"
		case 4:
			ns = group + "ish"
		}
		vis := "public"
		if i%7 == 6 {
			vis = "private"
		}
		out[i] = GitLabProject{Namespace: ns, Path: fmt.Sprintf("p%05d", i+1),
			Description: fmt.Sprintf("project %d", i+1), DefaultBranch: "main", Visibility: vis, Archived: (i+1)%11 == 0}
	}
	return out
}

func (f *GitLab) addGroup(fullPath string) *gitlabGroup {
	var parent *gitlabGroup
	segs := strings.Split(fullPath, "/")
	for i := range segs {
		full := strings.Join(segs[:i+1], "/")
		g := f.groups[strings.ToLower(full)]
		if g == nil {
			f.lastGroupID++
			g = &gitlabGroup{id: f.lastGroupID, name: segs[i], path: segs[i], fullPath: full, visibility: "private"}
			if parent != nil {
				g.parentID = parent.id
			}
			f.groups[strings.ToLower(full)] = g
			f.groupsByID[g.id] = g
			f.listings = nil
		}
		parent = g
	}
	return parent
}

func (f *GitLab) addProject(p GitLabProject) int64 {
	if old := f.projects.get(p.FullPath()); old != nil {
		f.tb.Errorf("hoststest: GitLab project %s added twice", p.FullPath())
		return old.ID
	}
	ns := f.addGroup(p.Namespace)
	if p.Visibility == "" {
		p.Visibility = "public"
	}
	p.ID = f.projects.nextID()
	if err := f.createGit(p.FullPath(), p.DefaultBranch); err != nil {
		f.tb.Errorf("hoststest: GitLab project %s: %v", p.FullPath(), err)
	}
	f.insertProject(&gitlabProject{GitLabProject: p, namespaceID: ns.id, empty: p.DefaultBranch == ""})
	return p.ID
}

func (f *GitLab) insertProject(p *gitlabProject) {
	f.projects.add(p)
	f.projectsByID[p.ID] = p
	f.listings = nil
}

// findGroup finds by full path or by id, as GitLab's :id does.
func (f *GitLab) findGroup(id string) *gitlabGroup {
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		return f.groupsByID[n]
	}
	return f.groups[strings.ToLower(id)]
}

func (f *GitLab) findProject(id string) *gitlabProject {
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		return f.projectsByID[n]
	}
	return f.projects.get(id)
}

// ServeHTTP answers the API under /api/v4, and git under any other path
// when the fake serves git.
func (f *GitLab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.serveForge(w, r, "GitLab", f.gitTarget, func(path string, _ []pushCommand) { f.afterPush(path) })
}

// gitlabAuth takes the token in PRIVATE-TOKEN; a failure answers GitLab's
// body for the status, such as {"message":"500 Internal Server Error"}.
var gitlabAuth = apiAuth{
	header: "PRIVATE-TOKEN",
	failed: func(w http.ResponseWriter, status int) {
		answerJSON(w, status, map[string]string{"message": fmt.Sprintf("%d %s", status, http.StatusText(status))})
	},
	badToken: gitlabUnauthorized,
	noToken:  gitlabUnauthorized,
	badBody: func(w http.ResponseWriter) {
		answerJSON(w, http.StatusBadRequest, map[string]string{"error": "body is not valid JSON"})
	},
}

func gitlabUnauthorized(w http.ResponseWriter) {
	answerJSON(w, http.StatusUnauthorized, map[string]string{"message": "401 Unauthorized"})
}

// gitlabProjectJSON is a project as the API shows it to a member, less
// the fields nothing here reads.
type gitlabProjectJSON struct {
	ID                int64               `json:"id"`
	Description       *string             `json:"description"`
	Name              string              `json:"name"`
	NameWithNamespace string              `json:"name_with_namespace"`
	Path              string              `json:"path"`
	PathWithNamespace string              `json:"path_with_namespace"`
	CreatedAt         string              `json:"created_at"`
	DefaultBranch     *string             `json:"default_branch"`
	TagList           []string            `json:"tag_list"`
	Topics            []string            `json:"topics"`
	SSHURLToRepo      string              `json:"ssh_url_to_repo"`
	HTTPURLToRepo     string              `json:"http_url_to_repo"`
	WebURL            string              `json:"web_url"`
	ReadmeURL         *string             `json:"readme_url"`
	ForksCount        int                 `json:"forks_count"`
	AvatarURL         *string             `json:"avatar_url"`
	StarCount         int                 `json:"star_count"`
	LastActivityAt    string              `json:"last_activity_at"`
	Visibility        string              `json:"visibility"`
	Archived          bool                `json:"archived"`
	EmptyRepo         bool                `json:"empty_repo"`
	Namespace         gitlabNamespaceJSON `json:"namespace"`
}

type gitlabNamespaceJSON struct {
	ID        int64   `json:"id"`
	Name      string  `json:"name"`
	Path      string  `json:"path"`
	Kind      string  `json:"kind"`
	FullPath  string  `json:"full_path"`
	ParentID  *int64  `json:"parent_id"`
	AvatarURL *string `json:"avatar_url"`
	WebURL    string  `json:"web_url"`
}

// optString is null when unset, as GitLab shows a missing description or
// the default branch of an empty project.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

func (f *GitLab) projectJSON(p *gitlabProject) []byte {
	if p.json != nil {
		return p.json
	}
	ns := f.groupsByID[p.namespaceID]
	var names []string
	for g := ns; g != nil; g = f.groupsByID[g.parentID] {
		names = append([]string{g.name}, names...)
	}
	full := p.FullPath()
	b, err := json.Marshal(gitlabProjectJSON{
		ID: p.ID, Description: optString(p.Description), Name: p.Path,
		NameWithNamespace: strings.Join(append(names, p.Path), " / "),
		Path:              p.Path, PathWithNamespace: full,
		CreatedAt: "2024-01-02T03:04:05.000Z", DefaultBranch: optString(p.DefaultBranch),
		TagList: []string{}, Topics: []string{},
		SSHURLToRepo:   "git@" + f.ssh + ":" + full + ".git",
		HTTPURLToRepo:  f.URL() + "/" + full + ".git",
		WebURL:         f.URL() + "/" + full,
		LastActivityAt: "2024-01-02T03:04:05.000Z", Visibility: p.Visibility,
		Archived: p.Archived, EmptyRepo: p.empty,
		Namespace: gitlabNamespaceJSON{ID: ns.id, Name: ns.name, Path: ns.path, Kind: "group",
			FullPath: ns.fullPath, ParentID: optID(ns.parentID), WebURL: f.URL() + "/groups/" + ns.fullPath},
	})
	if err != nil {
		f.tb.Errorf("hoststest: %v", err)
	}
	p.json = b
	return b
}

func (f *GitLab) groupJSON(g *gitlabGroup) map[string]any {
	var names []string
	for p := g; p != nil; p = f.groupsByID[p.parentID] {
		names = append([]string{p.name}, names...)
	}
	return map[string]any{
		"id": g.id, "name": g.name, "path": g.path, "full_name": strings.Join(names, " / "), "full_path": g.fullPath,
		"description": "", "visibility": g.visibility, "parent_id": optID(g.parentID),
		"web_url": f.URL() + "/groups/" + g.fullPath,
	}
}

// listing returns the projects a listing covers, in the order asked for;
// it is remembered until something changes, since every page of a
// listing asks again.
func (f *GitLab) listing(group *gitlabGroup, subgroups, authed, idAsc bool) []*gitlabProject {
	key := gitlabListingKey{subgroups: subgroups, authed: authed, idAsc: idAsc}
	if group != nil {
		key.group = group.id
	}
	if l, ok := f.listings[key]; ok {
		return l
	}
	var list []*gitlabProject
	for _, p := range f.projects.list {
		if p.Visibility != "public" && !authed {
			continue
		}
		direct := group == nil || p.namespaceID == group.id
		under := group != nil && strings.HasPrefix(strings.ToLower(p.Namespace), strings.ToLower(group.fullPath)+"/")
		if direct || (under && subgroups) {
			list = append(list, p)
		}
	}
	// The default order is created_at desc, which for these is id desc.
	if !idAsc {
		slices.Reverse(list)
	}
	if f.listings == nil {
		f.listings = map[gitlabListingKey][]*gitlabProject{}
	}
	f.listings[key] = list
	return list
}

func (f *GitLab) listProjects(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	idAsc := q.Get("order_by") == "id" && q.Get("sort") == "asc"
	f.mu.Lock()
	var group *gitlabGroup
	if id := r.PathValue("id"); id != "" {
		if group = f.findGroup(id); group == nil {
			f.mu.Unlock()
			answerJSON(w, http.StatusNotFound, map[string]string{"message": "404 Group Not Found"})
			return
		}
	}
	list := f.listing(group, q.Get("include_subgroups") == "true", isAuthed(r), idAsc)
	perPage := pageSize(q, "per_page", 20, 100)

	var pageItems []*gitlabProject
	if q.Get("pagination") == "keyset" {
		if q.Get("order_by") != "id" {
			f.mu.Unlock()
			answerJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "Keyset pagination is not yet available for this type of request"})
			return
		}
		if after, err := strconv.ParseInt(q.Get("id_after"), 10, 64); err == nil && idAsc {
			i, _ := slices.BinarySearchFunc(list, after, func(p *gitlabProject, id int64) int { return cmpInt64(p.ID, id) })
			if i < len(list) && list[i].ID == after {
				i++
			}
			list = list[i:]
		}
		if before, err := strconv.ParseInt(q.Get("id_before"), 10, 64); err == nil && !idAsc {
			list = slices.DeleteFunc(slices.Clone(list), func(p *gitlabProject) bool { return p.ID >= before })
		}
		pageItems = list[:min(perPage, len(list))]
		if len(list) > perPage {
			nq := r.URL.Query()
			if idAsc {
				nq.Set("id_after", strconv.FormatInt(pageItems[len(pageItems)-1].ID, 10))
			} else {
				nq.Set("id_before", strconv.FormatInt(pageItems[len(pageItems)-1].ID, 10))
			}
			w.Header().Set("Link", linkTo(f.URL()+r.URL.EscapedPath()+"?"+nq.Encode(), "next"))
		}
	} else {
		p := pageOf(q, perPage, len(list))
		page, pages, total := p.number, p.pages, p.total
		pageItems = list[p.lo:p.hi]
		pq := r.URL.Query()
		pq.Set("per_page", strconv.Itoa(perPage))
		href := func(n int) string { return f.URL() + r.URL.EscapedPath() + "?" + withPage(pq, n) }
		// Unlike the others, GitLab always links the first page, and
		// the last up to 10,000 records.
		links := append(p.links(href, "prev", "next"), linkTo(href(1), "first"))
		if total <= 10000 {
			links = append(links, linkTo(href(pages), "last"))
		}
		w.Header().Set("Link", strings.Join(links, ", "))
		next, prev := "", ""
		if page > 1 {
			prev = strconv.Itoa(page - 1)
		}
		if page < pages {
			next = strconv.Itoa(page + 1)
		}
		if !f.opts.LinkOnly {
			w.Header().Set("X-Page", strconv.Itoa(page))
			w.Header().Set("X-Per-Page", strconv.Itoa(perPage))
			w.Header().Set("X-Next-Page", next)
			w.Header().Set("X-Prev-Page", prev)
			if total <= 10000 {
				w.Header().Set("X-Total", strconv.Itoa(total))
				w.Header().Set("X-Total-Pages", strconv.Itoa(pages))
			}
		}
	}
	bodies := make([][]byte, len(pageItems))
	for i, p := range pageItems {
		bodies[i] = f.projectJSON(p)
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("["))
	for i, b := range bodies {
		if i > 0 {
			w.Write([]byte(","))
		}
		w.Write(b)
	}
	w.Write([]byte("]"))
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (f *GitLab) getProject(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	p := f.findProject(r.PathValue("id"))
	if p == nil || (p.Visibility != "public" && !isAuthed(r)) {
		f.mu.Unlock()
		answerJSON(w, http.StatusNotFound, map[string]string{"message": "404 Project Not Found"})
		return
	}
	body := f.projectJSON(p)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func (f *GitLab) getGroup(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.findGroup(r.PathValue("id"))
	if g == nil {
		answerJSON(w, http.StatusNotFound, map[string]string{"message": "404 Group Not Found"})
		return
	}
	answerJSON(w, http.StatusOK, f.groupJSON(g))
}

func (f *GitLab) createGroup(w http.ResponseWriter, r *http.Request) {
	body, ok := f.change(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuseCreate {
		answerJSON(w, http.StatusForbidden, map[string]string{"message": "403 Forbidden"})
		return
	}
	name, _ := body["name"].(string)
	path, _ := body["path"].(string)
	visibility, _ := body["visibility"].(string)
	if name == "" || path == "" {
		answerJSON(w, http.StatusBadRequest, map[string]string{"error": "name is missing, path is missing"})
		return
	}
	switch visibility {
	case "":
		visibility = "private"
	case "private", "internal", "public":
	default:
		answerJSON(w, http.StatusBadRequest, map[string]string{"error": "visibility does not have a valid value"})
		return
	}
	full := path
	var parentID int64
	if v, ok := body["parent_id"].(float64); ok {
		parent := f.groupsByID[int64(v)]
		if parent == nil {
			answerJSON(w, http.StatusNotFound, map[string]string{"message": "404 Group Not Found"})
			return
		}
		full = parent.fullPath + "/" + path
		parentID = parent.id
	}
	if f.groups[strings.ToLower(full)] != nil {
		answerJSON(w, http.StatusBadRequest, map[string]string{"message": `Failed to save group {:path=>["has already been taken"]}`})
		return
	}
	f.lastGroupID++
	g := &gitlabGroup{id: f.lastGroupID, name: name, path: path, fullPath: full, parentID: parentID, visibility: visibility}
	f.groups[strings.ToLower(full)] = g
	f.groupsByID[g.id] = g
	answerJSON(w, http.StatusCreated, f.groupJSON(g))
}

func (f *GitLab) createProject(w http.ResponseWriter, r *http.Request) {
	body, ok := f.creation(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	name, _ := body["name"].(string)
	path, _ := body["path"].(string)
	visibility, _ := body["visibility"].(string)
	description, _ := body["description"].(string)
	nsID, _ := body["namespace_id"].(float64)
	if name == "" && path == "" {
		answerJSON(w, http.StatusBadRequest, map[string]string{"error": "name, path are missing, at least one parameter must be provided"})
		return
	}
	if path == "" {
		path = name
	}
	if name == "" {
		name = path
	}
	switch visibility {
	case "":
		visibility = "private"
	case "private", "internal", "public":
	default:
		answerJSON(w, http.StatusBadRequest, map[string]string{"error": "visibility does not have a valid value"})
		return
	}
	ns := f.groupsByID[int64(nsID)]
	if ns == nil {
		answerJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{"namespace": []string{"is not valid"}}})
		return
	}
	full := ns.fullPath + "/" + path
	if f.projects.get(full) != nil {
		answerJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{
			"name": []string{"has already been taken"}, "path": []string{"has already been taken"},
		}})
		return
	}
	// An empty project reports the instance's default branch name.
	p := &gitlabProject{
		GitLabProject: GitLabProject{ID: f.projects.nextID(), Namespace: ns.fullPath, Path: path,
			Description: description, DefaultBranch: "main", Visibility: visibility},
		namespaceID: ns.id, empty: true,
	}
	if err := f.createGit(full, "main"); err != nil {
		answerJSON(w, http.StatusInternalServerError, map[string]string{"message": "500 Internal Server Error"})
		f.tb.Errorf("hoststest: create GitLab project %s: %v", full, err)
		return
	}
	f.insertProject(p)
	answerJSON(w, http.StatusCreated, json.RawMessage(f.projectJSON(p)))
}

func (f *GitLab) editProject(w http.ResponseWriter, r *http.Request) {
	body, ok := f.change(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.findProject(r.PathValue("id"))
	if p == nil {
		answerJSON(w, http.StatusNotFound, map[string]string{"message": "404 Project Not Found"})
		return
	}
	if v, ok := body["default_branch"].(string); ok && v != p.DefaultBranch {
		// GitLab moves HEAD, and refuses a branch that is not there.
		if f.git != nil {
			if !f.git.hasBranch(p.FullPath(), v) {
				answerJSON(w, http.StatusBadRequest, map[string]string{"message": "Could not set the default branch"})
				return
			}
			if err := f.git.setHead(p.FullPath(), v); err != nil {
				f.tb.Errorf("hoststest: %v", err)
			}
		}
		p.DefaultBranch = v
	}
	if v, ok := body["description"].(string); ok {
		p.Description = v
	}
	p.json = nil
	f.listings = nil
	answerJSON(w, http.StatusOK, json.RawMessage(f.projectJSON(p)))
}

// archiveProject archives a project, as POST /projects/:id/archive does:
// 201 with the project, archived; a push to it is refused from then on.
func (f *GitLab) archiveProject(w http.ResponseWriter, r *http.Request) {
	f.chg.record(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.findProject(r.PathValue("id"))
	if p == nil {
		answerJSON(w, http.StatusNotFound, map[string]string{"message": "404 Project Not Found"})
		return
	}
	p.Archived = true
	p.json = nil
	f.listings = nil
	answerJSON(w, http.StatusCreated, json.RawMessage(f.projectJSON(p)))
}

// deleteProject deletes a project, as DELETE /projects/:id does: 202,
// the deletion being GitLab's background work (done here at once).
func (f *GitLab) deleteProject(w http.ResponseWriter, r *http.Request) {
	f.chg.record(r)
	f.mu.Lock()
	p := f.findProject(r.PathValue("id"))
	f.mu.Unlock()
	if p == nil {
		answerJSON(w, http.StatusNotFound, map[string]string{"message": "404 Project Not Found"})
		return
	}
	f.RemoveProject(p.FullPath())
	answerJSON(w, http.StatusAccepted, map[string]string{"message": "202 Accepted"})
}

// gitTarget finds the project that git asks for at path, in any case.
func (f *GitLab) gitTarget(path string) gitTarget {
	p := f.projects.get(path)
	if p == nil {
		return gitTarget{}
	}
	return gitTarget{found: true, path: p.FullPath(), public: p.Visibility == "public", archived: p.Archived}
}

// afterPush updates what the API says of a repository that was pushed
// to: it is no longer empty, and its default branch is HEAD's if that
// branch exists, or else main, master or the first branch, the way
// GitLab's Gitaly picks it.
func (f *GitLab) afterPush(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.projects.get(path)
	if p == nil {
		return
	}
	p.empty = f.git.empty(path)
	if branch := pickDefaultBranch(f.git, path); branch != "" {
		p.DefaultBranch = branch
	}
	p.json = nil
	f.listings = nil
}

// pickDefaultBranch returns HEAD's branch if it exists; else it points
// HEAD at main, master or the first branch by name, as a first push to an
// empty repository makes that branch the default. It returns "" when
// there are no branches.
func pickDefaultBranch(g *gitRepos, path string) string {
	out, err := g.git(path, "for-each-ref", "--format=%(refname:strip=2)", "refs/heads/")
	if err != nil || out == "" {
		return ""
	}
	branches := strings.Split(out, "\n")
	head, _ := g.git(path, "symbolic-ref", "--short", "HEAD")
	if slices.Contains(branches, head) {
		return head
	}
	pick := slices.Min(branches)
	for _, want := range []string{"master", "main"} {
		if slices.Contains(branches, want) {
			pick = want
		}
	}
	g.setHead(path, pick)
	return pick
}
