package hosts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"lorrycontroller/redact"
)

// fakeGitLab answers the GitLab REST API v4 calls the lister makes, the
// way GitLab documents them:
//
//   - GET /api/v4/projects, with offset or keyset pagination
//     (https://docs.gitlab.com/api/projects/#list-all-projects): without a
//     token only public projects, with a valid PRIVATE-TOKEN all of them,
//     with a wrong one 401 {"message":"401 Unauthorized"}
//     (https://docs.gitlab.com/api/rest/troubleshooting/#status-codes);
//   - GET /api/v4/groups/:id/projects with the group's path URL-encoded
//     and include_subgroups (https://docs.gitlab.com/api/groups/#list-projects);
//     an unknown group is 404 {"message":"404 Group Not Found"}, an
//     unknown route 404 {"error":"404 Not Found"};
//   - pagination (https://docs.gitlab.com/api/rest/#pagination): per_page
//     20 by default and at most 100; offset pages carry x-page,
//     x-per-page, x-next-page (empty on the last page), x-prev-page,
//     x-total and x-total-pages (both left out above 10,000 records) and
//     a Link header with prev, next, first and last (no last above
//     10,000); keyset pages (pagination=keyset, order_by=id) carry only a
//     Link rel="next" with id_after, and keyset with another order is 405.
type fakeGitLab struct {
	t        testing.TB
	srv      *httptest.Server
	token    string // the PRIVATE-TOKEN that is valid
	projects []fakeGitLabProject
	linkOnly bool // leave out the x-* headers, as some proxies do
	fail     int  // answer everything with this status
	log      requestLog

	once  sync.Once
	json  map[int][]byte // project id -> JSON, made once
	mu    sync.Mutex
	cache map[string]fakeGitLabListing
}

type fakeGitLabProject struct {
	ID            int
	Namespace     string // full path of the group
	Path          string
	Description   string
	DefaultBranch string
	Private       bool
}

func (p fakeGitLabProject) full() string { return p.Namespace + "/" + p.Path }

// newFakeGitLab starts a fake GitLab; its handler also serves TLS tests.
func newFakeGitLab(t testing.TB, projects []fakeGitLabProject) *fakeGitLab {
	f := &fakeGitLab{t: t, projects: projects}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitLab) host() string { return f.srv.Listener.Addr().String() }

// fakeGitLabProjects makes n projects spread over a group, its subgroup
// and a sibling group whose name starts the same.
func fakeGitLabProjects(n int, group string) []fakeGitLabProject {
	out := make([]fakeGitLabProject, n)
	for i := range out {
		ns := group
		switch i % 5 {
		case 3:
			ns = group + "/sub"
		case 4:
			ns = group + "ish"
		}
		out[i] = fakeGitLabProject{ID: i + 1, Namespace: ns, Path: fmt.Sprintf("p%05d", i+1),
			Description: fmt.Sprintf("project %d", i+1), DefaultBranch: "main", Private: i%7 == 6}
	}
	return out
}

// gitlabProjectJSON is a project as GET /projects shows it to a member,
// less the fields nothing here reads.
type gitlabProjectJSON struct {
	ID                int               `json:"id"`
	Description       *string           `json:"description"`
	Name              string            `json:"name"`
	NameWithNamespace string            `json:"name_with_namespace"`
	Path              string            `json:"path"`
	PathWithNamespace string            `json:"path_with_namespace"`
	CreatedAt         string            `json:"created_at"`
	DefaultBranch     *string           `json:"default_branch"`
	TagList           []string          `json:"tag_list"`
	Topics            []string          `json:"topics"`
	SSHURLToRepo      string            `json:"ssh_url_to_repo"`
	HTTPURLToRepo     string            `json:"http_url_to_repo"`
	WebURL            string            `json:"web_url"`
	ReadmeURL         *string           `json:"readme_url"`
	ForksCount        int               `json:"forks_count"`
	AvatarURL         *string           `json:"avatar_url"`
	StarCount         int               `json:"star_count"`
	LastActivityAt    string            `json:"last_activity_at"`
	Visibility        string            `json:"visibility"`
	Archived          bool              `json:"archived"`
	EmptyRepo         bool              `json:"empty_repo"`
	Namespace         gitlabNamespaceJS `json:"namespace"`
}

