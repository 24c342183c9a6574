package hoststest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// GitHub answers the GitHub REST API calls that the controller's lister
// makes, the way GitHub documents them:
//
//   - GET /orgs/{org}/repos and GET /users/{username}/repos
//     (https://docs.github.com/en/rest/repos/repos); per_page defaults to
//     30 and is at most 100;
//   - pagination by the Link header only
//     (https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api),
//     whose targets after the first page are the owner's numeric routes,
//     /organizations/{id}/repos and /user/{id}/repos, as api.github.com
//     gives them;
//   - errors: 401 {"message":"Bad credentials",...} for a wrong token,
//     404 {"message":"Not Found",...} for an unknown owner;
//   - the primary rate limit
//     (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api):
//     403 with x-ratelimit-remaining 0, x-ratelimit-reset in Unix seconds
//     and the "API rate limit exceeded" body; the secondary one as 429 with
//     retry-after. Every answer carries the x-ratelimit-* headers.
//
// Time, for the rate limits, is the fake's Clock, which a client under
// test shares.
type GitHub struct {
	forge
	prefix string
	clock  *Clock

	// guarded by mu
	nextID       int
	owners       map[string][]GitHubRepo // by route: orgs/x, organizations/1000, users/y, user/1001
	ids          map[string]int          // numeric id of the orgs/x and users/y routes
	logins       map[string]string       // login of every route
	limitedUntil time.Time               // primary limit: refuse until then
	extendBy     time.Duration           // if set, every request is limited for this long more
	secondary    int                     // answer this many requests with 429 retry-after
	retryAfter   int
}

// GitHubOptions configure a fake GitHub.
type GitHubOptions struct {
	// Prefix is "" to answer like api.github.com, and "/api/v3" to answer
	// like GitHub Enterprise Server.
	Prefix string
	// Token is the one valid bearer token; "" accepts none.
	Token string
	// Clock is the time of the rate limits; nil is a clock of its own
	// that starts at Unix time 1,700,000,000.
	Clock *Clock
	// TLS serves HTTPS, with a certificate that no authority vouches for.
	TLS bool
}

// GitHubRepo is a repository of a fake GitHub.
type GitHubRepo struct {
	Name, Description, DefaultBranch string
}

// NewGitHub starts a fake GitHub with no owners.
func NewGitHub(tb testing.TB, opts GitHubOptions) *GitHub {
	tb.Helper()
	f := &GitHub{prefix: opts.Prefix, clock: opts.Clock, nextID: 1000,
		owners: map[string][]GitHubRepo{}, ids: map[string]int{}, logins: map[string]string{}}
	f.init(tb, opts.Token, false)
	if f.clock == nil {
		f.clock = NewClock(time.Unix(1_700_000_000, 0))
	}
	f.start(tb, f, opts.TLS)
	return f
}

// Clock is the time the fake's rate limits are counted in.
func (f *GitHub) Clock() *Clock { return f.clock }

// Section is a github host section for lorry-controller.conf that lists
// this fake, with the keys of extra added; it names the fake's URL as
// "api-url" when the fake answers like api.github.com.
func (f *GitHub) Section(extra map[string]any) map[string]any {
	base := map[string]any{}
	if f.prefix == "" {
		// The fake's URL stands in for https://api.github.com.
		base["api-url"] = f.URL()
	}
	return f.section("github", base, extra)
}

// AddOrg adds an organisation and its repositories, with the next id.
func (f *GitHub) AddOrg(name string, repos []GitHubRepo) {
	f.addOwner("orgs", "organizations", name, repos)
}

// AddUser adds a user and the repositories it owns, with the next id.
func (f *GitHub) AddUser(name string, repos []GitHubRepo) { f.addOwner("users", "user", name, repos) }

func (f *GitHub) addOwner(route, numericRoute, name string, repos []GitHubRepo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	num := numericRoute + "/" + strconv.Itoa(f.nextID)
	f.owners[route+"/"+name], f.owners[num] = repos, repos
	f.logins[route+"/"+name], f.logins[num] = name, name
	f.ids[route+"/"+name] = f.nextID
	f.nextID++
}

// LimitUntil refuses every call with the primary rate limit until t on
// the fake's clock.
func (f *GitHub) LimitUntil(t time.Time) { f.locked(func() { f.limitedUntil = t }) }

// LimitEveryCall refuses every call with a primary rate limit that
// resets d after it: a limit that never lifts.
func (f *GitHub) LimitEveryCall(d time.Duration) { f.locked(func() { f.extendBy = d }) }

