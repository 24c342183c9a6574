package routes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"lorrycontroller/confgit"
	"lorrycontroller/statedb"
	"lorrycontroller/static"
	"lorrycontroller/templates"
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

func TestStatusPageSummaryAndSections(t *testing.T) {
	ts := newTestServer(t)
	configureHostile(t, ts)
	failed := runJob(t, ts, "m1", "one\ntwo\nlast words\n", "1")
	running := runJob(t, ts, "m2", "Counting objects: 10%\rCounting objects: 60%\r", "no")
	ts.call(t, "POST", "/1.0/set-max-jobs", url.Values{"max_jobs": {"4"}})
	body := newBrowser(t, ts).page("/1.0/status-html", 200)
	// The summary comes first, then running jobs, failing lorries and the
	// queue, in that order.
	order := []string{`<span class="badge s-running-queue">running</span>`, `<div class="v">1 of 4</div>`,
		"Due lorries", "Failing lorries", "Minions alive", `<div class="v">2 of 2</div>`, "Disk free",
		"Commit <code", "c0ffee012345", "1 skipped", "gl.example", "never listed",
		`id="running"`, fmt.Sprintf(`<a href="/1.0/job-html/%d">%d</a>`, running, running), "Counting objects: 60%",
		`id="failing"`, fmt.Sprintf("job %d failed with exit 1:\none\ntwo\nlast words", failed),
		`id="queue"`, `href="/1.0/lorry-html/h/plain"`}
	at := 0
	for _, w := range order {
		i := strings.Index(body[at:], w)
		if i < 0 {
			t.Fatalf("status page lacks %q after byte %d", w, at)
		}
		at += i
	}
	for _, w := range []string{`<time datetime="1970-01-01T00:16:40Z">1970-01-01 00:16:40 UTC (now)</time>`, "1 (error)"} {
		if !strings.Contains(body, w) {
			t.Errorf("status page lacks %q", w)
		}
	}
}

