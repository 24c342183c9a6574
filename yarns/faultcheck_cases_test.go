package yarns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sec is s seconds after a base, in Unix nanoseconds, for the histories
// of the checker's tests.
func sec(s float64) int64 { return 1_700_000_000_000_000_000 + int64(s*1e9) }

// lines is job id's stored output of lines ks.
func lines(id int64, ks ...int) string {
	var b strings.Builder
	b.WriteString("lorry says hello\n")
	for _, k := range ks {
		fmt.Fprintf(&b, "faults line %d of job %d\n", k, id)
	}
	return b.String()
}

// run is the history records of one job process that printed lines 1 to
// n and ended how ("" for no end record).
func run(id int64, lorry, minion string, from, to float64, n int, how string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "start %d %s %d %d %s\n", id, lorry, 1000+id, sec(from), minion)
	for k := 1; k <= n; k++ {
		fmt.Fprintf(&b, "line %d %d\n", id, k)
	}
	if how != "" {
		fmt.Fprintf(&b, "end %d %s %d %d %s\n", id, lorry, 1000+id, sec(to), how)
	}
	return b.String()
}

func ok(id int64, path string, ks ...int) storedJob {
	zero := int64(0)
	return storedJob{ID: id, Path: path, Minion: "m1", Status: "succeeded", Exit: &zero, Output: lines(id, ks...)}
}

func ended(id int64, path, status string, exit int64, ks ...int) storedJob {
	return storedJob{ID: id, Path: path, Minion: "m1", Status: status, Exit: &exit, Output: lines(id, ks...)}
}

