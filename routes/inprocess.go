package routes

import (
	"bytes"
	"context"
	"net/http"
	"strings"
)

// maxAnswer is how much of an answer ServeInProcess keeps for messages.
const maxAnswer = 2048

// ServeInProcess makes a request to h, the WEBAPP's own routes, without a
// network round trip, as a caller who may do everything (InProcess), and
// returns the status code and the start of the body. The watchdog's health
// check goes through it, so that it checks what a caller over HTTP meets.
func ServeInProcess(ctx context.Context, h http.Handler, method, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(InProcess(ctx), method, path, nil)
	if err != nil {
		return 0, "", err
	}
	req.RemoteAddr = "in-process"
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return rec.code, strings.TrimSpace(rec.body.String()), nil
}

// recorder is the response writer of ServeInProcess.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if room := maxAnswer - r.body.Len(); room > 0 {
		r.body.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}
