package hoststest

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Gitea answers the Gitea API v1 calls that the controller makes, both as
// an Upstream Host that is listed and as a Downstream Host whose
// organisations and repositories are created, the way the API reference
// every instance serves at /api/swagger (https://docs.gitea.com/api/1.22/)
// and the usage guide (https://docs.gitea.com/development/api-usage)
// describe them:
//
//   - GET /api/v1/repos/search answers {"ok": true, "data": [...]};
//     GET /api/v1/orgs/{org}/repos and GET /api/v1/users/{username}/repos
//     answer a plain list;
//   - repoGet, repoEdit, orgGet, orgCreate and createOrgRepo: GET and
//     PATCH /api/v1/repos/{owner}/{repo}, GET /api/v1/orgs/{org},
//     POST /api/v1/orgs and POST /api/v1/orgs/{org}/repos;
//   - the token comes as "Authorization: token ..."; a wrong one is 401
//     {"message":"invalid username, password or token","url":".../api/swagger"},
//     a change without one 401 "token is required";
//   - errors are {"message": ..., "url": ...}, with "errors" on a 404
//     ("The target couldn't be found."); 403 when the user may not create
//     repositories in the organisation, 409 when the repository exists,
//     422 when the organisation's name is taken or a name is invalid;
//   - page and limit: limit defaults to DEFAULT_PAGING_NUM (30) and is cut
//     to MAX_RESPONSE_ITEMS (50); answers carry X-Total-Count and a Link
//     header with next, last, first and prev as they apply, joined by ","
//     and built on the instance's ROOT_URL, not on the request's host.
//
// Like Gitea, it finds names without regard to case. Users and
// organisations share one sequence of ids, repositories have their own.
//
// With GiteaOptions.ServeGit, every repository is a real bare repository
// served over smart HTTP at its clone_url (which needs RootURL left to
// the fake's own), taking pushes authenticated with the token as the
// password of any user name; setting default_branch moves its HEAD, and
// the first push into an empty repository picks its default branch as
// Gitea does (see firstPush).
type Gitea struct {
	forge
	rootURL string // ROOT_URL, ending in "/"
	sshHost string
	sshPort int
	opts    GiteaOptions

	// guarded by mu
	lastOwnerID int64
	owners      map[string]*giteaOwner // by lower-case name
	repos       repoIndex[giteaRepo]   // by owner/name
}

// GiteaOptions configure a fake Gitea.
type GiteaOptions struct {
	// Token is the one valid token. "" accepts none: requests without a
	// token are anonymous, any token is refused.
	Token string
	// RootURL is the instance's ROOT_URL, which Link headers and clone
	// URLs are built on, such as "https://gitea.example.com/"; "" is the
	// fake's own URL.
	RootURL string
	// MaxResponseItems is the instance's MAX_RESPONSE_ITEMS; 0 is 50.
	MaxResponseItems int
	// NoPageHeaders leaves out Link and X-Total-Count, as old instances do.
	NoPageHeaders bool
	// SSHHost and SSHPort make ssh_url: "" is the address the fake listens
	// on, 0 is 22. Gitea writes git@host:owner/name.git for port 22 and
	// ssh://git@host:port/owner/name.git for any other.
	SSHHost string
	SSHPort int
	// TLS serves HTTPS, with a certificate that no authority vouches for.
	TLS bool
	// ServeGit makes every repository a bare repository served over smart
	// HTTP at its clone_url, pushes included.
	ServeGit bool
}

// GiteaRepo is a repository of a fake Gitea.
type GiteaRepo struct {
	// ID is the repository's id, set by the fake; AddRepo ignores it.
	ID            int64
	Owner, Name   string
	Description   string
	DefaultBranch string
	Private       bool
	Archived      bool
}

// FullName is the repository's full_name.
func (r GiteaRepo) FullName() string { return r.Owner + "/" + r.Name }

type giteaOwner struct {
	id         int64
	name       string
	org        bool
	visibility string
}

type giteaRepo struct {
	GiteaRepo
	empty bool
}

