package yarns

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The fault campaign's checker (TestFaults): it reads what the jobs'
// processes recorded themselves, what the STATEDB says of each job and what
// the WEBAPPs logged, and names every anomaly.

// faultJobScript is the lorry the campaign's minions run (--lorry-cmd): one
// run of a lorry that prints numbered lines. It records in $FAULTS_HISTORY
// when it starts and ends, and each line before printing it, so that a
// line is never printed unrecorded. Locks that the kernel keeps, and lets
// go of when the process dies however it dies, tell it whether another
// live job process holds its lorry, and whether a slot of the host's
// max_jobs and of its queue's threads is free; it records what it finds.
// The children it starts get none of those locks.
//
// Arguments: %[1]d and %[2]s are the narrow queue's lines and pause, %[3]d
// and %[4]s the other queues'.
const faultJobScript = `#!/bin/sh
for spec; do :; done
job=${spec##*/}; job=${job%%.lorry}
set -- $(sed -n 's|.*example\.invalid/\([a-z]*\)/\([0-9]*\)\.git.*|\1 \2|p' "$spec")
queue=$1 lorry=$1/$2
h=$FAULTS_HISTORY locks=$FAULTS_LOCKS
now() { date +%%s%%N; }
exec 9>>"$locks/lorry-$1-$2"
flock -n 9 || echo "overlap $job $lorry $$ $(now)" >>"$h"
# slot NAME COUNT FD takes one of COUNT slot locks on FD; a pass that
# finds none is tried twice more, for a slot let go during the pass.
slot() {
	for pass in 1 2 3; do
		i=0
		while [ "$i" -lt "$2" ]; do
			eval "exec $3>>\"\$locks/$1-$i\""
			flock -n "$3" && return 0
			eval "exec $3>&-"
			i=$((i + 1))
		done
		sleep 0.05 7>&- 8>&- 9>&-
	done
	return 1
}
slot host "$FAULTS_MAX_JOBS" 8 || echo "limit $job host $$ $(now)" >>"$h"
case $queue in
narrow) slot narrow "$FAULTS_NARROW_THREADS" 7 || echo "limit $job narrow $$ $(now)" >>"$h"; n=%[1]d pause=%[2]s ;;
*) n=%[3]d pause=%[4]s ;;
esac
echo "start $job $lorry $$ $(now) $FAULTS_MINION" >>"$h"
# A second TERM (the minion's and the watchdog's may both come) is
# ignored by the trap and by the date it runs, which would die of it.
trap 'trap "" TERM INT; echo "end $job $lorry $$ $(now) term" >>"$h"; exit 143' TERM INT
i=1
while [ "$i" -le "$n" ]; do
	echo "line $job $i" >>"$h"
	echo "faults line $i of job $job"
	sleep "$pause" 7>&- 8>&- 9>&-
	i=$((i + 1))
done
echo "end $job $lorry $$ $(now) ok" >>"$h"
`

// jobProc is one job process, as it recorded itself.
type jobProc struct {
	job        int64
	lorry      string
	pid        int
	minion     string
	start, end int64  // Unix nanoseconds; end 0 when it recorded none
	how        string // "ok", "term", or "" when it recorded no end
	lines      []int  // the lines it printed, in order
}

// history is what the job processes recorded.
type history struct {
	procs map[int64][]*jobProc // by job id, in the order they started
	// overlaps and limits are the processes that found their lorry held
	// by another live process, or no slot free, as "JOB LORRY|LIMIT".
	overlaps []histEvent
	limits   []histEvent
	starts   []int64 // every start, sorted
}

type histEvent struct {
	job  int64
	what string // the lorry, or the limit
	at   int64
}