func TestStatusPageQueuePagesAndFilter(t *testing.T) {
	ts := newTestServer(t)
	var paths []string
	for i := range 250 {
		paths = append(paths, fmt.Sprintf("q/%03d", i))
	}
	ts.configure(t, append(paths, "other/x_1", "other/x%2")...)
	runJob(t, ts, "m1", "", "7") // q/000 fails and goes to the back
	b := newBrowser(t, ts)
	rows := regexp.MustCompile(`<td data-label="Lorry" class="path"><a href="[^"]*">([^<]*)</a>`)
	queue := func(path string) []string {
		t.Helper()
		body := b.page(path, 200)
		body = body[strings.Index(body, `id="queue"`):]
		var got []string
		for _, m := range rows.FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		return got
	}
	tests := []struct {
		name  string
		query string
		first string
		last  string
		n     int
	}{
		{name: "first page", query: "", first: "q/001", last: "q/100", n: 100},
		{name: "third page", query: "?page=3", first: "q/201", last: "q/000", n: 52},
		{name: "past the last page", query: "?page=99", first: "q/201", last: "q/000", n: 52},
		{name: "path filter", query: "?path=OTHER/", first: "other/x_1", last: "other/x%2", n: 2},
		{name: "literal percent", query: "?path=" + url.QueryEscape("x%"), first: "other/x%2", last: "other/x%2", n: 1},
		{name: "failing", query: "?state=failing", first: "q/000", last: "q/000", n: 1},
		{name: "path and state", query: "?state=never&path=q/24", first: "q/240", last: "q/249", n: 10},
		{name: "second page of a filter", query: "?path=q/&page=2", first: "q/101", last: "q/200", n: 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := queue("/1.0/status-html" + tc.query)
			if len(got) != tc.n || got[0] != tc.first || got[len(got)-1] != tc.last {
				t.Errorf("queue rows = %d, %q … %q; want %d, %q … %q", len(got), first(got), last(got), tc.n, tc.first, tc.last)
			}
		})
	}
	body := b.page("/1.0/status-html?page=2", 200)
	for _, w := range []string{"Page 2 of 3", `href="/1.0/status-html?page=3#queue"`, `href="/1.0/status-html#queue"`} {
		if !strings.Contains(body, w) {
			t.Errorf("page 2 lacks %q", w)
		}
	}
	filtered := b.page("/1.0/status-html?path=q/&state=due", 200)
	if !strings.Contains(filtered, `href="/1.0/status-html?page=2&amp;path=q%2F&amp;state=due#queue"`) {
		t.Errorf("the pages of a filtered queue do not keep the filter")
	}
	if r := b.do("GET", "/1.0/status-html?state=bogus", nil, nil); r.code != 400 || !strings.Contains(r.body, "bogus") ||
		!strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Errorf("state=bogus = %d %s %.200s; want a 400 page", r.code, r.header.Get("Content-Type"), r.body)
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func TestStatusHTMLWritesSelfContainedCopy(t *testing.T) {
	ts := newTestServer(t)
	configureHostile(t, ts)
	b := newBrowser(t, ts)
	// A filtered view is served, but the copy is the plain page.
	live := b.page("/1.0/status-html?path=plain", 200)
	if !strings.Contains(live, `href="/static/style.css?v=`+static.Version+`"`) || !strings.Contains(live, `<form`) {
		t.Errorf("live page lacks its style sheet link or its buttons")
	}
	copy, err := os.ReadFile(ts.StatusHTML)
	if err != nil {
		t.Fatalf("no on-disk copy: %v", err)
	}
	page := string(copy)
	for _, w := range []string{"<style>", ":root {", "<script>", "refreshTimes", "h/&lt;script&gt;alert(1)&lt;/script&gt;",
		`<meta http-equiv="refresh" content="60">`} {
		if !strings.Contains(page, w) {
			t.Errorf("on-disk copy lacks %q", w)
		}
	}
	for _, w := range []string{`href="/static/`, `src="/static/`, "<form", "lorry_controller_flash"} {
		if strings.Contains(page, w) {
			t.Errorf("on-disk copy has %q; it must stand alone and hold no buttons", w)
		}
	}
	if m := rawMarkup.FindString(page); m != "" {
		t.Errorf("on-disk copy shows %q unescaped", m)
	}
	entries, _ := os.ReadDir(filepath.Dir(ts.StatusHTML))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".status.html") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	// The copy follows the state at each request.
	ts.call(t, "POST", "/1.0/stop-queue", nil)
	b.page("/1.0/status-html", 200)
	if copy, _ := os.ReadFile(ts.StatusHTML); !strings.Contains(string(copy), `s-stopped-queue`) {
		t.Errorf("on-disk copy not rewritten after the queue stopped")
	}
	// A copy that cannot be written is no reason to fail the page: it is
	// answered with the failure, which status's warning_msg shows too.
	want := ts.StatusHTML
	ts.StatusHTML = filepath.Join(t.TempDir(), "missing", "status.html")
	r := b.do("GET", "/1.0/status-html", nil, nil)
	if r.code != 200 || !strings.Contains(r.body, "on-disk copy of this page could not be written: no such file or directory") ||
		!strings.Contains(r.body, "h/plain") {
		t.Errorf("status-html with an unwritable copy = %d %.300s; want 200 with the page and the warning", r.code, r.body)
	}
	if strings.Contains(r.body, "missing") {
		t.Errorf("the page names the path of the copy")
	}
	if _, st := ts.call(t, "GET", "/1.0/status", nil); !strings.Contains(st["warning_msg"].(string), "on-disk copy of the status page could not be written") {
		t.Errorf("status warning_msg after a failed copy = %q; want the failure", st["warning_msg"])
	}
	// Once the copy is written again, the warning goes.
	ts.StatusHTML = want
	if r := b.do("GET", "/1.0/status-html", nil, nil); r.code != 200 || strings.Contains(r.body, "could not be written") {
		t.Errorf("status-html with a writable copy = %d, still warning: %v", r.code, strings.Contains(r.body, "could not be written"))
	}
	if _, st := ts.call(t, "GET", "/1.0/status", nil); strings.Contains(st["warning_msg"].(string), "on-disk copy") {
		t.Errorf("status warning_msg after a good copy = %q; want no copy warning", st["warning_msg"])
	}
}

