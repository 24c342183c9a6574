package hosts

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fakeGitea answers the Gitea API v1 calls the lister makes, the way the
// API reference (/api/swagger) and the usage guide
// (https://docs.gitea.com/development/api-usage) describe them:
//
//   - GET /api/v1/repos/search answers {"ok": true, "data": [...]};
//     GET /api/v1/orgs/{org}/repos and GET /api/v1/users/{username}/repos
//     answer a plain list;
//   - the token comes as "Authorization: token ..."; a wrong one is 401
//     {"message":"invalid username, password or token","url":".../api/swagger"};
//     an unknown owner is 404 {"errors":[...],"message":"The target
//     couldn't be found.","url":".../api/swagger"};
//   - page and limit: limit defaults to DEFAULT_PAGING_NUM (30) and is cut
//     to MAX_RESPONSE_ITEMS (50); answers carry X-Total-Count and a Link
//     header with next, last, first and prev as they apply, joined by ","
//     and built on the instance's ROOT_URL, not on the request's host.
type fakeGitea struct {
	srv       *httptest.Server
	token     string
	rootURL   string // ROOT_URL, ending in "/"
	maxItems  int    // MAX_RESPONSE_ITEMS
	noHeaders bool   // an old instance without Link and X-Total-Count
	fail      int
	repos     []fakeGiteaRepo
	orgs      map[string]bool // owner -> is an organisation
	log       requestLog
}

type fakeGiteaRepo struct {
	Owner, Name   string
	Description   string
	DefaultBranch string
	Private       bool
}

func (r fakeGiteaRepo) full() string { return r.Owner + "/" + r.Name }

func newFakeGitea(t testing.TB, repos []fakeGiteaRepo) *fakeGitea {
	f := &fakeGitea{rootURL: "https://gitea.example.com/", maxItems: 50, repos: repos, orgs: map[string]bool{}}
	for _, r := range repos {
		f.orgs[r.Owner] = !strings.HasPrefix(r.Owner, "user")
	}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitea) host() string { return f.srv.Listener.Addr().String() }

// fakeGiteaRepos makes n repositories of the organisation org and of a
// user "user1".
func fakeGiteaRepos(n int, org string) []fakeGiteaRepo {
	out := make([]fakeGiteaRepo, n)
	for i := range out {
		owner := org
		if i%4 == 3 {
			owner = "user1"
		}
		out[i] = fakeGiteaRepo{Owner: owner, Name: fmt.Sprintf("r%04d", i), Description: "repo " + strconv.Itoa(i),
			DefaultBranch: "main", Private: i%6 == 5}
	}
	return out
}

