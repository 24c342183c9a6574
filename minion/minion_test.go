package minion

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/workarea"
)

func joined(reqs []request, field string) string {
	var b strings.Builder
	for _, q := range reqs {
		b.WriteString(q.Form.Get(field))
	}
	return b.String()
}

func indexOf(reqs []request, field, text string) int {
	for i, q := range reqs {
		if strings.Contains(q.Form.Get(field), text) {
			return i
		}
	}
	return -1
}

// TestJobOutputAcrossUpdates runs a job that waits for the WEBAPP to have
// seen each piece of output before writing the next, so the output must
// arrive in order over several updates, followed by the exit code and the
// disk usage of the job's working directory.
func TestJobOutputAcrossUpdates(t *testing.T) {
	f := newFakeWebapp(t)
	gates := t.TempDir()
	go1, go2 := filepath.Join(gates, "go1"), filepath.Join(gates, "go2")
	lorry := writeLorry(t, `
workarea=$2
mkdir -p "$workarea/delta%2Ffoo"
head -c 20000 /dev/zero > "$workarea/delta%2Ffoo/data"
echo one
while [ ! -e `+sh(go1)+` ]; do sleep 0.01; done
echo two >&2
while [ ! -e `+sh(go2)+` ]; do sleep 0.01; done
echo three
exit 3`)
	m, cfg := newTestMinion(t, f, lorry)
	f.giveMeJob = oneJob(jobAnswer(12, "delta/foo", "lorry", `{"foo": {"type": "git"}}`, ""))
	var stdout, stderr string
	f.jobUpdate = func(n int, form url.Values) (int, string) {
		stdout += form.Get("stdout")
		stderr += form.Get("stderr")
		if strings.Contains(stdout, "one\n") {
			touch(t, go1)
		}
		if strings.Contains(stderr, "two\n") {
			touch(t, go2)
		}
		return http.StatusOK, `{"kill": false}`
	}

	ran, err := runOnce(t, t.Context(), m)
	if !ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
	}

	updates := f.delivered()
	if len(updates) < 3 {
		t.Fatalf("job-updates: got %d, want at least 3", len(updates))
	}
	for i, q := range updates {
		if got := q.Form.Get("job_id"); got != "12" {
			t.Errorf("update %d: got job_id %q, want 12", i, got)
		}
		if got, last := q.Form.Get("exit"), i == len(updates)-1; !last && got != "no" {
			t.Errorf("update %d: got exit %q, want no", i, got)
		}
	}
	final := updates[len(updates)-1]
	if got := final.Form.Get("exit"); got != "3" {
		t.Errorf("final exit: got %q, want 3", got)
	}
	if got, want := joined(updates, "stdout"), "one\nthree\n"; got != want {
		t.Errorf("stdout: got %q, want %q", got, want)
	}
	if got, want := joined(updates, "stderr"), "two\n"; got != want {
		t.Errorf("stderr: got %q, want %q", got, want)
	}
	one, two, three := indexOf(updates, "stdout", "one"), indexOf(updates, "stderr", "two"), indexOf(updates, "stdout", "three")
	if !(one < two && two <= three) {
		t.Errorf("updates carrying one, two, three: got %d, %d, %d; want increasing", one, two, three)
	}
	du, err := workarea.DiskUsage(workarea.Dir(cfg.WorkingArea, "delta/foo"))
	if err != nil {
		t.Fatal(err)
	}
	if du < 20000 {
		t.Fatalf("disk usage measured by the test: got %d, want at least 20000", du)
	}
	if got, want := final.Form.Get("disk_usage"), strconv.FormatInt(du, 10); got != want {
		t.Errorf("disk_usage: got %s, want %s", got, want)
	}
	if n := len(f.routeRequests("give-me-job")); n != 1 {
		t.Errorf("give-me-job requests: got %d, want 1", n)
	}
}