type gitlabNamespaceJS struct {
	ID        int     `json:"id"`
	Name      string  `json:"name"`
	Path      string  `json:"path"`
	Kind      string  `json:"kind"`
	FullPath  string  `json:"full_path"`
	ParentID  *int    `json:"parent_id"`
	AvatarURL *string `json:"avatar_url"`
	WebURL    string  `json:"web_url"`
}

func (f *fakeGitLab) projectJSON(r *http.Request, p fakeGitLabProject) []byte {
	f.once.Do(func() {
		f.json = map[int][]byte{}
		web := "http://" + r.Host
		sshHost := strings.Split(r.Host, ":")[0]
		for _, p := range f.projects {
			opt := func(s string) *string { // null when unset, as GitLab shows it
				if s == "" {
					return nil
				}
				return &s
			}
			visibility := "public"
			if p.Private {
				visibility = "private"
			}
			nsParts := strings.Split(p.Namespace, "/")
			b, err := json.Marshal(gitlabProjectJSON{
				ID: p.ID, Description: opt(p.Description), Name: p.Path,
				NameWithNamespace: strings.Join(append(nsParts, p.Path), " / "),
				Path:              p.Path, PathWithNamespace: p.full(),
				CreatedAt: "2024-01-02T03:04:05.000Z", DefaultBranch: opt(p.DefaultBranch),
				TagList: []string{}, Topics: []string{},
				SSHURLToRepo:   "git@" + sshHost + ":" + p.full() + ".git",
				HTTPURLToRepo:  web + "/" + p.full() + ".git",
				WebURL:         web + "/" + p.full(),
				LastActivityAt: "2024-01-02T03:04:05.000Z", Visibility: visibility,
				Archived: p.ID%11 == 0, EmptyRepo: p.DefaultBranch == "",
				Namespace: gitlabNamespaceJS{ID: 1000 + len(p.Namespace), Name: nsParts[len(nsParts)-1], Path: nsParts[len(nsParts)-1],
					Kind: "group", FullPath: p.Namespace, WebURL: web + "/groups/" + p.Namespace},
			})
			if err != nil {
				f.t.Error(err)
			}
			f.json[p.ID] = b
		}
	})
	return f.json[p.ID]
}

// matching returns the projects a listing covers, in the order asked for;
// it is remembered, since every page of a listing asks again.
func (f *fakeGitLab) matching(group string, subgroups, authed, idAsc bool) (list []fakeGitLabProject, found bool) {
	key := fmt.Sprint(group, subgroups, authed, idAsc)
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.cache[key]; ok {
		return c.list, c.found
	}
	found = group == ""
	for _, p := range f.projects {
		if p.Private && !authed {
			continue
		}
		direct := group == "" || p.Namespace == group
		under := group != "" && strings.HasPrefix(p.Namespace, group+"/")
		found = found || direct || under
		if direct || (under && subgroups) {
			list = append(list, p)
		}
	}
	// The default order is created_at desc, which for these is id desc.
	slices.SortFunc(list, func(a, b fakeGitLabProject) int { return b.ID - a.ID })
	if idAsc {
		slices.Reverse(list)
	}
	if f.cache == nil {
		f.cache = map[string]fakeGitLabListing{}
	}
	f.cache[key] = fakeGitLabListing{list, found}
	return list, found
}

type fakeGitLabListing struct {
	list  []fakeGitLabProject
	found bool
}

