package hosts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeGitLabDS answers the GitLab REST API v4 calls of the gitlab
// downstream as GitLab documents them, with GitLab's field names, status
// codes and error bodies:
//   - https://docs.gitlab.com/api/projects/ ("Get a single project",
//     "Create a project", "Edit a project"),
//   - https://docs.gitlab.com/api/groups/ ("Get a single group", "Create a
//     group", parent_id for subgroups),
//   - https://docs.gitlab.com/api/rest/#namespaced-paths (a path as :id is
//     URL-encoded, slashes included),
//   - https://docs.gitlab.com/api/rest/troubleshooting/#status-codes (201
//     on create, 400 on validation errors, 401, 403, 404).
//
// Like GitLab, it finds paths without regard to case. It records every
// call that changes something.
type fakeGitLabDS struct {
	t     *testing.T
	srv   *httptest.Server
	token string

	mu       sync.Mutex
	lastID   int64
	groups   []*fakeGLDSGroup
	projects []*fakeGLDSProject
	changes  []string
	urls     []string
	// forbidGroups answers group creation with 403, as GitLab does for a
	// user who may not create groups.
	forbidGroups bool
	// beforeCreateProject runs, with mu held, before a project creation
	// is looked at: a test makes the project appear meanwhile.
	beforeCreateProject func(f *fakeGitLabDS)
}

type fakeGLDSGroup struct {
	ID                   int64
	Name, Path, FullPath string
	ParentID             int64
	Visibility           string
}

type fakeGLDSProject struct {
	ID                                 int64
	Name, Path, FullPath               string
	NamespaceID                        int64
	Visibility, Description, DefBranch string
}

const fakeGLDSToken = "glpat-s3cr3tT0ken"

func newFakeGitLabDS(t *testing.T) *fakeGitLabDS {
	f := &fakeGitLabDS{t: t, token: fakeGLDSToken}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v4/projects/{id}", f.getProject)
	mux.HandleFunc("POST /api/v4/projects", f.createProject)
	mux.HandleFunc("PUT /api/v4/projects/{id}", f.editProject)
	mux.HandleFunc("GET /api/v4/groups/{id}", f.getGroup)
	mux.HandleFunc("POST /api/v4/groups", f.createGroup)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.urls = append(f.urls, r.URL.String())
		if r.Header.Get("PRIVATE-TOKEN") != f.token {
			fakeDSJSON(w, http.StatusUnauthorized, map[string]any{"message": "401 Unauthorized"})
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// addGroup adds a group and its missing parents, as an administrator
// would have made them.
func (f *fakeGitLabDS) addGroup(fullPath string) *fakeGLDSGroup {
	var parent *fakeGLDSGroup
	segs := strings.Split(fullPath, "/")
	for i := range segs {
		full := strings.Join(segs[:i+1], "/")
		g := f.findGroup(full)
		if g == nil {
			f.lastID++
			g = &fakeGLDSGroup{ID: f.lastID, Name: segs[i], Path: segs[i], FullPath: full, Visibility: "private"}
			if parent != nil {
				g.ParentID = parent.ID
			}
			f.groups = append(f.groups, g)
		}
		parent = g
	}
	return parent
}

func (f *fakeGitLabDS) addProject(fullPath, defaultBranch, description string) *fakeGLDSProject {
	i := strings.LastIndex(fullPath, "/")
	ns := f.addGroup(fullPath[:i])
	f.lastID++
	p := &fakeGLDSProject{
		ID: f.lastID, Name: fullPath[i+1:], Path: fullPath[i+1:], FullPath: fullPath,
		NamespaceID: ns.ID, Visibility: "private", Description: description, DefBranch: defaultBranch,
	}
	f.projects = append(f.projects, p)
	return p
}

// findGroup finds by full path or by id, as GitLab's :id does.
func (f *fakeGitLabDS) findGroup(id string) *fakeGLDSGroup {
	for _, g := range f.groups {
		if strings.EqualFold(g.FullPath, id) || strconv.FormatInt(g.ID, 10) == id {
			return g
		}
	}
	return nil
}

func (f *fakeGitLabDS) findProject(id string) *fakeGLDSProject {
	for _, p := range f.projects {
		if strings.EqualFold(p.FullPath, id) || strconv.FormatInt(p.ID, 10) == id {
			return p
		}
	}
	return nil
}

func (f *fakeGitLabDS) groupJSON(g *fakeGLDSGroup) map[string]any {
	var parent any
	if g.ParentID != 0 {
		parent = g.ParentID
	}
	return map[string]any{
		"id": g.ID, "name": g.Name, "path": g.Path, "full_name": g.Name, "full_path": g.FullPath,
		"description": "", "visibility": g.Visibility, "parent_id": parent,
		"web_url": f.srv.URL + "/groups/" + g.FullPath,
	}
}

func (f *fakeGitLabDS) projectJSON(p *fakeGLDSProject) map[string]any {
	var branch, desc any
	if p.DefBranch != "" {
		branch = p.DefBranch
	}
	if p.Description != "" {
		desc = p.Description
	}
	ns := f.findGroup(strconv.FormatInt(p.NamespaceID, 10))
	return map[string]any{
		"id": p.ID, "name": p.Name, "path": p.Path, "path_with_namespace": p.FullPath,
		"description": desc, "default_branch": branch, "visibility": p.Visibility,
		"ssh_url_to_repo":  "git@gitlab.example.com:" + p.FullPath + ".git",
		"http_url_to_repo": f.srv.URL + "/" + p.FullPath + ".git",
		"web_url":          f.srv.URL + "/" + p.FullPath,
		"empty_repo":       true,
		"namespace": map[string]any{
			"id": ns.ID, "name": ns.Name, "path": ns.Path, "kind": "group", "full_path": ns.FullPath,
		},
	}
}

// record notes a call that changes something, with its body in a stable
// form, and returns the body decoded.
func (f *fakeGitLabDS) record(r *http.Request) (map[string]any, bool) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.changes = append(f.changes, r.Method+" "+r.URL.EscapedPath()+" (bad JSON)")
		return nil, false
	}
	canon, _ := json.Marshal(body)
	f.changes = append(f.changes, r.Method+" "+r.URL.EscapedPath()+" "+string(canon))
	return body, true
}