func TestLorryArguments(t *testing.T) {
	tests := []struct {
		name     string
		kind     string
		pushURL  string
		answer   string // instead of the usual answer
		wantPush []string
		// wantEnvURL is the push URL lorry finds in its environment; it
		// is never on its command line.
		wantEnvURL string
	}{
		{name: "no push url", kind: "lorry", pushURL: "", wantPush: nil},
		{name: "push url", kind: "lorry", pushURL: "ssh://git@downstream/delta/foo.git", wantEnvURL: "ssh://git@downstream/delta/foo.git"},
		{name: "push url with a token", kind: "lorry", pushURL: "https://oauth2:TOKEN@downstream/delta/foo.git", wantEnvURL: "https://oauth2:TOKEN@downstream/delta/foo.git"},
		{name: "kind missing means lorry", kind: "", pushURL: "", wantPush: nil},
		{
			name: "local sources allowed", kind: "lorry",
			answer:     `{"job_id": 7, "path": "delta/foo", "kind": "lorry", "allow_local_sources": true, "push_url": "/srv/down/foo.git", "text": `,
			wantPush:   []string{"--allow-local-sources"},
			wantEnvURL: "/srv/down/foo.git",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			out := t.TempDir()
			argsFile, specFile := filepath.Join(out, "args"), filepath.Join(out, "spec")
			envFile, modeFile := filepath.Join(out, "env"), filepath.Join(out, "mode")
			lorry := writeLorry(t, `printf '%s\n' "$@" > `+sh(argsFile)+`
printf '%s' "${LORRY_PUSH_URL-unset}" > `+sh(envFile)+`
eval "spec=\${$#}"
cp "$spec" `+sh(specFile)+`
stat -c %a "$spec" > `+sh(modeFile)+`
pwd`)
			m, cfg := newTestMinion(t, f, lorry)
			text := "{\"foo\": {\"type\": \"git\", \"url\": \"https://example.org/foo.git\"}}\n"
			answer := jobAnswer(7, "delta/foo", tt.kind, text, tt.pushURL)
			if tt.kind == "" {
				answer = `{"job_id": 7, "path": "delta/foo", "text": ` + strconv.Quote(text) + `}`
			}
			if tt.answer != "" {
				answer = tt.answer + strconv.Quote(text) + `}`
			}
			f.giveMeJob = oneJob(answer)

			if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
				t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
			}
			data, err := os.ReadFile(argsFile)
			if err != nil {
				t.Fatalf("lorry did not run: %v", err)
			}
			args := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			if len(args) == 0 {
				t.Fatal("lorry got no arguments")
			}
			spec := args[len(args)-1]
			want := append(append([]string{"--working-area", cfg.WorkingArea, "--result-fd", "3"}, tt.wantPush...), spec)
			if strings.Join(args, " ") != strings.Join(want, " ") {
				t.Errorf("lorry arguments: got %q, want %q", args, want)
			}
			wantEnv := tt.wantEnvURL
			if wantEnv == "" {
				wantEnv = "unset"
			}
			if got, _ := os.ReadFile(envFile); string(got) != wantEnv {
				t.Errorf("LORRY_PUSH_URL: got %q, want %q", got, wantEnv)
			}
			if !strings.HasSuffix(spec, ".lorry") || filepath.Dir(spec) != m.jobDir() || !strings.HasPrefix(spec, cfg.WorkingArea+"/") {
				t.Errorf("spec file: got %q, want a .lorry file in %s", spec, m.jobDir())
			}
			if got, _ := os.ReadFile(specFile); string(got) != text {
				t.Errorf("spec text: got %q, want %q", got, text)
			}
			// A spec may hold an upstream's token: no other user reads it.
			if got, _ := os.ReadFile(modeFile); string(got) != "600\n" {
				t.Errorf("spec file mode while lorry ran: got %q, want 600", got)
			}
			if _, err := os.Stat(spec); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("spec file %s after the job: got %v, want it removed", spec, err)
			}
			updates := f.delivered()
			final := updates[len(updates)-1]
			if got := final.Form.Get("exit"); got != "0" {
				t.Errorf("exit: got %q, want 0", got)
			}
			if got, want := joined(updates, "stdout"), cfg.WorkingArea+"\n"; got != want {
				t.Errorf("lorry's working directory: got %q, want %q", got, want)
			}
			if got := final.Form.Get("disk_usage"); got != "0" {
				t.Errorf("disk_usage of a job that wrote nothing: got %q, want 0", got)
			}
		})
	}
}

