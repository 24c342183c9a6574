package routes

import (
	"context"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

const (
	// queuePage is how many lorries of the run queue a page lists.
	queuePage = 100
	// failingShown is how many failing lorries the status page lists
	// before pointing to the run queue filtered to them.
	failingShown = 25
)

// statusView is what the status page shows.
type statusView struct {
	pageBase
	St           statusJSON
	MaxJobs      string // "" when there is no limit
	MinionsAlive int
	AliveWithin  int64
	// ReplicasDown counts the WEBAPPs of St.Replicas that are down.
	ReplicasDown int
	LowDisk      bool
	ConfigFailed bool
	ConfigErrors []statedb.FileError
	Hosts        []hostView
	Running      []runningView
	Failing      []lorryView
	AllFailing   string
	Filter       statedb.LorryFilter
	Filtered     bool
	States       []option
	Kinds        []option
	QueueMatches int64
	Queue        []lorryView
	Page         int
	Pager        pager
	// CopyFailed says that the on-disk copy could not be written, and
	// CopyError why.
	CopyFailed bool
	CopyError  string
	// JobsPerHour and QueueWaits are the charts of the last day.
	JobsPerHour, QueueWaits template.HTML
}

type runningView struct {
	jobView
	LastLine string
}

// readStatusViews reads the status page with the run queue filtered by f
// at page n of it (live), and the on-disk copy, which always shows the
// plain first page (disk), in one transaction: both show the same moment,
// and what they share is read once.
func (s *Server) readStatusViews(ctx context.Context, f statedb.LorryFilter, n int) (live, disk statusView, err error) {
	queues := []control.QueueRequest{{Page: 1}}
	if f != (statedb.LorryFilter{}) || n != 1 {
		queues = append(queues, control.QueueRequest{Filter: f, Page: n})
	}
	rd, err := s.Status(ctx, control.StatusRequest{Page: &control.StatusPageRequest{
		Hours: trendHours, WaitSlot: waitSlot, Failing: failingShown, PerPage: queuePage, Queues: queues}})
	if err != nil {
		return live, disk, err
	}
	v := s.statusView(rd)
	disk = v
	putQueue(&disk, statedb.LorryFilter{}, rd.Page.Queues[0])
	live = disk
	if len(queues) > 1 {
		live = v
		putQueue(&live, f, rd.Page.Queues[1])
	}
	// The charts are drawn once the transaction is over.
	perHour, queueWaits := jobsPerHourChart(rd.Page.Hours), queueWaitChart(rd.Page.Waits, v.Now)
	live.JobsPerHour, live.QueueWaits = perHour, queueWaits
	disk.JobsPerHour, disk.QueueWaits = perHour, queueWaits
	return live, disk, nil
}

// statusView is the status page but its run queue, from what rd read.
func (s *Server) statusView(rd control.StatusRead) statusView {
	st, now := s.statusWire(rd), rd.Now
	v := statusView{St: st}
	v.Now = now
	if st.MaxJobs != nil {
		v.MaxJobs = strconv.FormatInt(*st.MaxJobs, 10)
	}
	v.AliveWithin = s.aliveWithin()
	for _, m := range st.Minions {
		if now-m.LastSeen <= v.AliveWithin {
			v.MinionsAlive++
		}
	}
	for _, r := range st.Replicas {
		if r.State == control.ReplicaDown {
			v.ReplicasDown++
		}
	}
	v.LowDisk = st.DiskFree >= 0 && st.DiskFree < lowDiskBytes
	v.ConfigFailed = st.Config.Failure != "" && st.Config.FailAt >= st.Config.ReadAt
	for _, e := range st.Config.Errors {
		v.ConfigErrors = append(v.ConfigErrors, statedb.FileError{File: e.File, Error: redact.URLs(e.Error)})
	}
	for _, h := range st.Hosts {
		v.Hosts = append(v.Hosts, hostRow(h))
	}
	for _, j := range rd.Page.Running {
		v.Running = append(v.Running, runningView{jobView: jobRow(j.Job, now), LastLine: j.LastLine})
	}
	for _, l := range rd.Page.Failing {
		v.Failing = append(v.Failing, lorryRow(l, now, 0))
	}
	v.AllFailing = "/1.0/status-html?" + url.Values{"state": {statedb.LorryFailing}}.Encode() + "#queue"
	return v
}

// putQueue puts into v the page p of the run queue filtered by f.
func putQueue(v *statusView, f statedb.LorryFilter, p control.QueuePage) {
	v.Filter, v.Filtered = f, f != (statedb.LorryFilter{})
	v.States = options(f.State, "", "All", statedb.LorryDue, "Due", statedb.LorryFailing, "Failing",
		statedb.LorryRunning, "Running", statedb.LorryNever, "Never run")
	v.Kinds = options(f.Kind, "", "All", wire.KindLorry, "Lorries", wire.KindScraper, "Scrapers")
	v.QueueMatches = p.Matches
	pages := max(1, int((p.Matches+queuePage-1)/queuePage))
	v.Page = p.Page
	for i, l := range p.Lorries {
		v.Queue = append(v.Queue, lorryRow(l, v.Now, int64(p.Offset+i+1)))
	}
	v.Pager = numberedPager(p.Page, pages, func(page int) string {
		q := url.Values{}
		if f.Path != "" {
			q.Set("path", f.Path)
		}
		if f.State != "" {
			q.Set("state", f.State)
		}
		if f.Kind != "" {
			q.Set("kind", f.Kind)
		}
		if page > 1 {
			q.Set("page", strconv.Itoa(page))
		}
		if len(q) == 0 {
			return "/1.0/status-html#queue"
		}
		return "/1.0/status-html?" + q.Encode() + "#queue"
	})
}

func (s *Server) statusHTML(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := statedb.LorryFilter{Path: strings.TrimSpace(q.Get("path")), State: q.Get("state"), Kind: q.Get("kind")}
	if err := f.Valid(); err != nil {
		return errorf(http.StatusBadRequest, "state %q is none of due, failing, running and never", f.State)
	}
	if f.Kind != "" && f.Kind != wire.KindLorry && f.Kind != wire.KindScraper {
		return errorf(http.StatusBadRequest, "kind %q is neither %s nor %s", f.Kind, wire.KindLorry, wire.KindScraper)
	}
	v, disk, err := s.readStatusViews(r.Context(), f, pageNumber(q.Get("page")))
	if err != nil {
		return err
	}
	if err := s.writeStatusCopy(disk); err != nil {
		// The page is what was asked for: it shows whatever became of the
		// copy, which the log and status's warning_msg tell too.
		v.CopyFailed, v.CopyError = true, s.copyFailure()
	}
	v.pageBase = livePage(w, r, "Status", "status", v.Now)
	return writePage(w, http.StatusOK, "status.html", v)
}

// writeStatusCopy renders v, read for the plain first page, as the on-disk
// copy: style and script inline, no buttons. It writes it to StatusHTML,
// if set, atomically; if not, it renders nothing, which would take as long
// as the page asked for (17 ms of a status-html of 80 ms with 300 running
// jobs).
func (s *Server) writeStatusCopy(v statusView) error {
	if s.StatusHTML == "" {
		return nil
	}
	v.pageBase = staticPage("Status", v.Now)
	page, err := renderPage("status.html", v)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(s.StatusHTML, page, 0o644); err != nil {
		s.Log.Error("status-html copy", "err", err)
		s.copyFailed(copyWarning(err))
		return err
	}
	s.copyFailed("")
	return nil
}

// copyWarning says why the on-disk status page could not be written,
// without its path, which pages and status show to anyone.
func copyWarning(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}