// readHistory parses the history file the job processes append to.
func readHistory(r io.Reader) (*history, error) {
	h := &history{procs: map[int64][]*jobProc{}}
	last := func(job int64, pid int) *jobProc {
		ps := h.procs[job]
		for i := len(ps) - 1; i >= 0; i-- {
			if ps[i].pid == pid || pid == 0 {
				return ps[i]
			}
		}
		return nil
	}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		bad := func() error { return fmt.Errorf("history line %d: %q", n, sc.Text()) }
		if len(f) < 3 {
			return nil, bad()
		}
		job, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, bad()
		}
		switch {
		case f[0] == "line" && len(f) == 3:
			k, err := strconv.Atoi(f[2])
			p := last(job, 0)
			if err != nil || p == nil {
				return nil, bad()
			}
			p.lines = append(p.lines, k)
		case (f[0] == "overlap" || f[0] == "limit") && len(f) == 5:
			at, err := strconv.ParseInt(f[4], 10, 64)
			if err != nil {
				return nil, bad()
			}
			e := histEvent{job: job, what: f[2], at: at}
			if f[0] == "overlap" {
				h.overlaps = append(h.overlaps, e)
			} else {
				h.limits = append(h.limits, e)
			}
		case f[0] == "start" && len(f) == 6:
			pid, err1 := strconv.Atoi(f[3])
			at, err2 := strconv.ParseInt(f[4], 10, 64)
			if err1 != nil || err2 != nil {
				return nil, bad()
			}
			h.procs[job] = append(h.procs[job], &jobProc{job: job, lorry: f[2], pid: pid, start: at, minion: f[5]})
			h.starts = append(h.starts, at)
		case f[0] == "end" && len(f) == 6:
			pid, err1 := strconv.Atoi(f[3])
			at, err2 := strconv.ParseInt(f[4], 10, 64)
			p := last(job, pid)
			if err1 != nil || err2 != nil || p == nil {
				return nil, bad()
			}
			p.end, p.how = at, f[5]
		default:
			return nil, bad()
		}
	}
	slices.Sort(h.starts)
	return h, sc.Err()
}

// readHistoryFile is readHistory of a file.
func readHistoryFile(name string) (*history, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readHistory(f)
}

// storedJob is a job as the WEBAPP has it at the end.
type storedJob struct {
	ID     int64  `json:"job_id"`
	Path   string `json:"path"`
	Minion string `json:"minion"`
	Status string `json:"status"`
	Exit   *int64 `json:"exit"`
	Output string `json:"output"`
}

// fault is one fault injected: its kind, what it hit, and when it began
// and ended (Unix nanoseconds).
type fault struct {
	kind, target string
	from, to     int64
	note         string
}

// The kinds of fault, in the order the campaign first injects each alone.
const (
	faultMinionStop    = "minion-stop"
	faultMinionKill    = "minion-kill"
	faultWebappStop    = "webapp-stop"
	faultWebappStopTx  = "webapp-stop-in-tx"
	faultWebappKill    = "webapp-kill"
	faultDropAnswers   = "answers-dropped"
	faultLatency       = "latency"
	faultClockAhead    = "clock-ahead"
	faultPostgresStart = "postgres-restart"
	faultPostgresTerm  = "postgres-terminate"
)

var faultKinds = []string{faultMinionStop, faultMinionKill, faultWebappStop, faultWebappStopTx, faultWebappKill,
	faultDropAnswers, faultLatency, faultClockAhead, faultPostgresStart, faultPostgresTerm}

// The kinds of anomaly the checker names.
const (
	anomalyOverlap     = "overlap"          // two live job processes of one lorry
	anomalyLimitHost   = "limit-host"       // more live job processes than the host's max_jobs
	anomalyLimitQueue  = "limit-queue"      // more than the queue's threads
	anomalyRunTwice    = "job-run-twice"    // one job id ran two processes
	anomalyUnknownJob  = "unknown-job"      // a process ran a job the STATEDB does not have
	anomalyNotEnded    = "not-ended"        // a job still live after the drain
	anomalyEndedTwice  = "ended-twice"      // a job ended by more than one report or sweep
	anomalyWrongStatus = "wrong-status"     // a job's status is not what happened to its process
	anomalyDuplicate   = "output-duplicate" // a printed line stored more than once
	anomalyOrder       = "output-order"     // stored lines out of order
	anomalyMissing     = "output-missing"   // a printed line not stored
	anomalyUnprinted   = "output-unprinted" // a stored line its process never printed
	anomalySlowResume  = "slow-resume"      // hand-outs did not resume within the bound after a fault
)

