package hosts

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// fakeGiteaDS answers the Gitea API v1 calls of the gitea downstream as
// Gitea's API reference documents them (https://docs.gitea.com/api/1.22/:
// operations repoGet, repoEdit, orgGet, orgCreate and createOrgRepo), with
// the token in "Authorization: token ..."
// (https://docs.gitea.com/development/api-usage). Errors are Gitea's
// {"message": ..., "url": ...}: 404 "The target couldn't be found.", 403
// when the user may not create repositories in the organisation, 409 when
// the repository exists, 422 when the organisation's name is taken.
//
// Like Gitea, it finds names without regard to case. It records every call
// that changes something.
type fakeGiteaDS struct {
	srv   *httptest.Server
	token string

	mu      sync.Mutex
	lastID  int64
	users   []string // names of users, which are not organisations
	orgs    []*fakeGTDSOrg
	repos   []*fakeGTDSRepo
	changes []string
	urls    []string
	// forbidRepos answers repository creation with 403.
	forbidRepos bool
	// beforeCreateRepo runs, with mu held, before a repository creation
	// is looked at.
	beforeCreateRepo func(f *fakeGiteaDS)
}

type fakeGTDSOrg struct {
	ID               int64
	Name, Visibility string
}

type fakeGTDSRepo struct {
	ID                     int64
	Owner, Name            string
	Description, DefBranch string
	Private                bool
}

const fakeGTDSToken = "0123456789abcdef0123456789abcdef01234567"

// giteaDSValidName is Gitea's rule for repository names.
var giteaDSValidName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

func newFakeGiteaDS(t *testing.T) *fakeGiteaDS {
	f := &fakeGiteaDS{token: fakeGTDSToken}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/repos/{owner}/{repo}", f.getRepo)
	mux.HandleFunc("PATCH /api/v1/repos/{owner}/{repo}", f.editRepo)
	mux.HandleFunc("GET /api/v1/orgs/{org}", f.getOrg)
	mux.HandleFunc("POST /api/v1/orgs", f.createOrg)
	mux.HandleFunc("POST /api/v1/orgs/{org}/repos", f.createRepo)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.urls = append(f.urls, r.URL.String())
		if r.Header.Get("Authorization") != "token "+f.token {
			f.fail(w, http.StatusUnauthorized, "token is required")
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGiteaDS) fail(w http.ResponseWriter, status int, message string) {
	body := map[string]any{"message": message, "url": f.srv.URL + "/api/swagger"}
	if status == http.StatusNotFound {
		body["errors"] = nil
	}
	fakeDSJSON(w, status, body)
}

func (f *fakeGiteaDS) addOrg(name string) {
	f.lastID++
	f.orgs = append(f.orgs, &fakeGTDSOrg{ID: f.lastID, Name: name, Visibility: "public"})
}

func (f *fakeGiteaDS) addRepo(owner, name, defaultBranch, description string) {
	if f.findOrg(owner) == nil {
		f.addOrg(owner)
	}
	f.lastID++
	f.repos = append(f.repos, &fakeGTDSRepo{ID: f.lastID, Owner: owner, Name: name, DefBranch: defaultBranch, Description: description, Private: true})
}

func (f *fakeGiteaDS) findOrg(name string) *fakeGTDSOrg {
	for _, o := range f.orgs {
		if strings.EqualFold(o.Name, name) {
			return o
		}
	}
	return nil
}

func (f *fakeGiteaDS) findRepo(owner, name string) *fakeGTDSRepo {
	for _, r := range f.repos {
		if strings.EqualFold(r.Owner, owner) && strings.EqualFold(r.Name, name) {
			return r
		}
	}
	return nil
}

func (f *fakeGiteaDS) orgJSON(o *fakeGTDSOrg) map[string]any {
	return map[string]any{
		"id": o.ID, "name": o.Name, "username": o.Name, "full_name": "", "email": "",
		"avatar_url": f.srv.URL + "/avatars/x", "description": "", "website": "", "location": "",
		"visibility": o.Visibility, "repo_admin_change_team_access": false,
	}
}

func (f *fakeGiteaDS) repoJSON(r *fakeGTDSRepo) map[string]any {
	full := r.Owner + "/" + r.Name
	return map[string]any{
		"id": r.ID, "name": r.Name, "full_name": full,
		"owner":       map[string]any{"id": f.findOrg(r.Owner).ID, "login": r.Owner, "username": r.Owner},
		"description": r.Description, "empty": true, "private": r.Private, "fork": false, "mirror": false,
		"default_branch": r.DefBranch,
		"html_url":       f.srv.URL + "/" + full,
		"ssh_url":        "git@gitea.example.com:" + full + ".git",
		"clone_url":      f.srv.URL + "/" + full + ".git",
	}
}

func (f *fakeGiteaDS) record(r *http.Request) (map[string]any, bool) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.changes = append(f.changes, r.Method+" "+r.URL.EscapedPath()+" (bad JSON)")
		return nil, false
	}
	canon, _ := json.Marshal(body)
	f.changes = append(f.changes, r.Method+" "+r.URL.EscapedPath()+" "+string(canon))
	return body, true
}