// SecondaryLimit answers the next n calls with 429 and retry-after
// seconds.
func (f *GitHub) SecondaryLimit(n, retryAfter int) {
	f.locked(func() { f.secondary, f.retryAfter = n, retryAfter })
}

// GitHubRepos makes n repositories named <owner>-r000 onwards.
func GitHubRepos(n int, owner string) []GitHubRepo {
	out := make([]GitHubRepo, n)
	for i := range out {
		out[i] = GitHubRepo{Name: fmt.Sprintf("%s-r%03d", owner, i), Description: "repo " + strconv.Itoa(i), DefaultBranch: "main"}
	}
	return out
}

// githubAuth takes a bearer token; a failure answers {"message": "Server
// Error"}. The fake lists only, so a call without a token is anonymous.
var githubAuth = apiAuth{
	header: "Authorization",
	prefix: "Bearer ",
	failed: func(w http.ResponseWriter, status int) {
		answerJSON(w, status, map[string]string{"message": "Server Error"})
	},
	badToken: func(w http.ResponseWriter) {
		answerJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials",
			"documentation_url": "https://docs.github.com/rest", "status": "401"})
	},
}

func rateHeaders(w http.ResponseWriter, remaining int, reset time.Time) {
	w.Header().Set("X-RateLimit-Limit", "5000")
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	w.Header().Set("X-RateLimit-Used", strconv.Itoa(5000-remaining))
	w.Header().Set("X-RateLimit-Resource", "core")
}

// ServeHTTP answers the API.
func (f *GitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	now := f.clock.Now()
	limitedUntil, secondary, retryAfter := f.limitedUntil, f.secondary > 0, f.retryAfter
	if secondary {
		f.secondary--
	}
	if f.extendBy > 0 {
		f.limitedUntil = now.Add(f.extendBy)
		limitedUntil = f.limitedUntil
	}
	f.mu.Unlock()
	if _, ok := f.authenticate(w, r, githubAuth); !ok {
		return
	}
	switch {
	case now.Before(limitedUntil):
		rateHeaders(w, 0, limitedUntil)
		answerJSON(w, http.StatusForbidden, map[string]string{
			"message":           "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
			"status":            "403",
		})
		return
	case secondary:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		answerJSON(w, http.StatusTooManyRequests, map[string]string{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
			"status":            "429",
		})
		return
	}
	rateHeaders(w, 4999, now.Add(time.Hour))
	p := strings.TrimPrefix(r.URL.Path, f.prefix+"/")
	owner, ok := strings.CutSuffix(p, "/repos")
	f.mu.Lock()
	repos, known := f.owners[owner]
	id, hasID := f.ids[owner]
	login := f.logins[owner]
	f.mu.Unlock()
	if !strings.HasPrefix(r.URL.Path, f.prefix+"/") || !ok || !known {
		answerJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found",
			"documentation_url": "https://docs.github.com/rest/repos/repos#list-organization-repositories", "status": "404"})
		return
	}
	q := r.URL.Query()
	pg := pageOf(q, pageSize(q, "per_page", 30, 100), len(repos))
	lo, items := pg.lo, repos[pg.lo:pg.hi]

	numeric := owner
	if hasID {
		route := map[string]string{"orgs": "organizations", "users": "user"}[owner[:strings.IndexByte(owner, '/')]]
		numeric = route + "/" + strconv.Itoa(id)
	}
	base := f.URL()
	href := func(n int) string { return base + f.prefix + "/" + numeric + "/repos?" + withPage(q, n) }
	if links := pg.links(href, "prev", "next", "last", "first"); len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	web := base
	sshHost := hostOnly(r.Host)
	out := make([]map[string]any, len(items))
	for i, repo := range items {
		var desc any = repo.Description
		if repo.Description == "" {
			desc = nil
		}
		out[i] = map[string]any{
			"id":             lo + i + 1,
			"node_id":        "R_x",
			"name":           repo.Name,
			"full_name":      login + "/" + repo.Name,
			"owner":          map[string]any{"login": login},
			"private":        false,
			"html_url":       web + "/" + login + "/" + repo.Name,
			"description":    desc,
			"fork":           false,
			"url":            web + f.prefix + "/repos/" + login + "/" + repo.Name,
			"git_url":        "git://" + r.Host + "/" + login + "/" + repo.Name + ".git",
			"ssh_url":        "git@" + sshHost + ":" + login + "/" + repo.Name + ".git",
			"clone_url":      web + "/" + login + "/" + repo.Name + ".git",
			"default_branch": repo.DefaultBranch,
			"archived":       false,
			"visibility":     "public",
		}
	}
	answerJSON(w, http.StatusOK, out)
}