// giteaValidName is Gitea's rule for repository names.
var giteaValidName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// NewGitea starts a fake Gitea with no users, organisations or
// repositories.
func NewGitea(tb testing.TB, opts GiteaOptions) *Gitea {
	tb.Helper()
	f := &Gitea{opts: opts, owners: map[string]*giteaOwner{},
		repos: newRepoIndex(func(r *giteaRepo) string { return r.FullName() })}
	f.init(tb, opts.Token, opts.ServeGit)
	if opts.MaxResponseItems == 0 {
		f.opts.MaxResponseItems = 50
	}
	// Gitea takes "Authorization: token <token>"; a failure answers
	// {"message": "internal error", ...}, a body that is not JSON 422.
	f.auth = apiAuth{
		header: "Authorization",
		prefix: "token ",
		failed: func(w http.ResponseWriter, status int) { f.answer(w, status, "internal error") },
		badToken: func(w http.ResponseWriter) {
			f.answer(w, http.StatusUnauthorized, "invalid username, password or token")
		},
		noToken: func(w http.ResponseWriter) { f.answer(w, http.StatusUnauthorized, "token is required") },
		badBody: func(w http.ResponseWriter) { f.answer(w, http.StatusUnprocessableEntity, "invalid JSON") },
	}
	f.mux = http.NewServeMux()
	f.mux.HandleFunc("GET /api/v1/repos/search", f.listRepos)
	f.mux.HandleFunc("GET /api/v1/orgs/{org}/repos", f.listRepos)
	f.mux.HandleFunc("GET /api/v1/users/{user}/repos", f.listRepos)
	f.mux.HandleFunc("GET /api/v1/repos/{owner}/{repo}", f.getRepo)
	f.mux.HandleFunc("PATCH /api/v1/repos/{owner}/{repo}", f.editRepo)
	f.mux.HandleFunc("DELETE /api/v1/repos/{owner}/{repo}", f.deleteRepo)
	f.mux.HandleFunc("GET /api/v1/orgs/{org}", f.getOrg)
	f.mux.HandleFunc("POST /api/v1/orgs", f.createOrg)
	f.mux.HandleFunc("POST /api/v1/orgs/{org}/repos", f.createRepo)
	f.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { f.answer(w, http.StatusNotFound, notFound) })
	f.start(tb, f, opts.TLS)
	f.rootURL = opts.RootURL
	if f.rootURL == "" {
		f.rootURL = f.srv.URL + "/"
	}
	f.sshHost, f.sshPort = opts.SSHHost, opts.SSHPort
	if f.sshHost == "" {
		f.sshHost = hostOnly(f.Host())
	}
	if f.sshPort == 0 {
		f.sshPort = 22
	}
	return f
}

const notFound = "The target couldn't be found."

// APIURL is the base of the API, <URL>/api/v1: an "api-url".
func (f *Gitea) APIURL() string { return f.URL() + "/api/v1" }

// Section is a gitea host section for lorry-controller.conf that lists
// this fake, with the keys of extra added.
func (f *Gitea) Section(extra map[string]any) map[string]any {
	return f.section("gitea", nil, extra)
}

// SetCanCreateRepos(false) answers repository creation with 403, as Gitea
// does for a user who may not create repositories in the organisation.
func (f *Gitea) SetCanCreateRepos(can bool) { f.locked(func() { f.refuseCreate = !can }) }

// BeforeCreateRepo has fn run when a repository creation arrives, before
// the fake looks at it, so that a test can make the repository appear
// meanwhile. fn may call the fake's methods.
func (f *Gitea) BeforeCreateRepo(fn func()) { f.locked(func() { f.beforeCreate = fn }) }

// AddUser adds a user, which owns repositories but is not an
// organisation.
func (f *Gitea) AddUser(name string) { f.locked(func() { f.addOwner(name, false) }) }

// AddOrg adds a public organisation.
func (f *Gitea) AddOrg(name string) { f.locked(func() { f.addOwner(name, true) }) }

// AddRepo adds a repository; an owner not added before becomes an
// organisation. It returns the repository's id.
func (f *Gitea) AddRepo(r GiteaRepo) (id int64) {
	f.locked(func() { id = f.addRepo(r) })
	return id
}

// AddRepos adds many repositories at once.
func (f *Gitea) AddRepos(rs []GiteaRepo) {
	f.locked(func() {
		for _, r := range rs {
			f.addRepo(r)
		}
	})
}

// RemoveRepo deletes the repository, and its git repository; it reports
// whether there was one.
func (f *Gitea) RemoveRepo(owner, name string) (removed bool) {
	f.locked(func() {
		if r := f.repos.remove(owner + "/" + name); r != nil {
			f.removeGit(r.FullName())
			removed = true
		}
	})
	return removed
}

// Repo returns the repository (named in any case) as it stands.
func (f *Gitea) Repo(owner, name string) (GiteaRepo, bool) {
	var r giteaRepo
	var ok bool
	f.locked(func() { r, ok = f.repos.copyOf(owner + "/" + name) })
	return r.GiteaRepo, ok
}