var anomalyKinds = []string{anomalyOverlap, anomalyLimitHost, anomalyLimitQueue, anomalyRunTwice, anomalyUnknownJob,
	anomalyNotEnded, anomalyEndedTwice, anomalyWrongStatus, anomalyDuplicate, anomalyOrder, anomalyMissing,
	anomalyUnprinted, anomalySlowResume}

// checkInput is everything the checker reads.
type checkInput struct {
	hist *history
	jobs []storedJob
	// ends counts, by job id, the ends the WEBAPPs logged: reports of
	// an exit, and the sweeps' ghosts and orphans.
	ends   map[int64]int
	faults []fault
	// webapps is how many WEBAPPs the minions could reach.
	webapps int
	// drained is when the queue was stopped for the end (Unix ns): no
	// hand-out is expected after it.
	drained int64
	// resumeBound is the longest a hand-out may take to come after a
	// fault's end before that is an anomaly; the figure is reported
	// whatever it is.
	resumeBound time.Duration
	// excuse is how long after a job process's end a fault of its own
	// minion still excuses the job's status and lost output: the time
	// the minion needs to report it.
	excuse time.Duration
}

// checkReport is what the checker found.
type checkReport struct {
	anomalies map[string][]string
	statuses  map[string]int
	procs     int
	lines     int
	// resume is, by fault, how long after its end the next job process
	// started; unmeasured are the faults that ended too near the drain
	// for a hand-out to be expected.
	resume     []time.Duration
	resumeBy   map[string]time.Duration // the longest, by kind
	unmeasured int
	// killedUnfaulted counts the jobs whose process the system ended
	// while their own minion had no fault.
	killedUnfaulted int
}

func (r *checkReport) add(kind, format string, args ...any) {
	r.anomalies[kind] = append(r.anomalies[kind], fmt.Sprintf(format, args...))
}

var storedLine = regexp.MustCompile(`^faults line (\d+) of job (\d+)$`)

