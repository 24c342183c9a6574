package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"

	"lorrycontroller.dev/lc/confgit"
)

// exchange is one request of TestOpenAPIEveryRouteAnswered and the status
// it must get.
type exchange struct {
	method, path string
	form         url.Values
	// token is the bearer token sent: the admin's unless said; none for
	// "-".
	token  string
	header map[string]string
	// body, if set, is sent as JSON instead of the form.
	body []byte
	want int
}

// routeExerciser makes exchanges with one server and notes the routes
// they took. The server checks each answer against the document.
type routeExerciser struct {
	t       *testing.T
	url     string
	admin   string
	mux     *chi.Mux
	covered map[string]bool
}

// do makes x, and answers the body of the answer.
func (e *routeExerciser) do(x exchange) []byte {
	e.t.Helper()
	var body io.Reader
	ct := ""
	switch {
	case x.body != nil:
		body, ct = bytes.NewReader(x.body), "application/json"
	case x.form != nil:
		body, ct = strings.NewReader(x.form.Encode()), "application/x-www-form-urlencoded"
	}
	req, err := http.NewRequest(x.method, e.url+x.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	switch x.token {
	case "":
		req.Header.Set("Authorization", "Bearer "+e.admin)
	case "-":
	default:
		req.Header.Set("Authorization", "Bearer "+x.token)
	}
	for k, v := range x.header {
		req.Header.Set(k, v)
	}
	e.checkRequest(req, x)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != x.want {
		e.t.Errorf("%s %s = %d %.300s; want %d", x.method, x.path, resp.StatusCode, got, x.want)
		return got
	}
	path, _, _ := strings.Cut(x.path, "?")
	if pattern := e.mux.Find(chi.NewRouteContext(), x.method, path); pattern != "" {
		e.covered[x.method+" "+openAPIPath(pattern)] = true
	}
	return got
}

// checkRequest checks req, as x makes it, against the document: what
// the tests send with success, the document must take.
func (e *routeExerciser) checkRequest(req *http.Request, x exchange) {
	e.t.Helper()
	doc := openAPISpec(e.t)
	path, _, _ := strings.Cut(x.path, "?")
	rctx := chi.NewRouteContext()
	pattern := e.mux.Find(rctx, x.method, path)
	item := doc.Paths.Value(openAPIPath(pattern))
	if item == nil || item.GetOperation(x.method) == nil {
		e.t.Errorf("%s %s: no operation in the document", x.method, x.path)
		return
	}
	params := map[string]string{}
	for i, k := range rctx.URLParams.Keys {
		if k == "*" {
			k = "path"
		}
		params[k] = rctx.URLParams.Values[i]
	}
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	check := req.Clone(context.Background())
	check.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: check, PathParams: params,
		Route:   &routers.Route{Spec: doc, Path: openAPIPath(pattern), PathItem: item, Method: x.method, Operation: item.GetOperation(x.method)},
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		e.t.Errorf("%s %s: the request is not one docs/openapi.yaml takes: %v", x.method, x.path, err)
	}
	if err := checkRequestSecond(req, body, openAPIPath(pattern)); err != nil {
		e.t.Errorf("%s %s: the request is not one docs/openapi.yaml takes: %v", x.method, x.path, err)
	}
}

func (e *routeExerciser) run(xs []exchange) {
	e.t.Helper()
	for _, x := range xs {
		e.do(x)
	}
}