// GiteaRepos makes n repositories, three in four of the organisation org
// and the others of "user1", which the caller adds with AddUser first;
// every sixth is private.
func GiteaRepos(n int, org string) []GiteaRepo {
	out := make([]GiteaRepo, n)
	for i := range out {
		owner := org
		if i%4 == 3 {
			owner = "user1"
		}
		out[i] = GiteaRepo{Owner: owner, Name: fmt.Sprintf("r%04d", i), Description: "repo " + strconv.Itoa(i),
			DefaultBranch: "main", Private: i%6 == 5}
	}
	return out
}

func (f *Gitea) addOwner(name string, org bool) *giteaOwner {
	if o := f.owners[strings.ToLower(name)]; o != nil {
		return o
	}
	f.lastOwnerID++
	o := &giteaOwner{id: f.lastOwnerID, name: name, org: org, visibility: "public"}
	f.owners[strings.ToLower(name)] = o
	return o
}

func (f *Gitea) addRepo(r GiteaRepo) int64 {
	if old := f.repos.get(r.FullName()); old != nil {
		f.tb.Errorf("hoststest: Gitea repository %s added twice", r.FullName())
		return old.ID
	}
	o := f.addOwner(r.Owner, true)
	r.Owner = o.name
	r.ID = f.repos.nextID()
	if err := f.createGit(r.FullName(), r.DefaultBranch); err != nil {
		f.tb.Errorf("hoststest: Gitea repository %s: %v", r.FullName(), err)
	}
	f.repos.add(&giteaRepo{GiteaRepo: r, empty: r.DefaultBranch == ""})
	return r.ID
}

// answer writes Gitea's error body, with "errors" on a 404 as Gitea's
// NotFound gives it (null when there is no error to name).
func (f *Gitea) answer(w http.ResponseWriter, status int, message string, errs ...string) {
	body := map[string]any{"message": message, "url": f.rootURL + "api/swagger"}
	if status == http.StatusNotFound {
		if len(errs) > 0 {
			body["errors"] = errs
		} else {
			body["errors"] = nil
		}
	}
	answerJSON(w, status, body)
}

// ServeHTTP answers the API under /api/v1, and git under any other path
// when the fake serves git.
func (f *Gitea) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.serveForge(w, r, "Gitea", f.gitTarget, f.pushed)
}

func (f *Gitea) sshURL(full string) string {
	if f.sshPort == 22 {
		return "git@" + f.sshHost + ":" + full + ".git"
	}
	return "ssh://git@" + f.sshHost + ":" + strconv.Itoa(f.sshPort) + "/" + full + ".git"
}

func (f *Gitea) repoJSON(r *giteaRepo) map[string]any {
	full := r.FullName()
	o := f.owners[strings.ToLower(r.Owner)]
	return map[string]any{
		"id":             r.ID,
		"owner":          map[string]any{"id": o.id, "login": o.name, "username": o.name},
		"name":           r.Name,
		"full_name":      full,
		"description":    r.Description,
		"empty":          r.empty,
		"private":        r.Private,
		"fork":           false,
		"mirror":         false,
		"html_url":       f.rootURL + full,
		"ssh_url":        f.sshURL(full),
		"clone_url":      f.rootURL + full + ".git",
		"default_branch": r.DefaultBranch,
		"archived":       r.Archived,
	}
}

func (f *Gitea) orgJSON(o *giteaOwner) map[string]any {
	return map[string]any{
		"id": o.id, "name": o.name, "username": o.name, "full_name": "", "email": "",
		"avatar_url": f.rootURL + "avatars/x", "description": "", "website": "", "location": "",
		"visibility": o.visibility, "repo_admin_change_team_access": false,
	}
}

