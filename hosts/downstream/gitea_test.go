package downstream

import (
	"context"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"lorrycontroller/hosts/hoststest"
)

const fakeGTDSToken = "0123456789abcdef0123456789abcdef01234567"

// newGiteaDS starts a fake Gitea for the gitea downstream, whose ssh URLs
// name gitea.example.com.
func newGiteaDS(t *testing.T) *hoststest.Gitea {
	return hoststest.NewGitea(t, hoststest.GiteaOptions{Token: fakeGTDSToken, SSHHost: "gitea.example.com"})
}

// addGiteaRepo adds a private repository, as an administrator would have
// made it.
func addGiteaRepo(f *hoststest.Gitea, owner, name, defaultBranch, description string) {
	f.AddRepo(hoststest.GiteaRepo{Owner: owner, Name: name, DefaultBranch: defaultBranch, Description: description, Private: true})
}

func newTestGiteaDS(t *testing.T, f *hoststest.Gitea, mod func(*Config)) Host {
	t.Helper()
	cfg := Config{Type: TypeGitea, Host: f.URL(), TokenFile: writeDSTokenFile(t, fakeGTDSToken)}
	if mod != nil {
		mod(&cfg)
	}
	d, err := New(cfg)
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
		setup       func(f *hoststest.Gitea)
		config      func(c *Config)
		repo        Repo
		wantURL     func(f *hoststest.Gitea) string
		wantChanges []string
	}{
		{
			name: "creates the organisation and the repository",
			repo: Repo{Path: "delta/gnome/glib", Description: "Low-level core library"},
			wantChanges: []string{
				`POST /api/v1/orgs {"username":"delta","visibility":"private"}`,
				`POST /api/v1/orgs/delta/repos {"description":"Low-level core library","name":"gnome--glib","private":true}`,
			},
			wantURL: func(*hoststest.Gitea) string { return "git@gitea.example.com:delta/gnome--glib.git" },
		},
		{
			name:  "creates only the repository in an existing organisation",
			setup: func(f *hoststest.Gitea) { f.AddOrg("delta") },
			repo:  Repo{Path: "delta/glib", DefaultBranch: "master"},
			wantChanges: []string{
				`POST /api/v1/orgs/delta/repos {"default_branch":"master","name":"glib","private":true}`,
			},
			wantURL: func(*hoststest.Gitea) string { return "git@gitea.example.com:delta/glib.git" },
		},
		{
			name:   "internal is a limited organisation with a repository that is not private",
			config: func(c *Config) { c.Visibility = "internal" },
			repo:   Repo{Path: "delta/glib"},
			wantChanges: []string{
				`POST /api/v1/orgs {"username":"delta","visibility":"limited"}`,
				`POST /api/v1/orgs/delta/repos {"name":"glib","private":false}`,
			},
			wantURL: func(*hoststest.Gitea) string { return "git@gitea.example.com:delta/glib.git" },
		},
		{
			name:   "public",
			config: func(c *Config) { c.Visibility = "public" },
			repo:   Repo{Path: "delta/glib"},
			wantChanges: []string{
				`POST /api/v1/orgs {"username":"delta","visibility":"public"}`,
				`POST /api/v1/orgs/delta/repos {"name":"glib","private":false}`,
			},
			wantURL: func(*hoststest.Gitea) string { return "git@gitea.example.com:delta/glib.git" },
		},
		{
			name:    "nothing created when the repository exists",
			setup:   func(f *hoststest.Gitea) { addGiteaRepo(f, "delta", "gnome--glib", "master", "") },
			repo:    Repo{Path: "delta/gnome/glib"},
			wantURL: func(*hoststest.Gitea) string { return "git@gitea.example.com:delta/gnome--glib.git" },
		},
		{
			name:   "https push URL with the token",
			setup:  func(f *hoststest.Gitea) { addGiteaRepo(f, "delta", "glib", "master", "") },
			config: func(c *Config) { c.PushProtocol = "https" },
			repo:   Repo{Path: "delta/glib"},
			wantURL: func(f *hoststest.Gitea) string {
				return strings.Replace(f.URL(), "://", "://oauth2:"+fakeGTDSToken+"@", 1) + "/delta/glib.git"
			},
		},
		{
			name: "repository created by someone else meanwhile",
			setup: func(f *hoststest.Gitea) {
				f.AddOrg("delta")
				f.BeforeCreateRepo(func() { addGiteaRepo(f, "delta", "glib", "main", "") })
			},
			repo: Repo{Path: "delta/glib"},
			wantChanges: []string{
				`POST /api/v1/orgs/delta/repos {"name":"glib","private":true}`,
			},
			wantURL: func(*hoststest.Gitea) string { return "git@gitea.example.com:delta/glib.git" },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newGiteaDS(t)
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
			if changes := f.Changes(); !reflect.DeepEqual(changes, tc.wantChanges) {
				t.Errorf("calls that change something:\n got %q\nwant %q", changes, tc.wantChanges)
			}
			checkTokenNotInURLs(t, f.Requests(), fakeGTDSToken)

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

func TestGiteaDownstreamPushURLShape(t *testing.T) {
	f := newGiteaDS(t)
	d := newTestGiteaDS(t, f, func(c *Config) { c.PushProtocol = "https" })
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
	if u.Scheme != base.Scheme || u.Host != base.Host || u.User.Username() != "oauth2" || pw != fakeGTDSToken || u.Path != "/delta/gnome--glib.git" {
		t.Errorf("push URL = %q; want %s://oauth2:<token>@%s/delta/gnome--glib.git", got, base.Scheme, base.Host)
	}
}

func TestGiteaDownstreamFinish(t *testing.T) {
	tests := []struct {
		name                 string
		repo                 Repo
		wantChanges          []string
		wantBranch, wantDesc string
	}{
		{
			name:        "default branch differs",
			repo:        Repo{Path: "delta/glib", DefaultBranch: "master"},
			wantChanges: []string{`PATCH /api/v1/repos/delta/glib {"default_branch":"master"}`},
			wantBranch:  "master", wantDesc: "GLib",
		},
		{
			name:        "both differ",
			repo:        Repo{Path: "delta/glib", DefaultBranch: "master", Description: "GLib, the library"},
			wantChanges: []string{`PATCH /api/v1/repos/delta/glib {"default_branch":"master","description":"GLib, the library"}`},
			wantBranch:  "master", wantDesc: "GLib, the library",
		},
		{
			name:       "both already right",
			repo:       Repo{Path: "delta/glib", DefaultBranch: "main", Description: "GLib"},
			wantBranch: "main", wantDesc: "GLib",
		},
		{
			name:       "upstream's unknown",
			repo:       Repo{Path: "delta/glib"},
			wantBranch: "main", wantDesc: "GLib",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newGiteaDS(t)
			addGiteaRepo(f, "delta", "glib", "main", "GLib")
			d := newTestGiteaDS(t, f, nil)
			if err := d.Finish(context.Background(), tc.repo); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			if got := f.Changes(); !reflect.DeepEqual(got, tc.wantChanges) {
				t.Errorf("calls that change something:\n got %q\nwant %q", got, tc.wantChanges)
			}
			if r, _ := f.Repo("delta", "glib"); r.DefaultBranch != tc.wantBranch || r.Description != tc.wantDesc {
				t.Errorf("repository has default branch %q, description %q; want %q, %q", r.DefaultBranch, r.Description, tc.wantBranch, tc.wantDesc)
			}
		})
	}
}

func TestGiteaDownstreamErrors(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(f *hoststest.Gitea)
		path        string
		wantErr     []string
		wantChanges []string
	}{
		{
			name: "repository creation forbidden",
			setup: func(f *hoststest.Gitea) {
				f.AddOrg("delta")
				f.SetCanCreateRepos(false)
			},
			path: "delta/glib",
			wantErr: []string{"delta/glib", "create repository", "POST /api/v1/orgs/delta/repos", "403 Forbidden",
				"Given user is not allowed to create repository in organization."},
			wantChanges: []string{`POST /api/v1/orgs/delta/repos {"name":"glib","private":true}`},
		},
		{
			name:        "first segment is a user",
			setup:       func(f *hoststest.Gitea) { f.AddUser("alice") },
			path:        "alice/glib",
			wantErr:     []string{"create organisation alice", "422 Unprocessable Entity", "user already exists [name: alice]"},
			wantChanges: []string{`POST /api/v1/orgs {"username":"alice","visibility":"private"}`},
		},
		{
			name:    "repository that differs in case",
			setup:   func(f *hoststest.Gitea) { addGiteaRepo(f, "Delta", "GLib", "main", "") },
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
			f := newGiteaDS(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			d := newTestGiteaDS(t, f, func(c *Config) { c.PushProtocol = "https" })
			got, err := d.Prepare(context.Background(), Repo{Path: tc.path})
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
			if changes := f.Changes(); !reflect.DeepEqual(changes, tc.wantChanges) {
				t.Errorf("calls that change something:\n got %q\nwant %q", changes, tc.wantChanges)
			}
			checkTokenNotInURLs(t, f.Requests(), fakeGTDSToken)
		})
	}
}
