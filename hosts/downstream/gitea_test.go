package downstream

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/hosts/hoststest"
)

// newGiteaDS starts a fake Gitea for the gitea downstream, whose ssh URLs
// name gitea.example.com.
func newGiteaDS(t *testing.T) *hoststest.Gitea {
	return hoststest.NewGitea(t, hoststest.GiteaOptions{Token: fakeGTDSToken, SSHHost: "gitea.example.com"})
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

// Gitea's users and organisations share one namespace: a first segment
// that names a user cannot become an organisation.
func TestGiteaDownstreamOrgIsAUser(t *testing.T) {
	f := newGiteaDS(t)
	f.AddUser("alice")
	d := newTestDS(t, giteaDS, f.URL(), fakeGTDSToken, func(c *Config) { c.PushProtocol = "https" })
	got, err := d.Prepare(context.Background(), Repo{Path: "alice/glib"})
	if err == nil {
		t.Fatalf("Prepare = %q; want an error", got)
	}
	for _, want := range []string{"create organisation alice", "422 Unprocessable Entity", "user already exists [name: alice]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q; want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), fakeGTDSToken) {
		t.Errorf("error %q shows the token", err)
	}
	want := []string{`POST /api/v1/orgs {"username":"alice","visibility":"private"}`}
	if changes := f.Changes(); !reflect.DeepEqual(changes, want) {
		t.Errorf("calls that change something:\n got %q\nwant %q", changes, want)
	}
	checkTokenNotInURLs(t, f.Requests(), fakeGTDSToken)
}