// check runs every check of the campaign over in.
func check(in checkInput) *checkReport {
	r := &checkReport{anomalies: map[string][]string{}, statuses: map[string]int{}, resumeBy: map[string]time.Duration{}}
	h := in.hist

	// No lorry had two live job processes at once: each process that
	// found its lorry's lock held, and, from the records of processes
	// that recorded both ends, any two whose lives crossed.
	flagged := map[[2]int64]bool{}
	for _, e := range h.overlaps {
		r.add(anomalyOverlap, "job %d of %s started while another live process held the lorry%s", e.job, e.what, faultsAt(in.faults, e.at))
	}
	var all []*jobProc
	for _, ps := range h.procs {
		all = append(all, ps...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].start < all[j].start })
	// A process that recorded no end was killed outright; if its minion
	// was killed meanwhile, the kernel killed it then (the minion's
	// children die with it), which is when its life ended.
	ends := map[*jobProc]int64{}
	for _, p := range all {
		if p.end != 0 {
			continue
		}
		for _, f := range in.faults {
			if f.kind == faultMinionKill && f.target == p.minion && f.from >= p.start && (ends[p] == 0 || f.from < ends[p]) {
				ends[p] = f.from
			}
		}
	}

	overlapJobs := map[int64]bool{}
	for _, e := range h.overlaps {
		overlapJobs[e.job] = true
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.end == 0 || b.start >= a.end {
				continue
			}
			if a.lorry == b.lorry && a.job != b.job && !overlapJobs[b.job] && !flagged[[2]int64{a.job, b.job}] {
				flagged[[2]int64{a.job, b.job}] = true
				r.add(anomalyOverlap, "jobs %d and %d of %s ran at once (%d started %v before %d ended)",
					a.job, b.job, a.lorry, b.job, time.Duration(a.end-b.start), a.job)
			}
		}
	}
	for _, e := range h.limits {
		kind := anomalyLimitQueue
		if e.what == "host" {
			kind = anomalyLimitHost
		}
		lorry := "?"
		if ps := h.procs[e.job]; len(ps) > 0 {
			lorry = ps[0].lorry
		}
		r.add(kind, "job %d of %s started with every slot of %s held by other live job processes; by their records, %s%s",
			e.job, lorry, e.what, liveAt(all, ends, e), faultsAt(in.faults, e.at))
	}

	stored := map[int64]storedJob{}
	for _, j := range in.jobs {
		stored[j.ID] = j
		r.statuses[j.Status]++
	}
	for id, ps := range h.procs {
		r.procs += len(ps)
		if len(ps) > 1 {
			r.add(anomalyRunTwice, "job %d ran %d processes", id, len(ps))
		}
		if _, ok := stored[id]; !ok {
			r.add(anomalyUnknownJob, "job %d ran, and the STATEDB has no such job", id)
		}
	}

	for _, j := range in.jobs {
		if n := in.ends[j.ID]; n > 1 {
			r.add(anomalyEndedTwice, "job %d was ended %d times", j.ID, n)
		}
		if j.Status == "claimed" || j.Status == "running" {
			r.add(anomalyNotEnded, "job %d of %s is still %s after the drain", j.ID, j.Path, j.Status)
			continue
		}
		ps := h.procs[j.ID]
		if len(ps) == 0 {
			if j.Status == "succeeded" {
				r.add(anomalyWrongStatus, "job %d of %s succeeded and no process of it ran", j.ID, j.Path)
			}
			checkOutput(r, j, nil, true, "")
			continue
		}
		p := ps[0]
		r.lines += len(p.lines)
		faulted := minionFaulted(in.faults, p, in.excuse, in.drained) ||
			webappsAllDown(in.faults, p, in.excuse, in.drained, in.webapps)
		during := faultsDuring(in.faults, p, in.excuse, in.drained)
		exit := "none"
		if j.Exit != nil {
			exit = strconv.FormatInt(*j.Exit, 10)
		}
		switch {
		case j.Status == "succeeded" && (p.how != "ok" || exit != "0"):
			r.add(anomalyWrongStatus, "job %d of %s succeeded (exit %s), and its process ended %q after %d lines%s",
				j.ID, j.Path, exit, p.how, len(p.lines), during)
		case p.how == "ok" && j.Status != "succeeded" && !faulted:
			r.add(anomalyWrongStatus, "job %d of %s ended %s (exit %s), and its process printed every line and exited 0, its minion %s without a fault%s",
				j.ID, j.Path, j.Status, exit, p.minion, during)
		case p.how != "ok" && (j.Status == "succeeded" || j.Status == "failed"):
			r.add(anomalyWrongStatus, "job %d of %s ended %s (exit %s), and its process was killed (%q)%s", j.ID, j.Path, j.Status, exit, p.how, during)
		}
		if p.how != "ok" && !faulted {
			r.killedUnfaulted++
		}
		checkOutput(r, j, p.lines, faulted || j.Status == "lost" || j.Status == "orphaned", during)
	}

	// Hand-outs resume after each fault: the first job process to start
	// after its end.
	for _, f := range in.faults {
		i := sort.Search(len(h.starts), func(i int) bool { return h.starts[i] >= f.to })
		if i == len(h.starts) || h.starts[i] > in.drained {
			if wait := time.Duration(in.drained - f.to); wait > in.resumeBound {
				r.add(anomalySlowResume, "no job started in the %v from the end of %s on %s to the drain", wait, f.kind, f.target)
			} else {
				r.unmeasured++
			}
			continue
		}
		wait := time.Duration(h.starts[i] - f.to)
		r.resume = append(r.resume, wait)
		r.resumeBy[f.kind] = max(r.resumeBy[f.kind], wait)
		if wait > in.resumeBound {
			r.add(anomalySlowResume, "the first job after %s on %s started %v after it ended", f.kind, f.target, wait)
		}
	}
	slices.Sort(r.resume)
	return r
}

// minionFaulted says whether p's own minion was stopped or killed while p
// lived, or in the time after it that the minion needs to report it.
func minionFaulted(faults []fault, p *jobProc, excuse time.Duration, drained int64) bool {
	end := p.end
	if end == 0 {
		end = drained
	}
	for _, f := range faults {
		if (f.kind == faultMinionStop || f.kind == faultMinionKill) && f.target == p.minion &&
			f.from <= end+int64(excuse) && f.to >= p.start {
			return true
		}
	}
	return false
}

