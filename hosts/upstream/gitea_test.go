package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/hosts/hoststest"
)

// newGitea starts a fake Gitea with the user "user1" that
// hoststest.GiteaRepos gives some of repos to.
func newGitea(t testing.TB, opts hoststest.GiteaOptions, repos []hoststest.GiteaRepo) *hoststest.Gitea {
	f := hoststest.NewGitea(t, opts)
	f.AddUser("user1")
	f.AddRepos(repos)
	return f
}

// An instance may serve smaller pages than asked for, and an old one
// says nothing of how many there are: the lister asks on until a page
// comes back short.
func TestGiteaListPaging(t *testing.T) {
	all := giteaPaths(func(hoststest.GiteaRepo) bool { return true })
	tests := []listCase{
		{name: "instance with smaller pages", start: startGiteaList(hoststest.GiteaOptions{MaxResponseItems: 30}),
			extra: map[string]any{"token": gtListTok}, want: all, wantReqs: 9},
		{name: "old instance without headers", start: startGiteaList(hoststest.GiteaOptions{NoPageHeaders: true}),
			extra: map[string]any{"token": gtListTok}, want: all, wantReqs: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkList(t, giteaList, tc) })
	}
}

func TestGiteaSearchNotOK(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answerJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "search index unavailable"})
	}))
	defer srv.Close()
	l, err := NewLister(upstreamHost(t, map[string]any{"type": "gitea", "host": srv.Listener.Addr().String(), "protocol": "http"}), ListerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.List(context.Background()); err == nil || !strings.Contains(err.Error(), "search index unavailable") {
		t.Errorf("got error %v; want the search error", err)
	}
}