// stubLister lists two repositories for any host.
func stubLister(_ context.Context, h confgit.Host) ([]statedb.NewLorry, []string, error) {
	return []statedb.NewLorry{
		{Path: "gl/a", Text: `{"gl/a":{"type":"git","url":"https://gl.example/a.git"}}`, Kind: KindLorry, Interval: 3600},
		{Path: "gl/b", Text: `{"gl/b":{"type":"git","url":"https://gl.example/b.git"}}`, Kind: KindLorry, Interval: 3600},
	}, nil, nil
}

func TestButtonsDoWhatTheAPIDoesAndComeBack(t *testing.T) {
	ts := newTestServer(t)
	ts.ListHost = stubLister
	ts.configure(t, "b/one", "b/two", "b/three")
	running := runJob(t, ts, "m1", "out\n", "no") // b/one
	finished := runJob(t, ts, "m2", "", "0")      // b/two
	ghost := runJob(t, ts, "m3", "", "no")        // b/three
	ts.FakeClock.Set(ts.FakeClock.Now().Unix() + 3600)
	ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {fmt.Sprint(running)}, "minion": {"m1"}, "pid": {"1"}, "exit": {"no"}})
	b := newBrowser(t, ts)
	field := func(path, key string) string {
		_, m := ts.call(t, "GET", path, nil)
		return strings.Join(toStrings([]any{m[key]}), "")
	}
	tests := []struct {
		name  string
		path  string
		form  url.Values
		back  string // where it must come back to
		flash string
		bad   bool
		check func() string // "" if the state is right, else what is wrong
	}{
		{name: "stop queue", path: "/1.0/stop-queue-html", form: url.Values{"back": {"/1.0/status-html?page=1"}},
			back: "/1.0/status-html?page=1", flash: "Queue stopped",
			check: func() string { return want(field("/1.0/status", "running_queue"), "false") }},
		{name: "start queue", path: "/1.0/start-queue-html", form: url.Values{"back": {"/1.0/status-html"}},
			flash: "Queue started", check: func() string { return want(field("/1.0/status", "running_queue"), "true") }},
		{name: "set max jobs", path: "/1.0/set-max-jobs-html", form: url.Values{"max_jobs": {"3"}},
			flash: "Max jobs set to 3.", check: func() string { return want(field("/1.0/get-max-jobs", "max_jobs"), "3") }},
		{name: "remove max jobs", path: "/1.0/set-max-jobs-html", form: url.Values{"max_jobs": {""}},
			flash: "no limit", check: func() string { return want(field("/1.0/get-max-jobs", "max_jobs"), "null") }},
		{name: "bad max jobs", path: "/1.0/set-max-jobs-html", form: url.Values{"max_jobs": {"-2"}},
			flash: "max_jobs -2 is negative", bad: true},
		{name: "move to top", path: "/1.0/move-to-top-html", form: url.Values{"path": {"b/three"}, "back": {"/1.0/lorry-html/b/three"}},
			back: "/1.0/lorry-html/b/three", flash: "Moved b/three to the top",
			check: func() string { return want(field("/1.0/list-queue", "queue")[:9], `["b/three`) }},
		{name: "move to bottom", path: "/1.0/move-to-bottom-html", form: url.Values{"path": {"b/three"}},
			flash: "Moved b/three to the bottom",
			check: func() string { return want(strings.HasSuffix(field("/1.0/list-queue", "queue"), `"b/three"]`), true) }},
		{name: "run now", path: "/1.0/run-now-html", form: url.Values{"path": {"b/two"}, "back": {"/1.0/lorry-html/b/two"}},
			back: "/1.0/lorry-html/b/two", flash: "b/two is due now",
			check: func() string { return want(field("/1.0/list-queue", "queue")[:7], `["b/two`) }},
		{name: "run now while running", path: "/1.0/run-now-html", form: url.Values{"path": {"b/one"}},
			flash: "b/one is running; it runs again as soon as this run ends."},
		{name: "run now unknown", path: "/1.0/run-now-html", form: url.Values{"path": {"nope"}}, flash: `no lorry "nope"`, bad: true},
		{name: "move unknown", path: "/1.0/move-to-top-html", form: url.Values{"path": {"nope"}}, flash: `no lorry "nope"`, bad: true},
		{name: "retry now", path: "/1.0/retry-lorry-html", form: url.Values{"path": {"b/three"}, "back": {"/1.0/lorry-html/b/three"}},
			back: "/1.0/lorry-html/b/three", flash: "Retrying b/three now",
			check: func() string { return want(field("/1.0/lorry/b/three", "state"), "ok") }},
		{name: "retry unknown", path: "/1.0/retry-lorry-html", form: url.Values{"path": {"nope"}}, flash: `no lorry "nope"`, bad: true},
		{name: "read configuration", path: "/1.0/read-configuration-html", flash: "Configuration read: commit c1, 3 lorries and 1 upstream hosts"},
		{name: "list hosts now", path: "/1.0/force-ls-hosts-html", flash: "gl.example: 2 repositories; 2 added",
			check: func() string { return want(field("/1.0/lorry/gl/a", "path"), "gl/a") }},
		{name: "stop job", path: "/1.0/stop-job-html", form: url.Values{"job_id": {fmt.Sprint(running)}, "back": {fmt.Sprintf("/1.0/job-html/%d", running)}},
			back: fmt.Sprintf("/1.0/job-html/%d", running), flash: fmt.Sprintf("Asked the minion of job %d to kill it.", running),
			check: func() string { return want(field(fmt.Sprintf("/1.0/job/%d", running), "kill"), "true") }},
		{name: "stop a finished job", path: "/1.0/stop-job-html", form: url.Values{"job_id": {fmt.Sprint(finished)}},
			flash: fmt.Sprintf("job %d is succeeded", finished), bad: true},
		{name: "remove a running job", path: "/1.0/remove-job-html", form: url.Values{"job_id": {fmt.Sprint(running)}},
			flash: "still running", bad: true},
		{name: "remove ghost jobs", path: "/1.0/remove-ghost-jobs-html", form: url.Values{"back": {"/1.0/minions-html"}},
			back: "/1.0/minions-html", flash: fmt.Sprintf("Ended as lost: job %d.", ghost),
			check: func() string { return want(field(fmt.Sprintf("/1.0/job/%d", ghost), "status"), "lost") }},
		{name: "no ghost jobs left", path: "/1.0/remove-ghost-jobs-html", flash: "No ghost jobs"},
		{name: "remove a finished job", path: "/1.0/remove-job-html", form: url.Values{"job_id": {fmt.Sprint(finished)}, "back": {"/1.0/list-jobs-html"}},
			back: "/1.0/list-jobs-html", flash: fmt.Sprintf("Removed job %d", finished),
			check: func() string {
				c, _ := ts.call(t, "GET", fmt.Sprintf("/1.0/job/%d", finished), nil)
				return want(c, 404)
			}},
		{name: "back to another site", path: "/1.0/start-queue-html", form: url.Values{"back": {"https://evil.example/"}}, flash: "Queue started"},
		{name: "back to a protocol-relative URL", path: "/1.0/start-queue-html", form: url.Values{"back": {"//evil.example/x"}}, flash: "Queue started"},
		{name: "back with a backslash", path: "/1.0/start-queue-html", form: url.Values{"back": {`/\evil.example`}}, flash: "Queue started"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			form := tc.form
			if form == nil {
				form = url.Values{}
			}
			// What a browser sends with a form of the page.
			r := b.do("POST", tc.path, form, map[string]string{"Origin": ts.url, "Sec-Fetch-Site": "same-origin"})
			back := tc.back
			if back == "" {
				back = "/1.0/status-html"
			}
			if r.code != http.StatusSeeOther || r.header.Get("Location") != back {
				t.Fatalf("POST %s = %d to %q; want 303 to %q\n%.300s", tc.path, r.code, r.header.Get("Location"), back, r.body)
			}
			if tc.check != nil {
				if msg := tc.check(); msg != "" {
					t.Errorf("after %s: %s", tc.name, msg)
				}
			}
			page := b.page(back, 200)
			class := "flash good"
			if tc.bad {
				class = "flash bad"
			}
			i := strings.Index(page, `<p class="`+class+`"`)
			if i < 0 || !strings.Contains(page[i:min(len(page), i+600)], htmlText(tc.flash)) {
				t.Errorf("page after %s lacks a %q message with %q", tc.name, class, tc.flash)
			}
			if again := b.page(back, 200); strings.Contains(again, `class="flash`) {
				t.Errorf("the message of %s is shown twice", tc.name)
			}
		})
	}
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

