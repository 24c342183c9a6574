package statedb

import "bytes"

// maxCarry bounds the line held back from a job's stored output while a
// carriage return may still rewrite it. A longer one is stored as it is.
const maxCarry = 4 << 10

// foldCR keeps, of each line of output that carriage returns rewrite (as
// git and other tools print their progress), only its last state, as a
// terminal would end up showing it. "\r\n" ends a line like "\n", and a
// "\r" that nothing follows yet is kept in case a "\n" does.
//
// carry is what an earlier call held back: the line being written, once a
// "\r" has been seen in it. foldCR returns what can be stored, and what to
// hold back until more output (or the job's end) says how the line ends.
// A line with no "\r" so far is stored as it comes, so that a page
// following a running job shows it.
func foldCR(carry, data []byte) (out, rest []byte) {
	if len(carry) == 0 && bytes.IndexByte(data, '\r') < 0 {
		return data, nil
	}
	out = make([]byte, 0, len(data))
	// line is the line being written, from its last rewrite on; held says
	// whether it has a "\r" and so must not be stored until it ends.
	line := append(make([]byte, 0, len(carry)+64), carry...)
	held := len(carry) > 0
	for _, c := range data {
		n := len(line)
		cr := n > 0 && line[n-1] == '\r'
		switch {
		case c == '\n':
			out = append(append(out, line...), '\n')
			line, held = line[:0], false
		case cr && c == '\r':
			// A second "\r" moves nowhere.
		case cr:
			line = append(line[:0], c)
		default:
			line = append(line, c)
			held = held || c == '\r'
		}
	}
	switch {
	case !held:
		out = append(out, line...)
	case len(line) > maxCarry:
		// Too long to hold: stored up to a "\r" that may yet end it.
		n := len(line)
		if line[n-1] == '\r' {
			out, rest = append(out, line[:n-1]...), []byte{'\r'}
		} else {
			out = append(out, line...)
		}
	default:
		rest = line
	}
	return out, rest
}

// finishCR is what is left of carry once the output has ended: its line as
// last written, without a "\r" that nothing followed.
func finishCR(carry []byte) []byte {
	return bytes.TrimSuffix(carry, []byte{'\r'})
}
