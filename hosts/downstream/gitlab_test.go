package downstream

import (
	"strings"
	"testing"

	"lorrycontroller.dev/lc/hosts/hoststest"
)

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
