package routes

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb"
)

// runsOf makes runs, oldest first, of the statuses given by letter: s
// succeeded, f failed, t timed-out, l lost, k killed, o orphaned.
func runsOf(letters string) []statedb.Run {
	status := map[rune]string{'s': statedb.StatusSucceeded, 'f': statedb.StatusFailed, 't': statedb.StatusTimedOut,
		'l': statedb.StatusLost, 'k': statedb.StatusKilled, 'o': statedb.StatusOrphaned}
	var out []statedb.Run
	for i, c := range letters {
		end := int64(100*i + 10)
		out = append(out, statedb.Run{ID: int64(i + 1), Started: int64(100 * i), Ended: &end, Status: status[c]})
	}
	return out
}

func TestFailureMarks(t *testing.T) {
	tests := []struct {
		name     string
		runs     string
		hardFail int
		want     string // key@before, in order
	}{
		{name: "all well", runs: "sssss", hardFail: 3, want: ""},
		{name: "one failure", runs: "sfs", hardFail: 3, want: ""},
		{name: "backoff after the second", runs: "sffs", hardFail: 0, want: "backoff@3"},
		{name: "timed out and lost count", runs: "tl", hardFail: 0, want: "backoff@2"},
		{name: "killed and orphaned neither count nor reset", runs: "fkof", hardFail: 0, want: "backoff@4"},
		{name: "hard-fail at the threshold", runs: "sffffff", hardFail: 4, want: "backoff@3 hard-fail@5"},
		{name: "a success starts again", runs: "ffsff", hardFail: 0, want: "backoff@2 backoff@5"},
		{name: "hard-fail at two is not also backoff", runs: "ff", hardFail: 2, want: "hard-fail@2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range failureMarks(runsOf(tt.runs), tt.hardFail) {
				got = append(got, fmt.Sprintf("%s@%d", m.Key, m.Before))
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("failureMarks(%s, %d) = %q; want %q", tt.runs, tt.hardFail, strings.Join(got, " "), tt.want)
			}
		})
	}
}

var barRE = regexp.MustCompile(`<rect class="bar k-([a-z-]+)"[^>]* height="([0-9.]+)" fill="([^"]+)"><title>([^<]*)</title>`)

func TestRunStripColoursAndMarks(t *testing.T) {
	runs := runsOf("sftlkoff")
	html := string(runStrip("a/b", runs, 10000, 0))
	bars := barRE.FindAllStringSubmatch(html, -1)
	if len(bars) != len(runs) {
		t.Fatalf("strip has %d bars; want %d", len(bars), len(runs))
	}
	fills := map[string]string{}
	for i, b := range bars {
		if b[1] != runs[i].Status {
			t.Errorf("bar %d is %s; want %s", i, b[1], runs[i].Status)
		}
		if prev, ok := fills[b[1]]; ok && prev != b[3] {
			t.Errorf("%s drawn as %s and as %s", b[1], prev, b[3])
		}
		fills[b[1]] = b[3]
	}
	seen := map[string]string{}
	for status, fill := range fills {
		if other, ok := seen[fill]; ok {
			t.Errorf("%s and %s are both drawn as %s", status, other, fill)
		}
		seen[fill] = status
	}
	if !strings.Contains(bars[1][4], "Job 2: failed, took 10s") {
		t.Errorf("bar 1's title %q; want the job, its outcome and time", bars[1][4])
	}
	// f, t is two failures in a row; l, k, o, f, f go on without a
	// success between.
	if n := strings.Count(html, `class="mark mark-backoff"`); n != 1 {
		t.Errorf("%d backoff marks; want 1, after the timed-out run", n)
	}
	if !strings.Contains(html, "The last 8 runs, oldest first: 1 succeeded, 3 failed, 1 timed out, 1 killed, 1 lost, 1 orphaned.") {
		t.Errorf("the summary does not count the runs:\n%s", html)
	}
}

