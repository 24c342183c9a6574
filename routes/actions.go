package routes

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"lorrycontroller.dev/lc/templates"
)

// The buttons of the pages. Each posts a form to a route of its own, which
// runs the API route's handler on that form, so a button does exactly what
// the API does (the same checks, the same log lines), then redirects (303)
// back to the page with what happened, in words, shown once.

// answer keeps the body of an API handler's success in memory, for a
// button to say what it did.
type answer struct {
	header http.Header
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }

// WriteHeader is a handler's 200 (or 204): a failure is its error.
func (a *answer) WriteHeader(int) {}

func (a *answer) Write(b []byte) (int, error) { return a.body.Write(b) }

// action adapts the API handler h to a button: it runs h on the posted
// form and redirects to the form's back field with say's words for a
// success, or the API's error text for a failure.
func (s *Server) action(h handlerFunc, say func(r *http.Request, body []byte) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a := &answer{header: http.Header{}}
		var f flash
		if err := h(a, r); err != nil {
			s.statusLogged(r, err)
			f = flash{Bad: true, Text: errorText(err)}
		} else {
			f.Text = say(r, a.body.Bytes())
		}
		setFlash(w, f)
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, backURL(s.formValue(r, "back")), http.StatusSeeOther)
	}
}

// backURL is where a button returns to: the page it was on, which must be
// a page of this WEBAPP, never another site.
func backURL(back string) string {
	const home = "/1.0/status-html"
	u, err := url.Parse(back)
	if err != nil || back == "" || !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") ||
		strings.Contains(back, `\`) || u.Scheme != "" || u.Host != "" {
		return home
	}
	return back
}

// flash is the outcome of a button, shown once on the page it returns to.
type flash struct {
	Text string
	Bad  bool
}

const (
	flashCookie = "lorry_controller_flash"
	// flashMax keeps the cookie well under the 4 KiB browsers keep.
	flashMax = 1500
)

// setFlash hands f to the next page through a cookie, which keeps it out
// of the URL, so that reloading the page does not show it again.
func setFlash(w http.ResponseWriter, f flash) {
	text := f.Text
	if len(text) > flashMax {
		cut := flashMax
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + " …"
	}
	kind := "0"
	if f.Bad {
		kind = "1"
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(kind + text)),
		Path: "/", MaxAge: 60, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// takeFlash reads the flash that a button left, if any, and clears it.
func takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || len(b) == 0 {
		return nil
	}
	return &flash{Bad: b[0] == '1', Text: strings.ToValidUTF8(string(b[1:]), "\uFFFD")}
}

// refuseCrossOrigin refuses a state-changing request that a browser says
// comes from another origin, so that a page elsewhere cannot stop the
// queue or kill jobs through the browser of an admin who can reach the
// WEBAPP. Browsers say so in Sec-Fetch-Site, or else in Origin; the oldest
// only in Referer. curl, minions and timers send none of these and pass.
func (s *Server) refuseCrossOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := cop.Check(r)
		if err == nil && r.Header.Get("Sec-Fetch-Site") == "" && r.Header.Get("Origin") == "" {
			err = checkReferer(r)
		}
		if err != nil {
			s.Log.Warn("cross-origin request refused", "method", r.Method, "path", r.URL.Path,
				"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"),
				"referer", r.Header.Get("Referer"))
			writeJSON(w, http.StatusForbidden, map[string]string{
				"error": "cross-origin request refused: post from a page of this WEBAPP, or without a browser"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkReferer refuses an unsafe request whose Referer names another host.
func checkReferer(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	ref := r.Header.Get("Referer")
	if ref == "" {
		return nil
	}
	u, err := url.Parse(ref)
	if err != nil || !strings.EqualFold(u.Host, r.Host) {
		return errors.New("referer from another origin")
	}
	return nil
}

// What each button says when it worked. The body is the API's answer.

func saidReadConfiguration(_ *http.Request, body []byte) string {
	var going readConfigAccepted
	if json.Unmarshal(body, &going) == nil && going.Applying != nil {
		return fmt.Sprintf("Reading the configuration: %s lorries applied so far; Configuration shows how far it is.",
			templates.Num(int(going.Applying.Lorries)))
	}
	var res readConfigResult
	json.Unmarshal(body, &res)
	msg := fmt.Sprintf("Configuration read: commit %s, %s lorries and %s upstream hosts; %d added, %d changed, %d removed.",
		templates.Short(12, res.Commit), templates.Num(res.Lorries), templates.Num(res.Hosts), res.Added, res.Changed, res.Removed)
	if n := len(res.Errors); n > 0 {
		msg += fmt.Sprintf(" %d skipped for errors: see Configuration.", n)
	}
	return msg
}

func saidListHosts(_ *http.Request, body []byte) string {
	var res struct{ Hosts []lsResult }
	json.Unmarshal(body, &res)
	if len(res.Hosts) == 0 {
		return "No upstream hosts to list."
	}
	var lines []string
	for _, h := range res.Hosts {
		if !h.OK {
			lines = append(lines, fmt.Sprintf("%s: listing failed: %s", h.Host, h.Error))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %s repositories; %d added, %d changed, %d removed, %d skipped.",
			h.Host, templates.Num(h.Repos), h.Added, h.Changed, h.Removed, len(h.Skipped)))
	}
	return strings.Join(lines, "\n")
}

func saidQueue(running bool) func(*http.Request, []byte) string {
	return func(*http.Request, []byte) string {
		if running {
			return "Queue started: due lorries are handed out again."
		}
		return "Queue stopped: no new jobs are handed out; running jobs go on."
	}
}

func saidMaxJobs(_ *http.Request, body []byte) string {
	var res struct {
		MaxJobs *int64 `json:"max_jobs"`
	}
	json.Unmarshal(body, &res)
	if res.MaxJobs == nil {
		return "Max jobs removed: no limit on running jobs."
	}
	return fmt.Sprintf("Max jobs set to %d.", *res.MaxJobs)
}

func saidMove(top bool) func(*http.Request, []byte) string {
	return func(r *http.Request, _ []byte) string {
		if top {
			return fmt.Sprintf("Moved %s to the top of the run queue.", r.PostFormValue("path"))
		}
		return fmt.Sprintf("Moved %s to the bottom of the run queue.", r.PostFormValue("path"))
	}
}

func saidRetryLorry(r *http.Request, _ []byte) string {
	return fmt.Sprintf("Retrying %s now: its failures are forgotten and it is due.", r.PostFormValue("path"))
}

func saidStopJob(r *http.Request, _ []byte) string {
	return fmt.Sprintf("Asked the minion of job %s to kill it.", r.PostFormValue("job_id"))
}

func saidRemoveJob(r *http.Request, _ []byte) string {
	return fmt.Sprintf("Removed job %s and its output.", r.PostFormValue("job_id"))
}

func saidRemoveGhostJobs(_ *http.Request, body []byte) string {
	var res struct{ Removed []int64 }
	json.Unmarshal(body, &res)
	if len(res.Removed) == 0 {
		return "No ghost jobs: every running job was reported on within the ghost timeout."
	}
	ids := make([]string, len(res.Removed))
	for i, id := range res.Removed {
		ids[i] = fmt.Sprint(id)
	}
	return "Ended as lost: job " + strings.Join(ids, ", ") + "."
}
