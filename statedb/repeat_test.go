package statedb

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func offset(n int) *int64 {
	v := int64(n)
	return &v
}

// output is job id's output as stored.
func (f *fixture) output(t *testing.T, id int64) string {
	t.Helper()
	var out string
	f.view(t, func(tx *Tx) error {
		var err error
		out, err = tx.Output(context.Background(), id)
		return err
	})
	return out
}

// TestReportSentAgain sends each report of a job, then sends it again as
// a minion does whose answer was lost, with the output printed since
// added: every byte of each stream is stored once, in order, whichever
// of the streams and whatever the split.
func TestReportSentAgain(t *testing.T) {
	stdout := "1 out\n2 out\n3 out, a line in parts\n4 out\n"
	stderr := "1 err\n2 err\n"
	// Each step is how much of each stream the minion has read when it
	// sends; the WEBAPP has acted on the step before, whose answer was
	// lost, when it is sent again.
	// The streams meet at the ends of lines, where the stored output
	// goes from one to the other, and a line of one is sent in parts.
	steps := [][2]int{{3, 0}, {12, 0}, {12, 6}, {20, 6}, {35, 6}, {35, 12}, {len(stdout), len(stderr)}}
	for _, again := range []bool{false, true} {
		f := newFixture(t, Options{})
		f.lorries(t, "a")
		a := f.mustGive(t, m1)
		sent := [2]int{}
		for i, s := range steps {
			u := JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte(stdout[sent[0]:s[0]]), Stderr: []byte(stderr[sent[1]:s[1]]),
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
		if j := f.job(t, a.Job.ID); j.Status != StatusSucceeded || j.OutputBytes != int64(len(stdout)+len(stderr)) {
			t.Errorf("again %v: job %s with %d bytes of output; want succeeded with %d", again, j.Status, j.OutputBytes, len(stdout)+len(stderr))
		}
	}
}

// TestReportGap refuses a report whose output starts past what the WEBAPP
// has, in either stream, saying what it has, unless the minion says it
// cut what is missing.
func TestReportGap(t *testing.T) {
	for _, stream := range []string{"stdout", "stderr"} {
		f := newFixture(t, Options{})
		f.lorries(t, "a")
		a := f.mustGive(t, m1)
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte("out\n"), Stderr: []byte("err\n"),
			StdoutOffset: offset(0), StderrOffset: offset(0)}); err != nil {
			t.Fatal(err)
		}
		u := JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte("later\n"), StdoutOffset: offset(4), StderrOffset: offset(4)}
		if stream == "stdout" {
			u.StdoutOffset = offset(10)
		} else {
			u.Stdout, u.Stderr = nil, []byte("later\n")
			u.StderrOffset = offset(10)
		}
		_, err := f.report(t, u)
		var gap *OutputGapError
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

// TestFinalReportSentAgain ends a job with a failure, then gets its final
// report again: it is answered as the first was, and the job ends once,
// its lorry failed once and one job-failed in the outbox.
func TestFinalReportSentAgain(t *testing.T) {
	f := newFixture(t, Options{Notify: allEvents()})
	f.lorries(t, "a")
	a := f.mustGive(t, m1)
	u := JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte("failing\n"), StdoutOffset: offset(0), StderrOffset: offset(0),
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
	other := MinionID{Name: "m2", Host: "h", PID: 2}
	for name, v := range map[string]JobUpdate{
		"another exit":   {ID: a.Job.ID, Minion: m1, StdoutOffset: offset(0), StderrOffset: offset(0), Exit: exit(2)},
		"another minion": {ID: a.Job.ID, Minion: other, StdoutOffset: offset(0), StderrOffset: offset(0), Exit: exit(1)},
		"more output":    {ID: a.Job.ID, Minion: m1, Stdout: []byte("failing\nmore\n"), StdoutOffset: offset(0), StderrOffset: offset(0), Exit: exit(1)},
		"no offsets":     {ID: a.Job.ID, Minion: m1, Exit: exit(1)},
	} {
		if _, err := f.report(t, v); !errors.Is(err, ErrConflict) {
			t.Errorf("%s: %v; want ErrConflict", name, err)
		}
	}
}