func TestCrossOriginPostsRefused(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "x/a")
	b := newBrowser(t, ts)
	tests := []struct {
		name   string
		path   string
		header map[string]string
		want   int
	}{
		{name: "curl, no browser headers", path: "/1.0/stop-queue", want: 200},
		{name: "same origin", path: "/1.0/stop-queue", header: map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": ts.url}, want: 200},
		{name: "typed by the user", path: "/1.0/stop-queue", header: map[string]string{"Sec-Fetch-Site": "none"}, want: 200},
		{name: "same origin, Origin only", path: "/1.0/stop-queue", header: map[string]string{"Origin": ts.url}, want: 200},
		{name: "same origin, Referer only", path: "/1.0/stop-queue", header: map[string]string{"Referer": ts.url + "/1.0/status-html"}, want: 200},
		{name: "cross-site", path: "/1.0/stop-queue", header: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, want: 403},
		{name: "same site, another port", path: "/1.0/stop-queue", header: map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"}, want: 403},
		{name: "Origin only, another host", path: "/1.0/stop-queue", header: map[string]string{"Origin": "https://evil.example"}, want: 403},
		{name: "Referer only, another host", path: "/1.0/stop-queue", header: map[string]string{"Referer": "https://evil.example/page"}, want: 403},
		{name: "button from another site", path: "/1.0/stop-queue-html", header: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 403},
		{name: "minion from another site", path: "/1.0/job-update", header: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts.call(t, "POST", "/1.0/start-queue", nil)
			r := b.do("POST", tc.path, url.Values{}, tc.header)
			if r.code != tc.want {
				t.Errorf("POST %s = %d %s; want %d", tc.path, r.code, r.body, tc.want)
			}
			_, st := ts.call(t, "GET", "/1.0/status", nil)
			if tc.want == 403 {
				if st["running_queue"] != true {
					t.Errorf("a refused request stopped the queue")
				}
				var e map[string]string
				if json.Unmarshal([]byte(r.body), &e) != nil || !strings.Contains(e["error"], "cross-origin") {
					t.Errorf("refusal %q does not say why", r.body)
				}
			}
		})
	}
	// Pages may be read from anywhere: links to them work.
	if r := b.do("GET", "/1.0/status-html", nil, map[string]string{"Sec-Fetch-Site": "cross-site"}); r.code != 200 {
		t.Errorf("GET status-html from a link elsewhere = %d; want 200", r.code)
	}
}