// TestFaultChecker gives the campaign's checker histories, jobs and faults
// with one anomaly each, or none, and checks that it names exactly those.
func TestFaultChecker(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hist   string
		jobs   []storedJob
		ends   map[int64]int
		faults []fault
		// drained is when the queue stopped, in seconds; 0 means 30.
		drained float64
		webapps int
		want    map[string]int
	}{
		{name: "clean", hist: run(1, "wide/0", "m1", 0, 2, 3, "ok") + run(2, "wide/0", "m2", 2.5, 4, 2, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1, 2, 3), ok(2, "wide/r0", 1, 2)}, ends: map[int64]int{1: 1, 2: 1}},
		{name: "overlap found by the lock", hist: run(1, "wide/0", "m1", 0, 0, 1, "") + "overlap 2 wide/0 1002 " + fmt.Sprint(sec(1)) + "\n" +
			run(2, "wide/0", "m2", 1, 2, 1, "ok"),
			jobs: []storedJob{ended(1, "wide/r0", "lost", 137, 1), ok(2, "wide/r0", 1)},
			want: map[string]int{anomalyOverlap: 1, anomalyWrongStatus: 0}},
		{name: "overlap found by the records", hist: run(1, "wide/0", "m1", 0, 3, 1, "ok") + run(2, "wide/0", "m2", 2, 4, 1, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1), ok(2, "wide/r0", 1)}, want: map[string]int{anomalyOverlap: 1}},
		{name: "two lorries at once", hist: run(1, "wide/0", "m1", 0, 3, 1, "ok") + run(2, "wide/1", "m2", 1, 2, 1, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1), ok(2, "wide/r1", 1)}},
		{name: "host limit", hist: "limit 1 host 1001 " + fmt.Sprint(sec(0)) + "\n" + run(1, "wide/0", "m1", 0, 1, 1, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1)}, want: map[string]int{anomalyLimitHost: 1}},
		{name: "queue limit", hist: "limit 1 narrow 1001 " + fmt.Sprint(sec(0)) + "\n" + run(1, "narrow/0", "m1", 0, 1, 1, "ok"),
			jobs: []storedJob{ok(1, "narrow/r0", 1)}, want: map[string]int{anomalyLimitQueue: 1}},
		{name: "one job, two processes", hist: run(1, "wide/0", "m1", 0, 1, 1, "ok") + run(1, "wide/0", "m2", 2, 3, 1, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1)}, want: map[string]int{anomalyRunTwice: 1}},
		{name: "a process of no job", hist: run(1, "wide/0", "m1", 0, 1, 1, "ok") + run(9, "wide/1", "m2", 0, 1, 1, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1)}, want: map[string]int{anomalyUnknownJob: 1}},
		{name: "still running", hist: run(1, "wide/0", "m1", 0, 1, 1, "ok"),
			jobs: []storedJob{{ID: 1, Path: "wide/r0", Status: "running", Output: lines(1, 1)}}, want: map[string]int{anomalyNotEnded: 1}},
		{name: "ended twice", hist: run(1, "wide/0", "m1", 0, 1, 1, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1)}, ends: map[int64]int{1: 2}, want: map[string]int{anomalyEndedTwice: 1}},
		{name: "succeeded, killed", hist: run(1, "wide/0", "m1", 0, 1, 1, "term"),
			jobs: []storedJob{ok(1, "wide/r0", 1)}, want: map[string]int{anomalyWrongStatus: 1}},
		{name: "lost, done, no fault", hist: run(1, "wide/0", "m1", 0, 1, 2, "ok"),
			jobs: []storedJob{{ID: 1, Path: "wide/r0", Status: "lost", Output: lines(1, 1)}},
			want: map[string]int{anomalyWrongStatus: 1}},
		{name: "lost, done, its minion stopped", hist: run(1, "wide/0", "m1", 0, 1, 2, "ok"),
			jobs:   []storedJob{{ID: 1, Path: "wide/r0", Status: "lost", Output: lines(1, 1)}},
			faults: []fault{{kind: faultMinionStop, target: "m1", from: sec(0.5), to: sec(20)}}},
		{name: "lost, done, another minion stopped", hist: run(1, "wide/0", "m1", 0, 1, 2, "ok"),
			jobs:   []storedJob{{ID: 1, Path: "wide/r0", Status: "lost", Output: lines(1, 1)}},
			faults: []fault{{kind: faultMinionStop, target: "m2", from: sec(0.5), to: sec(20)}},
			want:   map[string]int{anomalyWrongStatus: 1}},
		{name: "orphaned, done, every WEBAPP stopped at once", hist: run(1, "wide/0", "m1", 0, 1, 2, "ok"),
			jobs: []storedJob{{ID: 1, Path: "wide/r0", Status: "orphaned", Output: lines(1, 1)}},
			faults: []fault{{kind: faultWebappStop, target: "w1", from: sec(0.5), to: sec(9)},
				{kind: faultWebappKill, target: "w2", from: sec(2), to: sec(3)}}, webapps: 2},
		{name: "orphaned, done, one WEBAPP stopped", hist: run(1, "wide/0", "m1", 0, 1, 2, "ok"),
			jobs: []storedJob{{ID: 1, Path: "wide/r0", Status: "orphaned", Output: lines(1, 1)}},
			faults: []fault{{kind: faultWebappStop, target: "w1", from: sec(0.5), to: sec(9)},
				{kind: faultWebappKill, target: "w2", from: sec(10), to: sec(11)}}, webapps: 2,
			want: map[string]int{anomalyWrongStatus: 1}},
		{name: "killed, failed", hist: run(1, "wide/0", "m1", 0, 1, 1, "term"),
			jobs: []storedJob{ended(1, "wide/r0", "failed", 143, 1)}, want: map[string]int{anomalyWrongStatus: 1}},
		{name: "killed, killed", hist: run(1, "wide/0", "m1", 0, 1, 1, "term"),
			jobs: []storedJob{ended(1, "wide/r0", "killed", 143, 1)}},
		{name: "a line twice", hist: run(1, "wide/0", "m1", 0, 1, 3, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1, 2, 2, 3)}, want: map[string]int{anomalyDuplicate: 1}},
		{name: "lines sent again", hist: run(1, "wide/0", "m1", 0, 1, 4, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1, 2, 3, 2, 3, 4)}, want: map[string]int{anomalyDuplicate: 1}},
		{name: "lines out of order", hist: run(1, "wide/0", "m1", 0, 1, 3, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1, 3, 2)}, want: map[string]int{anomalyOrder: 1}},
		{name: "a line lost", hist: run(1, "wide/0", "m1", 0, 1, 3, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1, 3)}, want: map[string]int{anomalyMissing: 1}},
		{name: "the last lines lost", hist: run(1, "wide/0", "m1", 0, 1, 3, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1)}, want: map[string]int{anomalyMissing: 1}},
		{name: "the last lines of a killed minion's job lost", hist: run(1, "wide/0", "m1", 0, 1, 3, ""),
			jobs:   []storedJob{{ID: 1, Path: "wide/r0", Status: "lost", Output: lines(1, 1)}},
			faults: []fault{{kind: faultMinionKill, target: "m1", from: sec(0.5), to: sec(1.5)}}},
		{name: "a middle line of a killed minion's job lost", hist: run(1, "wide/0", "m1", 0, 1, 3, ""),
			jobs:   []storedJob{{ID: 1, Path: "wide/r0", Status: "lost", Output: lines(1, 1, 3)}},
			faults: []fault{{kind: faultMinionKill, target: "m1", from: sec(0.5), to: sec(1.5)}},
			want:   map[string]int{anomalyMissing: 1}},
		{name: "a line never printed", hist: run(1, "wide/0", "m1", 0, 1, 2, "ok"),
			jobs: []storedJob{ok(1, "wide/r0", 1, 2, 3)}, want: map[string]int{anomalyUnprinted: 1}},
		{name: "resumed", hist: run(1, "wide/0", "m1", 0, 1, 1, "ok") + run(2, "wide/1", "m1", 12, 13, 1, "ok"),
			jobs:   []storedJob{ok(1, "wide/r0", 1), ok(2, "wide/r1", 1)},
			faults: []fault{{kind: faultWebappKill, target: "w1", from: sec(2), to: sec(10)}}},
		{name: "resumed late", hist: run(1, "wide/0", "m1", 0, 1, 1, "ok") + run(2, "wide/1", "m1", 80, 81, 1, "ok"),
			jobs:   []storedJob{ok(1, "wide/r0", 1), ok(2, "wide/r1", 1)},
			faults: []fault{{kind: faultWebappKill, target: "w1", from: sec(2), to: sec(10)}}, drained: 100,
			want: map[string]int{anomalySlowResume: 1}},
		{name: "never resumed", hist: run(1, "wide/0", "m1", 0, 1, 1, "ok"),
			jobs:   []storedJob{ok(1, "wide/r0", 1)},
			faults: []fault{{kind: faultWebappKill, target: "w1", from: sec(2), to: sec(10)}}, drained: 100,
			want: map[string]int{anomalySlowResume: 1}},
		{name: "not resumed, near the end",
			hist:   run(1, "wide/0", "m1", 0, 1, 1, "ok"),
			jobs:   []storedJob{ok(1, "wide/r0", 1)},
			faults: []fault{{kind: faultWebappKill, target: "w1", from: sec(2), to: sec(10)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := readHistory(strings.NewReader(tc.hist))
			if err != nil {
				t.Fatal(err)
			}
			if tc.ends == nil {
				tc.ends = map[int64]int{}
			}
			if tc.drained == 0 {
				tc.drained = 30
			}
			r := check(checkInput{hist: h, jobs: tc.jobs, ends: tc.ends, faults: tc.faults, webapps: tc.webapps, drained: sec(tc.drained),
				resumeBound: time.Minute, excuse: 5 * time.Second})
			for _, k := range anomalyKinds {
				if got, want := len(r.anomalies[k]), tc.want[k]; got != want {
					t.Errorf("%s: got %d, want %d: %q", k, got, want, r.anomalies[k])
				}
			}
		})
	}
}

