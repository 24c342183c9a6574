package routes

import (
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/svgchart"
	"lorrycontroller.dev/lc/templates"
)

// The charts of the pages: a lorry's last runs, the jobs of the last day
// by the hour, and each queue's oldest wait over the day. The data is read
// in the page's transaction; the charts are drawn after it ends.

const (
	// stripRuns is how many runs a lorry's strip shows.
	stripRuns = 50
	// trendHours is how far back the status page's charts look.
	trendHours = 24
	// waitSlot is the time each point of a queue's wait line covers.
	waitSlot = 300
)

// outcomes are the job states as the charts draw them: colours that
// differ in lightness, and patterns, so that no reader needs to tell red
// from green.
var outcomes = svgchart.Legend{
	Order: []string{statedb.StatusSucceeded, statedb.StatusFailed, statedb.StatusTimedOut, statedb.StatusKilled,
		statedb.StatusLost, statedb.StatusOrphaned, statedb.StatusRunning, statedb.StatusClaimed},
	Styles: map[string]svgchart.Style{
		statedb.StatusSucceeded: {Label: "succeeded", Fill: "#5aae61"},
		statedb.StatusFailed:    {Label: "failed", Fill: "#a1141a", Pattern: "hatch"},
		statedb.StatusTimedOut:  {Label: "timed out", Fill: "#e08214", Pattern: "stripes"},
		statedb.StatusKilled:    {Label: "killed", Fill: "#5e3c99", Pattern: "cross"},
		statedb.StatusLost:      {Label: "lost", Fill: "#4b5563", Pattern: "dots"},
		statedb.StatusOrphaned:  {Label: "orphaned", Fill: "#c9ced6"},
		statedb.StatusRunning:   {Label: "running", Fill: "#8fb8ec"},
		statedb.StatusClaimed:   {Label: "claimed", Fill: "#8fb8ec"},
	},
}

// ranFailing says whether a run counts as a failure of its lorry, and
// ranOK whether it ends a run of failures. A killed job was stopped by an
// operator and an orphaned one never ran: they do neither.
func ranFailing(status string) bool {
	return status == statedb.StatusFailed || status == statedb.StatusTimedOut || status == statedb.StatusLost
}

func ranOK(status string) bool { return status == statedb.StatusSucceeded }

// backoffAfter is the failure in a row after which a lorry backs off.
const backoffAfter = 2

// hardFailAfter is the number of failures in a row after which the lorry
// is no longer retried by itself (its hard-fail-after; auth and gone
// failures hard-fail sooner, which the strip does not tell apart).
func hardFailAfter(l statedb.Lorry) int { return int(l.HardFailAfter) }

// failureMarks marks, in runs oldest first, where backoff began (after
// the second failure in a row) and where the lorry hard-failed (after
// hardFail failures in a row; 0 for never). A success starts counting
// again.
func failureMarks(runs []statedb.Run, hardFail int) []svgchart.Mark {
	var marks []svgchart.Mark
	n := 0
	for i, r := range runs {
		switch {
		case ranOK(r.Status):
			n = 0
			continue
		case !ranFailing(r.Status):
			continue
		}
		n++
		switch {
		case hardFail > 0 && n == hardFail:
			marks = append(marks, svgchart.Mark{Before: i + 1, Key: "hard-fail", Label: "hard-fail",
				Title: fmt.Sprintf("Hard-failed after job %d, failure %d in a row", r.ID, n)})
		case n == backoffAfter:
			marks = append(marks, svgchart.Mark{Before: i + 1, Key: "backoff", Label: "backoff",
				Title: fmt.Sprintf("Backoff began after job %d, failure %d in a row", r.ID, n)})
		}
	}
	return marks
}

// took is how long a run took, or has run until now.
func took(r statedb.Run, now int64) int64 {
	if r.Ended != nil {
		return max(*r.Ended-r.Started, 0)
	}
	return max(now-r.Started, 0)
}

func utc(t int64) string { return time.Unix(t, 0).UTC().Format("2006-01-02 15:04 UTC") }

func durationAxis(v float64) string { return templates.Duration(int64(v)) }

// countsText lists counts by outcome in the legend's order: "3
// succeeded, 1 failed".
func countsText(counts map[string]int64) string {
	var parts []string
	for _, s := range outcomes.Order {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, outcomes.Styles[s].Label))
		}
	}
	return strings.Join(parts, ", ")
}

