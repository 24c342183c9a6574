package routes

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

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
