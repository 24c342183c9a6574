package routes

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/forgehook"
)

const testHookSecret = "hook-s3cret"

// configureUpstreams configures a lorry per path, mirroring the URL
// given.
func (ts *testServer) configureUpstreams(t *testing.T, urls map[string]string) {
	t.Helper()
	var ls []confgit.Lorry
	for p, u := range urls {
		ls = append(ls, confgit.Lorry{Path: p, Text: `{"` + p + `":{"type":"git","url":"` + u + `"}}`, Type: "git",
			Interval: time.Hour, Timeout: time.Minute})
	}
	ts.conf.cfg = &confgit.Config{Commit: "c1", Lorries: ls}
	if code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{}); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
}

// post sends body to path with the headers given, and answers the status
// and the decoded answer.
func (ts *testServer) post(t *testing.T, path string, body []byte, h map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", ts.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(data, &m)
	return resp.StatusCode, m
}

func hookPayload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func signed(body []byte) string {
	return hex.EncodeToString(forgehook.Sign([]byte(testHookSecret), body))
}

// runAll hands out and finishes every due job, and answers how many.
func (ts *testServer) runAll(t *testing.T) int {
	t.Helper()
	n := 0
	for ts.runAt(t, ts.FakeClock.Now().Unix()) {
		n++
	}
	return n
}

func (ts *testServer) dueNow(t *testing.T) []string {
	t.Helper()
	_, st := ts.call(t, "GET", "/1.0/status", nil)
	var due []string
	now := float64(ts.FakeClock.Now().Unix())
	for _, l := range st["run_queue"].([]any) {
		l := l.(map[string]any)
		if l["running_job"] == nil && l["next_due"].(float64) <= now {
			due = append(due, l["path"].(string))
		}
	}
	return due
}

// Each forge's documented push, with its secret or signature, makes the
// lorries of the pushed repository due at once and first in the queue;
// lorries of other repositories stay as they were.
func TestPushHooks(t *testing.T) {
	for _, tc := range []struct {
		name, route, file string
		headers           func(body []byte) map[string]string
		want              []string
	}{
		{"gitlab push", "/1.0/hooks/gitlab", "gitlab-push.json", func([]byte) map[string]string {
			return map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": testHookSecret}
		}, []string{"m/widget", "m/widget-ssh"}},
		{"gitlab tag push", "/1.0/hooks/gitlab", "gitlab-tag-push.json", func([]byte) map[string]string {
			return map[string]string{"X-Gitlab-Event": "Tag Push Hook", "X-Gitlab-Token": testHookSecret}
		}, []string{"m/widget", "m/widget-ssh"}},
		{"gitea push", "/1.0/hooks/gitea", "gitea-push.json", func(b []byte) map[string]string {
			return map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": signed(b),
				"X-Hub-Signature-256": "sha256=" + signed(b)}
		}, []string{"m/gadget"}},
		{"github push", "/1.0/hooks/github", "github-push.json", func(b []byte) map[string]string {
			return map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + signed(b)}
		}, []string{"m/gizmo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, func(s *Server) { s.HookSecret = []byte(testHookSecret) })
			ts.configureUpstreams(t, map[string]string{
				"m/widget":     "https://gitlab.example.com/tools/widget.git",
				"m/widget-ssh": "ssh://git@gitlab.example.com/tools/widget",
				"m/gadget":     "ssh://git@gitea.example.com:2222/tools/gadget.git",
				"m/gizmo":      "https://github.com/tools/gizmo",
				"m/other":      "https://github.com/tools/other.git",
			})
			ts.runAll(t)
			ts.FakeClock.Set(ts.FakeClock.Now().Unix() + 10)
			if due := ts.dueNow(t); len(due) != 0 {
				t.Fatalf("due after all ran = %v; want none", due)
			}
			body := hookPayload(t, tc.file)
			code, ans := ts.post(t, tc.route, body, tc.headers(body))
			if code != 200 {
				t.Fatalf("hook = %d %v; want 200", code, ans)
			}
			var got []string
			for _, l := range ans["lorries"].([]any) {
				l := l.(map[string]any)
				if l["due"] != true {
					t.Errorf("hook answered %v for %s; want due", l, l["path"])
				}
				got = append(got, l["path"].(string))
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("hook ran %v; want %v", got, tc.want)
			}
			due := ts.dueNow(t)
			sort.Strings(due)
			if !reflect.DeepEqual(due, tc.want) {
				t.Errorf("due after the hook = %v; want %v", due, tc.want)
			}
			_, q := ts.call(t, "GET", "/1.0/list-queue", nil)
			first := []string{}
			for _, p := range q["queue"].([]any)[:len(tc.want)] {
				first = append(first, p.(string))
			}
			sort.Strings(first)
			if !reflect.DeepEqual(first, tc.want) {
				t.Errorf("queue = %v; want %v first", q["queue"], tc.want)
			}
		})
	}
}

