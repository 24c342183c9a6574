package routes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// buttonCase is a button of a page: a form posted to path, and what the
// page it comes back to then shows.
type buttonCase struct {
	name  string
	path  string
	form  url.Values
	back  string // where it must come back to
	flash string
	bad   bool
	check func() string // "" if the state is right, else what is wrong
}

// press posts the button's form as a browser does and checks where it
// comes back to, the state it leaves and the message shown there once.
func (tc buttonCase) press(t *testing.T, ts *testServer, b *browser) {
	t.Helper()
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
	tests := []buttonCase{
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
		t.Run(tc.name, func(t *testing.T) { tc.press(t, ts, b) })
	}
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
