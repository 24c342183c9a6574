package downstream

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lorrycontroller/hosts/hoststest"
)

const fakeGLDSToken = "glpat-s3cr3tT0ken"

// newGitLabDS starts a fake GitLab for the gitlab downstream, whose ssh
// URLs name gitlab.example.com.
func newGitLabDS(t *testing.T) *hoststest.GitLab {
	return hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: fakeGLDSToken, SSHHost: "gitlab.example.com"})
}

// addGitLabProject adds a private project, as an administrator would
// have made it, and returns its id.
func addGitLabProject(f *hoststest.GitLab, fullPath, defaultBranch, description string) int64 {
	i := strings.LastIndex(fullPath, "/")
	return f.AddProject(hoststest.GitLabProject{Namespace: fullPath[:i], Path: fullPath[i+1:],
		DefaultBranch: defaultBranch, Description: description, Visibility: "private"})
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

func newTestGitLabDS(t *testing.T, f *hoststest.GitLab, mod func(*Config)) Host {
	t.Helper()
	cfg := Config{Type: TypeGitLab, Host: f.URL(), TokenFile: writeDSTokenFile(t, fakeGLDSToken)}
	if mod != nil {
		mod(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestGitLabDownstreamPrepare(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(f *hoststest.GitLab)
		config      func(c *Config)
		repo        Repo
		wantURL     func(f *hoststest.GitLab) string
		wantChanges []string
	}{
		{
			name: "creates the group, the subgroup and the project",
			repo: Repo{Path: "delta/gnome/glib", Description: "Low-level core library"},
			wantChanges: []string{
				`POST /api/v4/groups {"name":"delta","path":"delta","visibility":"private"}`,
				`POST /api/v4/groups {"name":"gnome","parent_id":1,"path":"gnome","visibility":"private"}`,
				`POST /api/v4/projects {"description":"Low-level core library","name":"glib","namespace_id":2,"path":"glib","visibility":"private"}`,
			},
			wantURL: func(*hoststest.GitLab) string { return "git@gitlab.example.com:delta/gnome/glib.git" },
		},
		{
			name:  "creates only what is missing, under the existing group",
			setup: func(f *hoststest.GitLab) { f.AddGroup("delta/gnome") },
			repo:  Repo{Path: "delta/gnome/gtk/gtk4"},
			wantChanges: []string{
				`POST /api/v4/groups {"name":"gtk","parent_id":2,"path":"gtk","visibility":"private"}`,
				`POST /api/v4/projects {"name":"gtk4","namespace_id":3,"path":"gtk4","visibility":"private"}`,
			},
			wantURL: func(*hoststest.GitLab) string { return "git@gitlab.example.com:delta/gnome/gtk/gtk4.git" },
		},
		{
			name:    "the configured visibility",
			config:  func(c *Config) { c.Visibility = "internal" },
			repo:    Repo{Path: "delta/foo"},
			wantURL: func(*hoststest.GitLab) string { return "git@gitlab.example.com:delta/foo.git" },
			wantChanges: []string{
				`POST /api/v4/groups {"name":"delta","path":"delta","visibility":"internal"}`,
				`POST /api/v4/projects {"name":"foo","namespace_id":1,"path":"foo","visibility":"internal"}`,
			},
		},
		{
			name:    "nothing created when the project exists",
			setup:   func(f *hoststest.GitLab) { addGitLabProject(f, "delta/foo", "master", "") },
			repo:    Repo{Path: "delta/foo", Description: "new text is for Finish"},
			wantURL: func(*hoststest.GitLab) string { return "git@gitlab.example.com:delta/foo.git" },
		},
		{
			name:   "https push URL with the token",
			setup:  func(f *hoststest.GitLab) { addGitLabProject(f, "delta/foo", "master", "") },
			config: func(c *Config) { c.PushProtocol = "https" },
			repo:   Repo{Path: "delta/foo"},
			wantURL: func(f *hoststest.GitLab) string {
				return strings.Replace(f.URL(), "://", "://oauth2:"+fakeGLDSToken+"@", 1) + "/delta/foo.git"
			},
		},
		{
			name: "project created by someone else meanwhile",
			setup: func(f *hoststest.GitLab) {
				f.AddGroup("delta")
				f.BeforeCreateProject(func() { addGitLabProject(f, "delta/foo", "", "") })
			},
			repo: Repo{Path: "delta/foo"},
			wantChanges: []string{
				`POST /api/v4/projects {"name":"foo","namespace_id":1,"path":"foo","visibility":"private"}`,
			},
			wantURL: func(*hoststest.GitLab) string { return "git@gitlab.example.com:delta/foo.git" },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newGitLabDS(t)
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
			if changes := f.Changes(); !reflect.DeepEqual(changes, tc.wantChanges) {
				t.Errorf("calls that change something:\n got %q\nwant %q", changes, tc.wantChanges)
			}
			checkTokenNotInURLs(t, f.Requests(), fakeGLDSToken)

			// A second Prepare finds everything and creates nothing more.
			again, err := d.Prepare(context.Background(), tc.repo)
			if err != nil || again != got {
				t.Errorf("second Prepare = %q, %v; want %q", again, err, got)
			}
			if changes := f.Changes(); len(changes) != len(tc.wantChanges) {
				t.Errorf("second Prepare changed something: %q", changes[len(tc.wantChanges):])
			}
		})
	}
}

func TestGitLabDownstreamPushURLShape(t *testing.T) {
	f := newGitLabDS(t)
	d := newTestGitLabDS(t, f, func(c *Config) { c.PushProtocol = "https" })
	got, err := d.Prepare(context.Background(), Repo{Path: "delta/gnome/glib"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(got)
	if err != nil {
		t.Fatalf("push URL %q does not parse: %v", got, err)
	}
	pw, _ := u.User.Password()
	base, _ := url.Parse(f.URL())
	if u.Scheme != base.Scheme || u.Host != base.Host || u.User.Username() != "oauth2" || pw != fakeGLDSToken || u.Path != "/delta/gnome/glib.git" {
		t.Errorf("push URL = %q; want %s://oauth2:<token>@%s/delta/gnome/glib.git", got, base.Scheme, base.Host)
	}
}

func TestGitLabDownstreamFinish(t *testing.T) {
	tests := []struct {
		name        string
		repo        Repo
		wantChanges func(id int64) []string
		wantBranch  string
		wantDesc    string
	}{
		{
			name: "default branch differs",
			repo: Repo{Path: "delta/foo", DefaultBranch: "master"},
			wantChanges: func(id int64) []string {
				return []string{fmt.Sprintf(`PUT /api/v4/projects/%d {"default_branch":"master"}`, id)}
			},
			wantBranch: "master", wantDesc: "Foo",
		},
		{
			name: "description differs",
			repo: Repo{Path: "delta/foo", DefaultBranch: "main", Description: "Foo, the library"},
			wantChanges: func(id int64) []string {
				return []string{fmt.Sprintf(`PUT /api/v4/projects/%d {"description":"Foo, the library"}`, id)}
			},
			wantBranch: "main", wantDesc: "Foo, the library",
		},
		{
			name:        "both already right",
			repo:        Repo{Path: "delta/foo", DefaultBranch: "main", Description: "Foo"},
			wantChanges: func(int64) []string { return nil },
			wantBranch:  "main", wantDesc: "Foo",
		},
		{
			name:        "upstream's unknown",
			repo:        Repo{Path: "delta/foo"},
			wantChanges: func(int64) []string { return nil },
			wantBranch:  "main", wantDesc: "Foo",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newGitLabDS(t)
			id := addGitLabProject(f, "delta/foo", "main", "Foo")
			d := newTestGitLabDS(t, f, nil)
			if err := d.Finish(context.Background(), tc.repo); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			if got, want := f.Changes(), tc.wantChanges(id); !reflect.DeepEqual(got, want) {
				t.Errorf("calls that change something:\n got %q\nwant %q", got, want)
			}
			if p, _ := f.Project("delta/foo"); p.DefaultBranch != tc.wantBranch || p.Description != tc.wantDesc {
				t.Errorf("project has default branch %q, description %q; want %q, %q", p.DefaultBranch, p.Description, tc.wantBranch, tc.wantDesc)
			}
		})
	}
}

// A project just created reports GitLab's default branch name, not the
// upstream's, until Finish sets it.
func TestGitLabDownstreamFinishAfterCreate(t *testing.T) {
	f := newGitLabDS(t)
	d := newTestGitLabDS(t, f, nil)
	repo := Repo{Path: "delta/foo", DefaultBranch: "trunk"}
	if _, err := d.Prepare(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	if p, ok := f.Project("delta/foo"); !ok || p.DefaultBranch != "trunk" {
		t.Errorf("project after Finish = %+v, %v; want default branch trunk", p, ok)
	}
}

func TestGitLabDownstreamErrors(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(f *hoststest.GitLab)
		token       string
		path        string
		wantErr     []string
		wantChanges []string
	}{
		{
			name:    "group creation forbidden",
			setup:   func(f *hoststest.GitLab) { f.SetCanCreateGroups(false) },
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
			setup:   func(f *hoststest.GitLab) { addGitLabProject(f, "Delta/Foo", "master", "") },
			path:    "delta/foo",
			wantErr: []string{"Delta/Foo", "differing in case"},
		},
		{
			name:    "group that differs in case",
			setup:   func(f *hoststest.GitLab) { f.AddGroup("Delta") },
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
			f := newGitLabDS(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			token := fakeGLDSToken
			if tc.token != "" {
				token = tc.token
			}
			d := newTestGitLabDS(t, f, func(c *Config) {
				c.TokenFile = writeDSTokenFile(t, token)
				c.PushProtocol = "https"
			})
			got, err := d.Prepare(context.Background(), Repo{Path: tc.path})
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
			if changes := f.Changes(); !reflect.DeepEqual(changes, tc.wantChanges) {
				t.Errorf("calls that change something:\n got %q\nwant %q", changes, tc.wantChanges)
			}
			checkTokenNotInURLs(t, f.Requests(), token)
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