// webappsAllDown says whether every one of the webapps WEBAPPs was
// stopped or killed at one moment while p lived (or within excuse after
// it ended): its minion could then reach none, to confirm or report it,
// which cuts it off as a fault of its own minion would.
func webappsAllDown(faults []fault, p *jobProc, excuse time.Duration, drained int64, webapps int) bool {
	if webapps == 0 {
		return false
	}
	end := p.end
	if end == 0 {
		end = drained
	}
	var down []fault
	for _, f := range faults {
		if (f.kind == faultWebappStop || f.kind == faultWebappStopTx || f.kind == faultWebappKill) &&
			f.from <= end+int64(excuse) && f.to >= p.start {
			down = append(down, f)
		}
	}
	// The moments when the most are down start with one of the faults.
	for _, at := range down {
		targets := map[string]bool{}
		for _, f := range down {
			if f.from <= at.from && f.to >= at.from {
				targets[f.target] = true
			}
		}
		if len(targets) >= webapps {
			return true
		}
	}
	return false
}

// liveAt names the other job processes that lived, by their own records,
// when e happened, of e's limit: the host's, or a queue's. killed has the
// ends of those that recorded none and whose minion was killed.
func liveAt(all []*jobProc, killed map[*jobProc]int64, e histEvent) string {
	var names []string
	for _, p := range all {
		end := p.end
		if end == 0 {
			end = killed[p]
		}
		if p.job != e.job && p.start <= e.at && (end == 0 || end > e.at) &&
			(e.what == "host" || strings.HasPrefix(p.lorry, e.what+"/")) {
			name := fmt.Sprintf("job %d of %s on %s", p.job, p.lorry, p.minion)
			if end == 0 {
				name += " (no end known)"
			}
			names = append(names, name)
		}
	}
	return fmt.Sprintf("%d: %s", len(names), strings.Join(names, ", "))
}

// faultsAt names the faults under way at a moment, or that ended within
// a ghost timeout before it, as the end of a message.
func faultsAt(faults []fault, at int64) string {
	var names []string
	for _, f := range faults {
		if f.from <= at && at <= f.to+int64(faultsGhostTimeout) {
			names = append(names, f.kind+" on "+f.target)
		}
	}
	if len(names) == 0 {
		return "; no fault then"
	}
	return "; during or just after " + strings.Join(names, ", ")
}

// faultsDuring names the faults injected while p lived, or in the time
// after it that its minion needs to report it, as the end of a message:
// where an anomaly comes from.
func faultsDuring(faults []fault, p *jobProc, excuse time.Duration, drained int64) string {
	end := p.end
	if end == 0 {
		end = drained
	}
	var names []string
	for _, f := range faults {
		if f.from <= end+int64(excuse) && f.to >= p.start {
			names = append(names, f.kind+" on "+f.target)
		}
	}
	if len(names) == 0 {
		return "; no fault meanwhile"
	}
	return "; during " + strings.Join(names, ", ")
}

