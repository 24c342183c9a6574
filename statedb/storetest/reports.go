package storetest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb"
)

func (s suite) updateJobLifecycle(t *testing.T) {
	tests := []struct {
		name       string
		stop       bool
		timeout    bool
		stopping   bool // the minion killed it as it stopped
		exit       int64
		wantStatus string
	}{
		{name: "success", exit: 0, wantStatus: statedb.StatusSucceeded},
		{name: "failure", exit: 3, wantStatus: statedb.StatusFailed},
		{name: "stopped", stop: true, exit: 143, wantStatus: statedb.StatusKilled},
		{name: "timed out", timeout: true, exit: 143, wantStatus: statedb.StatusTimedOut},
		{name: "minion stopping", stopping: true, exit: 143, wantStatus: statedb.StatusKilled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := s.newFixture(t, statedb.Options{})
			ctx := context.Background()
			f.lorries(t, "a")
			a := f.mustGive(t, m1)
			kill, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte("hello "), Stderr: []byte("world\n")})
			if err != nil || kill {
				t.Fatalf("first update = %v, %v; want no kill", kill, err)
			}
			if tc.stop {
				f.update(t, func(tx *statedb.Tx) error { return tx.StopJob(ctx, a.Job.ID) })
			}
			if tc.timeout {
				f.clock.Set(1000 + 51)
			}
			kill, err = f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m1})
			if err != nil || kill != (tc.stop || tc.timeout) {
				t.Fatalf("second update kill = %v, %v; want %v", kill, err, tc.stop || tc.timeout)
			}
			end := statedb.JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(tc.exit), Stderr: []byte("bye\n"), Stopping: tc.stopping}
			if tc.exit != 0 {
				// What lorry says of a git killed under it.
				end.ErrorClass = statedb.ClassInternal
			}
			if _, err := f.report(t, end); err != nil {
				t.Fatal(err)
			}
			j := f.job(t, a.Job.ID)
			if j.Status != tc.wantStatus || j.Exit == nil || *j.Exit != tc.exit {
				t.Errorf("job = %s exit %v; want %s exit %d", j.Status, j.Exit, tc.wantStatus, tc.exit)
			}
			f.db.View(ctx, func(tx *statedb.Tx) error {
				out, err := tx.Output(ctx, a.Job.ID)
				if err != nil || out != "hello world\nbye\n" {
					t.Errorf("output = %q, %v; want %q", out, err, "hello world\nbye\n")
				}
				return nil
			})
			l := f.lorry(t, "a")
			if (l.LastRunError == "") != (tc.wantStatus == statedb.StatusSucceeded) {
				t.Errorf("last_run_error = %q for %s", l.LastRunError, tc.wantStatus)
			}
			if tc.wantStatus != statedb.StatusSucceeded && !strings.Contains(l.LastRunError, "bye") {
				t.Errorf("last_run_error = %q; want the output's tail", l.LastRunError)
			}
			// Only a failure of the lorry's own counts against it.
			failed := tc.wantStatus == statedb.StatusFailed || tc.wantStatus == statedb.StatusTimedOut
			if got := l.ConsecutiveFailures; got != map[bool]int64{true: 1}[failed] {
				t.Errorf("consecutive_failures = %d after a job %s", got, tc.wantStatus)
			}
			if wantClass := map[bool]string{true: statedb.ClassInternal}[tc.wantStatus == statedb.StatusFailed]; j.ErrorClass != wantClass {
				t.Errorf("job's error_class = %q; want %q", j.ErrorClass, wantClass)
			}
			if _, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m1}); !errors.Is(err, statedb.ErrConflict) {
				t.Errorf("update after end = %v; want ErrConflict", err)
			}
		})
	}
}

