package routes

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"
	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/static"
	"lorrycontroller.dev/lc/templates"
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
// answer. Either goes compressed to a browser that accepts it.
func (s *Server) page(h handlerFunc) http.HandlerFunc {
	return gzipped(func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		code := s.statusLogged(r, err)
		p := errorPage{pageBase: livePage(w, r, fmt.Sprintf("%d %s", code, http.StatusText(code)), "", s.Now()),
			Message: errorText(err)}
		p.Back = ""
		if werr := writePage(w, code, "error.html", p); werr != nil {
			s.Log.Error("error page", "err", werr)
		}
	})
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

// aliveWithin is how recently a minion must have been heard from to count
// as alive: the ghost timeout, after which its job would count as dead.
func (s *Server) aliveWithin() int64 {
	if s.GhostTimeout <= 0 {
		return int64((15 * time.Minute).Seconds())
	}
	return int64(s.GhostTimeout.Seconds())
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
	// NextDue is the time the entry is due from, as the database has it:
	// the templates compare it with now, which the API's null for never
	// would not let them.
	NextDue int64
}

func lorryFailed(l lorryJSON) bool {
	return l.LastRunExit != nil && *l.LastRunExit != 0 || l.LastRunError != ""
}

func lorryRow(l statedb.Lorry, now, pos int64) lorryView {
	v := lorryView{lorryJSON: lorryWire(l), Pos: pos, ExitText: exitText(l.LastRunExit), Streak: l.State, NextDue: l.NextDue}
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
