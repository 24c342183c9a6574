package netlimit

import (
	"io"
	"net/http"
	"time"
)

// Bodies makes each request body h reads keep arriving. Each read of it
// must return within timeout, and the body as a whole may take no longer
// than timeout plus one second for every minRate bytes that came (0: no
// such bound). A body that stops, or trickles, fails its read with a
// timeout (os.ErrDeadlineExceeded), and its connection is closed; one
// that arrives steadily may take as long as it needs, however large.
//
// The bounds are the connection's read deadline, set before each read and
// cleared once the body has been read to its end, so that the server's
// own deadlines (the idle timeout) and a response streamed after the body
// are not cut short.
func Bodies(h http.Handler, timeout time.Duration, minRate int64) http.Handler {
	if timeout <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &arriving{ReadCloser: r.Body, rc: http.NewResponseController(w), timeout: timeout, minRate: minRate}
		}
		h.ServeHTTP(w, r)
	})
}

type arriving struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	minRate int64
	start   time.Time // of the first read
	read    int64
	done    bool // read to its end, or no deadline can be set
}

func (a *arriving) Read(p []byte) (int, error) {
	if a.done {
		return a.ReadCloser.Read(p)
	}
	now := time.Now()
	if a.start.IsZero() {
		// Not before: the body may wait for its turn to be read (the
		// budget of bodies), which is no fault of the client's.
		a.start = now
	}
	deadline := now.Add(a.timeout)
	if a.minRate > 0 {
		earned := time.Duration(float64(a.read) / float64(a.minRate) * float64(time.Second))
		if d := a.start.Add(a.timeout + earned); d.Before(deadline) {
			deadline = d
		}
	}
	if err := a.rc.SetReadDeadline(deadline); err != nil {
		// Not a connection of net/http's own (a request made in process).
		a.done = true
	}
	n, err := a.ReadCloser.Read(p)
	a.read += int64(n)
	if err == io.EOF && !a.done {
		a.done = true
		a.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
