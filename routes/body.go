package routes

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"lorrycontroller.dev/lc/spool"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

// Request bodies. Every route but job-update takes a few parameters, and
// is refused a body over smallBody. A job-update body may carry a job's
// output up to maxBody; it is read as a stream, its stdout and stderr
// spooled (see package spool) and the rest collected, so that its memory
// is bounded whatever its size. A body over its route's limit is answered
// 413, so that a minion can split its update and try again.
const (
	smallBody = 64 << 10
	maxBody   = wire.MaxUpdateBody
	// updateMemory bounds what reading one job-update body holds in
	// memory: the read buffer, the parameters, and what each output stream
	// keeps in memory before it spills to a file.
	updateMemory = 320 << 10
	spoolMemory  = 64 << 10
	// bodyBudget bounds the memory of all the bodies being read at once;
	// a request that would go over it waits up to bodyWait for its turn,
	// then is answered 503.
	bodyBudget = 96 << 20
	bodyWait   = 30 * time.Second
	// redactCarry bounds the output held back while looking for the
	// line break that ends a URL's line.
	redactCarry = 64 << 10
)

// limitBodies bounds every request's body before anything reads it: a
// body is stopped at its route's limit as it is read. job-update takes up
// to maxBody, the push hooks hookBodyLimit, every other route smallBody.
// One that says it is over the limit is answered 413 by refuseLargeBodies,
// once the caller is known to be allowed: every route checks the method,
// then the caller, then the body.
//
// Nothing reads a body but readBody and readRaw, which count it against
// the budget first: the form that net/http would parse on its own (up to
// 10 MiB for anyone, signed in or not) is marked parsed and empty, and
// what readBody reads is kept for the request, so that the sign-in, the
// CSRF check, a refusal's way back and the route itself read it once.
func (s *Server) limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := bodyLimit(r)
		if r.Body != nil && r.Body != http.NoBody {
			// w closes the connection once a body passes the limit,
			// rather than reading the rest of it.
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		r.PostForm = url.Values{}
		r.MultipartForm = &multipart.Form{}
		r = r.WithContext(context.WithValue(r.Context(), readOnceKey{}, &readOnce{}))
		next.ServeHTTP(w, r)
	})
}

// bodyLimit is the most that r's body may be.
func bodyLimit(r *http.Request) int64 {
	switch {
	case r.URL.Path == "/1.0/job-update":
		return maxBody
	case strings.HasPrefix(r.URL.Path, "/1.0/hooks/"):
		return hookBodyLimit
	}
	return smallBody
}

