package minion

import (
	"fmt"
	"unicode/utf8"
)

// defaultOutputLimit is the WEBAPP's default --job-output-limit, for a
// WEBAPP that does not say its own in give-me-job.
const defaultOutputLimit = 8 << 20

// markSpace is room left in the tail for the mark of a cut, so that the
// mark and the tail together fit in the tail the WEBAPP keeps, and the
// WEBAPP never drops the mark itself.
const markSpace = 64

// cutMark marks n bytes left out, the way the WEBAPP marks its own cuts.
func cutMark(n int64) []byte {
	return fmt.Appendf(nil, "\n[... %d bytes of output cut ...]\n", n)
}

// output is what the job wrote and the WEBAPP has not yet acknowledged.
//
// It is bounded like the WEBAPP's copy of the job's output: the WEBAPP
// keeps the first half of its limit as the head and the last half as the
// tail, and drops the middle. Output that the WEBAPP would drop is dropped
// here already, with the cut marked, so that a minion cut off from the
// WEBAPP by an outage holds at most about one and a half limits of output,
// however much the job writes.
type output struct {
	// headLeft is how much more output belongs to the head; it is shared
	// by both streams, as the WEBAPP stores them one after the other.
	headLeft int64
	tailCap  int
	stdout   stream
	stderr   stream
}

// stream is one of the job's output streams, not yet delivered. The first
// headEnd bytes of buf belong to the head; after them, cut bytes were
// dropped, and the rest is the tail.
type stream struct {
	buf     []byte
	headEnd int
	cut     int64
}

func newOutput(limit int64) *output {
	if limit <= 0 {
		limit = defaultOutputLimit
	}
	head := limit / 2
	return &output{headLeft: head, tailCap: max(int(limit-head)-markSpace, 1)}
}

// add takes more of the job's output.
func (o *output) add(stdout, stderr []byte) {
	o.stdout.add(stdout, &o.headLeft, o.tailCap)
	o.stderr.add(stderr, &o.headLeft, o.tailCap)
}

func (s *stream) add(data []byte, headLeft *int64, tailCap int) {
	if len(data) == 0 {
		return
	}
	if *headLeft > 0 {
		n := len(data)
		if int64(n) > *headLeft {
			// The head ends at a rune boundary, and nothing more
			// joins it.
			n = runeStartBefore(data, int(*headLeft))
			*headLeft = 0
		} else {
			*headLeft -= int64(n)
		}
		s.buf = append(s.buf, data[:n]...)
		s.headEnd = len(s.buf)
		data = data[n:]
	}
	if len(data) == 0 {
		return
	}
	s.buf = append(s.buf, data...)
	if excess := len(s.buf) - s.headEnd - tailCap; excess > 0 {
		// Drop the oldest of the tail, up to a rune boundary.
		tail := s.buf[s.headEnd:]
		for i := 1; i < utf8.UTFMax && excess < len(tail) && !utf8.RuneStart(tail[excess]); i++ {
			excess++
		}
		s.cut += int64(excess)
		s.buf = append(s.buf[:s.headEnd], tail[excess:]...)
	}
}

// piece is a part of a stream taken to be sent.
type piece struct {
	data     []byte
	consumed int  // bytes of the stream's buffer it covers
	marked   bool // it carries the mark of the stream's cut
}

// update is what one job-update carries.
type update struct {
	stdout, stderr piece
}

// next takes what the next job-update carries: as much as fits in budget
// bytes once form-encoded, stdout first, never splitting a rune. While the
// job runs (final false), a trailing partial rune is held back, since the
// next read completes it. last says whether it is everything.
func (o *output) next(budget int, final bool) (u update, last bool) {
	u.stdout, budget = o.stdout.take(budget, final)
	u.stderr, _ = o.stderr.take(budget, final)
	return u, o.stdout.rest(u.stdout) == 0 && o.stderr.rest(u.stderr) == 0
}

func (s *stream) take(budget int, final bool) (piece, int) {
	end := len(s.buf)
	if !final {
		end = completeRunes(s.buf)
	}
	var p piece
	// The head, then the mark of the cut, then the tail.
	headEnd := min(s.headEnd, end)
	n, used := fitPrefix(s.buf[:headEnd], budget)
	p.data, p.consumed, budget = s.buf[:n], n, budget-used
	if n < headEnd {
		return p, budget
	}
	if s.cut > 0 {
		mark := cutMark(s.cut)
		if encodedLen(mark) > budget {
			return p, budget
		}
		p.data = append(append([]byte(nil), p.data...), mark...)
		p.marked = true
		budget -= encodedLen(mark)
	}
	n, used = fitPrefix(s.buf[headEnd:end], budget)
	if p.marked {
		p.data = append(p.data, s.buf[headEnd:headEnd+n]...)
	} else {
		p.data = s.buf[:headEnd+n]
	}
	p.consumed = headEnd + n
	return p, budget - used
}

// rest is how much of the stream would be left after p.
func (s *stream) rest(p piece) int {
	left := len(s.buf) - p.consumed
	if s.cut > 0 && !p.marked {
		left++
	}
	return left
}

// sent forgets what the WEBAPP acknowledged.
func (o *output) sent(u update) {
	o.stdout.drop(u.stdout)
	o.stderr.drop(u.stderr)
}

func (s *stream) drop(p piece) {
	s.buf = append([]byte(nil), s.buf[p.consumed:]...)
	s.headEnd = max(0, s.headEnd-p.consumed)
	if p.marked {
		s.cut = 0
	}
}

// pending says whether any output is left to send.
func (o *output) pending() bool {
	return len(o.stdout.buf) > 0 || len(o.stderr.buf) > 0 || o.stdout.cut > 0 || o.stderr.cut > 0
}

// encodedLen is the length of b form-encoded: every byte but the ones
// that stand for themselves takes three.
func encodedLen(b []byte) int {
	n := 0
	for _, c := range b {
		n += encodedByteLen(c)
	}
	return n
}

func encodedByteLen(c byte) int {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
		c == '-', c == '_', c == '.', c == '~', c == ' ':
		return 1
	}
	return 3
}

// fitPrefix returns the length of the longest prefix of b that fits in
// budget bytes once form-encoded and does not end inside a rune, and its
// encoded length.
func fitPrefix(b []byte, budget int) (n, used int) {
	for n < len(b) {
		c := encodedByteLen(b[n])
		if used+c > budget {
			break
		}
		used += c
		n++
	}
	if n == len(b) {
		return n, used
	}
	cut := runeStartBefore(b, n)
	for _, c := range b[cut:n] {
		used -= encodedByteLen(c)
	}
	return cut, used
}

// runeStartBefore backs n off to the start of the rune that b[n] is in, so
// that b[:n] ends on a rune boundary. Bytes that are not UTF-8 are never
// held back more than utf8.UTFMax.
func runeStartBefore(b []byte, n int) int {
	if n >= len(b) {
		return len(b)
	}
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return n
}

// completeRunes returns the length of b without a trailing incomplete UTF-8
// sequence. Bytes that are not UTF-8 at all are not held back.
func completeRunes(b []byte) int {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}