// TestKillAnswer checks that "kill": true ends the job with SIGTERM, and with
// SIGKILL after the grace when the job ignores SIGTERM.
func TestKillAnswer(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   string
	}{
		{name: "term", script: "echo started; sleep 1000", want: "143"},
		{name: "term ignored", script: "trap '' TERM; echo started; while :; do sleep 0.05; done", want: "137"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			m, _ := newTestMinion(t, f, writeLorry(t, tt.script))
			m.cfg.KillGrace = 200 * time.Millisecond
			f.giveMeJob = oneJob(jobAnswer(3, "delta/kill", "lorry", "{}", ""))
			started := false
			var killAt time.Time
			f.jobUpdate = func(n int, form url.Values) (int, string) {
				// Ask only once the trap is set.
				started = started || strings.Contains(form.Get("stdout"), "started")
				if started && killAt.IsZero() {
					killAt = time.Now()
				}
				return http.StatusOK, `{"kill": ` + strconv.FormatBool(started) + `}`
			}
			if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
				t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
			}
			updates := f.delivered()
			final := updates[len(updates)-1]
			if got := final.Form.Get("exit"); got != tt.want {
				t.Errorf("exit: got %s, want %s", got, tt.want)
			}
			if tt.want == "137" && final.At.Sub(killAt) < m.cfg.KillGrace {
				t.Errorf("SIGKILL after %v, want no earlier than the grace %v", final.At.Sub(killAt), m.cfg.KillGrace)
			}
		})
	}
}

// TestJobGone checks that a job the WEBAPP no longer counts as this minion's
// is killed at once, group and all, and not reported on again, whether or
// not the WEBAPP gave the job a lease: a refusal is no reason to wait for
// the lease to run out.
func TestJobGone(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		lease  bool
	}{
		{name: "unknown job", status: http.StatusNotFound, body: `{"error": "no such job"}`},
		{name: "finished or not ours", status: http.StatusConflict, body: `{"error": "job 5 is owned by other-minion"}`},
		{name: "unknown job with a lease", status: http.StatusNotFound, body: `{"error": "no such job"}`, lease: true},
		{name: "lost with a lease", status: http.StatusConflict, body: `{"error": "job 5 is lost"}`, lease: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			dir := t.TempDir()
			pidFile, childFile := filepath.Join(dir, "pid"), filepath.Join(dir, "child")
			lorry := writeLorry(t, `sleep 1000 & echo $! > `+sh(childFile)+`
echo $$ > `+sh(pidFile)+`
echo started
wait`)
			m, _ := newTestMinion(t, f, lorry)
			answer := jobAnswer(5, "delta/gone", "lorry", "{}", "")
			if tt.lease {
				answer = strings.Replace(answer, "{", `{"lease": 3600, "kill_grace": 1, `, 1)
			}
			f.giveMeJob = oneJob(answer)
			started := false
			f.jobUpdate = func(n int, form url.Values) (int, string) {
				started = started || strings.Contains(form.Get("stdout"), "started")
				if started {
					return tt.status, tt.body
				}
				return http.StatusOK, `{"kill": false}`
			}
			// Retried until the lease ran out, the job would run an hour.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if ran, err := runOnce(t, ctx, m); !ran || err != nil {
				t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
			}
			updates := f.routeRequests("job-update")
			last := updates[len(updates)-1]
			if last.Status != tt.status {
				t.Errorf("last job-update answered %d, want the %d that ended the job", last.Status, tt.status)
			}
			refused := 0
			for _, q := range updates {
				if q.Status == tt.status {
					refused++
				}
			}
			if refused != 1 {
				t.Errorf("%d job-updates answered %d; want the one that ended the job, never retried", refused, tt.status)
			}
			for _, q := range updates {
				if q.Form.Get("exit") != "no" {
					t.Errorf("got a final update with exit %s, want none", q.Form.Get("exit"))
				}
			}
			waitGone(t, readPid(t, pidFile))
			waitGone(t, readPid(t, childFile))
		})
	}
}