// checkOutput checks that each line a job's process printed is stored
// once, in order. A line may be missing only at the end, and only where
// shortOK: the job's minion had a fault, or the WEBAPP gave up on it.
func checkOutput(r *checkReport, j storedJob, printed []int, shortOK bool, during string) {
	var got []int
	for l := range strings.SplitSeq(j.Output, "\n") {
		m := storedLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		k, _ := strconv.Atoi(m[1])
		if id, _ := strconv.ParseInt(m[2], 10, 64); id != j.ID {
			r.add(anomalyUnprinted, "job %d stores a line of job %d: %q", j.ID, id, l)
			continue
		}
		got = append(got, k)
	}
	seen := map[int]int{}
	for _, k := range got {
		seen[k]++
	}
	var dups []int
	for k, n := range seen {
		if n > 1 {
			dups = append(dups, k)
		}
	}
	if len(dups) > 0 {
		slices.Sort(dups)
		r.add(anomalyDuplicate, "job %d of %s stores %d of its %d lines more than once: %v%s", j.ID, j.Path, len(dups), len(printed), shortList(dups), during)
	}
	// The order of first copies: a copy sent again is a duplicate, not
	// also a disorder.
	first := map[int]bool{}
	prev := 0
	for _, k := range got {
		if first[k] {
			continue
		}
		first[k] = true
		if k < prev {
			r.add(anomalyOrder, "job %d of %s stores line %d after line %d%s", j.ID, j.Path, k, prev, during)
			break
		}
		prev = k
	}
	wasPrinted := map[int]bool{}
	for _, k := range printed {
		wasPrinted[k] = true
	}
	var unprinted []int
	for k := range seen {
		if !wasPrinted[k] {
			unprinted = append(unprinted, k)
		}
	}
	if len(unprinted) > 0 {
		slices.Sort(unprinted)
		r.add(anomalyUnprinted, "job %d of %s stores lines its process never printed: %v%s", j.ID, j.Path, shortList(unprinted), during)
	}
	// What is stored of what was printed is a prefix of it, whole unless
	// shortOK.
	var missing []int
	gap := false
	for i, k := range printed {
		if seen[k] == 0 {
			missing = append(missing, k)
			continue
		}
		if i > 0 && seen[printed[i-1]] == 0 {
			gap = true
		}
	}
	if len(missing) > 0 && (gap || !shortOK) {
		r.add(anomalyMissing, "job %d of %s (%s) lost %d of its %d printed lines: %v%s", j.ID, j.Path, j.Status, len(missing), len(printed), shortList(missing), during)
	}
}

// shortList is at most the first ten of ks.
func shortList(ks []int) string {
	if len(ks) > 10 {
		return fmt.Sprint(ks[:10]) + "…"
	}
	return fmt.Sprint(ks)
}

// anomalyCount is how many anomalies the report names.
func (r *checkReport) anomalyCount() int {
	n := 0
	for _, as := range r.anomalies {
		n += len(as)
	}
	return n
}

// write prints the figures of the campaign: the jobs, the faults by kind,
// the anomalies by kind, and how soon hand-outs resumed; then each
// anomaly, at most perKind of each kind.
func (r *checkReport) write(w io.Writer, faults []fault, links map[string]int64, perKind int) {
	fmt.Fprintf(w, "jobs: %d (%s); job processes: %d; lines printed: %d; killed without a fault of their own minion: %d\n",
		r.jobs(), r.statusText(), r.procs, r.lines, r.killedUnfaulted)
	byKind := map[string]int{}
	for _, f := range faults {
		byKind[f.kind]++
	}
	fmt.Fprintf(w, "faults injected: %d\n", len(faults))
	for _, k := range faultKinds {
		fmt.Fprintf(w, "  %-20s %d", k, byKind[k])
		if d, ok := r.resumeBy[k]; ok {
			fmt.Fprintf(w, "   slowest resume %v", d.Round(time.Millisecond))
		}
		fmt.Fprintln(w)
	}
	for _, k := range slices.Sorted(maps.Keys(links)) {
		fmt.Fprintf(w, "  %-20s %d\n", k, links[k])
	}
	if n := len(r.resume); n > 0 {
		fmt.Fprintf(w, "hand-outs resumed after a fault's end: median %v, slowest %v (%d measured, %d too near the end)\n",
			r.resume[n/2].Round(time.Millisecond), r.resume[n-1].Round(time.Millisecond), n, r.unmeasured)
	}
	fmt.Fprintf(w, "anomalies: %d\n", r.anomalyCount())
	for _, k := range anomalyKinds {
		fmt.Fprintf(w, "  %-20s %d\n", k, len(r.anomalies[k]))
	}
	for _, k := range anomalyKinds {
		for i, a := range r.anomalies[k] {
			if i == perKind {
				fmt.Fprintf(w, "%s: … and %d more\n", k, len(r.anomalies[k])-perKind)
				break
			}
			fmt.Fprintf(w, "%s: %s\n", k, a)
		}
	}
}

// jobs is how many jobs the STATEDB has.
func (r *checkReport) jobs() int {
	n := 0
	for _, c := range r.statuses {
		n += c
	}
	return n
}

func (r *checkReport) statusText() string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(r.statuses)) {
		parts = append(parts, fmt.Sprintf("%s %d", s, r.statuses[s]))
	}
	return strings.Join(parts, ", ")
}