// Forged hooks change nothing and are refused.
func TestPushHooksForged(t *testing.T) {
	gitlab := hookPayload(t, "gitlab-push.json")
	gitea := hookPayload(t, "gitea-push.json")
	github := hookPayload(t, "github-push.json")
	other := []byte(`{"ref":"refs/heads/main"}`)
	for _, tc := range []struct {
		name, route string
		body        []byte
		headers     map[string]string
	}{
		{"gitlab no token", "/1.0/hooks/gitlab", gitlab, map[string]string{"X-Gitlab-Event": "Push Hook"}},
		{"gitlab wrong token", "/1.0/hooks/gitlab", gitlab, map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "guess"}},
		{"gitlab signature instead", "/1.0/hooks/gitlab", gitlab, map[string]string{"X-Gitlab-Event": "Push Hook",
			"X-Hub-Signature-256": "sha256=" + signed(gitlab)}},
		{"gitea no signature", "/1.0/hooks/gitea", gitea, map[string]string{"X-Gitea-Event": "push"}},
		{"gitea wrong signature", "/1.0/hooks/gitea", gitea, map[string]string{"X-Gitea-Event": "push",
			"X-Gitea-Signature": hex.EncodeToString(forgehook.Sign([]byte("guess"), gitea))}},
		{"gitea signature of another body", "/1.0/hooks/gitea", gitea, map[string]string{"X-Gitea-Event": "push",
			"X-Gitea-Signature": signed(other)}},
		{"gitea token instead", "/1.0/hooks/gitea", gitea, map[string]string{"X-Gitea-Event": "push", "X-Gitlab-Token": testHookSecret}},
		{"github no signature", "/1.0/hooks/github", github, map[string]string{"X-GitHub-Event": "push"}},
		{"github signature of another body", "/1.0/hooks/github", github, map[string]string{"X-GitHub-Event": "push",
			"X-Hub-Signature-256": "sha256=" + signed(other)}},
		{"github bare hex", "/1.0/hooks/github", github, map[string]string{"X-GitHub-Event": "push",
			"X-Hub-Signature-256": signed(github)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, func(s *Server) { s.HookSecret = []byte(testHookSecret) })
			ts.configureUpstreams(t, map[string]string{
				"m/widget": "https://gitlab.example.com/tools/widget.git",
				"m/gadget": "https://gitea.example.com/tools/gadget.git",
				"m/gizmo":  "https://github.com/tools/gizmo.git",
			})
			ts.runAll(t)
			ts.FakeClock.Set(ts.FakeClock.Now().Unix() + 10)
			_, before := ts.call(t, "GET", "/1.0/status", nil)
			code, ans := ts.post(t, tc.route, tc.body, tc.headers)
			if code != http.StatusUnauthorized && code != http.StatusForbidden {
				t.Errorf("forged hook = %d %v; want 401 or 403", code, ans)
			}
			_, after := ts.call(t, "GET", "/1.0/status", nil)
			if !reflect.DeepEqual(before["run_queue"], after["run_queue"]) {
				t.Errorf("the run queue changed:\nbefore %v\nafter  %v", before["run_queue"], after["run_queue"])
			}
		})
	}
}

