package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
)

// logRecords keeps every record logged through it.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecords) WithGroup(string) slog.Handler            { return h }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// find returns the attributes of the records with message msg.
func (h *logRecords) find(msg string) []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		attrs := map[string]string{"level": r.Level.String()}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		out = append(out, attrs)
	}
	return out
}

// errors returns the messages and errors of the records at level ERROR.
func (h *logRecords) errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if r.Level < slog.LevelError {
			continue
		}
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				msg += ": " + a.Value.String()
			}
			return true
		})
		out = append(out, msg)
	}
	return out
}

func TestStatusOf(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantText string
	}{
		{name: "httpError", err: errorf(http.StatusTeapot, "short and stout"), wantCode: 418, wantText: "short and stout"},
		{name: "wrapped httpError", err: fmt.Errorf("brew: %w", errorf(http.StatusTooManyRequests, "slow down")),
			wantCode: 429, wantText: "slow down"},
		{name: "not found", err: fmt.Errorf("no lorry %q: %w", "a/b", statedb.ErrNotFound), wantCode: 404, wantText: `no lorry "a/b"`},
		{name: "conflict", err: fmt.Errorf("job 3 is running: %w", statedb.ErrConflict), wantCode: 409, wantText: "job 3 is running"},
		{name: "invalid", err: fmt.Errorf("lorry state %q: %w", "x", statedb.ErrInvalid), wantCode: 400, wantText: `lorry state "x"`},
		{name: "bad configuration", err: fmt.Errorf("lorry-controller.conf: %w", confgit.ErrBadConf), wantCode: 400,
			wantText: "lorry-controller.conf: " + confgit.ErrBadConf.Error()},
		{name: "unknown", err: errors.New("open /secret/path: permission denied"), wantCode: 500, wantText: "internal error"},
		{name: "database unavailable", err: fmt.Errorf("read lorry: %w: dial unix /secret/socket: connection refused", statedb.ErrUnavailable),
			wantCode: 503, wantText: "state database unavailable; try again"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusOf(tc.err); got != tc.wantCode {
				t.Errorf("statusOf = %d; want %d", got, tc.wantCode)
			}
			if got := errorText(tc.err); got != tc.wantText {
				t.Errorf("errorText = %q; want %q", got, tc.wantText)
			}
		})
	}
}

// The API, its pages and its buttons answer an error alike: the same code
// and text, and a 500 logged with its detail but not shown.
func TestAPIPagesAndButtonsAnswerErrorsAlike(t *testing.T) {
	logs := &logRecords{}
	ts := newTestServer(t, func(s *Server) { s.Log = slog.New(logs) })
	for _, err := range []error{
		fmt.Errorf("no job 7: %w", statedb.ErrNotFound),
		errorf(http.StatusBadRequest, "job_id %q is not a number", "x"),
		errors.New("disk on fire"),
		fmt.Errorf("read job 7: %w: server on fire", statedb.ErrUnavailable),
	} {
		t.Run(err.Error(), func(t *testing.T) {
			before := len(logs.find("request failed"))
			fail := func(http.ResponseWriter, *http.Request) error { return err }
			wantCode, wantText := statusOf(err), errorText(err)

			w := httptest.NewRecorder()
			ts.handle(fail)(w, httptest.NewRequest("GET", "/1.0/job/7", nil))
			var e struct{ Error string }
			if jerr := json.Unmarshal(w.Body.Bytes(), &e); jerr != nil || w.Code != wantCode || e.Error != wantText {
				t.Errorf("API answered %d %q (%v); want %d %q", w.Code, w.Body, jerr, wantCode, wantText)
			}

			w = httptest.NewRecorder()
			ts.page(fail)(w, httptest.NewRequest("GET", "/1.0/job-html/7", nil))
			if page := w.Body.String(); w.Code != wantCode || !strings.Contains(page, htmlText(wantText)) ||
				strings.Contains(page, "on fire") && wantCode >= 500 {
				t.Errorf("page answered %d %q; want %d saying %q", w.Code, page, wantCode, wantText)
			}

			w = httptest.NewRecorder()
			ts.action(fail, func(*http.Request, []byte) string { return "done" })(w,
				httptest.NewRequest("POST", "/1.0/stop-job-html", nil))
			next := &http.Request{Header: http.Header{"Cookie": {strings.Split(w.Header().Get("Set-Cookie"), ";")[0]}}}
			if f := takeFlash(httptest.NewRecorder(), next); w.Code != http.StatusSeeOther || f == nil || !f.Bad || f.Text != wantText {
				t.Errorf("button answered %d with flash %+v; want 303 with a bad flash %q", w.Code, f, wantText)
			}

			logged := logs.find("request failed")[before:]
			if wantCode < 500 && len(logged) > 0 {
				t.Errorf("a %d was logged: %v", wantCode, logged)
			}
			if wantCode >= 500 {
				if len(logged) != 3 {
					t.Fatalf("a 500 from the API, a page and a button logged %v; want 3 lines", logged)
				}
				for _, l := range logged {
					if l["err"] != err.Error() || l["level"] != "ERROR" {
						t.Errorf("logged %v; want an error with err %q", l, err)
					}
				}
			}
		})
	}
}

// panicConfig is a CONFGIT whose reading panics.
type panicConfig struct{}

func (panicConfig) Read(context.Context) (*confgit.Config, error) { panic("config reader broke") }

// A handler's panic is answered as any other 500, in JSON, and logged
// through the server's logger with what was asked and where it panicked.
func TestPanicAnsweredAsJSONAndLogged(t *testing.T) {
	logs := &logRecords{}
	ts := newTestServer(t, func(s *Server) { s.Log = slog.New(logs) })
	ts.Config = panicConfig{}
	code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{})
	if code != http.StatusInternalServerError || m["error"] != "internal error" {
		t.Errorf("read-configuration that panics = %d %v; want 500 {\"error\": \"internal error\"}", code, m)
	}
	logged := logs.find("handler panicked")
	if len(logged) != 1 {
		t.Fatalf("logged %v; want one panic", logged)
	}
	l := logged[0]
	if l["level"] != "ERROR" || l["method"] != "POST" || l["path"] != "/1.0/read-configuration" ||
		l["panic"] != "config reader broke" || !strings.Contains(l["stack"], "panicConfig.Read") {
		t.Errorf("logged %v; want an error with method, path, panic and a stack through panicConfig.Read", l)
	}
	// The WEBAPP goes on answering.
	if code, _ := ts.call(t, "GET", "/1.0/status", nil); code != http.StatusOK {
		t.Errorf("status after a panic = %d; want 200", code)
	}
}

// http.ErrAbortHandler is net/http's own way to abort a response: it goes
// on up, unlogged.
func TestAbortHandlerPanicGoesOn(t *testing.T) {
	logs := &logRecords{}
	s := &Server{App: &control.App{Log: slog.New(logs)}}
	h := s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	w := httptest.NewRecorder()
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v; want http.ErrAbortHandler", v)
			}
		}()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/1.0/status", nil))
	}()
	if len(logs.records) != 0 || w.Body.Len() != 0 {
		t.Errorf("an abort logged %d records and answered %q; want neither", len(logs.records), w.Body)
	}
}