func (f *fakeGitLabDS) getProject(w http.ResponseWriter, r *http.Request) {
	p := f.findProject(r.PathValue("id"))
	if p == nil {
		fakeDSJSON(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
		return
	}
	fakeDSJSON(w, http.StatusOK, f.projectJSON(p))
}

func (f *fakeGitLabDS) getGroup(w http.ResponseWriter, r *http.Request) {
	g := f.findGroup(r.PathValue("id"))
	if g == nil {
		fakeDSJSON(w, http.StatusNotFound, map[string]any{"message": "404 Group Not Found"})
		return
	}
	fakeDSJSON(w, http.StatusOK, f.groupJSON(g))
}

func (f *fakeGitLabDS) createGroup(w http.ResponseWriter, r *http.Request) {
	body, ok := f.record(r)
	if !ok {
		fakeDSJSON(w, http.StatusBadRequest, map[string]any{"error": "body is not valid JSON"})
		return
	}
	if f.forbidGroups {
		fakeDSJSON(w, http.StatusForbidden, map[string]any{"message": "403 Forbidden"})
		return
	}
	name, _ := body["name"].(string)
	path, _ := body["path"].(string)
	visibility, _ := body["visibility"].(string)
	if name == "" || path == "" {
		fakeDSJSON(w, http.StatusBadRequest, map[string]any{"error": "name is missing, path is missing"})
		return
	}
	switch visibility {
	case "", "private", "internal", "public":
	default:
		fakeDSJSON(w, http.StatusBadRequest, map[string]any{"error": "visibility does not have a valid value"})
		return
	}
	full := path
	var parentID int64
	if v, ok := body["parent_id"].(float64); ok {
		parent := f.findGroup(strconv.FormatInt(int64(v), 10))
		if parent == nil {
			fakeDSJSON(w, http.StatusNotFound, map[string]any{"message": "404 Group Not Found"})
			return
		}
		full = parent.FullPath + "/" + path
		parentID = parent.ID
	}
	if f.findGroup(full) != nil {
		fakeDSJSON(w, http.StatusBadRequest, map[string]any{"message": `Failed to save group {:path=>["has already been taken"]}`})
		return
	}
	f.lastID++
	g := &fakeGLDSGroup{ID: f.lastID, Name: name, Path: path, FullPath: full, ParentID: parentID, Visibility: visibility}
	f.groups = append(f.groups, g)
	fakeDSJSON(w, http.StatusCreated, f.groupJSON(g))
}

func (f *fakeGitLabDS) createProject(w http.ResponseWriter, r *http.Request) {
	body, ok := f.record(r)
	if !ok {
		fakeDSJSON(w, http.StatusBadRequest, map[string]any{"error": "body is not valid JSON"})
		return
	}
	if f.beforeCreateProject != nil {
		f.beforeCreateProject(f)
	}
	name, _ := body["name"].(string)
	path, _ := body["path"].(string)
	visibility, _ := body["visibility"].(string)
	description, _ := body["description"].(string)
	nsID, _ := body["namespace_id"].(float64)
	if name == "" && path == "" {
		fakeDSJSON(w, http.StatusBadRequest, map[string]any{"error": "name, path are missing, at least one parameter must be provided"})
		return
	}
	ns := f.findGroup(strconv.FormatInt(int64(nsID), 10))
	if ns == nil {
		fakeDSJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{"namespace": []string{"is not valid"}}})
		return
	}
	full := ns.FullPath + "/" + path
	if f.findProject(full) != nil {
		fakeDSJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{
			"name": []string{"has already been taken"}, "path": []string{"has already been taken"},
		}})
		return
	}
	f.lastID++
	// An empty project reports the instance's default branch name.
	p := &fakeGLDSProject{
		ID: f.lastID, Name: name, Path: path, FullPath: full, NamespaceID: ns.ID,
		Visibility: visibility, Description: description, DefBranch: "main",
	}
	f.projects = append(f.projects, p)
	fakeDSJSON(w, http.StatusCreated, f.projectJSON(p))
}

