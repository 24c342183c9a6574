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
	var v statusView
	var hours []statedb.HourCount
	var waits map[string][]statedb.WaitPoint
	err = s.DB.View(ctx, func(tx *statedb.Tx) error {
		// fn may run again (statedb.DB.View): it starts afresh.
		v, live, disk = statusView{}, statusView{}, statusView{}
		now := tx.Now
		var err error
		if hours, err = tx.JobsPerHour(ctx, trendHours); err != nil {
			return err
		}
		if waits, err = tx.QueueWaits(ctx, trendHours*3600, waitSlot); err != nil {
			return err
		}
		st, err := s.collectStatus(ctx, tx)
		if err != nil {
			return err
		}
		v.St, v.Now = st, now
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
		running, err := tx.RunningJobs(ctx)
		if err != nil {
			return err
		}
		for _, j := range running {
			line, err := tx.LastOutputLine(ctx, j.ID)
			if err != nil {
				return err
			}
			v.Running = append(v.Running, runningView{jobView: jobRow(j, now), LastLine: line})
		}
		if st.Lorries.Failing > 0 {
			failing, err := tx.FailingLorries(ctx, 0, failingShown)
			if err != nil {
				return err
			}
			for _, l := range failing {
				v.Failing = append(v.Failing, lorryRow(l, now, 0))
			}
		}
		v.AllFailing = "/1.0/status-html?" + url.Values{"state": {statedb.LorryFailing}}.Encode() + "#queue"

		disk = v
		if err := readQueue(ctx, tx, &disk, statedb.LorryFilter{}, 1); err != nil {
			return err
		}
		if f == (statedb.LorryFilter{}) && n == 1 {
			live = disk
			return nil
		}
		live = v
		return readQueue(ctx, tx, &live, f, n)
	})
	if err != nil {
		return live, disk, err
	}
	// The charts are drawn once the transaction is over.
	perHour, queueWaits := jobsPerHourChart(hours), queueWaitChart(waits, v.Now)
	live.JobsPerHour, live.QueueWaits = perHour, queueWaits
	disk.JobsPerHour, disk.QueueWaits = perHour, queueWaits
	return live, disk, nil
}

// readQueue reads page n of the run queue filtered by f into v.
func readQueue(ctx context.Context, tx *statedb.Tx, v *statusView, f statedb.LorryFilter, n int) error {
	v.Filter, v.Filtered = f, f != (statedb.LorryFilter{})
	v.States = options(f.State, "", "All", statedb.LorryDue, "Due", statedb.LorryFailing, "Failing",
		statedb.LorryRunning, "Running", statedb.LorryNever, "Never run")
	v.Kinds = options(f.Kind, "", "All", wire.KindLorry, "Lorries", wire.KindScraper, "Scrapers")
	v.QueueMatches = v.St.Lorries.Total
	if v.Filtered {
		var err error
		if v.QueueMatches, err = tx.CountLorriesMatching(ctx, f); err != nil {
			return err
		}
	}
	pages := max(1, int((v.QueueMatches+queuePage-1)/queuePage))
	n = min(n, pages)
	v.Page = n
	offset := (n - 1) * queuePage
	queue, err := tx.LorryPage(ctx, f, offset, queuePage)
	if err != nil {
		return err
	}
	for i, l := range queue {
		v.Queue = append(v.Queue, lorryRow(l, v.Now, int64(offset+i+1)))
	}
	v.Pager = numberedPager(n, pages, func(page int) string {
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
	return nil
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