// TestFaultJobScript runs the campaign's job as the minions do, on a
// host of one slot with a queue of one thread: the process that starts
// while another of its lorry lives records the overlap and both limits,
// and one that starts after the other was killed, with SIGKILL or SIGTERM,
// records neither. Each prints and records its numbered lines.
func TestFaultJobScript(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "history")
	locks := filepath.Join(dir, "locks")
	if err := os.Mkdir(locks, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "lorry")
	// Narrow jobs print many slow lines, to be caught running; wide ones
	// two.
	if err := os.WriteFile(script, []byte(fmt.Sprintf(faultJobScript, 600, "0.1", 2, "0.01")), 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(id int, lorry string) (*exec.Cmd, *strings.Builder) {
		spec := filepath.Join(dir, fmt.Sprintf("%d.lorry", id))
		q, n, _ := strings.Cut(lorry, "/")
		text := fmt.Sprintf(`{"r%s": {"type": "git", "url": "https://example.invalid/%s/%s.git"}}`, n, q, n)
		if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(script, "--working-area", dir, "--result-fd", "3", spec)
		cmd.Env = append(os.Environ(), "FAULTS_HISTORY="+hist, "FAULTS_LOCKS="+locks, "FAULTS_MINION=m1",
			"FAULTS_MAX_JOBS=1", "FAULTS_NARROW_THREADS=1")
		out := &strings.Builder{}
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, out
	}
	// printing waits until job id has recorded a line.
	printing := func(id int64) {
		t.Helper()
		for deadline := time.Now().Add(waitLimit); ; time.Sleep(10 * time.Millisecond) {
			if h, err := readHistoryFile(hist); err == nil && len(h.procs[id]) > 0 && len(h.procs[id][0].lines) > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d printed nothing within %v", id, waitLimit)
			}
		}
	}

	a, _ := start(1, "narrow/0")
	printing(1)
	b, _ := start(2, "narrow/0")
	printing(2)
	a.Process.Signal(syscall.SIGKILL)
	a.Wait()
	b.Process.Signal(syscall.SIGTERM)
	b.Wait()
	c, out := start(3, "narrow/0")
	printing(3)
	c.Process.Signal(syscall.SIGTERM)
	c.Wait()
	d, dOut := start(4, "wide/0")
	if err := d.Wait(); err != nil {
		t.Fatalf("job 4: %v", err)
	}

	h, err := readHistoryFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, e := range append(h.overlaps, h.limits...) {
		events = append(events, fmt.Sprintf("%d %s", e.job, e.what))
	}
	if got, want := strings.Join(events, ", "), "2 narrow/0, 2 host, 2 narrow"; got != want {
		t.Errorf("overlaps and limits recorded: %q, want %q", got, want)
	}
	for _, tc := range []struct {
		id       int64
		how      string
		minLines int
	}{{1, "", 1}, {2, "term", 1}, {3, "term", 1}, {4, "ok", 2}} {
		ps := h.procs[tc.id]
		if len(ps) != 1 {
			t.Errorf("job %d: %d processes recorded, want 1", tc.id, len(ps))
			continue
		}
		p := ps[0]
		if p.how != tc.how || len(p.lines) < tc.minLines || p.minion != "m1" || p.start == 0 {
			t.Errorf("job %d: recorded end %q, %d lines, minion %q, start %d; want end %q, at least %d lines, minion m1",
				tc.id, p.how, len(p.lines), p.minion, p.start, tc.how, tc.minLines)
		}
		for i, k := range p.lines {
			if k != i+1 {
				t.Errorf("job %d: line %d recorded as %d", tc.id, i+1, k)
				break
			}
		}
	}
	if got, want := dOut.String(), "faults line 1 of job 4\nfaults line 2 of job 4\n"; got != want {
		t.Errorf("job 4 printed %q, want %q", got, want)
	}
	if !strings.HasPrefix(out.String(), "faults line 1 of job 3\n") {
		t.Errorf("job 3 printed %q", out.String())
	}
}