func (f *fakeGiteaDS) getRepo(w http.ResponseWriter, r *http.Request) {
	repo := f.findRepo(r.PathValue("owner"), r.PathValue("repo"))
	if repo == nil {
		f.fail(w, http.StatusNotFound, "The target couldn't be found.")
		return
	}
	fakeDSJSON(w, http.StatusOK, f.repoJSON(repo))
}

func (f *fakeGiteaDS) getOrg(w http.ResponseWriter, r *http.Request) {
	o := f.findOrg(r.PathValue("org"))
	if o == nil {
		f.fail(w, http.StatusNotFound, "The target couldn't be found.")
		return
	}
	fakeDSJSON(w, http.StatusOK, f.orgJSON(o))
}

func (f *fakeGiteaDS) createOrg(w http.ResponseWriter, r *http.Request) {
	body, ok := f.record(r)
	if !ok {
		f.fail(w, http.StatusUnprocessableEntity, "invalid JSON")
		return
	}
	name, _ := body["username"].(string)
	visibility, _ := body["visibility"].(string)
	switch {
	case name == "":
		f.fail(w, http.StatusUnprocessableEntity, "[Username]: Required")
		return
	case visibility != "" && visibility != "public" && visibility != "limited" && visibility != "private":
		f.fail(w, http.StatusUnprocessableEntity, "[Visibility]: In")
		return
	}
	taken := f.findOrg(name) != nil
	for _, u := range f.users {
		taken = taken || strings.EqualFold(u, name)
	}
	if taken {
		f.fail(w, http.StatusUnprocessableEntity, "user already exists [name: "+name+"]")
		return
	}
	if visibility == "" {
		visibility = "public"
	}
	f.lastID++
	o := &fakeGTDSOrg{ID: f.lastID, Name: name, Visibility: visibility}
	f.orgs = append(f.orgs, o)
	fakeDSJSON(w, http.StatusCreated, f.orgJSON(o))
}

func (f *fakeGiteaDS) createRepo(w http.ResponseWriter, r *http.Request) {
	body, ok := f.record(r)
	if !ok {
		f.fail(w, http.StatusUnprocessableEntity, "invalid JSON")
		return
	}
	if f.beforeCreateRepo != nil {
		f.beforeCreateRepo(f)
	}
	o := f.findOrg(r.PathValue("org"))
	if o == nil {
		f.fail(w, http.StatusNotFound, "The target couldn't be found.")
		return
	}
	if f.forbidRepos {
		f.fail(w, http.StatusForbidden, "Given user is not allowed to create repository in organization.")
		return
	}
	name, _ := body["name"].(string)
	if !giteaDSValidName.MatchString(name) {
		f.fail(w, http.StatusUnprocessableEntity, "[Name]: AlphaDashDot")
		return
	}
	if f.findRepo(o.Name, name) != nil {
		f.fail(w, http.StatusConflict, "The repository with the same name already exists.")
		return
	}
	description, _ := body["description"].(string)
	private, _ := body["private"].(bool)
	branch, _ := body["default_branch"].(string)
	if branch == "" {
		branch = "main"
	}
	f.lastID++
	repo := &fakeGTDSRepo{ID: f.lastID, Owner: o.Name, Name: name, Description: description, DefBranch: branch, Private: private}
	f.repos = append(f.repos, repo)
	fakeDSJSON(w, http.StatusCreated, f.repoJSON(repo))
}

