package routes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/spool"
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
	// whitespace that ends a URL.
	redactCarry = 64 << 10
)

// limitBodies bounds every request's body before anything reads it:
// a body that says it is over its route's limit is answered 413 at once,
// and one that does not say its length is stopped at the limit as it is
// read. job-update takes up to maxBody, the push hooks hookBodyLimit,
// every other route smallBody.
//
// Nothing reads a body but readBody and readRaw, which count it against
// the budget first: the form that net/http would parse on its own (up to
// 10 MiB for anyone, signed in or not) is marked parsed and empty, and
// what readBody reads is kept for the request, so that the sign-in, the
// CSRF check, a refusal's way back and the route itself read it once.
func (s *Server) limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := int64(smallBody)
		switch {
		case r.URL.Path == "/1.0/job-update":
			limit = maxBody
		case strings.HasPrefix(r.URL.Path, "/1.0/hooks/"):
			limit = hookBodyLimit
		}
		if r.ContentLength > limit {
			s.writeError(w, r, tooLarge(limit))
			return
		}
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
	params  params
	streams map[string]*spool.Spool
}

// Close frees the spools.
func (b *body) Close() {
	for _, s := range b.streams {
		s.Close()
	}
}

// stream is what was sent as field, nil if nothing was.
func (b *body) stream(field string) *spool.Spool { return b.streams[field] }

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
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	sent := params{}
	if ct == "application/json" {
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

// errStalled answers a body that stopped arriving (see
// netlimit.Bodies).
var errStalled = errorf(http.StatusRequestTimeout, "the request body stopped arriving, or came too slowly")

func tooLarge(limit int64) error {
	return errorf(http.StatusRequestEntityTooLarge, "request body larger than %d bytes", limit)
}

// bodies is the server's budget of memory for request bodies.
func (s *Server) bodies() *budget {
	s.bodiesOnce.Do(func() { s.bodyBudget = newBudget(bodyBudget) })
	return s.bodyBudget
}

// budget is a weighted semaphore, in units of budgetUnit bytes, served in
// turn: a large request waits for its share without being overtaken.
type budget struct {
	turn   chan struct{}
	tokens chan struct{}
}

const budgetUnit = 4 << 10

func newBudget(bytes int64) *budget {
	b := &budget{turn: make(chan struct{}, 1), tokens: make(chan struct{}, bytes/budgetUnit)}
	for range cap(b.tokens) {
		b.tokens <- struct{}{}
	}
	return b
}

// acquire takes bytes of the budget, waiting up to bodyWait, and returns
// the function that gives them back.
func (b *budget) acquire(ctx context.Context, bytes int64) (func(), error) {
	n := int(min(max(bytes/budgetUnit, 1), int64(cap(b.tokens))))
	ctx, cancel := context.WithTimeout(ctx, bodyWait)
	defer cancel()
	busy := errorf(http.StatusServiceUnavailable, "too many request bodies are being read; try again")
	select {
	case b.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, busy
	}
	defer func() { <-b.turn }()
	for i := range n {
		select {
		case <-b.tokens:
		case <-ctx.Done():
			b.release(i)
			return nil, busy
		}
	}
	return func() { b.release(n) }, nil
}

func (b *budget) release(n int) {
	for range n {
		b.tokens <- struct{}{}
	}
}

// smallBuffer collects the small parameters of a body, failing with 413
// once they pass their share.
type smallBuffer struct {
	bytes.Buffer
	left  int
	limit int64
}

func (s *smallBuffer) Write(p []byte) (int, error) {
	if s.left -= len(p); s.left < 0 {
		return 0, tooLarge(s.limit)
	}
	return s.Buffer.Write(p)
}

// take returns what was collected since the last take.
func (s *smallBuffer) take() string {
	v := s.String()
	s.Reset()
	return v
}

// bodyReader reads a body through its buffer, and has a second one for
// the decoded bytes of a value on their way to its writer. They are
// pooled (bodyReaders): the job protocol's bodies are a few dozen bytes,
// and buffers of their own would be most of what a request allocates.
type bodyReader struct {
	*bufio.Reader
	out []byte
}

var bodyReaders = sync.Pool{New: func() any {
	return &bodyReader{Reader: bufio.NewReaderSize(nil, 32<<10), out: make([]byte, 0, 4<<10)}
}}

// decodeForm reads a form-encoded body into p, writing the value of each
// field that field gives a writer for to that writer instead.
func decodeForm(br *bodyReader, small *smallBuffer, field func(string) io.Writer, p params) error {
	for {
		stop, err := formPart(br, small, true)
		if err != nil {
			return err
		}
		key := small.take()
		if stop != '=' {
			if key != "" {
				p[key] = ""
			}
			if stop == 0 {
				return nil
			}
			continue
		}
		w := field(key)
		if w == nil {
			w = small
		}
		if stop, err = formPart(br, w, false); err != nil {
			return err
		}
		if w == small {
			p[key] = small.take()
		}
		if stop == 0 {
			return nil
		}
	}
}

// formPart copies the percent-decoded bytes of br up to the next '&' (or
// '=', if eq) or the end to w, and answers the byte it stopped at, 0 at
// the end.
func formPart(br *bodyReader, w io.Writer, eq bool) (byte, error) {
	out := br.out[:0]
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		_, err := w.Write(out)
		out = out[:0]
		return err
	}
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return 0, flush()
		}
		if err != nil {
			return 0, err
		}
		switch {
		case c == '&', eq && c == '=':
			return c, flush()
		case c == '+':
			c = ' '
		case c == '%':
			hi, err1 := br.ReadByte()
			lo, err2 := br.ReadByte()
			if err := errors.Join(err1, err2); err != nil && !errors.Is(err, io.EOF) {
				return 0, err
			}
			h, ok1 := unhex(hi)
			l, ok2 := unhex(lo)
			if err1 != nil || err2 != nil || !ok1 || !ok2 {
				return 0, errorf(http.StatusBadRequest, "form body: bad %%-escape")
			}
			c = h<<4 | l
		}
		out = append(out, c)
		if len(out) == cap(out) {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// decodeJSON reads a JSON object of strings, numbers, booleans and nulls
// into p, as decodeForm does a form. An empty body is no parameters.
func decodeJSON(br *bodyReader, small *smallBuffer, field func(string) io.Writer, p params) error {
	bad := func(format string, args ...any) error {
		return errorf(http.StatusBadRequest, "JSON body: "+format, args...)
	}
	c, err := skipSpace(br.Reader)
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	if c != '{' {
		return bad("not an object")
	}
	c, err = skipSpace(br.Reader)
	for err == nil && c != '}' {
		if c != '"' {
			return bad("want a key, not %q", c)
		}
		if err := jsonString(br, small); err != nil {
			return err
		}
		key := small.take()
		if c, err = skipSpace(br.Reader); err != nil || c != ':' {
			return bad("want ':' after %q", key)
		}
		if c, err = skipSpace(br.Reader); err != nil {
			break
		}
		switch c {
		case '"':
			w := field(key)
			if w == nil {
				w = small
			}
			if err := jsonString(br, w); err != nil {
				return err
			}
			if w == small {
				p[key] = small.take()
			}
		case '{', '[':
			return bad("%s must be a string or number", key)
		default:
			lit := []byte{c}
			for len(lit) <= 64 {
				c, err := br.ReadByte()
				if err != nil || !bytes.ContainsRune([]byte("+-.0123456789eEaflnrstu"), rune(c)) {
					if err == nil {
						br.UnreadByte()
					}
					break
				}
				lit = append(lit, c)
			}
			switch v := string(lit); {
			case v == "null":
				p[key] = ""
			case v == "true", v == "false":
				p[key] = v
			case (lit[0] == '-' || '0' <= lit[0] && lit[0] <= '9') && json.Valid(lit):
				p[key] = v
			default:
				return bad("%s: %q is no value", key, v)
			}
		}
		if c, err = skipSpace(br.Reader); err != nil {
			break
		}
		switch c {
		case ',':
			c, err = skipSpace(br.Reader)
		case '}':
		default:
			return bad("want ',' or '}', not %q", c)
		}
	}
	if err == io.EOF {
		return bad("unexpected end")
	}
	if err != nil {
		return err
	}
	if c, err := skipSpace(br.Reader); err != io.EOF {
		if err != nil {
			return err
		}
		return bad("%q after the object", c)
	}
	return nil
}

func skipSpace(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, nil
	}
}

