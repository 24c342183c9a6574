package routes

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/wire"
)

// stubConfig hands out a fixed configuration, or a fixed error.
type stubConfig struct {
	cfg *confgit.Config
	err error
}

func (s *stubConfig) Read(context.Context) (*confgit.Config, error) { return s.cfg, s.err }

type testServer struct {
	*Server
	url  string
	conf *stubConfig
	// bearer, if set, is the token call sends.
	bearer string
}

// newTestServer starts a Server that asks for no token, unless one of
// opts says otherwise.
func newTestServer(t testing.TB, opts ...func(*Server)) *testServer {
	t.Helper()
	return newTestServerOn(t, dbtest.Place(t), opts...)
}

// newTestServerOn is newTestServer on the state database at place.
func newTestServerOn(t testing.TB, place string, opts ...func(*Server)) *testServer {
	t.Helper()
	return newTestServerDB(t, place, statedb.Options{}, opts...)
}

// newTestServerDB is newTestServerOn with the database opened with
// dbOpts, its clock and events those of the test.
func newTestServerDB(t testing.TB, place string, dbOpts statedb.Options, opts ...func(*Server)) *testServer {
	t.Helper()
	dir := t.TempDir()
	fake := &clock.Fake{}
	fake.Set(1000)
	dbOpts.Clock, dbOpts.Notify = fake, everyEvent()
	db, err := statedb.Open(context.Background(), place, dbOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conf := &stubConfig{cfg: &confgit.Config{Commit: "c0"}}
	s := &Server{
		App: &control.App{DB: db, Config: conf, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			GhostTimeout: time.Minute, JobMaxAge: time.Hour, FakeClock: fake},
		StatusHTML: filepath.Join(dir, "status.html"), InsecureNoAuth: true,
	}
	for _, o := range opts {
		o(s)
	}
	hs := httptest.NewServer(checkAnswers(t, s.Handler()))
	t.Cleanup(hs.Close)
	return &testServer{Server: s, url: hs.URL, conf: conf}
}

// call makes a request and decodes a JSON answer into a map.
func (ts *testServer) call(t testing.TB, method, path string, form url.Values) (int, map[string]any) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, ts.url+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if ts.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+ts.bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(b) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: answer %q is not JSON: %v", method, path, b, err)
		}
	}
	return resp.StatusCode, m
}

func (ts *testServer) configure(t testing.TB, paths ...string) {
	t.Helper()
	var ls []confgit.Lorry
	for _, p := range paths {
		ls = append(ls, confgit.Lorry{Path: p, Text: `{"` + p + `":{"type":"git","url":"u"}}`, Type: "git",
			Interval: time.Hour, Timeout: time.Minute})
	}
	ts.conf.cfg = &confgit.Config{Commit: "c1", Lorries: ls,
		Hosts: []confgit.Host{{Name: "gl.example", Type: "gitlab", Protocol: "https", LsInterval: time.Hour,
			Interval: time.Hour, Timeout: time.Minute,
			Section: `{"host":"gl.example","ls-interval":"1h","private-token":"SEKRIT","type":"gitlab"}`}}}
	// However slow the machine, the answer is the read's, not a 202.
	if code, m := ts.call(t, "POST", "/1.0/read-configuration?wait=3600", url.Values{}); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
}

