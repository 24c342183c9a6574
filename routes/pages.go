package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"
	"golang.org/x/sys/unix"

	"lorrycontroller/atomicfile"
	"lorrycontroller/redact"
	"lorrycontroller/statedb"
	"lorrycontroller/static"
	"lorrycontroller/templates"
	"lorrycontroller/wire"
)

// The web pages. Each reads what it shows in one read transaction, renders
// into a buffer and only then writes, so a failure is answered whole.

// pageBase is what every page gives the layout.
type pageBase struct {
	Title string
	Here  string // the navigation entry of the page
	Now   int64
	// Static marks the on-disk copy of the status page: style and script
	// inline, so a plain web server can serve it from anywhere, and no
	// forms, since nothing there could take them.
	Static bool
	CSS    template.CSS
	JS     template.JS
	Assets string // version of the static files, so they can be cached for good
	Flash  *flash
	// Back is this page's own URL, for its buttons to come back to; ""
	// hides the buttons.
	Back string
	// Self is this page's own URL, for the sign-in link to come back to.
	Self string
	// SignIn shows who is signed in, or a link to sign in: the WEBAPP
	// asks for tokens. User and Role are the signed-in token's.
	SignIn     bool
	User, Role string
	// CSRF is the session's token that every form posts back.
	CSRF string
	// Refresh, if set, reloads the page every so many seconds when
	// scripts do not run, as the script would have updated it.
	Refresh int
}

// livePage is the pageBase of a page served to a browser. Its buttons
// show only to an admin.
func livePage(w http.ResponseWriter, r *http.Request, title, here string, now int64) pageBase {
	p := pageBase{Title: title, Here: here, Now: now, Assets: static.Version, Flash: takeFlash(w, r),
		Back: r.URL.RequestURI(), Self: r.URL.RequestURI()}
	c := callerOf(r.Context())
	if !c.admin() {
		p.Back = ""
	}
	if !c.all {
		p.SignIn, p.User, p.Role = true, c.token.Name, c.token.Role
	}
	if c.session != nil {
		p.CSRF = c.session.CSRF
	}
	return p
}

// Form is what the buttons of the page post besides their own fields;
// an empty Back hides them.
func (p pageBase) Form() templates.Form { return p.FormTo(p.Back) }

// FormTo is Form for buttons that come back to another page than this.
func (p pageBase) FormTo(back string) templates.Form {
	if p.Back == "" {
		return templates.Form{}
	}
	return templates.Form{Back: back, CSRF: p.CSRF}
}

// staticPage is the pageBase of the on-disk copy of a page.
func staticPage(title string, now int64) pageBase {
	return pageBase{Title: title, Here: "status", Now: now, Static: true,
		CSS: template.CSS(static.Read("style.css")), JS: template.JS(static.Read("app.js"))}
}

// pageHeaders are the headers of every page. The content security policy
// lets a page load only its own style sheet and script and post only to
// the WEBAPP: were hostile text ever to slip through the escaping, it still
// could not run. No page may be framed, so its buttons cannot be
// clickjacked.
func pageHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; "+
		"img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

func renderPage(name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := templates.Pages.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

func writePage(w http.ResponseWriter, code int, name string, data any) error {
	page, err := renderPage(name, data)
	if err != nil {
		return err
	}
	pageHeaders(w.Header())
	w.WriteHeader(code)
	_, err = w.Write(page)
	return err
}

// errorPage is the page of a failed request.
type errorPage struct {
	pageBase
	Message string
}

// page adapts a page handler as handle adapts an API one, but answers an
// error with a page. The status code and text are those the API would
// answer.
func (s *Server) page(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		code := s.statusLogged(r, err)
		p := errorPage{pageBase: livePage(w, r, fmt.Sprintf("%d %s", code, http.StatusText(code)), "", s.DB.Now()),
			Message: errorText(err)}
		p.Back = ""
		if werr := writePage(w, code, "error.html", p); werr != nil {
			s.Log.Error("error page", "err", werr)
		}
	}
}

// --- the status page ---

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

// option is one entry of a filter's drop-down list.
type option struct {
	Value, Label string
	Selected     bool
}

func options(selected string, pairs ...string) []option {
	var out []option
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, option{Value: pairs[i], Label: pairs[i+1], Selected: pairs[i] == selected})
	}
	return out
}

