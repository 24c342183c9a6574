package routes

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/static"
	"lorrycontroller.dev/lc/templates"
	"lorrycontroller.dev/lc/wire"
)

// browser is a client that keeps cookies and does not follow redirects, so
// a test sees each answer as a browser gets it.
type browser struct {
	t      *testing.T
	ts     *testServer
	client *http.Client
}

func newBrowser(t *testing.T, ts *testServer) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, ts: ts, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type reply struct {
	code   int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, header map[string]string) reply {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.ts.url+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return reply{code: resp.StatusCode, header: resp.Header, body: string(data)}
}

// page GETs a page and fails unless it is an HTML page with want.
func (b *browser) page(path string, want int) string {
	b.t.Helper()
	r := b.do("GET", path, nil, nil)
	if r.code != want {
		b.t.Fatalf("GET %s = %d; want %d\n%.2000s", path, r.code, want, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		b.t.Errorf("GET %s: Content-Type %q; want text/html", path, ct)
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		b.t.Errorf("GET %s: Content-Security-Policy %q; want scripts from the WEBAPP only and no framing", path, csp)
	}
	return r.body
}

// hostileSpec is a spec whose branch name is a script and whose URL
// carries a password.
const hostileSpec = `{"h/<script>alert(1)</script>":{"refspecs":["refs/heads/<script>alert(2)</script>"],` +
	`"type":"git","url":"https://user:hunter2@git.example/evil.git"}}`

const hostilePath = "h/<script>alert(1)</script>"

// configureHostile gives ts a configuration with a hostile lorry, a plain
// one, a host with a token and a skipped file with markup in its error.
func configureHostile(t *testing.T, ts *testServer) {
	t.Helper()
	ts.conf.cfg = &confgit.Config{Commit: "c0ffee0123456789c0ffee0123456789c0ffee01",
		Lorries: []confgit.Lorry{
			{Path: hostilePath, Text: hostileSpec, Type: "git", File: "evil.lorry", Interval: time.Hour, Timeout: time.Minute},
			{Path: "h/plain", Text: `{"h/plain":{"type":"git","url":"u"}}`, Type: "git", File: "plain.lorry", Interval: time.Hour},
		},
		Hosts: []confgit.Host{{Name: "gl.example", Type: "gitlab", Protocol: "https", LsInterval: time.Hour,
			Interval: time.Hour, Timeout: time.Minute,
			Section: `{"host":"gl.example","ls-interval":"1h","private-token":"SEKRIT","type":"gitlab"}`}},
		Errors: []confgit.FileError{{File: "bad<i>.lorry", Error: "<b>broken</b> at https://u:pw@conf.example/x"}},
	}
	if code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{}); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
}

// runJob gives the next due lorry to a minion and reports output on it;
// exit "no" leaves it running.
func runJob(t *testing.T, ts *testServer, minion, output, exit string) int64 {
	t.Helper()
	code, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {minion}})
	if code != 200 {
		t.Fatalf("give-me-job = %d %v", code, offer)
	}
	id := int64(offer["job_id"].(float64))
	form := url.Values{"job_id": {fmt.Sprint(id)}, "minion": {minion}, "pid": {"1"}, "exit": {exit}, "stdout": {output}}
	if code, m := ts.call(t, "POST", "/1.0/job-update", form); code != 200 {
		t.Fatalf("job-update = %d %v", code, m)
	}
	return id
}

const hostileOutput = "fetching <script>alert('out')</script> from https://bob:s3cret@up.example/r.git\n" +
	"<img src=x onerror=alert(3)>\n"

// rawMarkup is what must never reach a page unescaped.
var rawMarkup = regexp.MustCompile(`<script>alert|<img src=x|<b>broken|<i>\.lorry`)

