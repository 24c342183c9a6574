package routes

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/static"
)

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