func (f *fakeGitLabDS) editProject(w http.ResponseWriter, r *http.Request) {
	body, ok := f.record(r)
	if !ok {
		fakeDSJSON(w, http.StatusBadRequest, map[string]any{"error": "body is not valid JSON"})
		return
	}
	p := f.findProject(r.PathValue("id"))
	if p == nil {
		fakeDSJSON(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
		return
	}
	if v, ok := body["default_branch"].(string); ok {
		p.DefBranch = v
	}
	if v, ok := body["description"].(string); ok {
		p.Description = v
	}
	fakeDSJSON(w, http.StatusOK, f.projectJSON(p))
}

// projectCopy is the project at fullPath as it stands, or nil.
func (f *fakeGitLabDS) projectCopy(fullPath string) *fakeGLDSProject {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.findProject(fullPath)
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

func (f *fakeGitLabDS) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.changes...)
}

// checkTokenNotInURLs fails if the token was ever sent outside a header.
func (f *fakeGitLabDS) checkTokenNotInURLs(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.urls {
		if strings.Contains(u, f.token) {
			t.Errorf("token sent in URL %s", u)
		}
	}
}

// fakeDSJSON writes an API answer.
func fakeDSJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeDSTokenFile keeps the token out of the configuration, as an
// operator would.
func writeDSTokenFile(t *testing.T, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func newTestGitLabDS(t *testing.T, f *fakeGitLabDS, mod func(*DownstreamConfig)) Downstream {
	t.Helper()
	cfg := DownstreamConfig{Type: DownstreamGitLab, Host: f.srv.URL, TokenFile: writeDSTokenFile(t, fakeGLDSToken)}
	if mod != nil {
		mod(&cfg)
	}
	d, err := NewDownstream(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestGitLabDownstreamPrepare(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(f *fakeGitLabDS)
		config      func(c *DownstreamConfig)
		repo        DownstreamRepo
		wantURL     func(f *fakeGitLabDS) string
		wantChanges []string
	}{
		{
			name: "creates the group, the subgroup and the project",
			repo: DownstreamRepo{Path: "delta/gnome/glib", Description: "Low-level core library"},
			wantChanges: []string{
				`POST /api/v4/groups {"name":"delta","path":"delta","visibility":"private"}`,
				`POST /api/v4/groups {"name":"gnome","parent_id":1,"path":"gnome","visibility":"private"}`,
				`POST /api/v4/projects {"description":"Low-level core library","name":"glib","namespace_id":2,"path":"glib","visibility":"private"}`,
			},
			wantURL: func(*fakeGitLabDS) string { return "git@gitlab.example.com:delta/gnome/glib.git" },
		},
		{
			name:  "creates only what is missing, under the existing group",
			setup: func(f *fakeGitLabDS) { f.addGroup("delta/gnome") },
			repo:  DownstreamRepo{Path: "delta/gnome/gtk/gtk4"},
			wantChanges: []string{
				`POST /api/v4/groups {"name":"gtk","parent_id":2,"path":"gtk","visibility":"private"}`,
				`POST /api/v4/projects {"name":"gtk4","namespace_id":3,"path":"gtk4","visibility":"private"}`,
			},
			wantURL: func(*fakeGitLabDS) string { return "git@gitlab.example.com:delta/gnome/gtk/gtk4.git" },
		},
		{
			name:    "the configured visibility",
			config:  func(c *DownstreamConfig) { c.Visibility = "internal" },
			repo:    DownstreamRepo{Path: "delta/foo"},
			wantURL: func(*fakeGitLabDS) string { return "git@gitlab.example.com:delta/foo.git" },
			wantChanges: []string{
				`POST /api/v4/groups {"name":"delta","path":"delta","visibility":"internal"}`,
				`POST /api/v4/projects {"name":"foo","namespace_id":1,"path":"foo","visibility":"internal"}`,
			},
		},
		{
			name:    "nothing created when the project exists",
			setup:   func(f *fakeGitLabDS) { f.addProject("delta/foo", "master", "") },
			repo:    DownstreamRepo{Path: "delta/foo", Description: "new text is for Finish"},
			wantURL: func(*fakeGitLabDS) string { return "git@gitlab.example.com:delta/foo.git" },
		},
		{
			name:   "https push URL with the token",
			setup:  func(f *fakeGitLabDS) { f.addProject("delta/foo", "master", "") },
			config: func(c *DownstreamConfig) { c.PushProtocol = "https" },
			repo:   DownstreamRepo{Path: "delta/foo"},
			wantURL: func(f *fakeGitLabDS) string {
				return strings.Replace(f.srv.URL, "://", "://oauth2:"+fakeGLDSToken+"@", 1) + "/delta/foo.git"
			},
		},
		{
			name: "project created by someone else meanwhile",
			setup: func(f *fakeGitLabDS) {
				f.addGroup("delta")
				f.beforeCreateProject = func(f *fakeGitLabDS) { f.addProject("delta/foo", "", "") }
			},
			repo: DownstreamRepo{Path: "delta/foo"},
			wantChanges: []string{
				`POST /api/v4/projects {"name":"foo","namespace_id":1,"path":"foo","visibility":"private"}`,
			},
			wantURL: func(*fakeGitLabDS) string { return "git@gitlab.example.com:delta/foo.git" },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitLabDS(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			d := newTestGitLabDS(t, f, tc.config)
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

			// A second Prepare finds everything and creates nothing more.
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

func TestGitLabDownstreamPushURLShape(t *testing.T) {
	f := newFakeGitLabDS(t)
	d := newTestGitLabDS(t, f, func(c *DownstreamConfig) { c.PushProtocol = "https" })
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
	if u.Scheme != base.Scheme || u.Host != base.Host || u.User.Username() != "oauth2" || pw != fakeGLDSToken || u.Path != "/delta/gnome/glib.git" {
		t.Errorf("push URL = %q; want %s://oauth2:<token>@%s/delta/gnome/glib.git", got, base.Scheme, base.Host)
	}
}

func TestGitLabDownstreamFinish(t *testing.T) {
	tests := []struct {
		name        string
		repo        DownstreamRepo
		wantChanges func(id int64) []string
		wantBranch  string
		wantDesc    string
	}{
		{
			name: "default branch differs",
			repo: DownstreamRepo{Path: "delta/foo", DefaultBranch: "master"},
			wantChanges: func(id int64) []string {
				return []string{fmt.Sprintf(`PUT /api/v4/projects/%d {"default_branch":"master"}`, id)}
			},
			wantBranch: "master", wantDesc: "Foo",
		},
		{
			name: "description differs",
			repo: DownstreamRepo{Path: "delta/foo", DefaultBranch: "main", Description: "Foo, the library"},
			wantChanges: func(id int64) []string {
				return []string{fmt.Sprintf(`PUT /api/v4/projects/%d {"description":"Foo, the library"}`, id)}
			},
			wantBranch: "main", wantDesc: "Foo, the library",
		},
		{
			name:        "both already right",
			repo:        DownstreamRepo{Path: "delta/foo", DefaultBranch: "main", Description: "Foo"},
			wantChanges: func(int64) []string { return nil },
			wantBranch:  "main", wantDesc: "Foo",
		},
		{
			name:        "upstream's unknown",
			repo:        DownstreamRepo{Path: "delta/foo"},
			wantChanges: func(int64) []string { return nil },
			wantBranch:  "main", wantDesc: "Foo",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitLabDS(t)
			p := f.addProject("delta/foo", "main", "Foo")
			d := newTestGitLabDS(t, f, nil)
			if err := d.Finish(context.Background(), tc.repo); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			if got, want := f.recorded(), tc.wantChanges(p.ID); !reflect.DeepEqual(got, want) {
				t.Errorf("calls that change something:\n got %q\nwant %q", got, want)
			}
			if p := f.projectCopy("delta/foo"); p.DefBranch != tc.wantBranch || p.Description != tc.wantDesc {
				t.Errorf("project has default branch %q, description %q; want %q, %q", p.DefBranch, p.Description, tc.wantBranch, tc.wantDesc)
			}
		})
	}
}

// A project just created reports GitLab's default branch name, not the
// upstream's, until Finish sets it.
func TestGitLabDownstreamFinishAfterCreate(t *testing.T) {
	f := newFakeGitLabDS(t)
	d := newTestGitLabDS(t, f, nil)
	repo := DownstreamRepo{Path: "delta/foo", DefaultBranch: "trunk"}
	if _, err := d.Prepare(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	if p := f.projectCopy("delta/foo"); p == nil || p.DefBranch != "trunk" {
		t.Errorf("project after Finish = %+v; want default branch trunk", p)
	}
}

func TestGitLabDownstreamErrors(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(f *fakeGitLabDS)
		token       string
		path        string
		wantErr     []string
		wantChanges []string
	}{
		{
			name:    "group creation forbidden",
			setup:   func(f *fakeGitLabDS) { f.forbidGroups = true },
			path:    "delta/foo",
			wantErr: []string{"delta/foo", "create group delta", "POST /api/v4/groups", "403 Forbidden"},
			wantChanges: []string{
				`POST /api/v4/groups {"name":"delta","path":"delta","visibility":"private"}`,
			},
		},
		{
			name:    "wrong token",
			token:   "glpat-wrong",
			path:    "delta/foo",
			wantErr: []string{"GET /api/v4/projects/delta%2Ffoo", "401 Unauthorized"},
		},
		{
			name:    "project that differs in case",
			setup:   func(f *fakeGitLabDS) { f.addProject("Delta/Foo", "master", "") },
			path:    "delta/foo",
			wantErr: []string{"Delta/Foo", "differing in case"},
		},
		{
			name:    "group that differs in case",
			setup:   func(f *fakeGitLabDS) { f.addGroup("Delta") },
			path:    "delta/foo",
			wantErr: []string{"group delta", "Delta", "differing in case"},
		},
		{
			name:    "a path with no group",
			path:    "foo",
			wantErr: []string{`"foo"`, "at least 2 segments"},
		},
		{
			name:    "a path that climbs",
			path:    "delta/../foo",
			wantErr: []string{`".." segment`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitLabDS(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			token := fakeGLDSToken
			if tc.token != "" {
				token = tc.token
			}
			d := newTestGitLabDS(t, f, func(c *DownstreamConfig) {
				c.TokenFile = writeDSTokenFile(t, token)
				c.PushProtocol = "https"
			})
			got, err := d.Prepare(context.Background(), DownstreamRepo{Path: tc.path})
			if err == nil {
				t.Fatalf("Prepare = %q; want an error", got)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q; want it to contain %q", err, want)
				}
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %q shows the token", err)
			}
			if changes := f.recorded(); !reflect.DeepEqual(changes, tc.wantChanges) {
				t.Errorf("calls that change something:\n got %q\nwant %q", changes, tc.wantChanges)
			}
			f.checkTokenNotInURLs(t)
		})
	}
}

func TestGitLabDSMessage(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{name: "string", body: `{"message":"404 Project Not Found"}`, want: "404 Project Not Found"},
		{name: "validation", body: `{"message":{"path":["has already been taken"],"name":["has already been taken","is too short"]}}`,
			want: "name has already been taken, is too short; path has already been taken"},
		{name: "parameter error", body: `{"error":"name is missing"}`, want: "name is missing"},
		{name: "not JSON", body: "<html>502 Bad Gateway</html>", want: "<html>502 Bad Gateway</html>"},
	}
	for _, tc := range tests {
		if got := gitlabDSMessage([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: gitlabDSMessage(%s) = %q; want %q", tc.name, tc.body, got, tc.want)
		}
	}
}