func (f *fakeGiteaDS) editRepo(w http.ResponseWriter, r *http.Request) {
	body, ok := f.record(r)
	if !ok {
		f.fail(w, http.StatusUnprocessableEntity, "invalid JSON")
		return
	}
	repo := f.findRepo(r.PathValue("owner"), r.PathValue("repo"))
	if repo == nil {
		f.fail(w, http.StatusNotFound, "The target couldn't be found.")
		return
	}
	if v, ok := body["default_branch"].(string); ok {
		repo.DefBranch = v
	}
	if v, ok := body["description"].(string); ok {
		repo.Description = v
	}
	fakeDSJSON(w, http.StatusOK, f.repoJSON(repo))
}

func (f *fakeGiteaDS) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.changes...)
}

func (f *fakeGiteaDS) repoCopy(owner, name string) *fakeGTDSRepo {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.findRepo(owner, name)
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

func (f *fakeGiteaDS) checkTokenNotInURLs(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.urls {
		if strings.Contains(u, f.token) {
			t.Errorf("token sent in URL %s", u)
		}
	}
}

func newTestGiteaDS(t *testing.T, f *fakeGiteaDS, mod func(*DownstreamConfig)) Downstream {
	t.Helper()
	cfg := DownstreamConfig{Type: DownstreamGitea, Host: f.srv.URL, TokenFile: writeDSTokenFile(t, fakeGTDSToken)}
	if mod != nil {
		mod(&cfg)
	}
	d, err := NewDownstream(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestGiteaRepoName(t *testing.T) {
	tests := []struct {
		name, path, wantOrg, wantRepo, wantErr string
	}{
		{name: "two segments", path: "delta/glib", wantOrg: "delta", wantRepo: "glib"},
		{name: "three segments", path: "delta/gnome/glib", wantOrg: "delta", wantRepo: "gnome--glib"},
		{name: "dashes and dots", path: "delta/gnome/gtk-doc.old", wantOrg: "delta", wantRepo: "gnome--gtk-doc.old"},
		{name: "double dash", path: "delta/gnome--glib", wantErr: "ambiguous"},
		{name: "leading dash", path: "delta/gnome/-glib", wantErr: "ambiguous"},
		{name: "trailing dash", path: "delta/gnome-/glib", wantErr: "ambiguous"},
		{name: "character Gitea refuses", path: "delta/gtk+", wantErr: "characters Gitea does not allow"},
		{name: "no organisation", path: "glib", wantErr: "at least 2 segments"},
		{name: "empty segment", path: "delta//glib", wantErr: `"" segment`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			org, repo, err := GiteaRepoName(tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("GiteaRepoName(%q) = %q, %q, %v; want an error containing %q", tc.path, org, repo, err, tc.wantErr)
				}
				return
			}
			if err != nil || org != tc.wantOrg || repo != tc.wantRepo {
				t.Errorf("GiteaRepoName(%q) = %q, %q, %v; want %q, %q", tc.path, org, repo, err, tc.wantOrg, tc.wantRepo)
			}
		})
	}
}

// Two lorry paths never share a Gitea repository: every accepted path
// made of these segments maps to a name of its own.
func TestGiteaRepoNameOneToOne(t *testing.T) {
	segs := []string{"a", "b", "a-b", "a-", "-b", "a--b", "a.b", "a_b", "-", "--"}
	var paths []string
	for _, s1 := range segs {
		paths = append(paths, "o/"+s1)
		for _, s2 := range segs {
			paths = append(paths, "o/"+s1+"/"+s2)
			for _, s3 := range segs {
				paths = append(paths, "o/"+s1+"/"+s2+"/"+s3)
			}
		}
	}
	owner := map[string]string{}
	accepted := 0
	for _, p := range paths {
		org, repo, err := GiteaRepoName(p)
		if err != nil {
			continue
		}
		accepted++
		key := org + "/" + repo
		if other, ok := owner[key]; ok {
			t.Errorf("%q and %q both map to %s", other, p, key)
		}
		owner[key] = p
	}
	if accepted < 100 {
		t.Errorf("only %d of %d paths accepted; the test checks too little", accepted, len(paths))
	}
}

func TestGiteaDownstreamPrepare(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(f *fakeGiteaDS)
		config      func(c *DownstreamConfig)
		repo        DownstreamRepo
		wantURL     func(f *fakeGiteaDS) string
		wantChanges []string
	}{
		{
			name: "creates the organisation and the repository",
			repo: DownstreamRepo{Path: "delta/gnome/glib", Description: "Low-level core library"},
			wantChanges: []string{
				`POST /api/v1/orgs {"username":"delta","visibility":"private"}`,
				`POST /api/v1/orgs/delta/repos {"description":"Low-level core library","name":"gnome--glib","private":true}`,
			},
			wantURL: func(*fakeGiteaDS) string { return "git@gitea.example.com:delta/gnome--glib.git" },
		},
		{
			name:  "creates only the repository in an existing organisation",
			setup: func(f *fakeGiteaDS) { f.addOrg("delta") },
			repo:  DownstreamRepo{Path: "delta/glib", DefaultBranch: "master"},
			wantChanges: []string{
				`POST /api/v1/orgs/delta/repos {"default_branch":"master","name":"glib","private":true}`,
			},
			wantURL: func(*fakeGiteaDS) string { return "git@gitea.example.com:delta/glib.git" },
		},
		{
			name:   "internal is a limited organisation with a repository that is not private",
			config: func(c *DownstreamConfig) { c.Visibility = "internal" },
			repo:   DownstreamRepo{Path: "delta/glib"},
			wantChanges: []string{
				`POST /api/v1/orgs {"username":"delta","visibility":"limited"}`,
				`POST /api/v1/orgs/delta/repos {"name":"glib","private":false}`,
			},
			wantURL: func(*fakeGiteaDS) string { return "git@gitea.example.com:delta/glib.git" },
		},
		{
			name:   "public",
			config: func(c *DownstreamConfig) { c.Visibility = "public" },
			repo:   DownstreamRepo{Path: "delta/glib"},
			wantChanges: []string{
				`POST /api/v1/orgs {"username":"delta","visibility":"public"}`,
				`POST /api/v1/orgs/delta/repos {"name":"glib","private":false}`,
			},
			wantURL: func(*fakeGiteaDS) string { return "git@gitea.example.com:delta/glib.git" },
		},
		{
			name:    "nothing created when the repository exists",
			setup:   func(f *fakeGiteaDS) { f.addRepo("delta", "gnome--glib", "master", "") },
			repo:    DownstreamRepo{Path: "delta/gnome/glib"},
			wantURL: func(*fakeGiteaDS) string { return "git@gitea.example.com:delta/gnome--glib.git" },
		},
		{
			name:   "https push URL with the token",
			setup:  func(f *fakeGiteaDS) { f.addRepo("delta", "glib", "master", "") },
			config: func(c *DownstreamConfig) { c.PushProtocol = "https" },
			repo:   DownstreamRepo{Path: "delta/glib"},
			wantURL: func(f *fakeGiteaDS) string {
				return strings.Replace(f.srv.URL, "://", "://oauth2:"+fakeGTDSToken+"@", 1) + "/delta/glib.git"
			},
		},
		{
			name: "repository created by someone else meanwhile",
			setup: func(f *fakeGiteaDS) {
				f.addOrg("delta")
				f.beforeCreateRepo = func(f *fakeGiteaDS) { f.addRepo("delta", "glib", "main", "") }
			},
			repo: DownstreamRepo{Path: "delta/glib"},
			wantChanges: []string{
				`POST /api/v1/orgs/delta/repos {"name":"glib","private":true}`,
			},
			wantURL: func(*fakeGiteaDS) string { return "git@gitea.example.com:delta/glib.git" },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGiteaDS(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			d := newTestGiteaDS(t, f, tc.config)
			got, err := d.Prepare(context.Background(), tc.repo)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if want := tc.wantURL(f); got != want {
				t.Errorf("push URL = %q; want %q", got, want)
			}
			if changes := f.recorded(); !reflect.DeepEqual(changes, tc.wantChanges) {
				t.Errorf("calls that change something:\n got %q\nwant %q", changes, tc.wantChanges)
			}
			f.checkTokenNotInURLs(t)

			again, err := d.Prepare(context.Background(), tc.repo)
			if err != nil || again != got {
				t.Errorf("second Prepare = %q, %v; want %q", again, err, got)
			}
			if changes := f.recorded(); len(changes) != len(tc.wantChanges) {
				t.Errorf("second Prepare changed something: %q", changes[len(tc.wantChanges):])
			}
		})
	}
}

