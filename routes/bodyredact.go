package routes

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"lorrycontroller.dev/lc/redact"
)

// redactor hides credentials in the URLs of output streamed through it
// to w. A password may hold white space but no line break, and
// redact.URLs reads a line at a time, so output is redacted up to its
// last line break and the rest held for the next write; a line longer
// than redactCarry bytes is redacted as it is.
//
// It keeps how the bytes it wrote map to those it was given (stored), so
// that a report sent again is stored from where the first one ended.
type redactor struct {
	w     io.Writer
	carry []byte
	// in and out count the bytes given and written; changes are the
	// lines that redaction changed, in order.
	in, out int64
	changes []change
}

// change is a line that redaction changed: inAt bytes
// given and outAt written before it, inLen given and outLen written.
type change struct {
	inAt, outAt, inLen, outLen int64
}

// maxChanges bounds the changes a redactor keeps; past it, the last one
// grows to cover the next.
const maxChanges = 4096

func (r *redactor) Write(p []byte) (int, error) {
	r.carry = append(r.carry, p...)
	cut := bytes.LastIndexAny(r.carry, "\n\r") + 1
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
		_, err = io.WriteString(r.w, r.redactLines(r.carry[:n]))
	} else {
		// No "@", so no credentials: most output, and quicker to tell
		// than to redact.
		_, err = r.w.Write(r.carry[:n])
		r.in += int64(n)
		r.out += int64(n)
	}
	r.carry = append(r.carry[:0], r.carry[n:]...)
	if err != nil {
		return fmt.Errorf("spool output: %w", err)
	}
	return nil
}

// Close writes what is held.
func (r *redactor) Close() error { return r.emit(len(r.carry)) }

// redactLines is data redacted one line, with its line break, at a
// time, as redact.URLs reads, so that the lines that redaction changed
// are known.
func (r *redactor) redactLines(data []byte) string {
	var b strings.Builder
	for len(data) > 0 {
		n := bytes.IndexAny(data, "\n\r") + 1
		if n == 0 {
			n = len(data)
		}
		line := string(data[:n])
		red := line
		if strings.IndexByte(line, '@') >= 0 {
			red = redact.URLs(line)
		}
		if red != line {
			c := change{inAt: r.in, outAt: r.out, inLen: int64(n), outLen: int64(len(red))}
			if k := len(r.changes); k == maxChanges {
				last := &r.changes[k-1]
				last.inLen, last.outLen = c.inAt+c.inLen-last.inAt, c.outAt+c.outLen-last.outAt
			} else {
				r.changes = append(r.changes, c)
			}
		}
		b.WriteString(red)
		r.in += int64(n)
		r.out += int64(len(red))
		data = data[n:]
	}
	return b.String()
}

// stored is how many of the bytes written the first n given became. A
// line that redaction changed is all or nothing: n inside it stops at its
// start, so that what follows n is stored whole, its credentials hidden,
// even if the start of the line was stored before.
func (r *redactor) stored(n int64) int64 {
	shift := int64(0)
	for _, c := range r.changes {
		if n < c.inAt+c.inLen {
			if n > c.inAt {
				return c.outAt
			}
			break
		}
		shift = c.outAt + c.outLen - c.inAt - c.inLen
	}
	return n + shift
}