func form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// TestOpenAPIEveryRouteAnswered makes every route of the route table
// answer at least once with its success, on servers that check every
// answer against docs/openapi.yaml, so that no route's answers go
// unchecked however the other tests change.
func TestOpenAPIEveryRouteAnswered(t *testing.T) {
	backups := t.TempDir()
	as := newAuthServer(t, func(s *Server) { s.HookSecret = []byte(testHookSecret); s.App.BackupDirectory = backups })
	as.conf.cfg = &confgit.Config{Commit: "c1", Lorries: []confgit.Lorry{
		{Path: "a/b", Text: `{"a/b":{"type":"git","url":"https://gitlab.example.com/tools/widget.git"}}`, Type: "git",
			Interval: time.Hour, Timeout: time.Minute},
		{Path: "c/d", Text: `{"c/d":{"type":"git","url":"https://user:pw@example.com/c/d.git"}}`, Type: "git",
			Interval: time.Hour, Timeout: time.Minute},
	}}
	e := &routeExerciser{t: t, url: as.url, admin: as.admin, mux: as.Handler().(*chi.Mux), covered: map[string]bool{}}
	e.run(statusExchanges())
	e.run(queueExchanges())
	e.run(hostExchanges())
	e.run(jobExchanges(as.build01))
	e.run(minionExchanges(as.build01))
	e.run(hookExchanges(t))
	e.run(signInExchanges(as.admin))
	e.do(exchange{method: "POST", path: "/1.0/pretend-time", form: form("now", "5000"), want: 200})
	e.do(exchange{method: "POST", path: "/1.0/backup", form: form("keep", "2"), want: 200})

	// A runtime's archive needs a real CONFGIT.
	repo := newConfRepo(t)
	repo.commit(scraperRepoFiles)
	ss := newScraperServer(t, repo)
	se := &routeExerciser{t: t, url: ss.url, mux: ss.Handler().(*chi.Mux), covered: e.covered}
	se.do(exchange{method: "POST", path: "/1.0/read-configuration", token: "-", want: 200})
	var rts struct{ Runtimes []struct{ Name, ID string } }
	if err := json.Unmarshal(se.do(exchange{method: "GET", path: "/1.0/runtimes", token: "-", want: 200}), &rts); err != nil || len(rts.Runtimes) != 1 {
		t.Fatalf("runtimes = %+v, %v; want one", rts, err)
	}
	se.do(exchange{method: "GET", path: "/1.0/runtime/fn/" + rts.Runtimes[0].ID + ".tar", token: "-", want: 200})

	var missed []string
	err := chi.Walk(e.mux, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if r := method + " " + openAPIPath(route); strings.HasPrefix(route, "/1.0/") && !e.covered[r] {
			missed = append(missed, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(missed)
	if len(missed) > 0 {
		t.Errorf("routes not answered with success here: %s", strings.Join(missed, ", "))
	}
}

func statusExchanges() []exchange {
	return []exchange{
		{method: "GET", path: "/1.0/openapi.yaml", want: 200},
		{method: "POST", path: "/1.0/read-configuration", want: 200},
		{method: "GET", path: "/1.0/status", want: 200},
		{method: "GET", path: "/1.0/status?run_queue=false", want: 200},
		{method: "GET", path: "/1.0/health-check", token: "-", want: 200},
		{method: "HEAD", path: "/1.0/health-check", token: "-", want: 200},
		{method: "GET", path: "/1.0/status-html", want: 200},
		{method: "GET", path: "/1.0/notifications", want: 200},
		{method: "GET", path: "/1.0/notifications-html", want: 200},
		{method: "GET", path: "/1.0/runtimes", want: 200},
	}
}

func queueExchanges() []exchange {
	return []exchange{
		{method: "POST", path: "/1.0/stop-queue", want: 200},
		{method: "POST", path: "/1.0/start-queue", want: 200},
		{method: "GET", path: "/1.0/list-queue", want: 200},
		{method: "POST", path: "/1.0/move-to-top", form: form("path", "c/d"), want: 200},
		{method: "POST", path: "/1.0/move-to-bottom", form: form("path", "c/d"), want: 200},
		{method: "GET", path: "/1.0/lorry/a%2Fb", want: 200},
		{method: "GET", path: "/1.0/lorry-html/a%2Fb", want: 200},
		{method: "GET", path: "/1.0/lorries?limit=1", want: 200},
		{method: "GET", path: "/1.0/get-max-jobs", want: 200},
		{method: "POST", path: "/1.0/set-max-jobs", form: form("max_jobs", "5"), want: 200},
		{method: "GET", path: "/1.0/get-host-max-jobs?host=h", want: 200},
		{method: "POST", path: "/1.0/set-host-max-jobs", form: form("host", "h", "max_jobs", "2"), want: 200},
		{method: "POST", path: "/1.0/run-now", form: form("path", "a/b"), want: 200},
		{method: "POST", path: "/1.0/retry-lorry", form: form("path", "a/b"), want: 200},
		{method: "POST", path: "/1.0/stop-queue-html", form: form("back", "/1.0/status-html"), want: 303},
		{method: "POST", path: "/1.0/start-queue-html", want: 303},
		{method: "POST", path: "/1.0/move-to-top-html", form: form("path", "a/b"), want: 303},
		{method: "POST", path: "/1.0/move-to-bottom-html", form: form("path", "c/d"), want: 303},
		{method: "POST", path: "/1.0/run-now-html", form: form("path", "a/b"), want: 303},
		{method: "POST", path: "/1.0/retry-lorry-html", form: form("path", "a/b"), want: 303},
		{method: "POST", path: "/1.0/set-max-jobs-html", form: form("max_jobs", ""), want: 303},
		{method: "POST", path: "/1.0/set-host-max-jobs-html", form: form("host", "h"), want: 303},
	}
}

func hostExchanges() []exchange {
	return []exchange{
		{method: "POST", path: "/1.0/ls-troves", want: 200},
		{method: "POST", path: "/1.0/ls-hosts", want: 200},
		{method: "POST", path: "/1.0/force-ls-troves", want: 200},
		{method: "POST", path: "/1.0/force-ls-hosts", want: 200},
		{method: "GET", path: "/1.0/hosts-html", want: 200},
		{method: "POST", path: "/1.0/read-configuration-html", want: 303},
		{method: "POST", path: "/1.0/force-ls-hosts-html", want: 303},
	}
}

// jobExchanges run a job to its end and remove it, twice: once through
// the API and once through the buttons.
func jobExchanges(minion string) []exchange {
	ask := exchange{method: "POST", path: "/1.0/give-me-job", form: form("host", "h", "pid", "1", "minion", "build-01"),
		token: minion, want: 200}
	update := func(id, exit string) exchange {
		return exchange{method: "POST", path: "/1.0/job-update", token: minion, want: 200,
			form: form("job_id", id, "minion", "build-01", "pid", "1", "exit", exit, "stdout", "hello\n", "disk_usage", "42")}
	}
	return []exchange{
		ask,
		update("1", "no"),
		{method: "GET", path: "/1.0/list-running-jobs", want: 200},
		{method: "GET", path: "/1.0/list-jobs", want: 200},
		{method: "GET", path: "/1.0/job/1", want: 200},
		{method: "GET", path: "/1.0/job-html/1", want: 200},
		{method: "GET", path: "/1.0/job-output/1?offset=2", want: 200},
		{method: "GET", path: "/1.0/list-jobs-html?status=running", want: 200},
		{method: "POST", path: "/1.0/stop-job", form: form("job_id", "1"), want: 200},
		update("1", "143"),
		{method: "GET", path: "/1.0/job/1", want: 200},
		{method: "POST", path: "/1.0/remove-job", form: form("job_id", "1"), want: 200},
		ask,
		update("2", "no"),
		{method: "POST", path: "/1.0/stop-job-html", form: form("job_id", "2"), want: 303},
		update("2", "0"),
		{method: "POST", path: "/1.0/remove-job-html", form: form("job_id", "2"), want: 303},
		{method: "POST", path: "/1.0/remove-ghost-jobs", want: 200},
		{method: "POST", path: "/1.0/remove-ghost-jobs-html", want: 303},
		{method: "POST", path: "/1.0/remove-old-jobs", form: form("max_age", "1d"), want: 200},
		{method: "POST", path: "/1.0/set-max-jobs", form: form("max_jobs", "0"), want: 200},
		{method: "POST", path: "/1.0/give-me-job", form: form("host", "h", "pid", "1", "minion", "build-01"), token: minion, want: 204},
		{method: "POST", path: "/1.0/set-max-jobs", form: form("max_jobs", ""), want: 200},
	}
}

func minionExchanges(minion string) []exchange {
	return []exchange{
		{method: "GET", path: "/1.0/minions-html", want: 200},
		{method: "POST", path: "/1.0/retire-minion", form: form("minion", "build-01"), want: 200},
		{method: "POST", path: "/1.0/give-me-job", form: form("host", "h", "pid", "1", "minion", "build-01"), token: minion, want: 200},
		{method: "POST", path: "/1.0/unretire-minion", form: form("minion", "build-01"), want: 200},
		{method: "POST", path: "/1.0/retire-minion-html", form: form("minion", "build-01", "kill", "true"), want: 303},
		{method: "POST", path: "/1.0/unretire-minion-html", form: form("minion", "build-01"), want: 303},
	}
}

func hookExchanges(t *testing.T) []exchange {
	gitlab, gitea, github := hookPayload(t, "gitlab-push.json"), hookPayload(t, "gitea-push.json"), hookPayload(t, "github-push.json")
	return []exchange{
		{method: "POST", path: "/1.0/hooks/gitlab", body: gitlab, token: "-", want: 200,
			header: map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": testHookSecret}},
		{method: "POST", path: "/1.0/hooks/gitea", body: gitea, token: "-", want: 200,
			header: map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": signed(gitea)}},
		{method: "POST", path: "/1.0/hooks/github", body: github, token: "-", want: 200,
			header: map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + signed(github)}},
		{method: "POST", path: "/1.0/hooks/github", body: []byte(`{}`), token: "-", want: 202,
			header: map[string]string{"X-GitHub-Event": "issues", "X-Hub-Signature-256": "sha256=" + signed([]byte(`{}`))}},
	}
}

func signInExchanges(admin string) []exchange {
	return []exchange{
		{method: "GET", path: "/1.0/sign-in-html?back=/1.0/status-html", token: "-", want: 200},
		{method: "POST", path: "/1.0/sign-in-html", form: form("token", admin), token: "-", want: 303},
		{method: "POST", path: "/1.0/sign-out-html", want: 303},
	}
}