func (f *fakeGitLab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.log.add(r)
	if f.fail != 0 {
		answerJSON(w, f.fail, map[string]string{"message": fmt.Sprintf("%d %s", f.fail, http.StatusText(f.fail))})
		return
	}
	authed := false
	if tok := r.Header.Get("PRIVATE-TOKEN"); tok != "" {
		if tok != f.token {
			answerJSON(w, http.StatusUnauthorized, map[string]string{"message": "401 Unauthorized"})
			return
		}
		authed = true
	}
	q := r.URL.Query()
	idAsc := q.Get("order_by") == "id" && q.Get("sort") == "asc"
	var list []fakeGitLabProject
	switch esc := r.URL.EscapedPath(); {
	case esc == "/api/v4/projects":
		list, _ = f.matching("", false, authed, idAsc)
	case strings.HasPrefix(esc, "/api/v4/groups/") && strings.HasSuffix(esc, "/projects"):
		id := strings.TrimSuffix(strings.TrimPrefix(esc, "/api/v4/groups/"), "/projects")
		if strings.Contains(id, "/") { // an unencoded slash matches no route
			answerJSON(w, http.StatusNotFound, map[string]string{"error": "404 Not Found"})
			return
		}
		group, err := url.PathUnescape(id)
		if err != nil {
			answerJSON(w, http.StatusBadRequest, map[string]string{"error": "400 Bad request"})
			return
		}
		var found bool
		if list, found = f.matching(group, q.Get("include_subgroups") == "true", authed, idAsc); !found {
			answerJSON(w, http.StatusNotFound, map[string]string{"message": "404 Group Not Found"})
			return
		}
	default:
		answerJSON(w, http.StatusNotFound, map[string]string{"error": "404 Not Found"})
		return
	}
	perPage, _ := strconv.Atoi(q.Get("per_page"))
	if perPage <= 0 {
		perPage = 20
	}
	perPage = min(perPage, 100)

	var pageItems []fakeGitLabProject
	if q.Get("pagination") == "keyset" {
		if q.Get("order_by") != "id" {
			answerJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "Keyset pagination is not yet available for this type of request"})
			return
		}
		if after, err := strconv.Atoi(q.Get("id_after")); err == nil && idAsc {
			i, _ := slices.BinarySearchFunc(list, after, func(p fakeGitLabProject, id int) int { return p.ID - id })
			if i < len(list) && list[i].ID == after {
				i++
			}
			list = list[i:]
		}
		if before, err := strconv.Atoi(q.Get("id_before")); err == nil && !idAsc {
			list = slices.DeleteFunc(slices.Clone(list), func(p fakeGitLabProject) bool { return p.ID >= before })
		}
		pageItems = list[:min(perPage, len(list))]
		if len(list) > perPage {
			nq := r.URL.Query()
			if idAsc {
				nq.Set("id_after", strconv.Itoa(pageItems[len(pageItems)-1].ID))
			} else {
				nq.Set("id_before", strconv.Itoa(pageItems[len(pageItems)-1].ID))
			}
			w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?%s>; rel="next"`, r.Host, r.URL.EscapedPath(), nq.Encode()))
		}
	} else {
		page, _ := strconv.Atoi(q.Get("page"))
		page = max(page, 1)
		total := len(list)
		pages := max((total+perPage-1)/perPage, 1)
		lo := min((page-1)*perPage, total)
		pageItems = list[lo:min(lo+perPage, total)]
		link := func(n int, rel string) string {
			nq := r.URL.Query()
			nq.Set("page", strconv.Itoa(n))
			nq.Set("per_page", strconv.Itoa(perPage))
			return fmt.Sprintf(`<http://%s%s?%s>; rel="%s"`, r.Host, r.URL.EscapedPath(), nq.Encode(), rel)
		}
		var links []string
		next, prev := "", ""
		if page > 1 {
			prev = strconv.Itoa(page - 1)
			links = append(links, link(page-1, "prev"))
		}
		if page < pages {
			next = strconv.Itoa(page + 1)
			links = append(links, link(page+1, "next"))
		}
		links = append(links, link(1, "first"))
		if total <= 10000 {
			links = append(links, link(pages, "last"))
		}
		w.Header().Set("Link", strings.Join(links, ", "))
		if !f.linkOnly {
			w.Header().Set("X-Page", strconv.Itoa(page))
			w.Header().Set("X-Per-Page", strconv.Itoa(perPage))
			w.Header().Set("X-Next-Page", next)
			w.Header().Set("X-Prev-Page", prev)
			if total <= 10000 {
				w.Header().Set("X-Total", strconv.Itoa(total))
				w.Header().Set("X-Total-Pages", strconv.Itoa(pages))
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("["))
	for i, p := range pageItems {
		if i > 0 {
			w.Write([]byte(","))
		}
		w.Write(f.projectJSON(r, p))
	}
	w.Write([]byte("]"))
}

func gitlabSection(f *fakeGitLab, extra map[string]any) map[string]any {
	return sectionWith(map[string]any{"type": "gitlab", "host": f.host(), "protocol": "http"}, extra)
}