// pager links the pages of a long list. An empty link is a page that
// does not exist.
type pager struct {
	First, Prev, Next, Last                     string
	FirstLabel, PrevLabel, NextLabel, LastLabel string
	Where                                       string
}

// pageNumber reads a 1-based page number; anything else is page 1.
func pageNumber(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// aliveWithin is how recently a minion must have been heard from to count
// as alive: the ghost timeout, after which its job would count as dead.
func (s *Server) aliveWithin() int64 {
	if s.GhostTimeout <= 0 {
		return int64((15 * time.Minute).Seconds())
	}
	return int64(s.GhostTimeout.Seconds())
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
	v.Kinds = options(f.Kind, "", "All", KindLorry, "Lorries", KindScraper, "Scrapers")
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

// numberedPager links page n of pages to its neighbours.
func numberedPager(n, pages int, link func(int) string) pager {
	p := pager{FirstLabel: "First", PrevLabel: "Previous", NextLabel: "Next", LastLabel: "Last",
		Where: fmt.Sprintf("Page %s of %s", templates.Num(n), templates.Num(pages))}
	if n > 1 {
		p.First, p.Prev = link(1), link(n-1)
	}
	if n < pages {
		p.Next, p.Last = link(n+1), link(pages)
	}
	return p
}

func (s *Server) statusHTML(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := statedb.LorryFilter{Path: strings.TrimSpace(q.Get("path")), State: q.Get("state"), Kind: q.Get("kind")}
	if err := f.Valid(); err != nil {
		return errorf(http.StatusBadRequest, "state %q is none of due, failing, running and never", f.State)
	}
	if f.Kind != "" && f.Kind != KindLorry && f.Kind != KindScraper {
		return errorf(http.StatusBadRequest, "kind %q is neither %s nor %s", f.Kind, KindLorry, KindScraper)
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
// if set, atomically.
func (s *Server) writeStatusCopy(v statusView) error {
	v.pageBase = staticPage("Status", v.Now)
	page, err := renderPage("status.html", v)
	if err != nil {
		return err
	}
	if s.StatusHTML != "" {
		if err := atomicfile.WriteFile(s.StatusHTML, page, 0o644); err != nil {
			s.Log.Error("status-html copy", "err", err)
			s.copyFailed(copyWarning(err))
			return err
		}
		s.copyFailed("")
	}
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

// --- rows shared by the pages ---

// lorryView is a lorry as the pages show it: what the API shows, and its
// state in a word and a colour.
type lorryView struct {
	lorryJSON
	Pos          int64 // place in the queue, 1-based; 0 when not known
	State, Class string
	ExitText     string
	// Streak is the state of the lorry's failure streak (ok, failing,
	// backing-off, hard-failed), which State stands in for on the page.
	Streak string
}

func lorryFailed(l lorryJSON) bool {
	return l.LastRunExit != nil && *l.LastRunExit != 0 || l.LastRunError != ""
}

func lorryRow(l statedb.Lorry, now, pos int64) lorryView {
	v := lorryView{lorryJSON: lorryWire(l), Pos: pos, ExitText: exitText(l.LastRunExit), Streak: l.State}
	switch {
	case l.RunningJob != nil:
		v.State, v.Class = "running", "s-running"
	case l.State == statedb.StateHardFailed:
		v.State, v.Class = "hard-failed", "s-failed"
	case lorryFailed(v.lorryJSON):
		v.State, v.Class = "failing", "s-failed"
	case l.LastRun == nil:
		v.State, v.Class = "never run", "s-new"
	case l.NextDue <= now:
		v.State, v.Class = "due", "s-due"
	default:
		v.State, v.Class = "ok", "s-ok"
	}
	switch {
	case l.LastRun == nil:
		v.ExitText = "—"
	case l.LastRunExit == nil && l.LastRunError != "":
		v.ExitText = "none: the job did not report one"
	}
	return v
}

// jobView is a job as the pages show it.
type jobView struct {
	jobJSON
	State, Class string
	ExitText     string
	Took         int64 // seconds from start to end, or to now while it runs
	// RuntimeText says how a scraper's runtime was got ready.
	RuntimeText string
}

func jobRow(j statedb.Job, now int64) jobView {
	v := jobView{jobJSON: jobWire(j, ""), State: j.Status, Class: "s-" + j.Status, ExitText: exitText(j.Exit)}
	v.RuntimeText = runtimeText(v.Runtime)
	v.Took = now - j.Started
	if j.Ended != nil {
		v.Took = *j.Ended - j.Started
	}
	switch {
	case j.Live() && j.Kill:
		v.State, v.Class = "stopping", "s-killing"
	case j.Exit == nil && j.Live():
		v.ExitText = "none yet"
	case j.Exit == nil && j.Status == statedb.StatusLost:
		v.ExitText = "none: the minion never reported the end"
	case j.Status == statedb.StatusOrphaned:
		v.ExitText = "none: the minion never started it"
	}
	return v
}

// runtimeText says whether the minion built a scraper's runtime for the
// job, and how long that took, or found it built.
func runtimeText(rt *jobRuntimeJSON) string {
	switch {
	case rt == nil:
		return ""
	case rt.Built == nil:
		return "not reported yet"
	case !*rt.Built:
		return "reused: it was built already"
	case rt.BuildSeconds == nil:
		return "built for this job"
	}
	return "built for this job in " + templates.Duration(int64(math.Round(*rt.BuildSeconds)))
}

// exitText says what an exit code means, as a shell would have it: a
// code above 128 is a signal.
func exitText(exit *int64) string {
	if exit == nil {
		return "none"
	}
	n := *exit
	switch {
	case n == 0:
		return "0 (success)"
	case n == 127:
		return "127 (lorry could not be started)"
	case n > 128 && n < 128+65:
		sig := syscall.Signal(n - 128)
		if name := unix.SignalName(sig); name != "" {
			return fmt.Sprintf("%d (killed by %s)", n, name)
		}
		return fmt.Sprintf("%d (killed by signal %d)", n, n-128)
	}
	return fmt.Sprintf("%d (error)", n)
}

// jobTable is a list of jobs, as the jobrows template shows it.
type jobTable struct {
	Now  int64
	Jobs []jobView
}

// hostView is an Upstream Host as the pages show it.
type hostView struct {
	hostJSON
	State, Class string
	NextLs       int64
}

func hostRow(h hostJSON) hostView {
	v := hostView{hostJSON: h, State: "ok", Class: "s-ok"}
	v.LastLsError = redact.URLs(h.LastLsError)
	switch {
	case h.LastLs == nil:
		v.State, v.Class = "never listed", "s-never"
	case h.LastLsError != "":
		v.State, v.Class = "failed", "s-failed"
	}
	if h.LastLs != nil {
		v.NextLs = *h.LastLs + h.LsInterval
	}
	return v
}

// --- jobs ---

// jobsPage is how many jobs a page of the job list shows.
const jobsPage = 50

type jobsView struct {
	pageBase
	Filter   statedb.JobFilter
	Filtered bool
	Statuses []option
	Table    jobTable
	Pager    pager
}

func (s *Server) listJobsHTML(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := statedb.JobFilter{Status: q.Get("status"), Path: strings.TrimSpace(q.Get("path"))}
	if f.Status != "" && !slices.Contains(jobStatuses, f.Status) {
		return errorf(http.StatusBadRequest, "no job status %q", f.Status)
	}
	cursor := func(name string) (int64, error) {
		if q.Get(name) == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(q.Get(name), 10, 64)
		if err != nil || n < 0 {
			return 0, errorf(http.StatusBadRequest, "%s %q is not a job id", name, q.Get(name))
		}
		return n, nil
	}
	before, err := cursor("before")
	if err != nil {
		return err
	}
	after, err := cursor("after")
	if err != nil {
		return err
	}
	var v jobsView
	var p statedb.JobPage
	err = s.DB.View(r.Context(), func(tx *statedb.Tx) error {
		var err error
		v.Now = tx.Now
		switch {
		case q.Get("after") != "":
			p, err = tx.JobsAfter(r.Context(), f, after, jobsPage)
		case q.Get("before") != "":
			p, err = tx.JobsBefore(r.Context(), f, before, jobsPage)
		default:
			p, err = tx.JobsBefore(r.Context(), f, math.MaxInt64, jobsPage)
		}
		return err
	})
	if err != nil {
		return err
	}
	v.pageBase = livePage(w, r, "Jobs", "jobs", v.Now)
	v.Filter, v.Filtered = f, f != (statedb.JobFilter{})
	v.Statuses = options(f.Status, "", "All", statedb.StatusClaimed, "Claimed", statedb.StatusRunning, "Running", statedb.StatusSucceeded, "Succeeded",
		statedb.StatusFailed, "Failed", statedb.StatusKilled, "Killed", statedb.StatusTimedOut, "Timed out",
		statedb.StatusLost, "Lost", statedb.StatusOrphaned, "Orphaned")
	v.Table.Now = v.Now
	for _, j := range p.Jobs {
		v.Table.Jobs = append(v.Table.Jobs, jobRow(j, v.Now))
	}
	link := func(name string, id int64) string {
		lq := url.Values{}
		if f.Status != "" {
			lq.Set("status", f.Status)
		}
		if f.Path != "" {
			lq.Set("path", f.Path)
		}
		if name != "" {
			lq.Set(name, strconv.FormatInt(id, 10))
		}
		return "/1.0/list-jobs-html?" + lq.Encode()
	}
	v.Pager = pager{FirstLabel: "Newest", PrevLabel: "Newer", NextLabel: "Older"}
	if n := len(p.Jobs); n > 0 {
		if p.Newer {
			v.Pager.First, v.Pager.Prev = link("", 0), link("after", p.Jobs[0].ID)
		}
		if p.Older {
			v.Pager.Next = link("before", p.Jobs[n-1].ID)
		}
		v.Pager.Where = fmt.Sprintf("Jobs %d to %d", p.Jobs[0].ID, p.Jobs[n-1].ID)
	}
	return writePage(w, http.StatusOK, "jobs.html", v)
}

type jobPageView struct {
	pageBase
	Job             jobView
	Output          string
	Next            int64
	OutputSize      string
	BackAfterRemove string
	// Refs are the refs the job changed; nil when unknown.
	Refs *refsView
}

// refsView is a job's ref changes as its page lists them.
type refsView struct {
	Rows      []refRowView
	Truncated bool
}

type refRowView struct {
	Change       string // created, updated or deleted
	Ref          string
	Old, New     string // object ids, shortened
	OldID, NewID string
}

func refsRows(c *wire.RefChanges) *refsView {
	if c == nil {
		return nil
	}
	short := func(id string) string { return id[:min(len(id), 10)] }
	v := &refsView{Truncated: c.Truncated}
	for _, kind := range []struct {
		change string
		refs   []wire.RefChange
	}{{"created", c.Created}, {"updated", c.Updated}, {"deleted", c.Deleted}} {
		for _, r := range kind.refs {
			v.Rows = append(v.Rows, refRowView{Change: kind.change, Ref: r.Ref,
				Old: short(r.Old), New: short(r.New), OldID: r.Old, NewID: r.New})
		}
	}
	return v
}

// outputSize says how much output a job printed and how much of it was
// cut to keep under the cap.
func outputSize(j statedb.Job) string {
	s := templates.Size(j.OutputBytes)
	if j.CutBytes > 0 {
		s += fmt.Sprintf(", of which %s cut from the middle", templates.Size(j.CutBytes))
	}
	return s
}

func (s *Server) jobHTML(w http.ResponseWriter, r *http.Request) error {
	id, err := parseJobID(chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	var part statedb.OutputPart
	var now int64
	var refs *wire.RefChanges
	err = s.DB.View(r.Context(), func(tx *statedb.Tx) error {
		now = tx.Now
		if part, err = tx.OutputFrom(r.Context(), id, 0); err != nil {
			return err
		}
		refs, err = jobRefs(tx, r, id)
		return err
	})
	if err != nil {
		return err
	}
	v := jobPageView{pageBase: livePage(w, r, fmt.Sprintf("Job %d", id), "jobs", now),
		Job: jobRow(part.Job, now), Output: part.Text, Next: part.Next, OutputSize: outputSize(part.Job),
		BackAfterRemove: "/1.0/list-jobs-html", Refs: refsRows(refs)}
	if part.Job.Live() {
		v.Refresh = 5
	}
	return writePage(w, http.StatusOK, "job.html", v)
}

// jobOutputJSON is the answer to job-output: what a running job's page
// needs to update itself.
type jobOutputJSON struct {
	JobID         int64  `json:"job_id"`
	Status        string `json:"status"`
	StatusText    string `json:"status_text"`
	StatusClass   string `json:"status_class"`
	Exit          *int64 `json:"exit"`
	ExitText      string `json:"exit_text"`
	Kill          bool   `json:"kill"`
	Started       int64  `json:"started"`
	Ended         *int64 `json:"ended"`
	Updated       int64  `json:"updated"`
	DiskUsage     *int64 `json:"disk_usage"`
	DiskUsageText string `json:"disk_usage_text"`
	OutputBytes   int64  `json:"output_bytes"`
	OutputSize    string `json:"output_size"`
	Output        string `json:"output"`
	Next          int64  `json:"next"`
}

func (s *Server) jobOutput(w http.ResponseWriter, r *http.Request) error {
	id, err := parseJobID(chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	var offset int64
	if o := r.URL.Query().Get("offset"); o != "" {
		if offset, err = strconv.ParseInt(o, 10, 64); err != nil || offset < 0 {
			return errorf(http.StatusBadRequest, "offset %q is not a byte offset", o)
		}
	}
	var part statedb.OutputPart
	var now int64
	err = s.DB.View(r.Context(), func(tx *statedb.Tx) error {
		now = tx.Now
		part, err = tx.OutputFrom(r.Context(), id, offset)
		return err
	})
	if err != nil {
		return err
	}
	v := jobRow(part.Job, now)
	w.Header().Set("Cache-Control", "no-store")
	return ok(w, jobOutputJSON{
		JobID: v.JobID, Status: v.Status, StatusText: v.State, StatusClass: v.Class, Exit: v.Exit,
		ExitText: v.ExitText, Kill: v.Kill, Started: v.Started, Ended: v.Ended, Updated: v.Updated,
		DiskUsage: v.DiskUsage, DiskUsageText: templates.Size(v.DiskUsage), OutputBytes: v.OutputBytes,
		OutputSize: outputSize(part.Job), Output: part.Text, Next: part.Next,
	})
}

// --- lorries ---

// recentJobs is how many of its jobs a lorry's page lists.
const recentJobs = 20

type lorryPageView struct {
	pageBase
	Lorry  lorryView
	Pos    int64
	Total  int64
	Spec   string
	Recent jobTable
	// LastBuild says how the newest job got a scraper's runtime ready.
	LastBuild string
	// Runs is the chart of the lorry's last runs; "" when it has none.
	Runs template.HTML
}

// lorryPath is the lorry path of a lorry-html URL. It is read from the
// escaped path and unescaped once, so a path holding "%" or "#" arrives as
// it was.
func lorryPath(r *http.Request, prefix string) (string, error) {
	raw, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if !ok {
		return "", errorf(http.StatusBadRequest, "no lorry path given")
	}
	p, err := url.PathUnescape(raw)
	if err != nil {
		return "", errorf(http.StatusBadRequest, "lorry path %q is not escaped right", raw)
	}
	p = strings.Trim(p, "/")
	if p == "" {
		return "", errorf(http.StatusBadRequest, "no lorry path given")
	}
	return p, nil
}

func (s *Server) lorryHTML(w http.ResponseWriter, r *http.Request) error {
	path, err := lorryPath(r, "/1.0/lorry-html/")
	if err != nil {
		return err
	}
	var v lorryPageView
	var runs []statedb.Run
	var hardFail int
	err = s.DB.View(r.Context(), func(tx *statedb.Tx) error {
		v.Now = tx.Now
		l, err := tx.Lorry(r.Context(), path)
		if err != nil {
			return err
		}
		v.Lorry = lorryRow(l, tx.Now, 0)
		if v.Pos, err = tx.QueuePosition(r.Context(), path); err != nil {
			return err
		}
		counts, err := tx.CountLorries(r.Context())
		if err != nil {
			return err
		}
		v.Total = counts.Total
		jobs, err := tx.RecentJobs(r.Context(), path, recentJobs)
		if err != nil {
			return err
		}
		v.Recent.Now = tx.Now
		for _, j := range jobs {
			v.Recent.Jobs = append(v.Recent.Jobs, jobRow(j, tx.Now))
		}
		runs, err = tx.RecentRuns(r.Context(), path, stripRuns)
		hardFail = hardFailAfter(l)
		return err
	})
	if err != nil {
		return err
	}
	if len(runs) > 0 {
		v.Runs = runStrip(path, runs, v.Now, hardFail)
	}
	v.pageBase = livePage(w, r, v.Lorry.Path, "status", v.Now)
	v.Spec = readableSpec(v.Lorry.Text)
	v.LastBuild = "no job yet"
	if len(v.Recent.Jobs) > 0 && v.Recent.Jobs[0].Runtime != nil {
		v.LastBuild = v.Recent.Jobs[0].RuntimeText
	}
	return writePage(w, http.StatusOK, "lorry.html", v)
}

// readableSpec lays out the spec as the API shows it (secrets hidden) to
// be read: indented, and with <, > and & as themselves rather than the
// \u003c that JSON encoders write; the page escapes them.
func readableSpec(text string) string {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var spec any
	if err := dec.Decode(&spec); err != nil {
		return text
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(spec); err != nil {
		return text
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// --- hosts and minions ---

type hostsView struct {
	pageBase
	Hosts []hostView
}

func (s *Server) hostsHTML(w http.ResponseWriter, r *http.Request) error {
	var v hostsView
	err := s.DB.View(r.Context(), func(tx *statedb.Tx) error {
		v.Now = tx.Now
		hosts, err := tx.Hosts(r.Context())
		for _, h := range hosts {
			v.Hosts = append(v.Hosts, hostRow(hostWire(h)))
		}
		return err
	})
	if err != nil {
		return err
	}
	v.pageBase = livePage(w, r, "Upstream hosts", "hosts", v.Now)
	return writePage(w, http.StatusOK, "hosts.html", v)
}

type minionView struct {
	minionJSON
	State, Class string
	JobPath      string
}

type minionsView struct {
	pageBase
	AliveWithin int64
	Minions     []minionView
	// Hosts are the minion hosts, and any other capped host, with their
	// caps on running jobs.
	Hosts []hostCapView
}

type hostCapView struct {
	Host    string
	MaxJobs string // "" when there is no cap
	Running int
}

func (s *Server) minionsHTML(w http.ResponseWriter, r *http.Request) error {
	v := minionsView{AliveWithin: s.aliveWithin()}
	err := s.DB.View(r.Context(), func(tx *statedb.Tx) error {
		v.Now = tx.Now
		minions, err := tx.Minions(r.Context())
		if err != nil {
			return err
		}
		for _, m := range minions {
			mv := minionView{minionJSON: minionWire(m, tx.Now, v.AliveWithin)}
			alive := tx.Now-m.LastSeen <= v.AliveWithin
			switch {
			case !alive:
				mv.State, mv.Class = minionSilent, "s-stale"
			case m.JobID != nil:
				mv.State, mv.Class = minionBusy, "s-running"
			default:
				mv.State, mv.Class = minionIdle, "s-ok"
			}
			if m.JobID != nil {
				j, err := tx.Job(r.Context(), *m.JobID)
				switch {
				case err == nil:
					mv.JobPath = j.Path
				case !errors.Is(err, statedb.ErrNotFound):
					return err
				}
			}
			v.Minions = append(v.Minions, mv)
		}
		caps, err := tx.HostLimits(r.Context())
		if err != nil {
			return err
		}
		v.Hosts = hostCaps(v.Minions, caps)
		return nil
	})
	if err != nil {
		return err
	}
	v.pageBase = livePage(w, r, "Minions", "minions", v.Now)
	return writePage(w, http.StatusOK, "minions.html", v)
}

// hostCaps lists the hosts of minions and the capped hosts, by name.
func hostCaps(minions []minionView, caps map[string]int64) []hostCapView {
	byHost := map[string]*hostCapView{}
	for h, n := range caps {
		byHost[h] = &hostCapView{Host: h, MaxJobs: strconv.FormatInt(n, 10)}
	}
	for _, m := range minions {
		hc := byHost[m.Host]
		if hc == nil {
			hc = &hostCapView{Host: m.Host}
			byHost[m.Host] = hc
		}
		if m.JobID != nil {
			hc.Running++
		}
	}
	out := make([]hostCapView, 0, len(byHost))
	for _, hc := range byHost {
		out = append(out, *hc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// --- static files ---

var staticTypes = map[string]string{
	"style.css": "text/css; charset=utf-8",
	"app.js":    "text/javascript; charset=utf-8",
}

// staticFile serves the pages' style sheet and script. Asked for with the
// current version, as the pages do, a file may be cached for good.
func (s *Server) staticFile(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "*")
	ctype, ok := staticTypes[name]
	if !ok {
		return errorf(http.StatusNotFound, "no such file: %s", r.URL.Path)
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("v") == static.Version {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(static.Read(name)))
	return nil
}