func TestErrorsAreJSONWithStatus(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b")
	tests := []struct {
		name   string
		method string
		path   string
		form   url.Values
		want   int
	}{
		{name: "unknown route", method: "GET", path: "/1.0/nope", want: 404},
		{name: "wrong method", method: "GET", path: "/1.0/stop-queue", want: 405},
		{name: "unknown lorry", method: "GET", path: "/1.0/lorry/x/y", want: 404},
		{name: "unknown job", method: "GET", path: "/1.0/job/42", want: 404},
		{name: "bad job id", method: "GET", path: "/1.0/job/x", want: 400},
		{name: "stop unknown job", method: "POST", path: "/1.0/stop-job", form: url.Values{"job_id": {"42"}}, want: 404},
		{name: "remove unknown job", method: "POST", path: "/1.0/remove-job", form: url.Values{"job_id": {"42"}}, want: 404},
		{name: "update unknown job", method: "POST", path: "/1.0/job-update", form: url.Values{"job_id": {"42"}, "exit": {"no"}}, want: 404},
		{name: "missing job id", method: "POST", path: "/1.0/stop-job", form: url.Values{}, want: 400},
		{name: "bad exit", method: "POST", path: "/1.0/job-update", form: url.Values{"job_id": {"1"}, "exit": {"maybe"}}, want: 400},
		{name: "move unknown", method: "POST", path: "/1.0/move-to-top", form: url.Values{"path": {"zz"}}, want: 404},
		{name: "move without path", method: "POST", path: "/1.0/move-to-top", form: url.Values{}, want: 400},
		{name: "bad max jobs", method: "POST", path: "/1.0/set-max-jobs", form: url.Values{"max_jobs": {"many"}}, want: 400},
		{name: "negative max jobs", method: "POST", path: "/1.0/set-max-jobs", form: url.Values{"max_jobs": {"-1"}}, want: 400},
		{name: "give-me-job without pid", method: "POST", path: "/1.0/give-me-job", form: url.Values{"host": {"h"}}, want: 400},
		{name: "bad max age", method: "POST", path: "/1.0/remove-old-jobs", form: url.Values{"max_age": {"old"}}, want: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, m := ts.call(t, tc.method, tc.path, tc.form)
			if code != tc.want {
				t.Errorf("%s %s = %d; want %d", tc.method, tc.path, code, tc.want)
			}
			msg, _ := m["error"].(string)
			if msg == "" {
				t.Errorf("answer %v has no error text", m)
			}
			for _, label := range []string{": not found", ": conflict", ": invalid"} {
				if strings.HasSuffix(msg, label) {
					t.Errorf("error %q ends with the internal label %q", msg, label)
				}
			}
		})
	}
}