func TestPagesEscapeHostileTextAndHideSecrets(t *testing.T) {
	ts := newTestServer(t)
	configureHostile(t, ts)
	failed := runJob(t, ts, "m1", hostileOutput, "1")   // the hostile lorry, failed
	running := runJob(t, ts, "m2", hostileOutput, "no") // h/plain, running
	b := newBrowser(t, ts)
	pages := []struct {
		path string
		want []string
	}{
		{"/1.0/status-html", []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(3)&gt;",
			"&lt;b&gt;broken&lt;/b&gt;", "bad&lt;i&gt;.lorry", "https://***@conf.example/x"}},
		{string(templates.LorryURL(hostilePath)), []string{"refs/heads/&lt;script&gt;alert(2)&lt;/script&gt;",
			"https://***@git.example/evil.git", "job " + fmt.Sprint(failed) + " failed with exit 1"}},
		{fmt.Sprintf("/1.0/job-html/%d", failed), []string{"fetching &lt;script&gt;alert(&#39;out&#39;)&lt;/script&gt; from https://***@up.example/r.git"}},
		{fmt.Sprintf("/1.0/job-html/%d", running), []string{`data-live="1"`, "&lt;img src=x onerror=alert(3)&gt;"}},
		{"/1.0/list-jobs-html", []string{"h/&lt;script&gt;alert(1)&lt;/script&gt;"}},
		{"/1.0/hosts-html", []string{"gl.example"}},
		{"/1.0/minions-html", []string{"m2", "h/plain"}},
		{"/1.0/notifications-html", []string{"job-failed", string(templates.LorryURL(hostilePath))}},
	}
	for _, p := range pages {
		t.Run(p.path, func(t *testing.T) {
			body := b.page(p.path, 200)
			if m := rawMarkup.FindString(body); m != "" {
				t.Errorf("page shows %q unescaped", m)
			}
			for _, secret := range []string{"hunter2", "SEKRIT", "s3cret", "u:pw@"} {
				if strings.Contains(body, secret) {
					t.Errorf("page shows the secret %q", secret)
				}
			}
			for _, w := range p.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
}

// stubLister lists two repositories for any host.
func stubLister(_ context.Context, h confgit.Host) ([]statedb.NewLorry, []string, error) {
	return []statedb.NewLorry{
		{Path: "gl/a", Text: `{"gl/a":{"type":"git","url":"https://gl.example/a.git"}}`, Kind: wire.KindLorry, Interval: 3600},
		{Path: "gl/b", Text: `{"gl/b":{"type":"git","url":"https://gl.example/b.git"}}`, Kind: wire.KindLorry, Interval: 3600},
	}, nil, nil
}

// htmlText is s as html/template writes it in text.
func htmlText(s string) string {
	return strings.NewReplacer(`"`, "&#34;", "'", "&#39;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// want says what is wrong when got is not w.
func want[T comparable](got, w T) string {
	if got == w {
		return ""
	}
	return fmt.Sprintf("got %v; want %v", got, w)
}

func TestPagesOfLorriesJobsHostsAndMinions(t *testing.T) {
	ts := newTestServer(t)
	ts.ListHost = stubLister
	awkward := "odd/a#b?c%d e"
	ts.configure(t, "p/one", awkward)
	ts.call(t, "POST", "/1.0/force-ls-hosts", nil)
	var ids []int64
	for i := range 3 {
		ids = append(ids, runJob(t, ts, fmt.Sprint("m", i), "", fmt.Sprint([]int{0, 1, 0}[i])))
	}
	b := newBrowser(t, ts)
	lorry := b.page(string(templates.LorryURL(awkward)), 200)
	for _, w := range []string{"<h1>odd/a#b?c%d e", "Place in queue</th><td>", "Recent jobs", fmt.Sprintf(`href="/1.0/job-html/%d"`, ids[1]),
		"1 (error)", "Move to top", htmlText(`"type": "git"`)} {
		if !strings.Contains(lorry, w) {
			t.Errorf("page of %q lacks %q", awkward, w)
		}
	}
	gen := b.page("/1.0/lorry-html/gl/a", 200)
	if !strings.Contains(gen, "upstream host gl.example") {
		t.Errorf("page of a generated lorry does not name its host")
	}
	jobs := b.page("/1.0/list-jobs-html", 200)
	for _, id := range ids {
		if !strings.Contains(jobs, fmt.Sprintf(`href="/1.0/job-html/%d"`, id)) {
			t.Errorf("job list lacks job %d", id)
		}
	}
	failed := b.page("/1.0/list-jobs-html?status=failed", 200)
	if !strings.Contains(failed, fmt.Sprintf(`href="/1.0/job-html/%d"`, ids[1])) || strings.Contains(failed, fmt.Sprintf(`href="/1.0/job-html/%d"`, ids[0])) {
		t.Errorf("job list filtered to failed jobs is wrong")
	}
	hosts := b.page("/1.0/hosts-html", 200)
	for _, w := range []string{"gl.example", "gitlab", `<span class="badge s-ok">ok</span>`, "List hosts now"} {
		if !strings.Contains(hosts, w) {
			t.Errorf("hosts page lacks %q", w)
		}
	}
	minions := b.page("/1.0/minions-html", 200)
	for _, w := range []string{"m0", "m2", `<span class="badge s-ok">idle</span>`, "Remove ghost jobs"} {
		if !strings.Contains(minions, w) {
			t.Errorf("minions page lacks %q", w)
		}
	}
	errs := []struct {
		path string
		code int
		text string
	}{
		{"/1.0/job-html/999", 404, "no job 999"},
		{"/1.0/job-html/x", 400, "is not a job id"},
		{"/1.0/lorry-html/no/such", 404, "no lorry"},
		{"/1.0/list-jobs-html?status=weird", 400, "no job status"},
		{"/1.0/list-jobs-html?before=x", 400, "not a job id"},
	}
	for _, e := range errs {
		if body := b.page(e.path, e.code); !strings.Contains(body, htmlText(e.text)) {
			t.Errorf("GET %s: error page lacks %q", e.path, e.text)
		}
	}
}

func TestStaticFiles(t *testing.T) {
	ts := newTestServer(t)
	b := newBrowser(t, ts)
	tests := []struct {
		path, ctype, cache string
		code               int
	}{
		{"/static/style.css?v=" + static.Version, "text/css; charset=utf-8", "immutable", 200},
		{"/static/app.js?v=" + static.Version, "text/javascript; charset=utf-8", "immutable", 200},
		{"/static/app.js", "text/javascript; charset=utf-8", "no-cache", 200},
		{"/static/static.go", "", "", 404},
		{"/static/", "", "", 404},
	}
	for _, tc := range tests {
		r := b.do("GET", tc.path, nil, nil)
		if r.code != tc.code || r.header.Get("Content-Type") != tc.ctype && tc.code == 200 || !strings.Contains(r.header.Get("Cache-Control"), tc.cache) {
			t.Errorf("GET %s = %d %q %q; want %d %q %q", tc.path, r.code, r.header.Get("Content-Type"), r.header.Get("Cache-Control"), tc.code, tc.ctype, tc.cache)
		}
	}
}

func TestEveryPageTemplateRenders(t *testing.T) {
	// Zero values reach every branch that an empty controller shows, and
	// html/template checks field names only when it runs.
	pages := map[string]any{
		"status.html":        statusView{},
		"jobs.html":          jobsView{},
		"job.html":           jobPageView{},
		"lorry.html":         lorryPageView{},
		"hosts.html":         hostsView{},
		"minions.html":       minionsView{},
		"notifications.html": notificationsView{},
		"error.html":         errorPage{},
		"signin.html":        signInView{pageBase: pageBase{SignIn: true, Self: "/1.0/status-html"}},
	}
	for name, data := range pages {
		for _, static := range []bool{false, true} {
			v := data
			if static {
				if name != "status.html" {
					continue
				}
				sv := v.(statusView)
				sv.pageBase = staticPage("Status", 0)
				v = sv
			}
			if _, err := renderPage(name, v); err != nil {
				t.Errorf("render %s (static %v): %v", name, static, err)
			}
		}
	}
	for _, tmpl := range templates.Pages.Templates() {
		name := tmpl.Name()
		if strings.HasSuffix(name, ".html") && name != "layout.html" && pages[name] == nil {
			t.Errorf("template %s has no test data here", name)
		}
	}
}

func TestExitText(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	tests := []struct {
		exit *int64
		want string
	}{
		{nil, "none"},
		{n(0), "0 (success)"},
		{n(1), "1 (error)"},
		{n(127), "127 (lorry could not be started)"},
		{n(137), "137 (killed by SIGKILL)"},
		{n(143), "143 (killed by SIGTERM)"},
		{n(255), "255 (error)"},
	}
	for _, tc := range tests {
		if got := exitText(tc.exit); got != tc.want {
			t.Errorf("exitText(%v) = %q; want %q", tc.exit, got, tc.want)
		}
	}
}