func TestGitLabList(t *testing.T) {
	const tok = "glpat-0123456789abcdef"
	projects := fakeGitLabProjects(250, "gnome")
	var public, gnome, gnomeDirect, gnomeSub []string
	for _, p := range projects {
		if !p.Private {
			public = append(public, p.full())
		}
		switch p.Namespace {
		case "gnome":
			gnome = append(gnome, p.full())
			gnomeDirect = append(gnomeDirect, p.full())
		case "gnome/sub":
			gnome = append(gnome, p.full())
			gnomeSub = append(gnomeSub, p.full())
		}
	}
	var all []string
	for _, p := range projects {
		all = append(all, p.full())
	}
	nested := fakeGitLabProjects(600, "a/b")
	var nestedAB []string
	for _, p := range nested {
		if p.Namespace != "a/bish" {
			nestedAB = append(nestedAB, p.full())
		}
	}
	tests := []struct {
		name      string
		projects  []fakeGitLabProject // default: projects
		extra     map[string]any
		linkOnly  bool
		want      []string
		wantPath  string // the path of the first request, as sent
		wantQuery url.Values
		wantReqs  int
	}{
		{name: "everything the token sees, keyset", extra: map[string]any{"private-token": tok}, want: all, wantReqs: 3,
			wantPath: "/api/v4/projects", wantQuery: url.Values{"pagination": {"keyset"}, "order_by": {"id"}, "sort": {"asc"}, "per_page": {"100"}}},
		{name: "anonymous sees public projects", want: public, wantReqs: 3, wantPath: "/api/v4/projects"},
		{name: "group with subgroups", extra: map[string]any{"private-token": tok, "group": "gnome"}, want: gnome, wantReqs: 2,
			wantPath: "/api/v4/groups/gnome/projects", wantQuery: url.Values{"include_subgroups": {"true"}, "with_shared": {"false"}, "order_by": {"id"}, "sort": {"asc"}, "per_page": {"100"}}},
		{name: "subgroup path is URL-encoded", extra: map[string]any{"private-token": tok, "group": "gnome/sub"}, want: gnomeSub, wantReqs: 1,
			wantPath: "/api/v4/groups/gnome%2Fsub/projects"},
		{name: "offset pages by Link alone", extra: map[string]any{"private-token": tok, "group": "gnome"}, linkOnly: true, want: gnome, wantReqs: 2},
		{name: "nested group over pages", projects: nested, extra: map[string]any{"private-token": tok, "group": "a/b"}, want: nestedAB, wantReqs: 5,
			wantPath: "/api/v4/groups/a%2Fb/projects"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := projects
			if tc.projects != nil {
				ps = tc.projects
			}
			f := newFakeGitLab(t, ps)
			f.token = tok
			f.linkOnly = tc.linkOnly
			var logs syncBuffer
			l, err := NewLister(upstreamHost(t, gitlabSection(f, tc.extra)), ListerOptions{Logger: debugLogger(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			repos, err := l.List(context.Background())
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			got := listPaths(repos)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %d repos %v...; want %d %v...", len(got), firstFew(got), len(want), firstFew(want))
			}
			reqs := f.log.all()
			if len(reqs) != tc.wantReqs {
				t.Errorf("got %d requests; want %d: %v", len(reqs), tc.wantReqs, reqs)
			}
			wantHeader := ""
			if tc.extra["private-token"] != nil {
				wantHeader = tok
			}
			checkCredentialHeader(t, reqs, "PRIVATE-TOKEN", wantHeader, tok)
			if strings.Contains(logs.String(), tok) {
				t.Errorf("the log shows the token:\n%s", logs.String())
			}
			for i, r := range reqs {
				u, _ := url.Parse(r.URL)
				if tc.wantPath != "" && u.EscapedPath() != tc.wantPath {
					t.Errorf("request %d: got path %s; want %s", i, u.EscapedPath(), tc.wantPath)
				}
				for k, v := range tc.wantQuery {
					if got := u.Query()[k]; !reflect.DeepEqual(got, v) {
						t.Errorf("request %d: got query %s=%v; want %v", i, k, got, v)
					}
				}
			}
		})
	}
}

func firstFew(s []string) []string { return s[:min(3, len(s))] }

func TestGitLabRepoFields(t *testing.T) {
	const tok = "glpat-fields"
	projects := []fakeGitLabProject{
		{ID: 1, Namespace: "g", Path: "a", Description: "The A", DefaultBranch: "master"},
		{ID: 2, Namespace: "g/s", Path: "empty"},
	}
	f := newFakeGitLab(t, projects)
	f.token = tok
	web := "http://" + f.host()
	sshHost := strings.Split(f.host(), ":")[0]
	tests := []struct {
		name  string
		extra map[string]any
		want  []Repo
	}{
		{name: "http", want: []Repo{
			{Path: "g/a", CloneURL: web + "/g/a.git", Description: "The A", DefaultBranch: "master"},
			{Path: "g/s/empty", CloneURL: web + "/g/s/empty.git"},
		}},
		{name: "ssh", extra: map[string]any{"protocol": "ssh", "api-url": web + "/api/v4"}, want: []Repo{
			{Path: "g/a", CloneURL: "git@" + sshHost + ":g/a.git", Description: "The A", DefaultBranch: "master"},
			{Path: "g/s/empty", CloneURL: "git@" + sshHost + ":g/s/empty.git"},
		}},
		{name: "clone with token", extra: map[string]any{"clone-with-token": true}, want: []Repo{
			{Path: "g/a", CloneURL: "http://oauth2:" + tok + "@" + f.host() + "/g/a.git", Description: "The A", DefaultBranch: "master"},
			{Path: "g/s/empty", CloneURL: "http://oauth2:" + tok + "@" + f.host() + "/g/s/empty.git"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLister(upstreamHost(t, gitlabSection(f, sectionWith(map[string]any{"private-token": tok}, tc.extra))), ListerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v; want %+v", got, tc.want)
			}
		})
	}
	if got := redact.URLs("http://oauth2:" + tok + "@h/g/a.git"); strings.Contains(got, tok) {
		t.Errorf("redact.URLs left the token in %q", got)
	}
}

// Above 10,000 records GitLab stops counting; the listing must not need
// the count.
func TestGitLabLargeGroupWithoutTotals(t *testing.T) {
	f := newFakeGitLab(t, fakeGitLabProjects(12_600, "big"))
	f.token = "glpat-big"
	l, err := NewLister(upstreamHost(t, gitlabSection(f, map[string]any{"group": "big", "private-token": "glpat-big"})), ListerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	repos, err := l.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, p := range f.projects {
		if strings.HasPrefix(p.Namespace+"/", "big/") {
			want++
		}
	}
	if want <= 10000 {
		t.Fatalf("the group has %d projects; the test needs more than 10,000", want)
	}
	if len(repos) != want {
		t.Errorf("got %d repos; want %d", len(repos), want)
	}
	if got, wantReqs := len(f.log.all()), (want+99)/100; got != wantReqs {
		t.Errorf("got %d requests; want %d", got, wantReqs)
	}
}

func TestGitLabErrors(t *testing.T) {
	const tok = "glpat-right"
	tests := []struct {
		name  string
		extra map[string]any
		fail  int
		want  []string
	}{
		{name: "wrong token", extra: map[string]any{"private-token": "glpat-wrong-one"},
			want: []string{"gitlab 127.0.0.1:", "401 Unauthorized", `"401 Unauthorized"`, `check "private-token"`}},
		{name: "unknown group", extra: map[string]any{"private-token": tok, "group": "nope"},
			want: []string{"404 Not Found", `"404 Group Not Found"`, "/api/v4/groups/nope/projects", `check "group"`}},
		{name: "server error", extra: map[string]any{"private-token": tok}, fail: 500,
			want: []string{"500 Internal Server Error", `"500 Internal Server Error"`}},
		{name: "api-url to nowhere", extra: map[string]any{"api-url": "http://127.0.0.1:1/api/v4"},
			want: []string{"GET http://127.0.0.1:1/api/v4/projects?", "connection refused"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitLab(t, fakeGitLabProjects(5, "g"))
			f.token = tok
			f.fail = tc.fail
			l, err := NewLister(upstreamHost(t, gitlabSection(f, tc.extra)), ListerOptions{})
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
			for _, secret := range []string{tok, "glpat-wrong-one"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows a token", err)
				}
			}
		})
	}
}

// PRIVATE-TOKEN is not a header net/http drops on a redirect to another
// host, so the lister must refuse such redirects itself.
func TestGitLabRedirectKeepsToken(t *testing.T) {
	const tok = "glpat-redirected"
	var leaked requestLog
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.add(r)
		answerJSON(w, http.StatusOK, []any{})
	}))
	defer other.Close()
	// "localhost" reaches the same listener under another host name.
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	srv := httptest.NewServer(http.RedirectHandler(otherURL+"/api/v4/projects", http.StatusFound))
	defer srv.Close()
	l, err := NewLister(upstreamHost(t, map[string]any{"type": "gitlab", "host": srv.Listener.Addr().String(), "protocol": "http", "private-token": tok}), ListerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "redirect to another host") {
		t.Errorf("got error %v; want a refused redirect", err)
	}
	for _, r := range leaked.all() {
		if r.Header.Get("PRIVATE-TOKEN") != "" {
			t.Errorf("the other host got the token")
		}
	}
}