// TestWebappDown has the WEBAPP drop connections and fail for a while, both
// while the job runs and for its final update: output must not be lost or
// repeated, and no second job may be asked for until the first is reported.
func TestWebappDown(t *testing.T) {
	f := newFakeWebapp(t)
	gates := t.TempDir()
	go1, go2 := filepath.Join(gates, "go1"), filepath.Join(gates, "go2")
	lorry := writeLorry(t, `echo a
while [ ! -e `+sh(go1)+` ]; do sleep 0.01; done
echo b; echo warn >&2
while [ ! -e `+sh(go2)+` ]; do sleep 0.01; done
echo c`)
	m, _ := newTestMinion(t, f, lorry)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.giveMeJob = func(n int) (int, string) {
		switch n {
		case 1:
			return http.StatusOK, jobAnswer(9, "delta/down", "lorry", "{}", "")
		case 2:
			cancel()
		}
		return http.StatusNoContent, ""
	}
	finals := 0
	f.jobUpdate = func(n int, form url.Values) (int, string) {
		if form.Get("exit") != "no" {
			finals++
			if finals <= 2 {
				return http.StatusBadGateway, "<html>bad gateway</html>"
			}
			return http.StatusOK, `{"kill": false}`
		}
		switch n {
		case 1:
			return dropConnection, ""
		case 2:
			touch(t, go1)
			return dropConnection, ""
		case 3:
			return http.StatusServiceUnavailable, `{"error": "database is locked"}`
		case 4:
			touch(t, go2)
			return http.StatusServiceUnavailable, `{"error": "database is locked"}`
		}
		return http.StatusOK, `{"kill": false}`
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("Run did not return")
	}

	reqs := f.requests()
	var failed int
	finalAt, secondJobAt := -1, -1
	for i, q := range reqs {
		switch {
		case q.Route == "job-update" && q.Status != http.StatusOK:
			failed++
		case q.Route == "job-update" && q.Form.Get("exit") != "no":
			finalAt = i
		case q.Route == "give-me-job" && i > 0 && secondJobAt < 0:
			secondJobAt = i
		}
	}
	if failed < 6 {
		t.Errorf("failed job-updates: got %d, want at least 6", failed)
	}
	if finalAt < 0 || secondJobAt < finalAt {
		t.Errorf("request order: final update at %d, second give-me-job at %d; want the final first", finalAt, secondJobAt)
	}
	updates := f.delivered()
	if got, want := joined(updates, "stdout"), "a\nb\nc\n"; got != want {
		t.Errorf("delivered stdout: got %q, want %q", got, want)
	}
	if got, want := joined(updates, "stderr"), "warn\n"; got != want {
		t.Errorf("delivered stderr: got %q, want %q", got, want)
	}
	if got := updates[len(updates)-1].Form.Get("exit"); got != "0" {
		t.Errorf("exit: got %s, want 0", got)
	}
}

func TestNothingToDo(t *testing.T) {
	f := newFakeWebapp(t)
	m, _ := newTestMinion(t, f, writeLorry(t, "exit 0"))
	ran, err := runOnce(t, t.Context(), m)
	if ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want false, nil", ran, err)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].Route != "give-me-job" {
		t.Fatalf("requests: got %v, want one give-me-job", reqs)
	}
	want := url.Values{"host": {testHost}, "pid": {strconv.Itoa(testPid)}, "minion": {testMinion}}
	if got := reqs[0].Form; got.Encode() != want.Encode() {
		t.Errorf("give-me-job form: got %v, want %v", got, want)
	}
}

