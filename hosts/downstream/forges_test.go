package downstream

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/hosts/hoststest"
)

const (
	fakeGLDSToken = "glpat-s3cr3tT0ken"
	fakeGTDSToken = "0123456789abcdef0123456789abcdef01234567"
)

// dsFake is a fake forge as the tests of every forge use it. Its
// repositories are named by lorry path, which each forge maps to its own
// names.
type dsFake struct {
	url      string
	changes  func() []string
	requests func() []hoststest.Request
	// addNamespace adds a group (GitLab) or the organisation of its
	// first segment (Gitea).
	addNamespace func(path string)
	// addRepo adds a private repository, as an administrator would have
	// made it, and returns its id.
	addRepo func(path, defaultBranch, description string) int64
	// repo is the default branch and description of a repository.
	repo func(path string) (defaultBranch, description string, ok bool)
	// beforeCreate has fn run when a repository creation arrives.
	beforeCreate func(fn func())
	// forbidCreate refuses the token the creation a forge needs most:
	// groups on GitLab, repositories on Gitea.
	forbidCreate func()
}

// dsForge is a forge a downstream is pointed at: the downstream's type,
// the one token its fake takes, and how to start the fake.
type dsForge struct {
	name, typ, token string
	start            func(t *testing.T) dsFake
}

var gitlabDS = dsForge{name: "gitlab", typ: TypeGitLab, token: fakeGLDSToken, start: func(t *testing.T) dsFake {
	f := newGitLabDS(t)
	return dsFake{
		url: f.URL(), changes: f.Changes, requests: f.Requests,
		addNamespace: func(path string) { f.AddGroup(path) },
		addRepo: func(path, defaultBranch, description string) int64 {
			return addGitLabProject(f, path, defaultBranch, description)
		},
		repo: func(path string) (string, string, bool) {
			p, ok := f.Project(path)
			return p.DefaultBranch, p.Description, ok
		},
		beforeCreate: f.BeforeCreateProject,
		forbidCreate: func() { f.SetCanCreateGroups(false) },
	}
}}

var giteaDS = dsForge{name: "gitea", typ: TypeGitea, token: fakeGTDSToken, start: func(t *testing.T) dsFake {
	f := newGiteaDS(t)
	name := func(path string) (string, string) {
		org, repo, err := GiteaRepoName(path)
		if err != nil {
			t.Fatal(err)
		}
		return org, repo
	}
	return dsFake{
		url: f.URL(), changes: f.Changes, requests: f.Requests,
		addNamespace: func(path string) { f.AddOrg(strings.Split(path, "/")[0]) },
		addRepo: func(path, defaultBranch, description string) int64 {
			org, repo := name(path)
			return f.AddRepo(hoststest.GiteaRepo{Owner: org, Name: repo, DefaultBranch: defaultBranch, Description: description, Private: true})
		},
		repo: func(path string) (string, string, bool) {
			r, ok := f.Repo(name(path))
			return r.DefaultBranch, r.Description, ok
		},
		beforeCreate: f.BeforeCreateRepo,
		forbidCreate: func() { f.SetCanCreateRepos(false) },
	}
}}