// reportSentAgain sends each report of a job, then sends it again as
// a minion does whose answer was lost, with the output printed since
// added: every byte of each stream is stored once, in order, whichever
// of the streams and whatever the split.
func (s suite) reportSentAgain(t *testing.T) {
	stdout := "1 out\n2 out\n3 out, a line in parts\n4 out\n"
	stderr := "1 err\n2 err\n"
	// Each step is how much of each stream the minion has read when it
	// sends; the WEBAPP has acted on the step before, whose answer was
	// lost, when it is sent again.
	// The streams meet at the ends of lines, where the stored output
	// goes from one to the other, and a line of one is sent in parts.
	steps := [][2]int{{3, 0}, {12, 0}, {12, 6}, {20, 6}, {35, 6}, {35, 12}, {len(stdout), len(stderr)}}
	for _, again := range []bool{false, true} {
		f := s.newFixture(t, statedb.Options{})
		f.lorries(t, "a")
		a := f.mustGive(t, m1)
		sent := [2]int{}
		for i, s := range steps {
			u := statedb.JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte(stdout[sent[0]:s[0]]), Stderr: []byte(stderr[sent[1]:s[1]]),
				StdoutOffset: offset(sent[0]), StderrOffset: offset(sent[1])}
			if i == len(steps)-1 {
				u.Exit = exit(0)
			}
			if _, err := f.report(t, u); err != nil {
				t.Fatalf("again %v: step %d: %v", again, i, err)
			}
			if again {
				// The answer was lost: the same report again, and
				// then, for a running job, with more output.
				if _, err := f.report(t, u); err != nil {
					t.Fatalf("again %v: step %d sent again: %v", again, i, err)
				}
			}
			if !again || i%2 == 0 {
				sent = s
			}
		}
		out := f.output(t, a.Job.ID)
		for _, want := range []string{stdout, stderr} {
			got := ""
			for _, line := range strings.SplitAfter(out, "\n") {
				if strings.Contains(line, strings.Fields(want)[1]) {
					got += line
				}
			}
			if got != want {
				t.Errorf("again %v: stored\n%s\nwant each line once, in order:\n%s", again, got, want)
			}
		}
		if j := f.job(t, a.Job.ID); j.Status != statedb.StatusSucceeded || j.OutputBytes != int64(len(stdout)+len(stderr)) {
			t.Errorf("again %v: job %s with %d bytes of output; want succeeded with %d", again, j.Status, j.OutputBytes, len(stdout)+len(stderr))
		}
	}
}

// reportGap refuses a report whose output starts past what the WEBAPP
// has, in either stream, saying what it has, unless the minion says it
// cut what is missing.
func (s suite) reportGap(t *testing.T) {
	for _, stream := range []string{"stdout", "stderr"} {
		f := s.newFixture(t, statedb.Options{})
		f.lorries(t, "a")
		a := f.mustGive(t, m1)
		if _, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte("out\n"), Stderr: []byte("err\n"),
			StdoutOffset: offset(0), StderrOffset: offset(0)}); err != nil {
			t.Fatal(err)
		}
		u := statedb.JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte("later\n"), StdoutOffset: offset(4), StderrOffset: offset(4)}
		if stream == "stdout" {
			u.StdoutOffset = offset(10)
		} else {
			u.Stdout, u.Stderr = nil, []byte("later\n")
			u.StderrOffset = offset(10)
		}
		_, err := f.report(t, u)
		var gap *statedb.OutputGapError
		if !errors.As(err, &gap) || gap.StdoutBytes != 4 || gap.StderrBytes != 4 {
			t.Fatalf("%s: report past a gap: %v; want an OutputGapError at 4 and 4", stream, err)
		}
		u.CutBytes = 6
		if _, err := f.report(t, u); err != nil {
			t.Fatalf("%s: report past a gap the minion cut: %v", stream, err)
		}
		j := f.job(t, a.Job.ID)
		if j.CutBytes != 6 || j.OutputBytes != 4+4+6+6 {
			t.Errorf("%s: %d bytes cut of %d; want 6 of 20", stream, j.CutBytes, j.OutputBytes)
		}
		if out := f.output(t, a.Job.ID); !strings.HasSuffix(out, "later\n") {
			t.Errorf("%s: output %q; want it to end with the later line", stream, out)
		}
	}
}