func (f *Gitea) listRepos(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	var list []*giteaRepo
	search := false
	switch org, user := r.PathValue("org"), r.PathValue("user"); {
	case org != "":
		o := f.owners[strings.ToLower(org)]
		if o == nil || !o.org {
			f.mu.Unlock()
			f.answer(w, http.StatusNotFound, notFound, fmt.Sprintf("org does not exist [id: 0, name: %s]", org))
			return
		}
		list = f.reposOf(o)
	case user != "":
		o := f.owners[strings.ToLower(user)]
		if o == nil {
			f.mu.Unlock()
			f.answer(w, http.StatusNotFound, notFound, fmt.Sprintf("user redirect does not exist [name: %s]", user))
			return
		}
		list = f.reposOf(o)
	default:
		search = true
		list = slices.Clone(f.repos.list)
	}
	if !isAuthed(r) {
		list = slices.DeleteFunc(list, func(r *giteaRepo) bool { return r.Private })
	}
	q := r.URL.Query()
	p := pageOf(q, pageSize(q, "limit", 30, f.opts.MaxResponseItems), len(list))
	items := list[p.lo:p.hi]
	out := make([]map[string]any, len(items))
	for i, repo := range items {
		out[i] = f.repoJSON(repo)
	}
	f.mu.Unlock()

	if !f.opts.NoPageHeaders {
		// Gitea builds its links on ROOT_URL.
		href := func(n int) string { return f.rootURL + strings.TrimPrefix(r.URL.Path, "/") + "?" + withPage(q, n) }
		if links := p.links(href, "next", "last", "first", "prev"); len(links) > 0 {
			w.Header().Set("Link", strings.Join(links, ","))
		}
		w.Header().Set("X-Total-Count", strconv.Itoa(p.total))
		w.Header().Set("Access-Control-Expose-Headers", "X-Total-Count, Link")
	}
	if search {
		answerJSON(w, http.StatusOK, map[string]any{"ok": true, "data": out})
		return
	}
	answerJSON(w, http.StatusOK, out)
}

func (f *Gitea) reposOf(o *giteaOwner) []*giteaRepo {
	var list []*giteaRepo
	for _, r := range f.repos.list {
		if strings.EqualFold(r.Owner, o.name) {
			list = append(list, r)
		}
	}
	return list
}

func (f *Gitea) getRepo(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	repo := f.repos.get(r.PathValue("owner") + "/" + r.PathValue("repo"))
	if repo == nil || (repo.Private && !isAuthed(r)) {
		f.answer(w, http.StatusNotFound, notFound)
		return
	}
	answerJSON(w, http.StatusOK, f.repoJSON(repo))
}

func (f *Gitea) getOrg(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.owners[strings.ToLower(r.PathValue("org"))]
	if o == nil || !o.org {
		f.answer(w, http.StatusNotFound, notFound, fmt.Sprintf("org does not exist [id: 0, name: %s]", r.PathValue("org")))
		return
	}
	answerJSON(w, http.StatusOK, f.orgJSON(o))
}