// TestRunWaits checks how long Run waits before asking again: the sleep
// after 204, and a growing backoff while the WEBAPP fails, of which at
// least half is waited whatever the jitter.
func TestRunWaits(t *testing.T) {
	tests := []struct {
		name   string
		status int
		want   []time.Duration // least gap before each later request
	}{
		{name: "nothing to do", status: http.StatusNoContent, want: []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}},
		{name: "webapp failing", status: http.StatusInternalServerError, want: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			m, _ := newTestMinion(t, f, writeLorry(t, "exit 0"))
			m.cfg.Sleep = 50 * time.Millisecond
			m.cfg.BackoffMin, m.cfg.BackoffMax = 20*time.Millisecond, time.Second
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			f.giveMeJob = func(n int) (int, string) {
				if n == len(tt.want)+1 {
					cancel()
				}
				if tt.status == http.StatusNoContent {
					return tt.status, ""
				}
				return tt.status, `{"error": "internal error"}`
			}
			m.Run(ctx)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Fatal("Run did not stop")
			}
			reqs := f.requests()
			if len(reqs) != len(tt.want)+1 {
				t.Fatalf("requests: got %d, want %d", len(reqs), len(tt.want)+1)
			}
			for i, least := range tt.want {
				if gap := reqs[i+1].At.Sub(reqs[i].At); gap < least {
					t.Errorf("gap before request %d: got %v, want at least %v", i+2, gap, least)
				}
			}
		})
	}
}

func TestGiveMeJobErrors(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		retryable bool
		wantText  string
	}{
		{name: "server error", status: 500, body: `{"error": "internal error"}`, retryable: true, wantText: "internal error"},
		{name: "bad request", status: 400, body: `{"error": "minion is required"}`, retryable: false, wantText: "minion is required"},
		{name: "not json", status: 200, body: `<html>hello</html>`, retryable: true, wantText: "decode"},
		{name: "no job id", status: 200, body: `{"path": "delta/foo"}`, retryable: true, wantText: "no job_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			m, _ := newTestMinion(t, f, writeLorry(t, "exit 0"))
			f.giveMeJob = func(int) (int, string) { return tt.status, tt.body }
			ran, err := runOnce(t, t.Context(), m)
			if ran || err == nil {
				t.Fatalf("RunOnce: got %v, %v; want false and an error", ran, err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error: got %q, want it to mention %q", err, tt.wantText)
			}
			var se *StatusError
			if isStatus := errors.As(err, &se); isStatus != (tt.status != 200) {
				t.Errorf("error %v: got StatusError %v, want %v", err, isStatus, tt.status != 200)
			}
			if got := retryable(err); got != tt.retryable {
				t.Errorf("retryable(%v): got %v, want %v", err, got, tt.retryable)
			}
		})
	}
}

// TestJobNotRun covers jobs reported as failed without a process: an
// unknown kind, and a lorry command that cannot be started.
func TestJobNotRun(t *testing.T) {
	tests := []struct {
		name       string
		kind       string
		missingCmd bool
		wantExit   string
		wantStderr string
	}{
		{name: "unknown kind", kind: "frobnicate", wantExit: "1", wantStderr: `kind "frobnicate"`},
		{name: "lorry command missing", kind: "lorry", missingCmd: true, wantExit: "127", wantStderr: "no-such-lorry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			ranFile := filepath.Join(t.TempDir(), "ran")
			lorry := writeLorry(t, "touch "+sh(ranFile))
			if tt.missingCmd {
				lorry = filepath.Join(t.TempDir(), "no-such-lorry")
			}
			m, _ := newTestMinion(t, f, lorry)
			f.giveMeJob = oneJob(jobAnswer(4, "delta/odd", tt.kind, "{}", ""))
			if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
				t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
			}
			updates := f.routeRequests("job-update")
			if len(updates) != 1 {
				t.Fatalf("job-updates: got %d, want 1", len(updates))
			}
			if got := updates[0].Form.Get("exit"); got != tt.wantExit {
				t.Errorf("exit: got %s, want %s", got, tt.wantExit)
			}
			if got := updates[0].Form.Get("stderr"); !strings.Contains(got, tt.wantStderr) {
				t.Errorf("stderr: got %q, want it to mention %q", got, tt.wantStderr)
			}
			if _, err := os.Stat(ranFile); err == nil {
				t.Error("the lorry command ran, want it not run")
			}
		})
	}
}

