package routes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

// fakeHost stands in for listing an upstream host.
type fakeHost struct {
	mu    sync.Mutex
	repos []string
	err   error
	calls int
}

func (f *fakeHost) list(_ context.Context, h confgit.Host) ([]statedb.NewLorry, []string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, nil, f.err
	}
	var out []statedb.NewLorry
	for _, r := range f.repos {
		path := "mirror/" + r
		out = append(out, statedb.NewLorry{Path: path, Kind: wire.KindLorry, FromPath: r,
			Text:     `{"` + path + `":{"type":"git","url":"https://oauth2:SEKRIT@` + h.Name + `/` + r + `.git"}}`,
			Interval: int64(h.Interval.Seconds()), Timeout: int64(h.Timeout.Seconds()),
			Description: "the " + r + " project", DefaultBranch: "trunk"})
	}
	return out, []string{"skipped/one: outside every prefix"}, nil
}

// recordingDownstream remembers what Finish was called with.
type recordingDownstream struct {
	mu       sync.Mutex
	finished []downstream.Repo
}

func (d *recordingDownstream) Prepare(_ context.Context, repo downstream.Repo) (string, error) {
	return "/srv/down/" + repo.Path + ".git", nil
}

func (d *recordingDownstream) Finish(_ context.Context, repo downstream.Repo) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.finished = append(d.finished, repo)
	return nil
}

func TestListHosts(t *testing.T) {
	ts := newTestServer(t)
	fake := &fakeHost{repos: []string{"a", "b"}}
	down := &recordingDownstream{}
	ts.ListHost, ts.Downstream = fake.list, down
	hs := httptest.NewServer(checkAnswers(t, ts.Handler()))
	defer hs.Close()
	ts.url = hs.URL
	ts.configure(t)
	if _, q := ts.call(t, "GET", "/1.0/list-queue", nil); len(toStrings(q["queue"])) != 0 || fake.calls != 0 {
		t.Fatalf("after read-configuration: queue %v, %d listings; want no lorries before ls-troves", q["queue"], fake.calls)
	}
	code, res := ts.call(t, "POST", "/1.0/ls-troves", url.Values{})
	hostRes := res["hosts"].([]any)[0].(map[string]any)
	if code != 200 || hostRes["ok"] != true || hostRes["added"] != 2.0 || len(hostRes["skipped"].([]any)) != 1 {
		t.Fatalf("ls-troves = %d %v", code, res)
	}
	if _, q := ts.call(t, "GET", "/1.0/list-queue", nil); strings.Join(toStrings(q["queue"]), " ") != "mirror/a mirror/b" {
		t.Errorf("queue = %v; want the host's repositories", q["queue"])
	}
	// Not due again before its ls-interval, unless forced.
	if _, res := ts.call(t, "POST", "/1.0/ls-hosts", url.Values{}); len(res["hosts"].([]any)) != 0 {
		t.Errorf("second ls-hosts listed %v; want nothing before ls-interval", res["hosts"])
	}
	fake.repos = []string{"b", "c"}
	_, res = ts.call(t, "POST", "/1.0/force-ls-troves", url.Values{})
	if r := res["hosts"].([]any)[0].(map[string]any); r["added"] != 1.0 || r["removed"] != 1.0 {
		t.Errorf("force-ls-troves = %v; want c added and a removed", r)
	}
	ts.FakeClock.Set(1000 + 3600)
	if _, res := ts.call(t, "POST", "/1.0/ls-troves", url.Values{}); len(res["hosts"].([]any)) != 1 {
		t.Errorf("ls-troves after ls-interval listed %v; want the host", res["hosts"])
	}

	// Credentials in a generated spec reach the minion, and nobody else.
	_, l := ts.call(t, "GET", "/1.0/lorry/mirror/b", nil)
	if text := l["text"].(string); strings.Contains(text, "SEKRIT") || !strings.Contains(text, "***@") {
		t.Errorf("lorry text = %s; want the credentials redacted", text)
	}
	if l["from_host"] != "gl.example" || l["from_path"] != "b" || l["description"] != "the b project" || l["default_branch"] != "trunk" {
		t.Errorf("lorry = %v; want from_host, from_path, description and default branch", l)
	}
	_, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
	if !strings.Contains(offer["text"].(string), "SEKRIT") || offer["push_url"] != "/srv/down/mirror/b.git" {
		t.Errorf("give-me-job = %v; want the full spec and the push URL", offer)
	}
	jobID := toStrings([]any{offer["job_id"]})[0]
	ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {jobID}, "minion": {"m"}, "pid": {"1"}, "exit": {"0"},
		"stderr": {"From https://oauth2:SEKRIT@gl.example/b.git\n"}})
	_, job := ts.call(t, "GET", "/1.0/job/"+jobID, nil)
	if out := job["output"].(string); strings.Contains(out, "SEKRIT") {
		t.Errorf("job output %q shows the token", out)
	}
	if len(down.finished) != 1 || down.finished[0] != (downstream.Repo{Path: "mirror/b", Description: "the b project", DefaultBranch: "trunk"}) {
		t.Errorf("Finish calls = %+v; want one for mirror/b with its description and default branch", down.finished)
	}

	// A failed listing is kept in status, and the lorries stay.
	_, before := ts.call(t, "GET", "/1.0/list-queue", nil)
	fake.err = errors.New("GET https://gl.example/api/v4/projects: 401 Unauthorized")
	_, res = ts.call(t, "POST", "/1.0/force-ls-troves", url.Values{})
	if r := res["hosts"].([]any)[0].(map[string]any); r["ok"] != false || !strings.Contains(r["error"].(string), "401") {
		t.Errorf("failed listing = %v", r)
	}
	_, st := ts.call(t, "GET", "/1.0/status", nil)
	h := st["hosts"].([]any)[0].(map[string]any)
	if !strings.Contains(h["last_ls_error"].(string), "401") || h["repos"] != 2.0 || h["last_ls"] == nil {
		t.Errorf("status host = %v; want the error, the last good count and the time", h)
	}
	if _, q := ts.call(t, "GET", "/1.0/list-queue", nil); strings.Join(toStrings(q["queue"]), " ") != strings.Join(toStrings(before["queue"]), " ") {
		t.Errorf("queue after a failed listing = %v; want it unchanged, %v", q["queue"], before["queue"])
	}
}

