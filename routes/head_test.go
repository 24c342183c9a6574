package routes

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/hosts/hoststest"
)

// The head a minion reports with a successful end becomes the default
// branch of a Gitea or GitLab downstream, over the branch that the first
// push made the default, and is shown on the lorry.
func TestJobUpdateHeadSetsDownstreamDefault(t *testing.T) {
	const tok = "downstream-token"
	tests := []struct {
		name  string
		start func(t *testing.T) (host, typ string, defaultBranch func() string)
	}{
		{name: "gitea", start: func(t *testing.T) (string, string, func() string) {
			f := hoststest.NewGitea(t, hoststest.GiteaOptions{Token: tok, ServeGit: true})
			return f.URL(), downstream.TypeGitea, func() string { r, _ := f.Repo("delta", "p"); return r.DefaultBranch }
		}},
		{name: "gitlab", start: func(t *testing.T) (string, string, func() string) {
			f := hoststest.NewGitLab(t, hoststest.GitLabOptions{Token: tok, ServeGit: true})
			return f.URL(), downstream.TypeGitLab, func() string { p, _ := f.Project("delta/p"); return p.DefaultBranch }
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host, typ, defaultBranch := tc.start(t)
			d, err := downstream.New(downstream.Config{Type: typ, Host: host, Token: tok, PushProtocol: "https"})
			if err != nil {
				t.Fatal(err)
			}
			ts := newTestServer(t)
			ts.Downstream = d
			hs := httptest.NewServer(checkAnswers(t, ts.Handler()))
			defer hs.Close()
			ts.url = hs.URL
			ts.configure(t, "delta/p")

			_, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
			pushURL, _ := offer["push_url"].(string)
			if pushURL == "" {
				t.Fatalf("give-me-job = %v; want a push URL", offer)
			}
			// What lorry pushes: trunk, the upstream's HEAD, and side,
			// which sorts first.
			src := t.TempDir()
			gittest.Git(t, src, nil, "init", "-q", "-b", "trunk")
			gittest.Git(t, src, nil, "commit", "-q", "--allow-empty", "-m", "first")
			gittest.Git(t, src, nil, "branch", "side")
			gittest.Git(t, src, nil, "push", "-q", pushURL, "+refs/heads/*:refs/heads/*")
			if got := defaultBranch(); got != "side" {
				t.Fatalf("default branch after the first push = %q; want side, as the host picks it", got)
			}

			update := func(exit, head string) (int, map[string]any) {
				return ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {"1"}, "minion": {"m"}, "pid": {"1"},
					"exit": {exit}, "head": {head}})
			}
			for _, bad := range []struct{ exit, head string }{
				{"0", "bad..name"}, {"0", "-x"}, {"0", "a b"}, {"0", "x.lock"}, {"no", "trunk"},
			} {
				if code, m := update(bad.exit, bad.head); code != 400 {
					t.Errorf("job-update exit %s head %q = %d %v; want 400", bad.exit, bad.head, code, m)
				}
			}
			if code, m := update("0", "trunk"); code != 200 {
				t.Fatalf("final job-update with head = %d %v", code, m)
			}
			if got := defaultBranch(); got != "trunk" {
				t.Errorf("default branch after the job = %q; want trunk, the upstream's HEAD", got)
			}
			if got := gittest.Git(t, src, nil, "ls-remote", "--symref", pushURL, "HEAD"); !strings.HasPrefix(got, "ref: refs/heads/trunk\t") {
				t.Errorf("downstream HEAD = %q; want trunk", got)
			}
			if _, l := ts.call(t, "GET", "/1.0/lorry/delta/p", nil); l["upstream_head"] != "trunk" {
				t.Errorf("lorry upstream_head = %v; want trunk", l["upstream_head"])
			}
		})
	}
}

// The upstream's HEAD wins over an Upstream Host's listed default branch;
// without it, the listed one is used.
func TestDownstreamRepoPrefersUpstreamHead(t *testing.T) {
	ts := newTestServer(t)
	fake := &fakeHost{repos: []string{"b"}}
	down := &recordingDownstream{}
	ts.ListHost, ts.Downstream = fake.list, down
	hs := httptest.NewServer(checkAnswers(t, ts.Handler()))
	defer hs.Close()
	ts.url = hs.URL
	ts.configure(t)
	ts.call(t, "POST", "/1.0/ls-troves", url.Values{})
	for i, tc := range []struct{ head, want string }{
		{head: "", want: "trunk"},
		{head: "main", want: "main"},
		{head: "", want: "main"},
	} {
		ts.FakeClock.Set(1000 + int64(i+1)*7*86400)
		_, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
		id := toStrings([]any{offer["job_id"]})[0]
		if code, m := ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {id}, "minion": {"m"}, "pid": {"1"},
			"exit": {"0"}, "head": {tc.head}}); code != 200 {
			t.Fatalf("job-update = %d %v", code, m)
		}
		if got := down.finished[len(down.finished)-1].DefaultBranch; got != tc.want {
			t.Errorf("job %s with head %q: Finish got default branch %q; want %q", id, tc.head, got, tc.want)
		}
	}
}

// finishGate is a Downstream whose Finish waits for its request's context
// to end, for a while, and records whether it did.
type finishGate struct {
	entered chan struct{}
	err     chan error
}

func (f *finishGate) Prepare(context.Context, downstream.Repo) (string, error) { return "", nil }

func (f *finishGate) Finish(ctx context.Context, _ downstream.Repo) error {
	close(f.entered)
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
	}
	f.err <- ctx.Err()
	return nil
}

// A minion that goes away just after its final update (stopped, say) does
// not cut short the Downstream Host's Finish: the job's end is recorded,
// and the downstream is finished all the same.
func TestFinishOutlivesTheMinionsRequest(t *testing.T) {
	ts := newTestServer(t)
	gate := &finishGate{entered: make(chan struct{}), err: make(chan error, 1)}
	ts.Downstream = gate
	ts.configure(t, "delta/p")
	ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	form := url.Values{"job_id": {"1"}, "minion": {"m"}, "pid": {"1"}, "exit": {"0"}}
	req, err := http.NewRequestWithContext(ctx, "POST", ts.url+"/1.0/job-update", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-gate.entered
	cancel()
	<-done
	if err := <-gate.err; err != nil {
		t.Errorf("Finish's context ended with the minion's request: %v; want it to go on", err)
	}
}

// A job or lorry gone by the time its downstream is finished is no
// failure; a database that cannot be read is, and is logged.
func TestFinishDownstreamLogsWhatIsNotGone(t *testing.T) {
	logs := &logRecords{}
	ts := newTestServer(t, func(s *Server) { s.Log = slog.New(logs) })
	down := &recordingDownstream{}
	ts.Downstream = down
	ts.configure(t, "delta/p")
	if code, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}}); code != 200 {
		t.Fatalf("give-me-job = %d %v", code, offer)
	}

	ts.FinishDownstream(context.Background(), 99)
	if logged := logs.find("finish downstream repository"); len(logged) != 0 {
		t.Errorf("finishing for a job that is gone logged %v; want nothing", logged)
	}

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	ts.FinishDownstream(ended, 1)
	logged := logs.find("finish downstream repository")
	if len(logged) != 1 || logged[0]["level"] != "ERROR" || logged[0]["job_id"] != "1" ||
		!strings.Contains(logged[0]["err"], context.Canceled.Error()) {
		t.Errorf("finishing when the database cannot be read logged %v; want one error for job 1 with why", logged)
	}
	if len(down.finished) != 0 {
		t.Errorf("downstream finished %v; want nothing finished", down.finished)
	}
}
