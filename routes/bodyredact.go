package routes

import (
	"bytes"
	"fmt"
	"io"

	"lorrycontroller.dev/lc/redact"
)

// redactor hides credentials in the URLs of output streamed through it
// to w. A password may hold white space but no line break, and
// redact.URLs reads a line at a time, so output is redacted up to its
// last line break and the rest held for the next write; a line longer
// than redactCarry bytes is redacted as it is.
type redactor struct {
	w     io.Writer
	carry []byte
}

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