// jsonString copies the decoded JSON string whose opening quote was read
// to w.
func jsonString(br *bodyReader, w io.Writer) error {
	out := br.out[:0]
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		_, err := w.Write(out)
		out = out[:0]
		return err
	}
	end := func(err error) error {
		if err == io.EOF {
			return errorf(http.StatusBadRequest, "JSON body: unexpected end in a string")
		}
		return err
	}
	for {
		c, err := br.ReadByte()
		if err != nil {
			return end(err)
		}
		switch {
		case c == '"':
			return flush()
		case c < 0x20:
			return errorf(http.StatusBadRequest, "JSON body: control character in a string")
		case c == '\\':
			e, err := br.ReadByte()
			if err != nil {
				return end(err)
			}
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, err := hex4(br.Reader)
				if err != nil {
					return end(err)
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if next, _ := br.Peek(2); string(next) == `\u` {
						br.Discard(2)
						if r2, err = hex4(br.Reader); err != nil {
							return end(err)
						}
					}
					r = utf16.DecodeRune(r, r2)
				}
				out = utf8.AppendRune(out, r)
			default:
				return errorf(http.StatusBadRequest, "JSON body: bad escape \\%c", e)
			}
		default:
			out = append(out, c)
		}
		if len(out) >= cap(out)-8 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

func hex4(br *bufio.Reader) (rune, error) {
	var r rune
	for range 4 {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		v, ok := unhex(c)
		if !ok {
			return 0, errorf(http.StatusBadRequest, "JSON body: bad \\u escape")
		}
		r = r<<4 | rune(v)
	}
	return r, nil
}

// redactor hides credentials in the URLs of output streamed through it
// to w. A URL never spans whitespace, so output is redacted up to its
// last whitespace and the rest held for the next write; a run of more
// than redactCarry bytes without whitespace is redacted as it is.
type redactor struct {
	w     io.Writer
	carry []byte
}

func (r *redactor) Write(p []byte) (int, error) {
	r.carry = append(r.carry, p...)
	cut := bytes.LastIndexAny(r.carry, " \t\n\f\r") + 1
	if cut == 0 {
		if len(r.carry) <= redactCarry {
			return len(p), nil
		}
		cut = len(r.carry)
	}
	if err := r.emit(cut); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (r *redactor) emit(n int) error {
	if n == 0 {
		return nil
	}
	var err error
	if bytes.IndexByte(r.carry[:n], '@') >= 0 {
		_, err = io.WriteString(r.w, redact.URLs(string(r.carry[:n])))
	} else {
		// No "@", so no credentials: most output, and quicker to tell
		// than to redact.
		_, err = r.w.Write(r.carry[:n])
	}
	r.carry = append(r.carry[:0], r.carry[n:]...)
	if err != nil {
		return fmt.Errorf("spool output: %w", err)
	}
	return nil
}

// Close writes what is held.
func (r *redactor) Close() error { return r.emit(len(r.carry)) }