// newTestDS returns the downstream of forge fc pointed at hostURL, with the
// token in a file as an operator would keep it.
func newTestDS(t *testing.T, fc dsForge, hostURL, token string, mod func(*Config)) Host {
	t.Helper()
	cfg := Config{Type: fc.typ, Host: hostURL, TokenFile: writeDSTokenFile(t, token)}
	if mod != nil {
		mod(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
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

// checkTokenNotInURLs fails if the token was ever sent outside a header.
func checkTokenNotInURLs(t *testing.T, reqs []hoststest.Request, token string) {
	t.Helper()
	for _, r := range reqs {
		if strings.Contains(r.URL, token) {
			t.Errorf("token sent in URL %s", r.URL)
		}
	}
}

// checkHTTPSPushURL checks that an https push URL is the fake's scheme
// and host, with the token as the password of oauth2, and wantPath.
func checkHTTPSPushURL(t *testing.T, got, base, token, wantPath string) {
	t.Helper()
	u, err := url.Parse(got)
	if err != nil {
		t.Fatalf("push URL %q does not parse: %v", got, err)
	}
	pw, _ := u.User.Password()
	b, _ := url.Parse(base)
	if u.Scheme != b.Scheme || u.Host != b.Host || u.User.Username() != "oauth2" || pw != token || u.Path != wantPath {
		t.Errorf("push URL = %q; want %s://oauth2:<token>@%s%s", got, b.Scheme, b.Host, wantPath)
	}
}

// Prepare creates what is missing in the right group or organisation,
// with the configured visibility, returns the URL to push to, and a
// second Prepare finds it all and creates nothing.
func TestForgeDownstreamPrepare(t *testing.T) {
	type prepareCase struct {
		name   string
		setup  func(f dsFake)
		config func(c *Config)
		repo   Repo
		// wantURL is the ssh push URL; with https, wantPath is the path
		// of the push URL.
		wantURL, wantPath string
		wantChanges       []string
	}
	https := func(c *Config) { c.PushProtocol = "https" }
	forges := []struct {
		dsForge
		cases []prepareCase
	}{
		{gitlabDS, []prepareCase{
			{
				name: "creates the group, the subgroup and the project",
				repo: Repo{Path: "delta/gnome/glib", Description: "Low-level core library"},
				wantChanges: []string{
					`POST /api/v4/groups {"name":"delta","path":"delta","visibility":"private"}`,
					`POST /api/v4/groups {"name":"gnome","parent_id":1,"path":"gnome","visibility":"private"}`,
					`POST /api/v4/projects {"description":"Low-level core library","name":"glib","namespace_id":2,"path":"glib","visibility":"private"}`,
				},
				wantURL: "git@gitlab.example.com:delta/gnome/glib.git",
			},
			{
				name:  "creates only what is missing, under the existing group",
				setup: func(f dsFake) { f.addNamespace("delta/gnome") },
				repo:  Repo{Path: "delta/gnome/gtk/gtk4"},
				wantChanges: []string{
					`POST /api/v4/groups {"name":"gtk","parent_id":2,"path":"gtk","visibility":"private"}`,
					`POST /api/v4/projects {"name":"gtk4","namespace_id":3,"path":"gtk4","visibility":"private"}`,
				},
				wantURL: "git@gitlab.example.com:delta/gnome/gtk/gtk4.git",
			},
			{
				name:    "the configured visibility",
				config:  func(c *Config) { c.Visibility = "internal" },
				repo:    Repo{Path: "delta/foo"},
				wantURL: "git@gitlab.example.com:delta/foo.git",
				wantChanges: []string{
					`POST /api/v4/groups {"name":"delta","path":"delta","visibility":"internal"}`,
					`POST /api/v4/projects {"name":"foo","namespace_id":1,"path":"foo","visibility":"internal"}`,
				},
			},
			{
				name:    "nothing created when the project exists",
				setup:   func(f dsFake) { f.addRepo("delta/foo", "master", "") },
				repo:    Repo{Path: "delta/foo", Description: "new text is for Finish"},
				wantURL: "git@gitlab.example.com:delta/foo.git",
			},
			{
				name:     "https push URL with the token",
				setup:    func(f dsFake) { f.addRepo("delta/foo", "master", "") },
				config:   https,
				repo:     Repo{Path: "delta/foo"},
				wantPath: "/delta/foo.git",
			},
			{
				name:   "https push URL of a new project",
				config: https,
				repo:   Repo{Path: "delta/gnome/glib"},
				wantChanges: []string{
					`POST /api/v4/groups {"name":"delta","path":"delta","visibility":"private"}`,
					`POST /api/v4/groups {"name":"gnome","parent_id":1,"path":"gnome","visibility":"private"}`,
					`POST /api/v4/projects {"name":"glib","namespace_id":2,"path":"glib","visibility":"private"}`,
				},
				wantPath: "/delta/gnome/glib.git",
			},
			{
				name: "project created by someone else meanwhile",
				setup: func(f dsFake) {
					f.addNamespace("delta")
					f.beforeCreate(func() { f.addRepo("delta/foo", "", "") })
				},
				repo: Repo{Path: "delta/foo"},
				wantChanges: []string{
					`POST /api/v4/projects {"name":"foo","namespace_id":1,"path":"foo","visibility":"private"}`,
				},
				wantURL: "git@gitlab.example.com:delta/foo.git",
			},
		}},
		{giteaDS, []prepareCase{
			{
				name: "creates the organisation and the repository",
				repo: Repo{Path: "delta/gnome/glib", Description: "Low-level core library"},
				wantChanges: []string{
					`POST /api/v1/orgs {"username":"delta","visibility":"private"}`,
					`POST /api/v1/orgs/delta/repos {"description":"Low-level core library","name":"gnome--glib","private":true}`,
				},
				wantURL: "git@gitea.example.com:delta/gnome--glib.git",
			},
			{
				name:  "creates only the repository in an existing organisation",
				setup: func(f dsFake) { f.addNamespace("delta") },
				repo:  Repo{Path: "delta/glib", DefaultBranch: "master"},
				wantChanges: []string{
					`POST /api/v1/orgs/delta/repos {"default_branch":"master","name":"glib","private":true}`,
				},
				wantURL: "git@gitea.example.com:delta/glib.git",
			},
			{
				name:   "internal is a limited organisation with a repository that is not private",
				config: func(c *Config) { c.Visibility = "internal" },
				repo:   Repo{Path: "delta/glib"},
				wantChanges: []string{
					`POST /api/v1/orgs {"username":"delta","visibility":"limited"}`,
					`POST /api/v1/orgs/delta/repos {"name":"glib","private":false}`,
				},
				wantURL: "git@gitea.example.com:delta/glib.git",
			},
			{
				name:   "public",
				config: func(c *Config) { c.Visibility = "public" },
				repo:   Repo{Path: "delta/glib"},
				wantChanges: []string{
					`POST /api/v1/orgs {"username":"delta","visibility":"public"}`,
					`POST /api/v1/orgs/delta/repos {"name":"glib","private":false}`,
				},
				wantURL: "git@gitea.example.com:delta/glib.git",
			},
			{
				name:    "nothing created when the repository exists",
				setup:   func(f dsFake) { f.addRepo("delta/gnome/glib", "master", "") },
				repo:    Repo{Path: "delta/gnome/glib"},
				wantURL: "git@gitea.example.com:delta/gnome--glib.git",
			},
			{
				name:     "https push URL with the token",
				setup:    func(f dsFake) { f.addRepo("delta/glib", "master", "") },
				config:   https,
				repo:     Repo{Path: "delta/glib"},
				wantPath: "/delta/glib.git",
			},
			{
				name:   "https push URL of a new repository",
				config: https,
				repo:   Repo{Path: "delta/gnome/glib"},
				wantChanges: []string{
					`POST /api/v1/orgs {"username":"delta","visibility":"private"}`,
					`POST /api/v1/orgs/delta/repos {"name":"gnome--glib","private":true}`,
				},
				wantPath: "/delta/gnome--glib.git",
			},
			{
				name: "repository created by someone else meanwhile",
				setup: func(f dsFake) {
					f.addNamespace("delta")
					f.beforeCreate(func() { f.addRepo("delta/glib", "main", "") })
				},
				repo: Repo{Path: "delta/glib"},
				wantChanges: []string{
					`POST /api/v1/orgs/delta/repos {"name":"glib","private":true}`,
				},
				wantURL: "git@gitea.example.com:delta/glib.git",
			},
		}},
	}
	for _, fc := range forges {
		for _, tc := range fc.cases {
			t.Run(fc.name+"/"+tc.name, func(t *testing.T) {
				f := fc.start(t)
				if tc.setup != nil {
					tc.setup(f)
				}
				d := newTestDS(t, fc.dsForge, f.url, fc.token, tc.config)
				got, err := d.Prepare(context.Background(), tc.repo)
				if err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				if tc.wantPath != "" {
					checkHTTPSPushURL(t, got, f.url, fc.token, tc.wantPath)
					if want := strings.Replace(f.url, "://", "://oauth2:"+fc.token+"@", 1) + tc.wantPath; got != want {
						t.Errorf("push URL = %q; want %q", got, want)
					}
				} else if got != tc.wantURL {
					t.Errorf("push URL = %q; want %q", got, tc.wantURL)
				}
				if changes := f.changes(); !reflect.DeepEqual(changes, tc.wantChanges) {
					t.Errorf("calls that change something:\n got %q\nwant %q", changes, tc.wantChanges)
				}
				checkTokenNotInURLs(t, f.requests(), fc.token)

				// A second Prepare finds everything and creates nothing more.
				again, err := d.Prepare(context.Background(), tc.repo)
				if err != nil || again != got {
					t.Errorf("second Prepare = %q, %v; want %q", again, err, got)
				}
				if changes := f.changes(); len(changes) != len(tc.wantChanges) {
					t.Errorf("second Prepare changed something: %q", changes[len(tc.wantChanges):])
				}
			})
		}
	}
}

// Finish sets the default branch and the description the upstream gave,
// where they differ, and leaves alone what the upstream did not say.
// "{id}" in a wanted change is the id of the repository.
func TestForgeDownstreamFinish(t *testing.T) {
	type finishCase struct {
		name                 string
		repo                 Repo
		wantChanges          []string
		wantBranch, wantDesc string
	}
	// Every case starts from this repository.
	const path, branch, desc = "delta/glib", "main", "GLib"
	forges := []struct {
		dsForge
		cases []finishCase
	}{
		{gitlabDS, []finishCase{
			{
				name:        "default branch differs",
				repo:        Repo{Path: path, DefaultBranch: "master"},
				wantChanges: []string{`PUT /api/v4/projects/{id} {"default_branch":"master"}`},
				wantBranch:  "master", wantDesc: desc,
			},
			{
				name:        "description differs",
				repo:        Repo{Path: path, DefaultBranch: branch, Description: "GLib, the library"},
				wantChanges: []string{`PUT /api/v4/projects/{id} {"description":"GLib, the library"}`},
				wantBranch:  branch, wantDesc: "GLib, the library",
			},
			{
				name:        "both differ",
				repo:        Repo{Path: path, DefaultBranch: "master", Description: "GLib, the library"},
				wantChanges: []string{`PUT /api/v4/projects/{id} {"default_branch":"master","description":"GLib, the library"}`},
				wantBranch:  "master", wantDesc: "GLib, the library",
			},
			{name: "both already right", repo: Repo{Path: path, DefaultBranch: branch, Description: desc}, wantBranch: branch, wantDesc: desc},
			{name: "upstream's unknown", repo: Repo{Path: path}, wantBranch: branch, wantDesc: desc},
		}},
		{giteaDS, []finishCase{
			{
				name:        "default branch differs",
				repo:        Repo{Path: path, DefaultBranch: "master"},
				wantChanges: []string{`PATCH /api/v1/repos/delta/glib {"default_branch":"master"}`},
				wantBranch:  "master", wantDesc: desc,
			},
			{
				name:        "description differs",
				repo:        Repo{Path: path, DefaultBranch: branch, Description: "GLib, the library"},
				wantChanges: []string{`PATCH /api/v1/repos/delta/glib {"description":"GLib, the library"}`},
				wantBranch:  branch, wantDesc: "GLib, the library",
			},
			{
				name:        "both differ",
				repo:        Repo{Path: path, DefaultBranch: "master", Description: "GLib, the library"},
				wantChanges: []string{`PATCH /api/v1/repos/delta/glib {"default_branch":"master","description":"GLib, the library"}`},
				wantBranch:  "master", wantDesc: "GLib, the library",
			},
			{name: "both already right", repo: Repo{Path: path, DefaultBranch: branch, Description: desc}, wantBranch: branch, wantDesc: desc},
			{name: "upstream's unknown", repo: Repo{Path: path}, wantBranch: branch, wantDesc: desc},
		}},
	}
	for _, fc := range forges {
		for _, tc := range fc.cases {
			t.Run(fc.name+"/"+tc.name, func(t *testing.T) {
				f := fc.start(t)
				id := f.addRepo(path, branch, desc)
				d := newTestDS(t, fc.dsForge, f.url, fc.token, nil)
				if err := d.Finish(context.Background(), tc.repo); err != nil {
					t.Fatalf("Finish: %v", err)
				}
				var want []string
				for _, c := range tc.wantChanges {
					want = append(want, strings.ReplaceAll(c, "{id}", strconv.FormatInt(id, 10)))
				}
				if got := f.changes(); !reflect.DeepEqual(got, want) {
					t.Errorf("calls that change something:\n got %q\nwant %q", got, want)
				}
				if b, d, _ := f.repo(path); b != tc.wantBranch || d != tc.wantDesc {
					t.Errorf("repository has default branch %q, description %q; want %q, %q", b, d, tc.wantBranch, tc.wantDesc)
				}
			})
		}
	}
}

// A repository that Prepare just created has the upstream's default
// branch once Finish is done, whatever the forge gave it on creation.
func TestForgeDownstreamFinishAfterCreate(t *testing.T) {
	for _, fc := range []dsForge{gitlabDS, giteaDS} {
		t.Run(fc.name, func(t *testing.T) {
			f := fc.start(t)
			d := newTestDS(t, fc, f.url, fc.token, nil)
			repo := Repo{Path: "delta/foo", DefaultBranch: "trunk"}
			if _, err := d.Prepare(context.Background(), repo); err != nil {
				t.Fatal(err)
			}
			if err := d.Finish(context.Background(), repo); err != nil {
				t.Fatal(err)
			}
			if b, _, ok := f.repo("delta/foo"); !ok || b != "trunk" {
				t.Errorf("repository after Finish has default branch %q, exists %v; want trunk", b, ok)
			}
		})
	}
}

// A Prepare that fails says which repository and what the host answered,
// never shows the token, and changes nothing it need not.
func TestForgeDownstreamErrors(t *testing.T) {
	type errorCase struct {
		name        string
		setup       func(f dsFake)
		token       string // the token the downstream is given, if not the right one
		path        string
		wantErr     []string
		wantChanges []string
	}
	forges := []struct {
		dsForge
		cases []errorCase
	}{
		{gitlabDS, []errorCase{
			{
				name:    "group creation forbidden",
				setup:   func(f dsFake) { f.forbidCreate() },
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
				setup:   func(f dsFake) { f.addRepo("Delta/Foo", "master", "") },
				path:    "delta/foo",
				wantErr: []string{"Delta/Foo", "differing in case"},
			},
			{
				name:    "group that differs in case",
				setup:   func(f dsFake) { f.addNamespace("Delta") },
				path:    "delta/foo",
				wantErr: []string{"group delta", "Delta", "differing in case"},
			},
			{name: "a path with no group", path: "foo", wantErr: []string{`"foo"`, "at least 2 segments"}},
			{name: "a path that climbs", path: "delta/../foo", wantErr: []string{`".." segment`}},
		}},
		{giteaDS, []errorCase{
			{
				name: "repository creation forbidden",
				setup: func(f dsFake) {
					f.addNamespace("delta")
					f.forbidCreate()
				},
				path: "delta/glib",
				wantErr: []string{"delta/glib", "create repository", "POST /api/v1/orgs/delta/repos", "403 Forbidden",
					"Given user is not allowed to create repository in organization."},
				wantChanges: []string{`POST /api/v1/orgs/delta/repos {"name":"glib","private":true}`},
			},
			{
				name:    "wrong token",
				token:   "0123456789abcdef0123456789abcdefwrong000",
				path:    "delta/glib",
				wantErr: []string{"GET /api/v1/repos/delta/glib", "401 Unauthorized"},
			},
			{
				name:    "repository that differs in case",
				setup:   func(f dsFake) { f.addRepo("Delta/GLib", "main", "") },
				path:    "delta/glib",
				wantErr: []string{"Delta/GLib", "differing in case"},
			},
			{name: "ambiguous path", path: "delta/gnome--glib", wantErr: []string{"ambiguous"}},
			{name: "a path with no organisation", path: "glib", wantErr: []string{`"glib"`, "at least 2 segments"}},
			{name: "a path that climbs", path: "delta/../glib", wantErr: []string{`".." segment`}},
		}},
	}
	for _, fc := range forges {
		for _, tc := range fc.cases {
			t.Run(fc.name+"/"+tc.name, func(t *testing.T) {
				f := fc.start(t)
				if tc.setup != nil {
					tc.setup(f)
				}
				token := fc.token
				if tc.token != "" {
					token = tc.token
				}
				d := newTestDS(t, fc.dsForge, f.url, token, func(c *Config) { c.PushProtocol = "https" })
				got, err := d.Prepare(context.Background(), Repo{Path: tc.path})
				if err == nil {
					t.Fatalf("Prepare = %q; want an error", got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q; want it to contain %q", err, want)
					}
				}
				for _, tok := range []string{token, fc.token} {
					if strings.Contains(err.Error(), tok) {
						t.Errorf("error %q shows the token", err)
					}
				}
				if changes := f.changes(); !reflect.DeepEqual(changes, tc.wantChanges) {
					t.Errorf("calls that change something:\n got %q\nwant %q", changes, tc.wantChanges)
				}
				checkTokenNotInURLs(t, f.requests(), token)
			})
		}
	}
}