// refuseLargeBodies answers 413 at once to a body that says it is over
// its route's limit, before anything is done with it.
func (s *Server) refuseLargeBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if limit := bodyLimit(r); r.ContentLength > limit {
			s.writeError(w, r, tooLarge(limit))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuseBodyTypes answers 415 at once to a body of a type its route does
// not read: a form or JSON, a push hook's JSON only.
func (s *Server) refuseBodyTypes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		hook := strings.HasPrefix(r.URL.Path, "/1.0/hooks/")
		missing := formType
		if hook {
			missing = jsonType
		}
		isJSON, err := bodyType(r, missing)
		if err == nil && hook && !isJSON {
			err = errorf(http.StatusUnsupportedMediaType, "a push hook's body is read as %s only: have the forge send that", jsonType)
		}
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readOnce keeps the parameters that readParams read from a request's
// body, for the next to ask.
type readOnce struct {
	done bool
	p    params
	err  error
}

type readOnceKey struct{}

// formValue is the parameter key of r, read through readParams; "" if
// the body could not be read.
func (s *Server) formValue(r *http.Request, key string) string {
	p, err := s.readParams(r)
	if err != nil {
		return ""
	}
	return p[key]
}

// readRaw reads r's body whole, of at most limit bytes (413 beyond),
// counting it against the budget as it is held.
func (s *Server) readRaw(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	// Read to its end, a body of unknown length grows its buffer up to
	// twice what it holds.
	mem := 2*limit + 4096
	if r.ContentLength >= 0 {
		mem = r.ContentLength + 4096
	}
	release, err := s.bodies().acquire(r.Context(), mem)
	if err != nil {
		return nil, err
	}
	defer release()
	var buf bytes.Buffer
	if r.ContentLength >= 0 {
		buf.Grow(int(r.ContentLength) + 1)
	}
	_, err = buf.ReadFrom(http.MaxBytesReader(nil, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge(limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, errStalled
	case err != nil:
		return nil, errorf(http.StatusBadRequest, "read body: %v", err)
	}
	return buf.Bytes(), nil
}

// streamFields are the job-update parameters that may be large.
var streamFields = wire.StreamFields

// body is a request's parameters: the query's and the body's, the body
// winning. Its stream fields, if it was read with any, are in spools
// that Close frees.
type body struct {
	params    params
	streams   map[string]*spool.Spool
	redactors map[string]*redactor
}

// Close frees the spools.
func (b *body) Close() {
	for _, s := range b.streams {
		s.Close()
	}
}

// sentStream is what was sent as field, with how its bytes map to those
// sent (statedb.SentSource); nil if nothing was sent.
func (b *body) sentStream(field string) statedb.OutputSource {
	sp := b.streams[field]
	if sp == nil {
		return nil
	}
	return sentSpool{sp, b.redactors[field]}
}

// sentSpool is a stream as spooled, its credentials hidden, and the
// redactor that wrote it.
type sentSpool struct {
	*spool.Spool
	r *redactor
}

func (s sentSpool) Sent() int64             { return s.r.in }
func (s sentSpool) Stored(sent int64) int64 { return s.r.stored(sent) }

// readBody reads r's parameters, taking a body of at most limit bytes
// (413 beyond), whose parameters but the streams come to at most small
// bytes (413 beyond), whose memory is counted against the server's budget as
// mem bytes. The streams named are spooled, keeping head and tail bytes
// of each, and redacted on the way.
func (s *Server) readBody(r *http.Request, limit, small, mem int64, streams []string, head, tail int64) (*body, error) {
	b := &body{params: params{}, streams: map[string]*spool.Spool{}}
	for k, v := range r.URL.Query() {
		b.params[k] = v[len(v)-1]
	}
	if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet {
		return b, nil
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	isJSON, err := bodyType(r, formType)
	if err != nil {
		return nil, err
	}
	if r.ContentLength >= 0 {
		mem = min(mem, r.ContentLength+4096)
	}
	release, err := s.bodies().acquire(r.Context(), mem)
	if err != nil {
		return nil, err
	}
	defer release()
	br := bodyReaders.Get().(*bodyReader)
	br.Reset(http.MaxBytesReader(nil, r.Body, limit))
	defer func() {
		br.Reset(nil)
		bodyReaders.Put(br)
	}()
	collected := &smallBuffer{left: int(small), limit: small}
	redactors := map[string]*redactor{}
	b.redactors = redactors
	field := func(name string) io.Writer {
		for _, f := range streams {
			if f == name {
				if old := b.streams[name]; old != nil {
					old.Close() // the last one sent wins, as for any parameter
				}
				sp := spool.New(head, tail, spoolMemory, "")
				b.streams[name] = sp
				redactors[name] = &redactor{w: sp}
				return redactors[name]
			}
		}
		return nil
	}
	sent := params{}
	if isJSON {
		err = decodeJSON(br, collected, field, sent)
	} else {
		err = decodeForm(br, collected, field, sent)
	}
	// The body is read: what it said is kept where net/http would keep
	// it, for those that look there (the buttons' back).
	r.PostForm = url.Values{}
	for k, v := range sent {
		b.params[k] = v
		r.PostForm.Set(k, v)
	}
	for _, rd := range redactors {
		err = errors.Join(err, rd.Close())
	}
	if err != nil {
		b.Close()
		var mbe *http.MaxBytesError
		var he *httpError
		switch {
		case errors.As(err, &mbe):
			return nil, tooLarge(limit)
		case errors.As(err, &he):
			return nil, he
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, errStalled
		}
		return nil, errorf(http.StatusBadRequest, "read body: %v", err)
	}
	return b, nil
}

// The types of body the routes read.
const (
	formType = "application/x-www-form-urlencoded"
	jsonType = "application/json"
)

// bodyType says whether r's body is JSON rather than a form, by its
// Content-Type; one without is taken as missing says. Any other type,
// text/plain or a multipart form among them, is answered 415: read as a
// form, its parameters would be garbage or missing.
func bodyType(r *http.Request, missing string) (isJSON bool, err error) {
	ct := r.Header.Get("Content-Type")
	mt := missing
	if ct != "" {
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			mt = ct
		}
	}
	switch mt {
	case jsonType:
		return true, nil
	case formType:
		return false, nil
	}
	if missing == jsonType {
		return false, errorf(http.StatusUnsupportedMediaType, "a body of type %q is not read here: send %s", ct, jsonType)
	}
	return false, errorf(http.StatusUnsupportedMediaType, "a body of type %q is not read here: send %s or %s", ct, formType, jsonType)
}

// errStalled answers a body that stopped arriving (see
// netlimit.Bodies).
var errStalled = errorf(http.StatusRequestTimeout, "the request body stopped arriving, or came too slowly")

func tooLarge(limit int64) error {
	return errorf(http.StatusRequestEntityTooLarge, "request body larger than %d bytes", limit)
}