// runStrip draws a lorry's last runs, oldest left: height is how long
// each took, colour and pattern how it ended.
func runStrip(path string, runs []statedb.Run, now int64, hardFail int) template.HTML {
	n := fmt.Sprintf("%d runs", len(runs))
	if len(runs) == 1 {
		n = "1 run"
	}
	s := svgchart.Strip{ID: "runs-chart", Title: fmt.Sprintf("The last %s of %s", n, path),
		Slots: stripRuns, Legend: outcomes, Format: durationAxis, Marks: failureMarks(runs, hardFail)}
	counts := map[string]int64{}
	var longest int64
	for _, r := range runs {
		d := took(r, now)
		longest = max(longest, d)
		counts[r.Status]++
		s.Bars = append(s.Bars, svgchart.Bar{Value: float64(d), Key: r.Status,
			Title: fmt.Sprintf("Job %d: %s, took %s, started %s", r.ID, outcomes.Styles[r.Status].Label, templates.Duration(d), utc(r.Started))})
	}
	var sum strings.Builder
	fmt.Fprintf(&sum, "The last %s, oldest first: %s. The longest took %s.", n, countsText(counts), templates.Duration(longest))
	for _, m := range s.Marks {
		fmt.Fprintf(&sum, " %s.", m.Title)
	}
	s.Summary = sum.String()
	return s.HTML()
}

// jobsPerHourChart draws the jobs that ended in each hour, stacked by
// outcome.
func jobsPerHourChart(hours []statedb.HourCount) template.HTML {
	s := svgchart.Stacked{ID: "jobs-per-hour", Title: fmt.Sprintf("Jobs that ended in each of the last %d hours, by outcome", len(hours)),
		Legend: outcomes, Format: func(v float64) string { return jobsWord(int64(v)) }}
	total := map[string]int64{}
	var all, busiest int64
	var busiestAt int64
	for i, h := range hours {
		start := time.Unix(h.Start, 0).UTC()
		c := svgchart.Column{Title: fmt.Sprintf("%s to %s UTC: ", start.Format("15:04"), start.Add(time.Hour).Format("15:04"))}
		if i%6 == 0 {
			c.Label = start.Format("15:04")
		}
		var n int64
		for _, st := range outcomes.Order {
			c.Segments = append(c.Segments, svgchart.Bar{Value: float64(h.Counts[st]), Key: st,
				Title: fmt.Sprintf("%s: %d %s", start.Format("15:04"), h.Counts[st], outcomes.Styles[st].Label)})
			n += h.Counts[st]
			total[st] += h.Counts[st]
		}
		if n == 0 {
			c.Title += "no job ended"
		} else {
			c.Title += fmt.Sprintf("%s ended: %s", jobsWord(n), countsText(h.Counts))
		}
		if n > busiest {
			busiest, busiestAt = n, h.Start
		}
		all += n
		s.Columns = append(s.Columns, c)
	}
	if all == 0 {
		s.Summary = fmt.Sprintf("No job ended in the last %d hours.", len(hours))
	} else {
		s.Summary = fmt.Sprintf("%s ended in the last %d hours: %s. The busiest hour, from %s UTC, saw %d.",
			jobsWord(all), len(hours), countsText(total), time.Unix(busiestAt, 0).UTC().Format("15:04"), busiest)
	}
	return s.HTML()
}

func jobsWord(n int64) string {
	if n == 1 {
		return "1 job"
	}
	return fmt.Sprintf("%d jobs", n)
}

// queueWaitChart draws, per queue, how long its oldest due entry had
// waited, over the last day. A gap in the samples (the WEBAPP was down)
// is a gap in the line.
func queueWaitChart(waits map[string][]statedb.WaitPoint, now int64) template.HTML {
	since := now - trendHours*3600
	s := svgchart.Lines{ID: "queue-waits", Title: "How long the oldest due entry of each queue had waited, over the last day",
		XMin: float64(since), XMax: float64(now), Format: durationAxis}
	for h := trendHours; h >= 0; h -= 6 {
		label := fmt.Sprintf("%dh ago", h)
		if h == 0 {
			label = "now"
		}
		s.Ticks = append(s.Ticks, svgchart.Tick{X: float64(now - int64(h)*3600), Label: label})
	}
	names := make([]string, 0, len(waits))
	for q := range waits {
		names = append(names, q)
	}
	sort.Strings(names)
	var parts []string
	for _, q := range names {
		pts := waits[q]
		l := svgchart.Line{Name: q}
		var longest int64
		var piece []svgchart.Point
		for i, p := range pts {
			if i > 0 && p.At-pts[i-1].At > 2*waitSlot {
				l.Pieces, piece = append(l.Pieces, piece), nil
			}
			// A slot begins up to a slot before the day does.
			piece = append(piece, svgchart.Point{X: float64(max(p.At, since)), Y: float64(p.Wait)})
			longest = max(longest, p.Wait)
		}
		l.Pieces = append(l.Pieces, piece)
		last := pts[len(pts)-1]
		l.Title = fmt.Sprintf("%s: the oldest due entry waited at most %s; at the last sample, %s", q,
			templates.Duration(longest), templates.Duration(last.Wait))
		parts = append(parts, fmt.Sprintf("%s at most %s (%s at the last sample)", q, templates.Duration(longest), templates.Duration(last.Wait)))
		s.Lines = append(s.Lines, l)
	}
	if len(parts) == 0 {
		s.Summary = "No samples yet: the WEBAPP samples the queues once a minute."
	} else {
		s.Summary = "Over the last day the oldest due entry waited: " + strings.Join(parts, "; ") + "."
	}
	return s.HTML()
}