// A slow upstream never holds up the minions.
func TestListingDoesNotBlockGiveMeJob(t *testing.T) {
	ts := newTestServer(t)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ts.ListHost = func(ctx context.Context, h confgit.Host) ([]statedb.NewLorry, []string, error) {
		once.Do(func() { close(started) })
		<-release
		return nil, nil, nil
	}
	hs := httptest.NewServer(checkAnswers(t, ts.Handler()))
	defer hs.Close()
	ts.url = hs.URL
	ts.configure(t, "q/a")
	listed := make(chan error, 1)
	go func() {
		resp, err := http.PostForm(ts.url+"/1.0/force-ls-troves", url.Values{})
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("answered %d", resp.StatusCode)
			}
		}
		listed <- err
	}()
	// Ask for a job only once the listing hangs, holding whatever it holds.
	<-started
	start := time.Now()
	code, _ := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
	if code != 200 {
		t.Errorf("give-me-job during a listing = %d; want 200", code)
	}
	t.Logf("give-me-job answered in %v while a listing hung", time.Since(start))
	close(release)
	if err := <-listed; err != nil {
		t.Errorf("force-ls-troves: %v; want 200", err)
	}
}

func TestReadConfigurationChecksHostSections(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "c/a")
	ts.CheckHost = func(h confgit.Host) error {
		return &confgit.ConfError{Section: -1, Type: h.Type, Key: "org", Err: errors.New("github needs one of \"org\" or \"user\"")}
	}
	code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{})
	if msg, _ := m["error"].(string); code != 400 || !strings.Contains(msg, `host "gl.example"`) || !strings.Contains(msg, `"org"`) {
		t.Errorf("read-configuration with a bad host section = %d %v; want 400 naming the host and the key", code, m)
	}
	if _, q := ts.call(t, "GET", "/1.0/list-queue", nil); strings.Join(toStrings(q["queue"]), " ") != "c/a" {
		t.Errorf("queue = %v; want it unchanged", q["queue"])
	}
}
