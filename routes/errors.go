package routes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"lorrycontroller/confgit"
	"lorrycontroller/statedb"
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
		err := h(w, r)
		if err == nil {
			return
		}
		code, msg := http.StatusInternalServerError, "internal error"
		var he *httpError
		switch {
		case errors.As(err, &he):
			code, msg = he.code, he.msg
		case errors.Is(err, statedb.ErrNotFound):
			code, msg = http.StatusNotFound, sentence(err, statedb.ErrNotFound)
		case errors.Is(err, statedb.ErrConflict):
			code, msg = http.StatusConflict, sentence(err, statedb.ErrConflict)
		case errors.Is(err, statedb.ErrInvalid):
			code, msg = http.StatusBadRequest, sentence(err, statedb.ErrInvalid)
		case errors.Is(err, confgit.ErrBadConf):
			code, msg = http.StatusBadRequest, err.Error()
		}
		if code >= 500 {
			s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		writeJSON(w, code, map[string]string{"error": msg})
	}
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