// TestStop checks that a minion told to stop kills its job and still reports
// it, trying again quickly if the first try fails.
func TestStop(t *testing.T) {
	tests := []struct {
		name       string
		failFinals int
	}{
		{name: "reported at once", failFinals: 0},
		{name: "reported on a later try", failFinals: stopTries - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			pidFile := filepath.Join(t.TempDir(), "pid")
			m, _ := newTestMinion(t, f, writeLorry(t, "echo $$ > "+sh(pidFile)+"; echo started; sleep 1000"))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			f.giveMeJob = oneJob(jobAnswer(8, "delta/stop", "lorry", "{}", ""))
			finals := 0
			f.jobUpdate = func(n int, form url.Values) (int, string) {
				if strings.Contains(form.Get("stdout"), "started") {
					cancel()
				}
				if form.Get("exit") != "no" {
					finals++
					if finals <= tt.failFinals {
						return dropConnection, ""
					}
				}
				return http.StatusOK, `{"kill": false}`
			}
			if ran, err := runOnce(t, ctx, m); !ran || err != nil {
				t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
			}
			updates := f.delivered()
			final := updates[len(updates)-1]
			if got := final.Form.Get("exit"); got != "143" {
				t.Errorf("exit: got %s, want 143", got)
			}
			// The job did not fail of itself: the WEBAPP ends it as
			// killed, not as a failure of its lorry.
			if got := final.Form.Get("stopping"); got != "true" {
				t.Errorf("stopping: got %q, want true", got)
			}
			if out := final.Form.Get("stderr") + final.Form.Get("stdout"); !strings.Contains(out, "the minion is stopping: job killed") {
				t.Errorf("final output %q does not say that the stopping minion killed the job", out)
			}
			if finals != tt.failFinals+1 {
				t.Errorf("final update tries: got %d, want %d", finals, tt.failFinals+1)
			}
			waitGone(t, readPid(t, pidFile))
		})
	}
}