func (f *fakeGitea) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.log.add(r)
	swagger := f.rootURL + "api/swagger"
	if f.fail != 0 {
		answerJSON(w, f.fail, map[string]any{"message": "internal error", "url": swagger})
		return
	}
	authed := false
	if h := r.Header.Get("Authorization"); h != "" {
		if h != "token "+f.token {
			answerJSON(w, http.StatusUnauthorized, map[string]any{"message": "invalid username, password or token", "url": swagger})
			return
		}
		authed = true
	}
	var list []fakeGiteaRepo
	search := false
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/api/v1/repos/search":
		search = true
		list = slices.Clone(f.repos)
	case len(parts) == 5 && parts[0] == "api" && parts[1] == "v1" && (parts[2] == "orgs" || parts[2] == "users") && parts[4] == "repos":
		isOrg, ok := f.orgs[parts[3]]
		if !ok || (parts[2] == "orgs" && !isOrg) {
			answerJSON(w, http.StatusNotFound, map[string]any{"errors": []string{fmt.Sprintf("user redirect does not exist [name: %s]", parts[3])},
				"message": "The target couldn't be found.", "url": swagger})
			return
		}
		for _, repo := range f.repos {
			if repo.Owner == parts[3] {
				list = append(list, repo)
			}
		}
	default:
		answerJSON(w, http.StatusNotFound, map[string]any{"errors": nil, "message": "The target couldn't be found.", "url": swagger})
		return
	}
	if !authed {
		list = slices.DeleteFunc(list, func(r fakeGiteaRepo) bool { return r.Private })
	}
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 {
		limit = 30
	}
	limit = min(limit, f.maxItems)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	total := len(list)
	pages := max((total+limit-1)/limit, 1)
	lo := min((page-1)*limit, total)
	items := list[lo:min(lo+limit, total)]

	if !f.noHeaders {
		link := func(n int, rel string) string {
			nq := r.URL.Query()
			nq.Set("page", strconv.Itoa(n))
			return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, f.rootURL, strings.TrimPrefix(r.URL.Path, "/"), nq.Encode(), rel)
		}
		var links []string
		if page < pages {
			links = append(links, link(page+1, "next"), link(pages, "last"))
		}
		if page > 1 {
			links = append(links, link(1, "first"), link(page-1, "prev"))
		}
		if len(links) > 0 {
			w.Header().Set("Link", strings.Join(links, ","))
		}
		w.Header().Set("X-Total-Count", strconv.Itoa(total))
		w.Header().Set("Access-Control-Expose-Headers", "X-Total-Count, Link")
	}
	out := make([]map[string]any, len(items))
	web := "http://" + r.Host
	for i, repo := range items {
		out[i] = map[string]any{
			"id":             i + lo + 1,
			"owner":          map[string]any{"login": repo.Owner, "username": repo.Owner},
			"name":           repo.Name,
			"full_name":      repo.full(),
			"description":    repo.Description,
			"empty":          false,
			"private":        repo.Private,
			"fork":           false,
			"mirror":         false,
			"html_url":       web + "/" + repo.full(),
			"ssh_url":        "ssh://git@" + strings.Split(r.Host, ":")[0] + ":2222/" + repo.full() + ".git",
			"clone_url":      web + "/" + repo.full() + ".git",
			"default_branch": repo.DefaultBranch,
			"archived":       false,
		}
	}
	if search {
		answerJSON(w, http.StatusOK, map[string]any{"ok": true, "data": out})
		return
	}
	answerJSON(w, http.StatusOK, out)
}

func giteaSection(f *fakeGitea, extra map[string]any) map[string]any {
	return sectionWith(map[string]any{"type": "gitea", "host": f.host(), "protocol": "http"}, extra)
}

func TestGiteaList(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef01234567"
	repos := fakeGiteaRepos(250, "org1")
	pick := func(keep func(fakeGiteaRepo) bool) []string {
		var out []string
		for _, r := range repos {
			if keep(r) {
				out = append(out, r.full())
			}
		}
		return out
	}
	all := pick(func(fakeGiteaRepo) bool { return true })
	tests := []struct {
		name      string
		extra     map[string]any
		maxItems  int
		noHeaders bool
		want      []string
		wantPath  string
		wantReqs  int
	}{
		{name: "search everything with token", extra: map[string]any{"token": tok}, want: all, wantPath: "/api/v1/repos/search", wantReqs: 5},
		{name: "search anonymously", want: pick(func(r fakeGiteaRepo) bool { return !r.Private }), wantPath: "/api/v1/repos/search", wantReqs: 5},
		{name: "organisation", extra: map[string]any{"private-token": tok, "org": "org1"}, want: pick(func(r fakeGiteaRepo) bool { return r.Owner == "org1" }),
			wantPath: "/api/v1/orgs/org1/repos", wantReqs: 4},
		{name: "user", extra: map[string]any{"private-token": tok, "user": "user1"}, want: pick(func(r fakeGiteaRepo) bool { return r.Owner == "user1" }),
			wantPath: "/api/v1/users/user1/repos", wantReqs: 2},
		{name: "instance with smaller pages", extra: map[string]any{"token": tok}, maxItems: 30, want: all, wantReqs: 9},
		{name: "old instance without headers", extra: map[string]any{"token": tok}, noHeaders: true, want: all, wantReqs: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitea(t, repos)
			f.token = tok
			f.noHeaders = tc.noHeaders
			if tc.maxItems != 0 {
				f.maxItems = tc.maxItems
			}
			l, err := NewLister(upstreamHost(t, giteaSection(f, tc.extra)), ListerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.List(context.Background())
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if paths := listPaths(got); !reflect.DeepEqual(paths, tc.want) {
				t.Errorf("got %d repos %v...; want %d %v...", len(paths), firstFew(paths), len(tc.want), firstFew(tc.want))
			}
			reqs := f.log.all()
			if len(reqs) != tc.wantReqs {
				t.Errorf("got %d requests; want %d", len(reqs), tc.wantReqs)
			}
			want := ""
			if tc.extra["token"] != nil || tc.extra["private-token"] != nil {
				want = "token " + tok
			}
			checkCredentialHeader(t, reqs, "Authorization", want, tok)
			for i, r := range reqs {
				u, _ := url.Parse(r.URL)
				if tc.wantPath != "" && u.Path != tc.wantPath {
					t.Errorf("request %d: got path %s; want %s", i, u.Path, tc.wantPath)
				}
				if got := u.Query().Get("page"); got != strconv.Itoa(i+1) {
					t.Errorf("request %d: got page %q; want %d", i, got, i+1)
				}
				if got := u.Query().Get("limit"); got != "50" {
					t.Errorf("request %d: got limit %q; want 50", i, got)
				}
			}
		})
	}
}