// Events other than pushes are answered and ignored; GitHub's ping is
// answered 200; a WEBAPP without a secret refuses every hook, and a body
// over the limit is refused whole.
func TestPushHooksOtherEvents(t *testing.T) {
	ts := newTestServer(t, func(s *Server) { s.HookSecret = []byte(testHookSecret) })
	ts.configureUpstreams(t, map[string]string{"m/widget": "https://gitlab.example.com/tools/widget.git"})
	ts.runAll(t)
	issue := hookPayload(t, "gitlab-issue.json")
	code, ans := ts.post(t, "/1.0/hooks/gitlab", issue, map[string]string{"X-Gitlab-Event": "Issue Hook", "X-Gitlab-Token": testHookSecret})
	if code != http.StatusAccepted || ans["ignored"] != true {
		t.Errorf("issue hook = %d %v; want 202 ignored", code, ans)
	}
	ping := hookPayload(t, "github-ping.json")
	code, ans = ts.post(t, "/1.0/hooks/github", ping, map[string]string{"X-GitHub-Event": "ping", "X-Hub-Signature-256": "sha256=" + signed(ping)})
	if code != 200 || ans["event"] != "ping" {
		t.Errorf("ping = %d %v; want 200", code, ans)
	}
	if due := ts.dueNow(t); len(due) != 0 {
		t.Errorf("due after ignored events = %v; want none", due)
	}
	big := append([]byte(`{"ref":"`), bytes.Repeat([]byte("x"), hookBodyLimit)...)
	big = append(big, `"}`...)
	if code, ans := ts.post(t, "/1.0/hooks/github", big, map[string]string{"X-GitHub-Event": "push",
		"X-Hub-Signature-256": "sha256=" + signed(big)}); code != http.StatusRequestEntityTooLarge {
		t.Errorf("big hook = %d %v; want 413", code, ans)
	}

	// A push of many commits is larger than the other routes' bodies,
	// and still within the hooks' limit.
	ts.configureUpstreams(t, map[string]string{"m/gizmo": "https://github.com/tools/gizmo.git"})
	ts.runAll(t)
	push := hookPayload(t, "github-push.json")
	large := append([]byte(`{"padding":"`+strings.Repeat("x", 300<<10)+`",`), bytes.TrimPrefix(bytes.TrimSpace(push), []byte("{"))...)
	if code, ans := ts.post(t, "/1.0/hooks/github", large, map[string]string{"X-GitHub-Event": "push",
		"X-Hub-Signature-256": "sha256=" + signed(large)}); code != http.StatusOK {
		t.Errorf("push hook of 300 KiB = %d %v; want 200", code, ans)
	}

	off := newTestServer(t)
	body := hookPayload(t, "gitlab-push.json")
	code, ans = off.post(t, "/1.0/hooks/gitlab", body, map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": ""})
	if code != http.StatusForbidden || !strings.Contains(ans["error"].(string), "--hook-secret-file") {
		t.Errorf("hook without a secret = %d %v; want 403 naming --hook-secret-file", code, ans)
	}
}

// Pushes during a run come to one follow-up run, and run-now does the
// same by hand.
func TestPushDuringRunCoalesces(t *testing.T) {
	ts := newTestServer(t, func(s *Server) { s.HookSecret = []byte(testHookSecret) })
	ts.configureUpstreams(t, map[string]string{"m/widget": "https://gitlab.example.com/tools/widget.git"})
	m := url.Values{"host": {"h"}, "pid": {"7"}, "minion": {"m"}}
	code, offer := ts.call(t, "POST", "/1.0/give-me-job", m)
	if code != 200 {
		t.Fatalf("give-me-job = %d %v", code, offer)
	}
	body := hookPayload(t, "gitlab-push.json")
	h := map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": testHookSecret}
	for i := range 3 {
		// Three pushes: three bodies, as a repeat is not acted on.
		body = append(body, ' ')
		h["Idempotency-Key"] = fmt.Sprint("push-", i)
		code, ans := ts.post(t, "/1.0/hooks/gitlab", body, h)
		want := []any{map[string]any{"path": "m/widget", "queued_after_current_run": true}}
		if code != 200 || !reflect.DeepEqual(ans["lorries"], want) {
			t.Errorf("push during the run = %d %v; want %v", code, ans, want)
		}
	}
	if code, ans := ts.call(t, "POST", "/1.0/run-now", url.Values{"path": {"m/widget"}}); code != 200 || ans["queued_after_current_run"] != true {
		t.Errorf("run-now during the run = %d %v; want queued_after_current_run", code, ans)
	}
	done := url.Values{"job_id": {strconv.FormatInt(int64(offer["job_id"].(float64)), 10)}, "minion": {"m"}, "pid": {"7"}, "exit": {"0"}}
	if code, ans := ts.call(t, "POST", "/1.0/job-update", done); code != 200 {
		t.Fatalf("job-update = %d %v", code, ans)
	}
	if n := ts.runAll(t); n != 1 {
		t.Errorf("runs after the pushes = %d; want exactly 1", n)
	}
	if code, ans := ts.call(t, "POST", "/1.0/run-now", url.Values{"path": {"m/widget"}}); code != 200 || ans["due"] != true {
		t.Errorf("run-now = %d %v; want due", code, ans)
	}
	if n := ts.runAll(t); n != 1 {
		t.Errorf("runs after run-now = %d; want 1", n)
	}
	if code, ans := ts.call(t, "POST", "/1.0/run-now", url.Values{"path": {"m/nope"}}); code != 404 {
		t.Errorf("run-now of no lorry = %d %v; want 404", code, ans)
	}
}

// The hooks are reachable without a token when tokens are asked for, and
// a token the forge sends along is not looked at; run-now stays an
// admin's.
func TestPushHooksNeedNoToken(t *testing.T) {
	as := newAuthServer(t, func(s *Server) { s.HookSecret = []byte(testHookSecret) })
	as.configureUpstreams(t, map[string]string{"m/widget": "https://gitlab.example.com/tools/widget.git"})
	body := hookPayload(t, "gitlab-push.json")
	for _, h := range []map[string]string{
		{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": testHookSecret},
		{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": testHookSecret, "Authorization": "Bearer not-ours"},
	} {
		as.bearer = ""
		if code, ans := as.post(t, "/1.0/hooks/gitlab", body, h); code != 200 {
			t.Errorf("hook with %v = %d %v; want 200", h, code, ans)
		}
	}
	if code, body := as.as(t, "", "POST", "/1.0/run-now", url.Values{"path": {"m/widget"}}); code != http.StatusUnauthorized {
		t.Errorf("run-now without a token = %d %s; want 401", code, body)
	}
	if code, body := as.as(t, as.build01, "POST", "/1.0/run-now", url.Values{"path": {"m/widget"}}); code != http.StatusForbidden {
		t.Errorf("run-now with a minion's token = %d %s; want 403", code, body)
	}
	if code, body := as.as(t, as.admin, "POST", "/1.0/run-now", url.Values{"path": {"m/widget"}}); code != 200 {
		t.Errorf("run-now with an admin's token = %d %s; want 200", code, body)
	}
}
