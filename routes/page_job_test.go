package routes

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

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

// TestJobProgressLine has a running job print only progress meters, lines
// that carriage returns rewrite, some ending in a character cut in two:
// its page and job-output show the line as it stands, at every offset, and
// "No output yet" only when there is neither output nor progress.
func TestJobProgressLine(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "j/p")
	id := runJob(t, ts, "m1", "", "no")
	b := newBrowser(t, ts)
	path := fmt.Sprintf("/1.0/job-html/%d", id)
	if page := b.page(path, 200); !strings.Contains(page, `id="output-empty"`) || !strings.Contains(page, `id="progress" hidden`) {
		t.Errorf("the page of a job with no output yet lacks No output yet, or shows a progress line")
	}
	update := func(stdout string) {
		t.Helper()
		ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {fmt.Sprint(id)}, "minion": {"m1"}, "pid": {"1"}, "exit": {"no"}, "stdout": {stdout}})
	}
	steps := []struct{ stdout, progress, output string }{
		{"Counting: 50% (30/60)\r", "Counting: 50% (30/60)", ""},
		{"Counting: 93% (56/60)\r", "Counting: 93% (56/60)", ""},
		// A character cut in two waits for its rest.
		{"Compressing: \xc3", "Compressing: ", ""},
		{"\xa9t\u00e9 1/2\r", "Compressing: été 1/2", ""},
		{"Compressing: done.\nCounting: <b>1%</b>\r", "Counting: <b>1%</b>", "Compressing: done.\n"},
	}
	for _, st := range steps {
		update(st.stdout)
		for _, offset := range []string{"", "?offset=0", "?offset=1000"} {
			_, m := ts.call(t, "GET", fmt.Sprintf("/1.0/job-output/%d%s", id, offset), nil)
			if m["progress"] != st.progress {
				t.Errorf("after %q job-output%s progress = %q; want %q", st.stdout, offset, m["progress"], st.progress)
			}
			if offset == "" && m["output"] != st.output {
				t.Errorf("after %q job-output output = %q; want %q", st.stdout, m["output"], st.output)
			}
		}
		page := b.page(path, 200)
		if want := htmlText(st.progress); !strings.Contains(page, `<span data-field="progress">`+want+`</span>`) {
			t.Errorf("after %q the page does not show the progress line %q", st.stdout, want)
		}
		if strings.Contains(page, `id="output-empty"`) {
			t.Errorf("after %q the page says No output yet", st.stdout)
		}
	}
}

// TestJobProgressLineRedacted has a running job's progress line, the
// line that carriage returns rewrite, repeat the spec's credentials, as
// its output may: the page and job-output hide them there as they do in
// the output, whatever form the line gives them in.
func TestJobProgressLineRedacted(t *testing.T) {
	const user, password = "mirror-bot", "Pa55 w0rd/x@y"
	ts := newTestServer(t)
	ts.configureUpstreams(t, map[string]string{"j/p": "https://" + user + ":" + url.PathEscape(password) + "@git.example/x.git"})
	id := runJob(t, ts, "m1", "", "no")
	b := newBrowser(t, ts)
	for _, line := range []string{
		"as " + user + " with " + password + " 7%\r",
		"as " + url.QueryEscape(password) + " 9%\r",
		"fetching https://" + user + ":" + url.PathEscape(password) + "@git.example/x.git 42%\r",
		"sent " + base64.StdEncoding.EncodeToString([]byte(user+":"+password)) + " 50%\r",
	} {
		ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {fmt.Sprint(id)}, "minion": {"m1"}, "pid": {"1"},
			"exit": {"no"}, "stdout": {line}})
		_, m := ts.call(t, "GET", fmt.Sprintf("/1.0/job-output/%d", id), nil)
		p, _ := m["progress"].(string)
		if strings.Contains(p, "w0rd") || !strings.HasSuffix(p, line[len(line)-4:len(line)-1]) {
			t.Errorf("after %q job-output progress = %q; want the line with the password hidden", line, p)
		}
		page := b.page(fmt.Sprintf("/1.0/job-html/%d", id), 200)
		if i := strings.Index(page, "w0rd"); i >= 0 || !strings.Contains(page, htmlText(p)+"</span>") {
			t.Errorf("after %q the job's page shows the password (at %d), or not the line %q", line, i, p)
		}
	}
}
