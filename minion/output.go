package minion

import (
	"bytes"
	"unicode/utf8"

	"lorrycontroller.dev/lc/wire"
)

// output is what the job wrote and the WEBAPP has not yet acknowledged.
//
// It is bounded like the WEBAPP's copy of the job's output: the WEBAPP
// keeps the first half of its limit as the head and the last half as the
// tail, and drops the middle. Output that the WEBAPP would drop is dropped
// here already, and the WEBAPP is told how much was cut (cut_bytes of
// job-update), so that a minion cut off from the WEBAPP by an outage holds
// at most about one and a half limits of output, however much the job
// writes, and the job's page counts every byte cut.
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
	// sent is how much of the stream the WEBAPP has acknowledged,
	// delivered or cut: where buf starts in it.
	sent int64
	// lost is how much of the stream before buf the WEBAPP said it does
	// not have, which the minion no longer has either: it is reported
	// as cut with the next update.
	lost int64
}

func newOutput(limit int64) *output {
	if limit <= 0 {
		// A WEBAPP that does not say its own limit keeps the default.
		limit = wire.DefaultOutputLimit
	}
	head := limit / 2
	// Room is left in the tail for the mark the WEBAPP puts where output
	// was cut, so that the mark and the tail together fit in the tail it
	// keeps.
	return &output{headLeft: head, tailCap: max(int(limit-head)-wire.MaxCutMark, 1)}
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
	consumed int   // bytes of the stream's buffer it covers
	cut      int64 // bytes of the stream cut just before data; 0 for none
	lost     int64 // bytes the WEBAPP lost before the cut, told as cut too
	// offset is where data starts in the stream, for the WEBAPP to
	// store only what it does not have of a report sent again.
	offset int64
}

// update is what one job-update carries. At most one of its pieces has a
// cut, and then the other is empty, since the WEBAPP is told of one cut an
// update, before the update's output; and no cut goes before the head is
// all sent, since what follows a cut is tail to the WEBAPP.
type update struct {
	stdout, stderr piece
}

// cut is how many bytes the WEBAPP is told were cut before u's output.
func (u update) cut() int64 {
	return u.stdout.cut + u.stdout.lost + u.stderr.cut + u.stderr.lost
}

// next takes what the next job-update carries: as much as fits in budget
// bytes once form-encoded, stdout first, never splitting a rune, and
// splitting a line only when it is longer than budget. While the job runs
// (final false), a trailing incomplete line is held back (ready), since a
// later read completes it. last says whether it is everything.
func (o *output) next(budget int, final bool) (u update, last bool) {
	headSent := o.stdout.headEnd == 0 && o.stderr.headEnd == 0
	switch {
	case headSent && o.stdout.atCut():
		u.stdout, _ = o.stdout.take(budget, budget, final, true)
	case headSent && o.stderr.atCut():
		u.stderr, _ = o.stderr.take(budget, budget, final, true)
	default:
		var left int
		u.stdout, left = o.stdout.take(budget, budget, final, false)
		u.stderr, _ = o.stderr.take(left, budget, final, false)
	}
	o.stdout.place(&u.stdout)
	o.stderr.place(&u.stderr)
	return u, o.stdout.rest(u.stdout) == 0 && o.stderr.rest(u.stderr) == 0
}

// place sets where p starts in the stream, after what the WEBAPP lost and
// p's cut, which p reports.
func (s *stream) place(p *piece) {
	p.lost = s.lost
	p.offset = s.sent + s.lost + p.cut
}

// atCut says whether what the stream sends next starts after a cut.
func (s *stream) atCut() bool {
	return s.cut > 0 && s.headEnd == 0
}

// maxHeldLine bounds the incomplete line a running job's update holds
// back: the WEBAPP redacts output a line at a time within each update, and
// holds no more than this of a line either, so a longer line is cut
// wherever it has got to.
const maxHeldLine = 64 << 10

// ready is how much of the start of buf the stream may send now: while
// the job runs (final false), whole lines, ending in "\n" or "\r", and
// no trailing partial rune. The WEBAPP redacts each update on its own, a
// line at a time, so a line split across two updates would show each
// half of a credential in it. The head before a cut is sent whole, since
// nothing joins it.
func (s *stream) ready(final bool) int {
	end := len(s.buf)
	if !final {
		end = completeRunes(s.buf)
	}
	switch {
	case s.cut > 0 && s.headEnd > 0:
		return min(s.headEnd, end)
	case final:
		return end
	}
	return lineEnd(s.buf[:end])
}

// lineEnd is the length of b up to its last line break, or all of b when
// what follows that break is longer than maxHeldLine.
func lineEnd(b []byte) int {
	n := bytes.LastIndexAny(b, "\n\r") + 1
	if len(b)-n > maxHeldLine {
		return len(b)
	}
	return n
}

// take takes the next piece of the stream: without a cut, all there is
// ready; with one, the head before it, else, if withCut, the cut and what
// follows it, else nothing. full is the budget of the whole update.
func (s *stream) take(budget, full int, final, withCut bool) (piece, int) {
	end := s.ready(final)
	var p piece
	switch {
	case s.cut == 0, s.headEnd > 0:
	case withCut:
		p.cut = s.cut
	default:
		return p, budget
	}
	n, used := fitLines(s.buf[:end], budget, full)
	p.data, p.consumed = s.buf[:n], n
	return p, budget - used
}

// rest is how much of the stream would be left after p.
func (s *stream) rest(p piece) int {
	left := len(s.buf) - p.consumed
	if s.cut > 0 && p.cut == 0 {
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
	s.sent = p.offset + int64(p.consumed)
	s.lost -= p.lost
	s.buf = append([]byte(nil), s.buf[p.consumed:]...)
	s.headEnd = max(0, s.headEnd-p.consumed)
	if p.cut > 0 {
		s.cut = 0
	}
}

// rewind takes the WEBAPP's word that it has only stdout and stderr bytes
// of the streams: what it lacks of what the minion thought delivered is
// gone, and is reported as cut.
func (o *output) rewind(stdout, stderr int64) {
	o.stdout.rewind(stdout)
	o.stderr.rewind(stderr)
}

func (s *stream) rewind(have int64) {
	if have < s.sent {
		s.lost += s.sent - have
		s.sent = have
	}
}

// pending says whether any output is left to send.
func (o *output) pending() bool {
	return len(o.stdout.buf) > 0 || len(o.stderr.buf) > 0 || o.stdout.cut > 0 || o.stderr.cut > 0 ||
		o.stdout.lost > 0 || o.stderr.lost > 0
}

// backlog says whether output is left that an update of the running job
// would carry now, rather than hold back until more comes.
func (o *output) backlog() bool {
	return o.stdout.backlog() || o.stderr.backlog()
}

func (s *stream) backlog() bool {
	return s.cut > 0 || s.lost > 0 || s.ready(false) > 0
}

// encodedByteLen is the length of c form-encoded: every byte but the ones
// that stand for themselves takes three.
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

// fitLines is fitPrefix ending at the last line break of the prefix when
// b does not fit whole, so that the WEBAPP sees whole lines in each update.
// A line that does not fit in what is left of an update waits for the
// next; one longer than full, a whole update's budget, is cut where it
// stops.
func fitLines(b []byte, budget, full int) (n, used int) {
	n, used = fitPrefix(b, budget)
	if n == len(b) {
		return n, used
	}
	k := bytes.LastIndexAny(b[:n], "\n\r") + 1
	if k == 0 {
		if budget < full {
			return 0, 0
		}
		return n, used
	}
	for _, c := range b[k:n] {
		used -= encodedByteLen(c)
	}
	return k, used
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