func TestCompleteRunes(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{name: "empty", in: "", want: 0},
		{name: "ascii", in: "abc", want: 3},
		{name: "complete two-byte", in: "aé", want: 3},
		{name: "cut two-byte", in: "a\xc3", want: 1},
		{name: "cut three-byte after one", in: "a\xe2", want: 1},
		{name: "cut three-byte after two", in: "a\xe2\x82", want: 1},
		{name: "complete three-byte", in: "a€", want: 4},
		{name: "cut four-byte after three", in: "a\xf0\x9f\x98", want: 1},
		{name: "complete four-byte", in: "a😀", want: 5},
		{name: "invalid byte kept", in: "a\xff", want: 2},
		{name: "stray continuation kept", in: "a\x80", want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := completeRunes([]byte(tt.in)); got != tt.want {
				t.Errorf("completeRunes(%q): got %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

// TestSplitRuneOutput checks that a rune written in two pieces is delivered
// whole, with the rest of its line.
func TestSplitRuneOutput(t *testing.T) {
	f := newFakeWebapp(t)
	gate := filepath.Join(t.TempDir(), "go")
	lorry := writeLorry(t, `printf 'x\n\342\202'
while [ ! -e `+sh(gate)+` ]; do sleep 0.01; done
printf '\254y'`)
	m, _ := newTestMinion(t, f, lorry)
	f.giveMeJob = oneJob(jobAnswer(6, "delta/utf8", "lorry", "{}", ""))
	f.jobUpdate = func(n int, form url.Values) (int, string) {
		if strings.Contains(form.Get("stdout"), "x") {
			touch(t, gate)
		}
		return http.StatusOK, `{"kill": false}`
	}
	if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
	}
	var chunks []string
	for _, q := range f.delivered() {
		if s := q.Form.Get("stdout"); s != "" {
			chunks = append(chunks, s)
		}
	}
	want := []string{"x\n", "€y"}
	if strings.Join(chunks, "|") != strings.Join(want, "|") {
		t.Errorf("stdout chunks: got %q, want %q", chunks, want)
	}
}

// TestRelativePaths checks that relative paths given to the minion still
// name the same files from inside the job, which runs in the working area.
func TestRelativePaths(t *testing.T) {
	f := newFakeWebapp(t)
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("lorry", []byte("#!/bin/sh\npwd\necho \"$2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir("work", 0o755); err != nil {
		t.Fatal(err)
	}
	m, _ := newTestMinion(t, f, "./lorry")
	m = New(Config{
		WebappURLs: m.cfg.WebappURLs, Name: testMinion, Host: testHost, Pid: testPid,
		LorryCmd: "./lorry", WorkingArea: "work",
		Sleep: time.Millisecond, UpdateInterval: 20 * time.Millisecond, KillGrace: time.Second,
	}, nil, nil)
	f.giveMeJob = oneJob(jobAnswer(10, "delta/rel", "lorry", "{}", ""))
	if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
	}
	updates := f.delivered()
	final := updates[len(updates)-1]
	if got := final.Form.Get("exit"); got != "0" {
		t.Fatalf("exit: got %s, want 0; stderr %q", got, final.Form.Get("stderr"))
	}
	work := filepath.Join(dir, "work")
	if got, want := joined(updates, "stdout"), work+"\n"+work+"\n"; got != want {
		t.Errorf("job's directory and --working-area: got %q, want %q", got, want)
	}
}

// TestBackoffJitter checks that retry delays are spread over half to one and
// a half of the doubling delay, so that minions failing together do not
// retry together.
func TestBackoffJitter(t *testing.T) {
	b := &backoff{min: time.Second, max: 4 * time.Second}
	for i, base := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		if d := b.next(); d < base/2 || d >= base+base/2 {
			t.Errorf("delay %d: got %v, want within [%v, %v)", i, d, base/2, base+base/2)
		}
	}
	seen := map[time.Duration]bool{}
	for range 100 {
		seen[b.next()] = true
	}
	if len(seen) < 2 {
		t.Errorf("100 delays at the cap: got %d distinct values, want them spread", len(seen))
	}
}

// The minion's git configuration reaches lorry as --git-config, after
// every flag the WEBAPP's answer leads to, and as an absolute path: lorry
// runs in the working area.
func TestLorryGitConfig(t *testing.T) {
	f := newFakeWebapp(t)
	argsFile := filepath.Join(t.TempDir(), "args")
	lorry := writeLorry(t, `printf '%s\n' "$@" > `+sh(argsFile))
	_, cfg := newTestMinion(t, f, lorry)
	t.Chdir(t.TempDir())
	cfg.GitConfig = "jobs.gitconfig"
	m := New(cfg, nil, nil)
	want, err := filepath.Abs("jobs.gitconfig")
	if err != nil {
		t.Fatal(err)
	}
	text := "{\"foo\": {\"type\": \"git\", \"url\": \"https://example.org/foo.git\"}}\n"
	f.giveMeJob = oneJob(`{"job_id": 7, "path": "delta/foo", "kind": "lorry", "allow_local_sources": true, "text": ` + strconv.Quote(text) + `}`)
	if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
	}
	data, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("lorry did not run: %v", err)
	}
	args := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(args) < 3 || args[len(args)-3] != "--git-config" || args[len(args)-2] != want {
		t.Errorf("lorry arguments: got %q, want --git-config %s before the spec", args, want)
	}
}