// finalReportSentAgain ends a job with a failure, then gets its final
// report again: it is answered as the first was, and the job ends once,
// its lorry failed once and one job-failed in the outbox.
func (s suite) finalReportSentAgain(t *testing.T) {
	f := s.newFixture(t, statedb.Options{Notify: allEvents()})
	f.lorries(t, "a")
	a := f.mustGive(t, m1)
	u := statedb.JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte("failing\n"), StdoutOffset: offset(0), StderrOffset: offset(0),
		Exit: exit(1), ErrorClass: "network"}
	for i := range 3 {
		if _, err := f.report(t, u); err != nil {
			t.Fatalf("final report, time %d: %v", i+1, err)
		}
	}
	if l := f.lorry(t, "a"); l.ConsecutiveFailures != 1 {
		t.Errorf("lorry failed %d times in a row; want 1", l.ConsecutiveFailures)
	}
	if got := f.jobsFailed(t); len(got) != 1 {
		t.Errorf("%d job-failed notifications; want 1", len(got))
	}
	if out := f.output(t, a.Job.ID); strings.Count(out, "failing") != 1 {
		t.Errorf("output %q; want its line once", out)
	}

	// Not the same end: another exit, another minion, or output the
	// WEBAPP does not have, is refused as before.
	other := statedb.MinionID{Name: "m2", Host: "h", PID: 2}
	for name, v := range map[string]statedb.JobUpdate{
		"another exit":   {ID: a.Job.ID, Minion: m1, StdoutOffset: offset(0), StderrOffset: offset(0), Exit: exit(2)},
		"another minion": {ID: a.Job.ID, Minion: other, StdoutOffset: offset(0), StderrOffset: offset(0), Exit: exit(1)},
		"more output":    {ID: a.Job.ID, Minion: m1, Stdout: []byte("failing\nmore\n"), StdoutOffset: offset(0), StderrOffset: offset(0), Exit: exit(1)},
		"no offsets":     {ID: a.Job.ID, Minion: m1, Exit: exit(1)},
	} {
		if _, err := f.report(t, v); !errors.Is(err, statedb.ErrConflict) {
			t.Errorf("%s: %v; want ErrConflict", name, err)
		}
	}
}

// An idle lorry asked to run now is due at once and first in the queue,
// whatever its interval says.
func (s suite) runLorryNowIdle(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "a", "b", "c")
	m := statedb.MinionID{Name: "m1", Host: "h", PID: 1}
	for range 3 {
		a := f.mustGive(t, m)
		if _, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m, Exit: exit(0)}); err != nil {
			t.Fatal(err)
		}
	}
	f.idle(t, m, "all ran, interval 100")

	if got, want := f.runNow(t, "b"), (statedb.RunNow{Path: "b", Due: true}); got != want {
		t.Errorf("RunLorryNow(b) = %+v; want %+v", got, want)
	}
	if got, want := f.queue(t), []string{"b", "a", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("queue = %v; want %v", got, want)
	}
	if a := f.mustGive(t, m); a.Lorry.Path != "b" {
		t.Errorf("got %s; want b", a.Lorry.Path)
	}

	err := f.db.Update(context.Background(), func(tx *statedb.Tx) error {
		_, err := tx.RunLorryNow(context.Background(), "nope")
		return err
	})
	if !errors.Is(err, statedb.ErrNotFound) {
		t.Errorf("RunLorryNow(nope) = %v; want ErrNotFound", err)
	}
}

// Runs asked for while a job runs come to exactly one more run, at once
// after the job ends, and none after that one.
func (s suite) runLorryNowWhileRunningCoalesces(t *testing.T) {
	for _, tc := range []struct {
		name string
		exit *int64
	}{
		{"succeeded", exit(0)},
		{"failed", exit(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := s.newFixture(t, statedb.Options{})
			f.lorries(t, "a", "b")
			m := statedb.MinionID{Name: "m1", Host: "h", PID: 1}
			a := f.mustGive(t, m)
			if a.Lorry.Path != "a" {
				t.Fatalf("got %s; want a", a.Lorry.Path)
			}
			for range 3 {
				if got, want := f.runNow(t, "a"), (statedb.RunNow{Path: "a", QueuedAfterCurrentRun: true}); got != want {
					t.Errorf("RunLorryNow(a) = %+v; want %+v", got, want)
				}
			}
			if _, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m, Exit: tc.exit}); err != nil {
				t.Fatal(err)
			}
			if got, want := f.queue(t), []string{"a", "b"}; !reflect.DeepEqual(got, want) {
				t.Errorf("queue after the run = %v; want %v", got, want)
			}
			if l := f.lorry(t, "a"); l.NextDue > f.clock.Now().Unix() {
				t.Errorf("next_due = %d; want due now (%d)", l.NextDue, f.clock.Now().Unix())
			}
			again := f.mustGive(t, m)
			if again.Lorry.Path != "a" {
				t.Fatalf("got %s; want the follow-up run of a", again.Lorry.Path)
			}
			if _, err := f.report(t, statedb.JobUpdate{ID: again.Job.ID, Minion: m, Exit: exit(0)}); err != nil {
				t.Fatal(err)
			}
			b := f.mustGive(t, m)
			if b.Lorry.Path != "b" {
				t.Fatalf("got %s; want b", b.Lorry.Path)
			}
			if _, err := f.report(t, statedb.JobUpdate{ID: b.Job.ID, Minion: m, Exit: exit(0)}); err != nil {
				t.Fatal(err)
			}
			f.idle(t, m, "one follow-up run only")
		})
	}
}