func TestJobPageAndOutputFollowing(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "j/a")
	id := runJob(t, ts, "m1", "first\n", "no")
	b := newBrowser(t, ts)
	page := b.page(fmt.Sprintf("/1.0/job-html/%d", id), 200)
	for _, w := range []string{`data-offset="6"`, `data-live="1"`, `<noscript><meta http-equiv="refresh" content="5"></noscript>`,
		"first\n</pre>", `action="/1.0/stop-job-html"`, `<span class="badge s-running" data-field="status">running</span>`} {
		if !strings.Contains(page, w) {
			t.Errorf("job page lacks %q", w)
		}
	}
	follow := func(query string) (int, map[string]any) {
		t.Helper()
		return ts.call(t, "GET", fmt.Sprintf("/1.0/job-output/%d%s", id, query), nil)
	}
	ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {fmt.Sprint(id)}, "minion": {"m1"}, "pid": {"1"}, "exit": {"no"}, "stdout": {"second\n"}})
	if _, m := follow("?offset=6"); m["output"] != "second\n" || m["next"] != 13.0 || m["status"] != "running" || m["status_text"] != "running" {
		t.Errorf("job-output from 6 = %v; want second, next 13, running", m)
	}
	if _, m := follow(""); m["output"] != "first\nsecond\n" {
		t.Errorf("job-output from the start = %v", m["output"])
	}
	ts.call(t, "POST", "/1.0/stop-job", url.Values{"job_id": {fmt.Sprint(id)}})
	if _, m := follow("?offset=13"); m["output"] != "" || m["status_text"] != "stopping" || m["status_class"] != "s-killing" || m["kill"] != true {
		t.Errorf("job-output after stop-job = %v; want no output, stopping", m)
	}
	ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {fmt.Sprint(id)}, "minion": {"m1"}, "pid": {"1"}, "exit": {"143"}, "stderr": {"Terminated\n"}})
	_, m := follow("?offset=13")
	if m["output"] != "Terminated\n" || m["status"] != "killed" || m["status_class"] != "s-killed" ||
		m["exit_text"] != "143 (killed by SIGTERM)" || m["ended"] == nil {
		t.Errorf("job-output at the end = %v; want killed by SIGTERM", m)
	}
	page = b.page(fmt.Sprintf("/1.0/job-html/%d", id), 200)
	for _, w := range []string{`data-live="0"`, "143 (killed by SIGTERM)", `<span class="badge s-killed" data-field="status">killed</span>`} {
		if !strings.Contains(page, w) {
			t.Errorf("page of the ended job lacks %q", w)
		}
	}
	if strings.Contains(page, "<noscript><meta") {
		t.Errorf("page of an ended job reloads itself")
	}
	for _, tc := range []struct{ path, q string }{{"/1.0/job-output/99", ""}, {"/1.0/job-output/x", ""}, {fmt.Sprintf("/1.0/job-output/%d", id), "?offset=-1"}} {
		if code, m := ts.call(t, "GET", tc.path+tc.q, nil); code < 400 || m["error"] == nil {
			t.Errorf("GET %s%s = %d %v; want an error", tc.path, tc.q, code, m)
		}
	}
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

