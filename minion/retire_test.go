package minion

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfirmAtStart checks that the minion confirms its job as soon as the
// job's process has started, before the job writes anything and long
// before the first regular update, and what it does with the answer.
func TestConfirmAtStart(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		// wantExit is the exit of the final update, "" for none.
		wantExit string
	}{
		{name: "confirmed", status: http.StatusOK, body: `{"kill": false}`, wantExit: "0"},
		{name: "killed at once", status: http.StatusOK, body: `{"kill": true}`, wantExit: "143"},
		// The first regular update confirms instead.
		{name: "webapp failing", status: http.StatusInternalServerError, body: `{"error": "internal error"}`, wantExit: "0"},
		// The claim has ended: the job is killed and not reported.
		{name: "refused", status: http.StatusConflict, body: `{"error": "job 8 is orphaned"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			dir := t.TempDir()
			gate, pidFile := filepath.Join(dir, "go"), filepath.Join(dir, "pid")
			// The job writes nothing, and does not end, until the
			// WEBAPP has heard from the minion.
			lorry := writeLorry(t, `echo $$ > `+sh(pidFile)+`
while [ ! -e `+sh(gate)+` ]; do sleep 0.01; done
echo done`)
			m, _ := newTestMinion(t, f, lorry)
			// No regular update comes while the job runs.
			m.cfg.UpdateInterval = time.Hour
			m.cfg.KillGrace = 5 * time.Second
			f.giveMeJob = oneJob(jobAnswer(8, "delta/confirm", "lorry", "{}", ""))
			f.jobUpdate = func(n int, form url.Values) (int, string) {
				if n > 1 {
					return http.StatusOK, `{"kill": false}`
				}
				if got := form.Get("exit"); got != "no" {
					t.Errorf("first job-update: got exit %q, want no: the job runs", got)
				}
				if out := form.Get("stdout") + form.Get("stderr"); out != "" {
					t.Errorf("first job-update: got output %q, want none yet", out)
				}
				// A job to be killed is never let go on: released, it
				// could end by itself before the kill reached it.
				if tt.wantExit != "143" {
					touch(t, gate)
				}
				return tt.status, tt.body
			}
			if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
				t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
			}
			// RunOnce returns once the job has ended: a job killed at
			// once may have been killed before it wrote its pid, or
			// between making the file and writing it.
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				waitGone(t, readPid(t, pidFile))
			}
			updates := f.routeRequests("job-update")
			var final []string
			for _, q := range updates {
				if e := q.Form.Get("exit"); e != "no" {
					final = append(final, e)
				}
			}
			switch {
			case tt.wantExit == "" && len(final) != 0:
				t.Errorf("final updates: got exits %v, want none", final)
			case tt.wantExit != "" && (len(final) != 1 || final[0] != tt.wantExit):
				t.Errorf("final updates: got exits %v, want [%s]", final, tt.wantExit)
			}
			if tt.wantExit == "0" {
				if got := joined(f.delivered(), "stdout"); got != "done\n" {
					t.Errorf("stdout: got %q, want %q", got, "done\n")
				}
			}
		})
	}
}

// TestRetiredAtGiveMeJob checks that a minion told it is retired when it
// asks for work returns ErrRetired, from RunOnce and from Run, and does not
// ask again.
func TestRetiredAtGiveMeJob(t *testing.T) {
	f := newFakeWebapp(t)
	m, _ := newTestMinion(t, f, writeLorry(t, "exit 0"))
	f.giveMeJob = func(n int) (int, string) { return http.StatusOK, `{"retire": true}` }
	ran, err := runOnce(t, t.Context(), m)
	if ran || !errors.Is(err, ErrRetired) {
		t.Fatalf("RunOnce: got %v, %v; want false, ErrRetired", ran, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := m.Run(ctx); !errors.Is(err, ErrRetired) {
		t.Fatalf("Run: got %v, want ErrRetired", err)
	}
	if n := len(f.routeRequests("give-me-job")); n != 1 {
		t.Errorf("give-me-job requests: got %d, want 1: a retired minion asks no more", n)
	}
	if n := len(f.routeRequests("job-update")); n != 0 {
		t.Errorf("job-update requests: got %d, want none", n)
	}
}

// TestRetiredAtJobUpdate checks that a minion told it is retired in the
// answer to a job-update finishes its job, or kills it when told to kill,
// reports how it ended, and then returns ErrRetired without asking for
// another job.
func TestRetiredAtJobUpdate(t *testing.T) {
	tests := []struct {
		name     string
		answer   string
		wantExit string
	}{
		{name: "finish", answer: `{"kill": false, "retire": true}`, wantExit: "0"},
		{name: "kill", answer: `{"kill": true, "retire": true}`, wantExit: "143"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			gate := filepath.Join(t.TempDir(), "go")
			// The job ends by itself only once it has been told of
			// the retirement, so that the kill, if asked for, finds
			// it running.
			lorry := writeLorry(t, `while [ ! -e `+sh(gate)+` ]; do sleep 0.01; done
echo finished`)
			m, _ := newTestMinion(t, f, lorry)
			m.cfg.KillGrace = 5 * time.Second
			f.giveMeJob = func(n int) (int, string) {
				if n == 1 {
					return http.StatusOK, jobAnswer(9, "delta/retire", "lorry", "{}", "")
				}
				t.Errorf("give-me-job %d: a retired minion asked for another job", n)
				return http.StatusNoContent, ""
			}
			told := false
			f.jobUpdate = func(n int, form url.Values) (int, string) {
				if form.Get("exit") != "no" {
					return http.StatusOK, `{"kill": false, "retire": true}`
				}
				if told && tt.wantExit == "0" {
					touch(t, gate)
				}
				if n < 3 {
					return http.StatusOK, `{"kill": false}`
				}
				told = true
				return http.StatusOK, tt.answer
			}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			err := m.Run(ctx)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Fatal("Run did not return")
			}
			if !errors.Is(err, ErrRetired) {
				t.Fatalf("Run: got %v, want ErrRetired", err)
			}
			updates := f.delivered()
			final := updates[len(updates)-1]
			if got := final.Form.Get("exit"); got != tt.wantExit {
				t.Errorf("final exit: got %s, want %s", got, tt.wantExit)
			}
			if got, want := joined(updates, "stdout") != "", tt.wantExit == "0"; got != want {
				t.Errorf("job wrote its output: got %v, want %v", got, want)
			}
			if n := len(f.routeRequests("give-me-job")); n != 1 {
				t.Errorf("give-me-job requests: got %d, want 1", n)
			}
		})
	}
}