func TestGiteaDownstreamPushURLShape(t *testing.T) {
	f := newFakeGiteaDS(t)
	d := newTestGiteaDS(t, f, func(c *DownstreamConfig) { c.PushProtocol = "https" })
	got, err := d.Prepare(context.Background(), DownstreamRepo{Path: "delta/gnome/glib"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(got)
	if err != nil {
		t.Fatalf("push URL %q does not parse: %v", got, err)
	}
	pw, _ := u.User.Password()
	base, _ := url.Parse(f.srv.URL)
	if u.Scheme != base.Scheme || u.Host != base.Host || u.User.Username() != "oauth2" || pw != fakeGTDSToken || u.Path != "/delta/gnome--glib.git" {
		t.Errorf("push URL = %q; want %s://oauth2:<token>@%s/delta/gnome--glib.git", got, base.Scheme, base.Host)
	}
}

func TestGiteaDownstreamFinish(t *testing.T) {
	tests := []struct {
		name                 string
		repo                 DownstreamRepo
		wantChanges          []string
		wantBranch, wantDesc string
	}{
		{
			name:        "default branch differs",
			repo:        DownstreamRepo{Path: "delta/glib", DefaultBranch: "master"},
			wantChanges: []string{`PATCH /api/v1/repos/delta/glib {"default_branch":"master"}`},
			wantBranch:  "master", wantDesc: "GLib",
		},
		{
			name:        "both differ",
			repo:        DownstreamRepo{Path: "delta/glib", DefaultBranch: "master", Description: "GLib, the library"},
			wantChanges: []string{`PATCH /api/v1/repos/delta/glib {"default_branch":"master","description":"GLib, the library"}`},
			wantBranch:  "master", wantDesc: "GLib, the library",
		},
		{
			name:       "both already right",
			repo:       DownstreamRepo{Path: "delta/glib", DefaultBranch: "main", Description: "GLib"},
			wantBranch: "main", wantDesc: "GLib",
		},
		{
			name:       "upstream's unknown",
			repo:       DownstreamRepo{Path: "delta/glib"},
			wantBranch: "main", wantDesc: "GLib",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGiteaDS(t)
			f.addRepo("delta", "glib", "main", "GLib")
			d := newTestGiteaDS(t, f, nil)
			if err := d.Finish(context.Background(), tc.repo); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			if got := f.recorded(); !reflect.DeepEqual(got, tc.wantChanges) {
				t.Errorf("calls that change something:\n got %q\nwant %q", got, tc.wantChanges)
			}
			if r := f.repoCopy("delta", "glib"); r.DefBranch != tc.wantBranch || r.Description != tc.wantDesc {
				t.Errorf("repository has default branch %q, description %q; want %q, %q", r.DefBranch, r.Description, tc.wantBranch, tc.wantDesc)
			}
		})
	}
}

func TestGiteaDownstreamErrors(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(f *fakeGiteaDS)
		path        string
		wantErr     []string
		wantChanges []string
	}{
		{
			name: "repository creation forbidden",
			setup: func(f *fakeGiteaDS) {
				f.addOrg("delta")
				f.forbidRepos = true
			},
			path: "delta/glib",
			wantErr: []string{"delta/glib", "create repository", "POST /api/v1/orgs/delta/repos", "403 Forbidden",
				"Given user is not allowed to create repository in organization."},
			wantChanges: []string{`POST /api/v1/orgs/delta/repos {"name":"glib","private":true}`},
		},
		{
			name:        "first segment is a user",
			setup:       func(f *fakeGiteaDS) { f.users = []string{"alice"} },
			path:        "alice/glib",
			wantErr:     []string{"create organisation alice", "422 Unprocessable Entity", "user already exists [name: alice]"},
			wantChanges: []string{`POST /api/v1/orgs {"username":"alice","visibility":"private"}`},
		},
		{
			name:    "repository that differs in case",
			setup:   func(f *fakeGiteaDS) { f.addRepo("Delta", "GLib", "main", "") },
			path:    "delta/glib",
			wantErr: []string{"Delta/GLib", "differing in case"},
		},
		{
			name:    "ambiguous path",
			path:    "delta/gnome--glib",
			wantErr: []string{"ambiguous"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGiteaDS(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			d := newTestGiteaDS(t, f, func(c *DownstreamConfig) { c.PushProtocol = "https" })
			got, err := d.Prepare(context.Background(), DownstreamRepo{Path: tc.path})
			if err == nil {
				t.Fatalf("Prepare = %q; want an error", got)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q; want it to contain %q", err, want)
				}
			}
			if strings.Contains(err.Error(), fakeGTDSToken) {
				t.Errorf("error %q shows the token", err)
			}
			if changes := f.recorded(); !reflect.DeepEqual(changes, tc.wantChanges) {
				t.Errorf("calls that change something:\n got %q\nwant %q", changes, tc.wantChanges)
			}
			f.checkTokenNotInURLs(t)
		})
	}
}