func TestGiteaRepoFields(t *testing.T) {
	const tok = "gitea-fields-token"
	f := newFakeGitea(t, []fakeGiteaRepo{{Owner: "o", Name: "a", Description: "The A", DefaultBranch: "trunk"}})
	f.token = tok
	web := "http://" + f.host()
	sshHost := strings.Split(f.host(), ":")[0]
	tests := []struct {
		name  string
		extra map[string]any
		want  Repo
	}{
		{name: "http", want: Repo{Path: "o/a", CloneURL: web + "/o/a.git", Description: "The A", DefaultBranch: "trunk"}},
		{name: "ssh", extra: map[string]any{"protocol": "ssh", "api-url": web + "/api/v1"},
			want: Repo{Path: "o/a", CloneURL: "ssh://git@" + sshHost + ":2222/o/a.git", Description: "The A", DefaultBranch: "trunk"}},
		{name: "clone with token", extra: map[string]any{"clone-with-token": true},
			want: Repo{Path: "o/a", CloneURL: "http://oauth2:" + tok + "@" + f.host() + "/o/a.git", Description: "The A", DefaultBranch: "trunk"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLister(upstreamHost(t, giteaSection(f, sectionWith(map[string]any{"token": tok}, tc.extra))), ListerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := []Repo{tc.want}; !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v; want %+v", got, want)
			}
		})
	}
}

func TestGiteaErrors(t *testing.T) {
	const tok = "gitea-right-token"
	tests := []struct {
		name  string
		extra map[string]any
		fail  int
		want  []string
	}{
		{name: "wrong token", extra: map[string]any{"token": "gitea-wrong-token"},
			want: []string{"gitea 127.0.0.1:", "401 Unauthorized", `"invalid username, password or token"`, `check "token"`}},
		{name: "unknown organisation", extra: map[string]any{"token": tok, "org": "nope"},
			want: []string{"404 Not Found", "The target couldn't be found.", "/api/v1/orgs/nope/repos", `check "org"`}},
		{name: "a user is not an organisation", extra: map[string]any{"token": tok, "org": "user1"},
			want: []string{"404 Not Found", "/api/v1/orgs/user1/repos"}},
		{name: "server error", extra: map[string]any{"token": tok}, fail: 500,
			want: []string{"500 Internal Server Error", `"internal error"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitea(t, fakeGiteaRepos(8, "org1"))
			f.token = tok
			f.fail = tc.fail
			l, err := NewLister(upstreamHost(t, giteaSection(f, tc.extra)), ListerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			repos, err := l.List(context.Background())
			if err == nil {
				t.Fatalf("got %d repos and no error; want an error", len(repos))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q; want it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "gitea-wrong-token") || strings.Contains(err.Error(), tok) {
				t.Errorf("error %q shows a token", err)
			}
		})
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