func (f *Gitea) createOrg(w http.ResponseWriter, r *http.Request) {
	body, ok := f.change(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	name, _ := body["username"].(string)
	visibility, _ := body["visibility"].(string)
	switch {
	case name == "":
		f.answer(w, http.StatusUnprocessableEntity, "[Username]: Required")
		return
	case visibility != "" && visibility != "public" && visibility != "limited" && visibility != "private":
		f.answer(w, http.StatusUnprocessableEntity, "[Visibility]: In")
		return
	}
	if f.owners[strings.ToLower(name)] != nil {
		f.answer(w, http.StatusUnprocessableEntity, "user already exists [name: "+name+"]")
		return
	}
	if visibility == "" {
		visibility = "public"
	}
	o := f.addOwner(name, true)
	o.visibility = visibility
	answerJSON(w, http.StatusCreated, f.orgJSON(o))
}

func (f *Gitea) createRepo(w http.ResponseWriter, r *http.Request) {
	body, ok := f.creation(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.owners[strings.ToLower(r.PathValue("org"))]
	if o == nil || !o.org {
		f.answer(w, http.StatusNotFound, notFound)
		return
	}
	if f.refuseCreate {
		f.answer(w, http.StatusForbidden, "Given user is not allowed to create repository in organization.")
		return
	}
	name, _ := body["name"].(string)
	if !giteaValidName.MatchString(name) {
		f.answer(w, http.StatusUnprocessableEntity, "[Name]: AlphaDashDot")
		return
	}
	if f.repos.get(o.name+"/"+name) != nil {
		f.answer(w, http.StatusConflict, "The repository with the same name already exists.")
		return
	}
	description, _ := body["description"].(string)
	private, _ := body["private"].(bool)
	branch, _ := body["default_branch"].(string)
	if branch == "" {
		branch = giteaDefaultBranch
	}
	repo := &giteaRepo{GiteaRepo: GiteaRepo{ID: f.repos.nextID(), Owner: o.name, Name: name,
		Description: description, DefaultBranch: branch, Private: private}, empty: true}
	if err := f.createGit(repo.FullName(), branch); err != nil {
		f.answer(w, http.StatusInternalServerError, "internal error")
		f.tb.Errorf("hoststest: create Gitea repository %s: %v", repo.FullName(), err)
		return
	}
	f.repos.add(repo)
	answerJSON(w, http.StatusCreated, f.repoJSON(repo))
}

func (f *Gitea) editRepo(w http.ResponseWriter, r *http.Request) {
	body, ok := f.change(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	repo := f.repos.get(r.PathValue("owner") + "/" + r.PathValue("repo"))
	if repo == nil {
		f.answer(w, http.StatusNotFound, notFound)
		return
	}
	if v, ok := body["default_branch"].(string); ok && v != repo.DefaultBranch {
		// Gitea sets it for an empty repository or an existing branch,
		// and otherwise leaves it as it was without saying so.
		switch {
		case f.git == nil:
			repo.DefaultBranch = v
		case repo.empty || f.git.hasBranch(repo.FullName(), v):
			if err := f.git.setHead(repo.FullName(), v); err != nil {
				f.tb.Errorf("hoststest: %v", err)
			}
			repo.DefaultBranch = v
		}
	}
	if v, ok := body["description"].(string); ok {
		repo.Description = v
	}
	if v, ok := body["archived"].(bool); ok {
		repo.Archived = v
	}
	answerJSON(w, http.StatusOK, f.repoJSON(repo))
}

// deleteRepo deletes a repository, as DELETE /repos/{owner}/{repo} does:
// 204 with no body.
func (f *Gitea) deleteRepo(w http.ResponseWriter, r *http.Request) {
	f.chg.record(r)
	if !f.RemoveRepo(r.PathValue("owner"), r.PathValue("repo")) {
		f.answer(w, http.StatusNotFound, notFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// gitTarget finds the repository that git asks for at path, in any case.
func (f *Gitea) gitTarget(path string) gitTarget {
	repo := f.repos.get(path)
	if repo == nil {
		return gitTarget{}
	}
	return gitTarget{found: true, path: repo.FullName(), public: !repo.Private, archived: repo.Archived}
}

// pushed picks the default branch of a repository that was empty.
func (f *Gitea) pushed(path string, cmds []pushCommand) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if repo := f.repos.get(path); repo != nil && repo.empty {
		f.firstPush(repo, cmds)
	}
}

// giteaDefaultBranch is the instance's [repository] DEFAULT_BRANCH, the
// branch of a repository created without one.
const giteaDefaultBranch = "main"

// giteaHookBatch is how many ref updates Gitea's post-receive hook hands
// over at a time.
const giteaHookBatch = 30

// firstPush sets what Gitea sets when a push lands in an empty
// repository, from the ref updates in the order git sent them (for a
// refspec with "*", git sends refs sorted by name). Gitea's post-receive
// hook hands them over in batches of 30; in each batch, branch and tag
// updates are kept in order, except that master or main is moved to the
// front as it is met. The first branch created in that order becomes the
// default branch, whatever the repository was created with, and the
// repository is no longer empty. HEAD is moved to it only when it is not
// the instance's default branch, which Gitea takes HEAD to name already:
// a repository created with another default branch keeps that HEAD. A
// master branch among the first batch wins in the end. Once the
// repository is not empty, pushes leave the default branch alone.
func (f *Gitea) firstPush(repo *giteaRepo, cmds []pushCommand) {
	full := repo.FullName()
	pick := ""
	for start := 0; start < len(cmds) && pick == ""; start += giteaHookBatch {
		var updates []pushCommand
		for _, c := range cmds[start:min(start+giteaHookBatch, len(cmds))] {
			if !strings.HasPrefix(c.ref, "refs/heads/") && !strings.HasPrefix(c.ref, "refs/tags/") {
				continue
			}
			updates = append(updates, c)
			if c.ref == "refs/heads/master" || c.ref == "refs/heads/main" {
				copy(updates[1:], updates)
				updates[0] = c
			}
		}
		for _, c := range updates {
			branch, ok := strings.CutPrefix(c.ref, "refs/heads/")
			if ok && zeroID(c.old) && !zeroID(c.new) && f.git.hasBranch(full, branch) {
				pick = branch
				break
			}
		}
	}
	moveHead := pick != giteaDefaultBranch
	// The hook itself then makes master the default, HEAD included, if
	// the first batch pushed it.
	for _, c := range cmds[:min(giteaHookBatch, len(cmds))] {
		if c.ref == "refs/heads/master" && !zeroID(c.new) && f.git.hasBranch(full, "master") {
			pick, moveHead = "master", true
		}
	}
	if pick == "" {
		return
	}
	repo.DefaultBranch = pick
	repo.empty = false
	if moveHead {
		if err := f.git.setHead(full, pick); err != nil {
			f.tb.Errorf("hoststest: %v", err)
		}
	}
}