func TestJobCycleOverHTTP(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/one", "a/two")
	minion := url.Values{"host": {"h"}, "pid": {"7"}, "minion": {"m"}}
	code, offer := ts.call(t, "POST", "/1.0/give-me-job", minion)
	if code != 200 || offer["path"] != "a/one" || offer["kind"] != wire.KindLorry || offer["timeout"] != 60.0 {
		t.Fatalf("give-me-job = %d %v; want a/one, kind lorry, timeout 60", code, offer)
	}
	// Half the ghost timeout of a minute, the default kill grace, the
	// default output limit.
	if offer["lease"] != 30.0 || offer["kill_grace"] != 10.0 || offer["output_limit"] != float64(statedb.DefaultOutputLimit) {
		t.Errorf("give-me-job lease, kill_grace, output_limit = %v, %v, %v; want 30, 10, %d",
			offer["lease"], offer["kill_grace"], offer["output_limit"], statedb.DefaultOutputLimit)
	}
	id := offer["job_id"].(float64)
	jobID := url.Values{"job_id": {"1"}, "minion": {"m"}, "pid": {"7"}, "exit": {"no"}, "stdout": {"out\n"}}
	if code, m := ts.call(t, "POST", "/1.0/job-update", jobID); code != 200 || m["kill"] != false || m["lease"] != 30.0 || m["kill_grace"] != 10.0 {
		t.Fatalf("job-update = %d %v; want kill false, lease 30, kill_grace 10", code, m)
	}
	if code, m := ts.call(t, "POST", "/1.0/remove-job", url.Values{"job_id": {"1"}}); code != 409 {
		t.Errorf("remove running job = %d %v; want 409", code, m)
	}
	if code, m := ts.call(t, "POST", "/1.0/stop-job", url.Values{"job_id": {"1"}}); code != 200 || m["kill"] != true {
		t.Errorf("stop-job = %d %v", code, m)
	}
	if _, m := ts.call(t, "POST", "/1.0/job-update", jobID); m["kill"] != true {
		t.Errorf("job-update after stop-job: kill = %v; want true", m["kill"])
	}
	other := url.Values{"job_id": {"1"}, "minion": {"intruder"}, "pid": {"7"}, "exit": {"0"}}
	if code, _ := ts.call(t, "POST", "/1.0/job-update", other); code != 409 {
		t.Errorf("job-update from another minion = %d; want 409", code)
	}
	final := url.Values{"job_id": {"1"}, "minion": {"m"}, "pid": {"7"}, "exit": {"143"}, "stderr": {"Terminated\n"}, "disk_usage": {"8192"}}
	if code, m := ts.call(t, "POST", "/1.0/job-update", final); code != 200 {
		t.Fatalf("final job-update = %d %v", code, m)
	}
	_, job := ts.call(t, "GET", "/1.0/job/1", nil)
	if job["status"] != statedb.StatusKilled || job["exit"] != 143.0 || job["output"] != "out\nout\nTerminated\n" || job["disk_usage"] != 8192.0 || job["job_id"] != id {
		t.Errorf("job = %v; want killed, exit 143, the output and disk usage", job)
	}
	if code, _ := ts.call(t, "POST", "/1.0/job-update", final); code != 409 {
		t.Errorf("job-update after the end = %d; want 409", code)
	}
	_, l := ts.call(t, "GET", "/1.0/lorry/a/one", nil)
	if l["last_run_exit"] != 143.0 || !strings.Contains(l["last_run_error"].(string), "Terminated") || l["disk_usage"] != 8192.0 {
		t.Errorf("lorry = %v; want exit 143, error with the output tail, disk usage", l)
	}
	if code, _ := ts.call(t, "POST", "/1.0/remove-job", url.Values{"job_id": {"1"}}); code != 200 {
		t.Errorf("remove finished job = %d; want 200", code)
	}
	// JSON bodies are accepted too.
	req, _ := http.NewRequest("POST", ts.url+"/1.0/give-me-job", strings.NewReader(`{"host":"h","pid":8,"minion":"m2"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("give-me-job with a JSON body = %d; want 200", resp.StatusCode)
	}
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"9"}, "minion": {"m3"}}); code != 204 {
		t.Errorf("give-me-job with nothing due = %d; want 204", code)
	}
}

// downstreamStub fails for one path and gives a URL for the others.
type downstreamStub struct{ bad string }

func (d downstreamStub) Prepare(_ context.Context, repo downstream.Repo) (string, error) {
	path := repo.Path
	if path == d.bad {
		return "", errors.New("create https://user:secret@down.example/" + path + ": 403 Forbidden")
	}
	return "ssh://down.example/" + path + ".git", nil
}

func (downstreamStub) Finish(context.Context, downstream.Repo) error { return nil }

func TestGiveMeJobPreparesDownstream(t *testing.T) {
	ts := newTestServer(t)
	ts.Downstream = downstreamStub{bad: "d/bad"}
	hs := httptest.NewServer(checkAnswers(t, ts.Handler()))
	defer hs.Close()
	ts.url = hs.URL
	ts.configure(t, "d/bad", "d/good")
	_, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
	if offer["path"] != "d/good" || offer["push_url"] != "ssh://down.example/d/good.git" {
		t.Errorf("give-me-job = %v; want d/good with its push URL", offer)
	}
	_, l := ts.call(t, "GET", "/1.0/lorry/d/bad", nil)
	lastErr, _ := l["last_run_error"].(string)
	if !strings.Contains(lastErr, "403 Forbidden") || strings.Contains(lastErr, "secret") {
		t.Errorf("last_run_error = %q; want the downstream failure, without the password", lastErr)
	}
	if _, j := ts.call(t, "GET", "/1.0/job/1", nil); j["status"] != statedb.StatusFailed {
		t.Errorf("job of the bad downstream = %v; want failed", j["status"])
	}
}

func TestQueueControls(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "q/a", "q/b", "q/c")
	if _, m := ts.call(t, "POST", "/1.0/move-to-top", url.Values{"path": {"q/c"}}); strings.Join(toStrings(m["queue"]), " ") != "q/c q/a q/b" {
		t.Errorf("after move-to-top: %v", m["queue"])
	}
	if _, m := ts.call(t, "POST", "/1.0/move-to-bottom", url.Values{"path": {"q/a"}}); strings.Join(toStrings(m["queue"]), " ") != "q/c q/b q/a" {
		t.Errorf("after move-to-bottom: %v", m["queue"])
	}
	if _, m := ts.call(t, "POST", "/1.0/stop-queue", nil); m["running_queue"] != false {
		t.Errorf("stop-queue = %v", m)
	}
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}}); code != 204 {
		t.Errorf("give-me-job with the queue stopped = %d; want 204", code)
	}
	ts.call(t, "POST", "/1.0/start-queue", nil)
	if _, m := ts.call(t, "POST", "/1.0/set-max-jobs", url.Values{"max_jobs": {"1"}}); m["max_jobs"] != 1.0 {
		t.Errorf("set-max-jobs = %v", m)
	}
	if _, m := ts.call(t, "GET", "/1.0/get-max-jobs", nil); m["max_jobs"] != 1.0 {
		t.Errorf("get-max-jobs = %v", m)
	}
	if _, m := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}}); m["path"] != "q/c" {
		t.Errorf("first job = %v; want q/c", m["path"])
	}
	if code, _ := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"2"}}); code != 204 {
		t.Errorf("second job with max_jobs 1 = %d; want 204", code)
	}
	if _, m := ts.call(t, "POST", "/1.0/set-max-jobs", url.Values{"max_jobs": {""}}); m["max_jobs"] != nil {
		t.Errorf("set-max-jobs empty = %v; want null", m)
	}
	if _, m := ts.call(t, "GET", "/1.0/list-running-jobs", nil); len(toStrings(m["running_jobs"])) != 1 {
		t.Errorf("list-running-jobs = %v", m)
	}
}

func TestStatusHidesSecretsAndWritesPage(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "s/a")
	for _, path := range []string{"/1.0/status", "/1.0/status-html", "/1.0/lorry/s/a"} {
		resp, err := http.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "SEKRIT") {
			t.Errorf("%s shows the host's token", path)
		}
	}
	page, err := os.ReadFile(ts.StatusHTML)
	if err != nil {
		t.Fatalf("status-html did not write its copy: %v", err)
	}
	if !strings.Contains(string(page), "s/a") {
		t.Errorf("on-disk status page lacks the lorry")
	}
	_, st := ts.call(t, "GET", "/1.0/status", nil)
	hosts, _ := st["hosts"].([]any)
	if len(hosts) != 1 || hosts[0].(map[string]any)["host"] != "gl.example" {
		t.Errorf("status hosts = %v", st["hosts"])
	}
	for _, key := range []string{"running_queue", "max_jobs", "run_queue", "running_jobs", "timestamp", "disk_free", "warning_msg"} {
		if _, ok := st[key]; !ok {
			t.Errorf("status lacks %s", key)
		}
	}
}

func TestReadConfigurationFailuresChangeNothing(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "r/a")
	tests := []struct {
		name string
		err  error
		want int
	}{
		{name: "broken conf", err: &confgit.ConfError{Section: 0, Key: "globs", Err: errors.New("must be a list")}, want: 400},
		{name: "fetch failure", err: &confgit.FetchError{URL: "https://user:pw@example.com/conf", Err: errors.New("refused")}, want: 502},
		{name: "local clone unusable", err: errors.New("open /srv/confgit: not a repository"), want: 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts.conf.cfg, ts.conf.err = nil, tc.err
			code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{})
			if code != tc.want {
				t.Errorf("read-configuration = %d %v; want %d", code, m, tc.want)
			}
			if msg := m["error"].(string); strings.Contains(msg, "pw@") {
				t.Errorf("error %q shows a password", msg)
			}
			if _, q := ts.call(t, "GET", "/1.0/list-queue", nil); strings.Join(toStrings(q["queue"]), " ") != "r/a" {
				t.Errorf("queue after failure = %v; want [r/a]", q["queue"])
			}
			if _, st := ts.call(t, "GET", "/1.0/status", nil); !strings.Contains(st["warning_msg"].(string), "read-configuration failed") {
				t.Errorf("warning_msg = %q; want the failure", st["warning_msg"])
			}
		})
	}
}

func TestPretendTimeOnlyWithFakeClock(t *testing.T) {
	ts := newTestServer(t)
	if _, m := ts.call(t, "POST", "/1.0/pretend-time", url.Values{"now": {"5000"}}); m["now"] != 5000.0 {
		t.Errorf("pretend-time = %v", m)
	}
	if _, st := ts.call(t, "GET", "/1.0/status", nil); st["timestamp"] != 5000.0 {
		t.Errorf("timestamp = %v; want 5000", st["timestamp"])
	}
	ts.FakeClock = nil
	hs := httptest.NewServer(checkAnswers(t, ts.Handler()))
	defer hs.Close()
	resp, err := http.PostForm(hs.URL+"/1.0/pretend-time", url.Values{"now": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("pretend-time without the fake clock = %d; want 404", resp.StatusCode)
	}
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, len(list))
	for i, x := range list {
		b, _ := json.Marshal(x)
		out[i] = strings.Trim(string(b), `"`)
	}
	return out
}

// --allow-local-sources shows in status and on the status page, and
// reaches the minions in each job.
func TestAllowLocalSources(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(strconv.FormatBool(allow), func(t *testing.T) {
			ts := newTestServer(t)
			ts.AllowLocalSources = allow
			ts.configure(t, "a/one")
			if _, st := ts.call(t, "GET", "/1.0/status", nil); st["allow_local_sources"] != allow {
				t.Errorf("status allow_local_sources = %v; want %v", st["allow_local_sources"], allow)
			}
			_, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
			if offer["path"] != "a/one" || offer["allow_local_sources"] != allow {
				t.Errorf("give-me-job = %v; want a/one with allow_local_sources %v", offer, allow)
			}
			resp, err := http.Get(ts.url + "/1.0/status-html")
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := "are refused."
			if allow {
				want = "are <strong>allowed</strong>"
			}
			if !strings.Contains(string(page), want) {
				t.Errorf("the status page does not say %q", want)
			}
		})
	}
}