func TestJobListPages(t *testing.T) {
	ts := newTestServer(t)
	var paths []string
	for i := range 120 {
		paths = append(paths, fmt.Sprintf("l/%03d", i))
	}
	ts.configure(t, paths...)
	for i := range 120 {
		runJob(t, ts, fmt.Sprint("m", i), "", "0")
	}
	b := newBrowser(t, ts)
	ids := regexp.MustCompile(`<td data-label="Job"><a href="/1.0/job-html/(\d+)">`)
	list := func(q string) (string, string, int, string) {
		body := b.page("/1.0/list-jobs-html"+q, 200)
		m := ids.FindAllStringSubmatch(body, -1)
		if len(m) == 0 {
			return "", "", 0, body
		}
		return m[0][1], m[len(m)-1][1], len(m), body
	}
	if f, l, n, body := list(""); f != "120" || l != "71" || n != 50 || !strings.Contains(body, `href="/1.0/list-jobs-html?before=71"`) || strings.Contains(body, "after=") {
		t.Errorf("newest page = %s…%s (%d); want 120…71 with a link to older jobs only", f, l, n)
	}
	if f, l, n, body := list("?before=71"); f != "70" || l != "21" || n != 50 || !strings.Contains(body, `href="/1.0/list-jobs-html?after=70"`) {
		t.Errorf("second page = %s…%s (%d); want 70…21 with a link to newer jobs", f, l, n)
	}
	if f, l, n, _ := list("?before=21"); f != "20" || l != "1" || n != 20 {
		t.Errorf("last page = %s…%s (%d); want 20…1", f, l, n)
	}
	if f, l, n, _ := list("?after=20"); f != "70" || l != "21" || n != 50 {
		t.Errorf("page after 20 = %s…%s (%d); want 70…21", f, l, n)
	}
	if f, _, n, _ := list("?path=l/11"); f != "120" || n != 10 {
		t.Errorf("jobs of l/11* = from %s (%d); want 10 from 120", f, n)
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
