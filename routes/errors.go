package routes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/statedb"
)

// httpError is an error with the status code to answer it with. Its text
// is shown to the client, so it must not carry internals.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) error {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// handlerFunc is a handler that returns its failure instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts h to http.HandlerFunc: it maps h's error to a status code
// and a JSON {"error": ...} body. Unknown errors are logged in full and
// answered with a bare 500.
func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// writeError answers err as handle does.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := s.statusLogged(r, err)
	challenge(w, code)
	writeJSON(w, code, map[string]string{"error": errorText(err)})
}

// challenge gives a 401 the WWW-Authenticate header that RFC 9110 asks
// for, a bearer token's, unless the route said another.
func challenge(w http.ResponseWriter, code int) {
	if code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lorry-controller"`)
	}
}

// statusLogged is statusOf(err), having logged err in full if it is a 500:
// its answer says nothing of it.
func (s *Server) statusLogged(r *http.Request, err error) int {
	code := statusOf(err)
	if code >= 500 {
		s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	return code
}

// statusOf is the status code that answers err.
func statusOf(err error) int {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.code
	case errors.Is(err, statedb.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, statedb.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, statedb.ErrInvalid), errors.Is(err, confgit.ErrBadConf):
		return http.StatusBadRequest
	case errors.Is(err, statedb.ErrUnavailable):
		// The state database could not be reached, not a fault of the
		// WEBAPP's: the same request may be served in a moment.
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// errorText is what the client is told of err: nothing of an unknown
// error, which may carry internals.
func errorText(err error) string {
	var he *httpError
	if errors.As(err, &he) {
		return he.msg
	}
	if errors.Is(err, statedb.ErrUnavailable) {
		return unavailableError
	}
	if statusOf(err) >= 500 {
		return internalError
	}
	for _, sentinel := range []error{statedb.ErrNotFound, statedb.ErrConflict, statedb.ErrInvalid} {
		if errors.Is(err, sentinel) {
			return sentence(err, sentinel)
		}
	}
	return err.Error()
}

// internalError is all a 500 says.
const internalError = "internal error"

// unavailableError is all a 503 for the state database says.
const unavailableError = "state database unavailable; try again"

// recoverPanics answers a handler's panic as any other 500, with the JSON
// error, and logs it with its stack. It lets http.ErrAbortHandler go on
// up: net/http takes that panic to abort the response without a word.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, isErr := v.(error); isErr && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			stack := string(debug.Stack())
			// A panic raised again from another goroutine's carries the
			// stack where it was first raised.
			if p, ok := v.(interface{ PanicStack() string }); ok {
				stack = p.PanicStack() + "\nraised again in:\n" + stack
			}
			s.Log.Error("handler panicked", "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", stack)
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": internalError})
		}()
		next.ServeHTTP(w, r)
	})
}

// sentence drops the sentinel's own text from err's message: the status
// code already says "not found" or "conflict".
func sentence(err, sentinel error) string {
	return strings.TrimSuffix(err.Error(), ": "+sentinel.Error())
}

func writeJSON(w http.ResponseWriter, code int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Answers are read by people and scripts, not embedded in HTML.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, err := w.Write(buf.Bytes())
	return err
}

func ok(w http.ResponseWriter, v any) error { return writeJSON(w, http.StatusOK, v) }