func TestJobsPerHourChart(t *testing.T) {
	hours := make([]statedb.HourCount, 24)
	for i := range hours {
		hours[i] = statedb.HourCount{Start: int64(i * 3600), Counts: map[string]int64{}}
	}
	hours[3].Counts[statedb.StatusSucceeded] = 4
	hours[3].Counts[statedb.StatusFailed] = 2
	hours[23].Counts[statedb.StatusTimedOut] = 1
	html := string(jobsPerHourChart(hours))
	bars := barRE.FindAllStringSubmatch(html, -1)
	var got []string
	for _, b := range bars {
		got = append(got, b[1]+"="+b[2])
	}
	// The tallest column, 6 jobs, is 140 high.
	if want := "succeeded=93.33 failed=46.67 timed-out=23.33"; strings.Join(got, " ") != want {
		t.Errorf("bars %q; want %q", strings.Join(got, " "), want)
	}
	if n := strings.Count(html, `<g class="column">`); n != 24 {
		t.Errorf("%d columns; want 24", n)
	}
	if !strings.Contains(html, "7 jobs ended in the last 24 hours: 4 succeeded, 2 failed, 1 timed out. The busiest hour, from 03:00 UTC, saw 6.") {
		t.Errorf("summary missing:\n%s", html)
	}
}

// TestChartsOnThePages runs jobs of a lorry, far enough apart that its
// backoff lets each run, and checks that its page
// draws them, and that the status page draws the hour they ended in and
// the queue's wait the scheduler sampled.
func TestChartsOnThePages(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/one")
	b := newBrowser(t, ts)
	if page := b.page("/1.0/lorry-html/a/one", 200); !strings.Contains(page, "No run of this lorry is remembered.") || strings.Contains(page, "<svg") {
		t.Errorf("the page of a lorry never run draws a chart or does not say it has none")
	}
	sc := ts.App
	if _, err := sc.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, exit := range []string{"0", "1", "1", "0"} {
		ts.FakeClock.Set(int64(2000 + 8000*i))
		id := runJob(t, ts, "m", "out\n", "no")
		ts.FakeClock.Set(int64(2000 + 8000*i + 30*(i+1)))
		form := url.Values{"job_id": {fmt.Sprint(id)}, "minion": {"m"}, "pid": {"1"}, "exit": {exit}}
		if code, m := ts.call(t, "POST", "/1.0/job-update", form); code != 200 {
			t.Fatalf("job-update = %d %v", code, m)
		}
	}
	page := b.page("/1.0/lorry-html/a/one", 200)
	bars := barRE.FindAllStringSubmatch(page, -1)
	var got []string
	for _, b := range bars {
		got = append(got, b[1]+"="+b[2])
	}
	if want := "succeeded=30 failed=60 failed=90 succeeded=120"; strings.Join(got, " ") != want {
		t.Errorf("lorry page bars %q; want %q", strings.Join(got, " "), want)
	}
	if !strings.Contains(page, `class="mark mark-backoff"`) {
		t.Errorf("lorry page does not mark where backoff began")
	}

	if _, err := sc.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	page = b.page("/1.0/status-html", 200)
	for _, want := range []string{`id="jobs-per-hour"`, `id="queue-waits"`, "4 jobs ended in the last 24 hours: 2 succeeded, 2 failed.",
		"Over the last day the oldest due entry waited: default at most"} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if n := len(barRE.FindAllString(page, -1)); n != 4 {
		t.Errorf("status page draws %d bars; want 4: each job in its own hour", n)
	}
	if n := strings.Count(page, "<polyline"); n != 2 {
		t.Errorf("status page draws %d lines; want 2: the default queue's two samples, hours apart", n)
	}
}

func TestSchedulerSamplesQueuesOnceAMinute(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/one")
	sc := ts.App
	samples := func() int {
		var n int
		err := ts.DB.View(context.Background(), func(tx *statedb.Tx) error {
			w, err := tx.QueueWaits(context.Background(), statedb.QueueSampleKeep, 1)
			n = len(w[statedb.DefaultQueue])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i, now := range []int64{1000, 1005, 1059, 1060, 1200} {
		ts.FakeClock.Set(now)
		if _, err := sc.Tick(context.Background()); err != nil {
			t.Fatalf("tick %d: %v", i, err)
		}
	}
	if n := samples(); n != 3 {
		t.Errorf("%d samples after ticks at 1000, 1005, 1059, 1060 and 1200; want 3", n)
	}
}
