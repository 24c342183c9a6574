package statedb

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"lorrycontroller.dev/lc/wire"
)

// DefaultOutputLimit is how much output a job keeps unless Options say
// otherwise: the first half and the last half of it, with the cut marked.
// Minions assume it of a WEBAPP that does not say its own.
const DefaultOutputLimit = wire.DefaultOutputLimit

// lastErrorBytes is how much of a failed job's output tail becomes its
// lorry's last_run_error.
const lastErrorBytes = 2048

// OutputSource is output too big to hold in memory whole, such as a
// spooled request body. Len is how many bytes it has. ReadAt is asked only
// for what appending it can keep: bytes within its first OutputCaps head
// bytes, and within its last OutputCaps tail bytes.
type OutputSource interface {
	io.ReaderAt
	Len() int64
}

// OutputCaps are how many bytes of a job's output are kept from its start
// (head) and from its end (tail).
func (db *DB) OutputCaps() (head, tail int64) {
	return db.outputLimit / 2, db.outputLimit - db.outputLimit/2
}

// outputPiece bounds a chunk of output, and so the memory one append
// takes, whatever the size of the output appended.
const outputPiece = 256 << 10

// bytesSource is output held in memory.
type bytesSource []byte

func (b bytesSource) Len() int64 { return int64(len(b)) }
func (b bytesSource) ReadAt(p []byte, off int64) (int, error) {
	return copy(p, b[off:]), nil
}

// skipSource is src without its first off bytes.
type skipSource struct {
	src OutputSource
	off int64
}

func (s skipSource) Len() int64 { return s.src.Len() - s.off }
func (s skipSource) ReadAt(p []byte, off int64) (int, error) {
	return s.src.ReadAt(p, s.off+off)
}

// appendFolded stores src after j's output, with each line that carriage
// returns rewrite folded to its last state (foldCR), and the end that may
// yet be rewritten held back in j.carry. It reads src in pieces, so the
// memory it takes is bounded whatever src's size. A source too big to be
// read whole (more than the cap in one update, whose middle was never
// kept) is stored as it is, after what was held back as it stands.
func (tx *Tx) appendFolded(ctx context.Context, j *Job, src OutputSource) error {
	n := src.Len()
	if n == 0 {
		return nil
	}
	if _, whole := src.(bytesSource); !whole && n > tx.outputLimit {
		if err := tx.appendOutput(ctx, j, finishCR(j.carry)); err != nil {
			return err
		}
		j.carry = nil
		return tx.appendFrom(ctx, j, src)
	}
	var buf []byte
	for off := int64(0); off < n; {
		k := min(n-off, outputPiece)
		var data []byte
		if b, ok := src.(bytesSource); ok {
			data = b[off : off+k]
		} else {
			if buf == nil {
				buf = make([]byte, k)
			}
			data = buf[:k]
			if _, err := src.ReadAt(data, off); err != nil {
				return fmt.Errorf("append output of job %d: %w", j.ID, err)
			}
		}
		var out []byte
		out, j.carry = foldCR(j.carry, data)
		if err := tx.appendOutput(ctx, j, out); err != nil {
			return err
		}
		off += k
	}
	return nil
}

// carryValue is carry as stored: never NULL.
func carryValue(carry []byte) []byte {
	if carry == nil {
		return []byte{}
	}
	return carry
}

// appendOutput stores data after j's output.
func (tx *Tx) appendOutput(ctx context.Context, j *Job, data []byte) error {
	return tx.appendFrom(ctx, j, bytesSource(data))
}

// appendFrom stores src after j's output. The first half of the cap is
// the head and is kept for good; after that, output goes to the tail,
// whose oldest chunks are dropped whenever it grows past the other half.
// What would be dropped at once is never read or written.
func (tx *Tx) appendFrom(ctx context.Context, j *Job, src OutputSource) error {
	n := src.Len()
	if n == 0 {
		return nil
	}
	j.OutputBytes += n
	headCap := tx.outputLimit / 2
	tailCap := tx.outputLimit - headCap
	var off int64
	// Nothing joins the head after a cut: what follows a cut is tail.
	if j.CutBytes == 0 && j.headBytes < headCap {
		off = min(n, headCap-j.headBytes)
		if err := tx.insertChunks(ctx, j, false, src, 0, off); err != nil {
			return err
		}
		j.headBytes += off
		if off == n {
			return nil
		}
	}
	if n-off >= tailCap {
		j.CutBytes += j.tailBytes + n - off - tailCap
		off = n - tailCap
		if _, err := tx.exec(ctx, `DELETE FROM job_output WHERE job_id = $1 AND tail = 1`, j.ID); err != nil {
			return fmt.Errorf("trim output of job %d: %w", j.ID, err)
		}
		j.tailBytes = 0
	}
	if err := tx.insertChunks(ctx, j, true, src, off, n); err != nil {
		return err
	}
	j.tailBytes += n - off
	for j.tailBytes > tailCap {
		var seq, n int64
		err := tx.queryRow(ctx, `SELECT seq, length(data) FROM job_output
			WHERE job_id = $1 AND tail = 1 ORDER BY seq LIMIT 1`, j.ID).Scan(&seq, &n)
		if err != nil {
			return fmt.Errorf("trim output of job %d: %w", j.ID, err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM job_output WHERE job_id = $1 AND seq = $2`, j.ID, seq); err != nil {
			return fmt.Errorf("trim output of job %d: %w", j.ID, err)
		}
		j.tailBytes -= n
		j.CutBytes += n
	}
	return nil
}

// skipOutput records n bytes of j's output that the minion cut before
// they reached the WEBAPP: they count as printed and as cut. The tail kept
// so far came before them and goes with them (the minion sends a tail of
// nearly the whole cap after a cut of its own, which would push it out
// anyway), so that what is kept is still a head, one cut, and a tail.
func (tx *Tx) skipOutput(ctx context.Context, j *Job, n int64) error {
	if n <= 0 {
		return nil
	}
	if err := tx.appendOutput(ctx, j, finishCR(j.carry)); err != nil {
		return err
	}
	j.carry = nil
	j.OutputBytes += n
	j.CutBytes += j.tailBytes + n
	if j.tailBytes > 0 {
		if _, err := tx.exec(ctx, `DELETE FROM job_output WHERE job_id = $1 AND tail = 1`, j.ID); err != nil {
			return fmt.Errorf("trim output of job %d: %w", j.ID, err)
		}
		j.tailBytes = 0
	}
	return nil
}

// insertChunks stores bytes [from, to) of src as chunks of at most
// outputPiece bytes.
func (tx *Tx) insertChunks(ctx context.Context, j *Job, tail bool, src OutputSource, from, to int64) error {
	var buf []byte
	for from < to {
		k := min(to-from, outputPiece)
		var data []byte
		if b, ok := src.(bytesSource); ok {
			data = b[from : from+k]
		} else {
			if buf == nil {
				buf = make([]byte, min(to-from, outputPiece))
			}
			data = buf[:k]
			if _, err := src.ReadAt(data, from); err != nil {
				return fmt.Errorf("append output of job %d: %w", j.ID, err)
			}
		}
		if err := tx.insertChunk(ctx, j, tail, data); err != nil {
			return err
		}
		from += k
	}
	return nil
}

func (tx *Tx) insertChunk(ctx context.Context, j *Job, tail bool, data []byte) error {
	_, err := tx.exec(ctx, `INSERT INTO job_output (job_id, seq, tail, data) VALUES ($1, $2, $3, $4)`,
		j.ID, j.nextChunk, tail, data)
	if constraintFailed(err) {
		// The chunk's place is counted from the job as read: it is
		// taken if another writer appended to the job since.
		return fmt.Errorf("append output of job %d: chunk %d was written meanwhile: %w", j.ID, j.nextChunk, ErrTaken)
	}
	if err != nil {
		return fmt.Errorf("append output of job %d: %w", j.ID, err)
	}
	j.nextChunk++
	return nil
}

// Output returns what job id has printed, with a marker where the middle
// was cut to keep under the cap, and each line that carriage returns
// rewrote in its last state.
func (tx *Tx) Output(ctx context.Context, id int64) (string, error) {
	j, err := tx.Job(ctx, id)
	if err != nil {
		return "", err
	}
	rows, err := tx.query(ctx, `SELECT tail, data FROM job_output WHERE job_id = $1 ORDER BY seq`, id)
	if err != nil {
		return "", fmt.Errorf("read output of job %d: %w", id, err)
	}
	defer rows.Close()
	var b strings.Builder
	b.Grow(int(j.headBytes + j.tailBytes + wire.MaxCutMark))
	marked := false
	for rows.Next() {
		var tail bool
		var data []byte
		if err := rows.Scan(&tail, &data); err != nil {
			return "", fmt.Errorf("read output of job %d: %w", id, err)
		}
		if tail && !marked && j.CutBytes > 0 {
			b.WriteString(wire.CutMark(j.CutBytes))
			marked = true
		}
		b.Write(data)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("read output of job %d: %w", id, err)
	}
	if !marked && j.CutBytes > 0 {
		b.WriteString(wire.CutMark(j.CutBytes))
	}
	// The line still being rewritten, as it stands.
	b.Write(finishCR(j.carry))
	return b.String(), nil
}

// outputCarry is the end of job id's output held back while a carriage
// return may still rewrite it, as it stands.
func (tx *Tx) outputCarry(ctx context.Context, id int64) ([]byte, error) {
	var carry []byte
	if err := tx.queryRow(ctx, `SELECT output_carry FROM jobs WHERE id = $1`, id).Scan(&carry); err != nil {
		return nil, fmt.Errorf("read output of job %d: %w", id, err)
	}
	return finishCR(carry), nil
}

// outputTail returns about the last n bytes of job id's output.
func (tx *Tx) outputTail(ctx context.Context, id int64, n int) ([]byte, error) {
	rows, err := tx.query(ctx, `SELECT data FROM job_output WHERE job_id = $1 ORDER BY seq DESC`, id)
	if err != nil {
		return nil, fmt.Errorf("read output of job %d: %w", id, err)
	}
	defer rows.Close()
	var chunks [][]byte
	total := 0
	for total < n && rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, err
		}
		chunks = append(chunks, data)
		total += len(data)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]byte, 0, total)
	for i := len(chunks) - 1; i >= 0; i-- {
		out = append(out, chunks[i]...)
	}
	return lastBytes(out, n), nil
}

// lastBytes is the last n bytes of out, trimmed, as valid UTF-8.
func lastBytes(out []byte, n int) []byte {
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return []byte(strings.ToValidUTF8(strings.TrimSpace(string(out)), "\uFFFD"))
}

// lastLineBytes is how far back from the end of a job's output
// LastOutputLine looks.
const lastLineBytes = 1024

// LastOutputLine is the last line of job id's output that is not blank, as
// far as the last kilobyte of output tells; "" if there is none. Progress
// meters end their updates with a carriage return, so the text after the
// last one is the latest update; while its line goes on, it is held back
// from the stored output, and read here too.
func (tx *Tx) LastOutputLine(ctx context.Context, id int64) (string, error) {
	tail, err := tx.outputTail(ctx, id, lastLineBytes)
	if err != nil {
		return "", err
	}
	carry, err := tx.outputCarry(ctx, id)
	if err != nil {
		return "", err
	}
	return lastLine(tail, carry), nil
}

// lastLine is the last line that is not blank of tail, the end of a
// job's stored output, and carry, its line held back, as it stands.
func lastLine(tail, carry []byte) string {
	if len(carry) > 0 {
		tail = append(append(tail, '\n'), carry...)
	}
	lines := strings.FieldsFunc(string(tail), func(r rune) bool { return r == '\n' || r == '\r' })
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return s
		}
	}
	return ""
}

// LastOutputLines is LastOutputLine of each of the jobs ids, by id; a job
// that is not there is left out.
func (tx *Tx) LastOutputLines(ctx context.Context, ids []int64) (map[int64]string, error) {
	return tx.drv.lastOutputLines(ctx, tx, ids)
}

// OutputPart is the output of a job from some offset on.
type OutputPart struct {
	Job Job
	// Text is the output from the offset asked for, or from where the
	// kept output resumes if that part was cut, and then with a note of
	// the cut first.
	Text string
	// Next is the offset to ask for next time. Offsets count every byte
	// the job ever printed, so they stay valid as the middle of a long
	// output is cut.
	Next int64
	// Progress is the line that carriage returns still rewrite (a
	// progress meter's, as git prints "Counting objects: 93%"), as it
	// stands. Text and Next leave it out until the line ends, whatever
	// the offset, since it may yet change.
	Progress string
}

// OutputFrom returns job id's output from byte offset on. Only the chunks
// from the offset on are read: a page that polls a running job reads what
// is new, not the whole output again. A character cut in two at the end is
// held back until its rest arrives.
func (tx *Tx) OutputFrom(ctx context.Context, id, offset int64) (OutputPart, error) {
	j, err := tx.Job(ctx, id)
	if err != nil {
		return OutputPart{}, err
	}
	offset = max(offset, 0)
	part := OutputPart{Job: j, Next: max(offset, j.OutputBytes), Progress: progressLine(j.carry)}
	if offset >= j.OutputBytes {
		return part, nil
	}
	// Head chunks cover the output from 0 to headBytes; the tail resumes
	// after the cut bytes and runs to OutputBytes. Lengths alone find the
	// first chunk that holds the offset.
	rows, err := tx.query(ctx, `SELECT seq, tail, length(data) FROM job_output WHERE job_id = $1 ORDER BY seq`, id)
	if err != nil {
		return part, fmt.Errorf("read output of job %d: %w", id, err)
	}
	tailStart := j.headBytes + j.CutBytes
	from, pos := int64(-1), int64(0)
	inTail := false
	for rows.Next() {
		var seq, n int64
		var tail bool
		if err := rows.Scan(&seq, &tail, &n); err != nil {
			rows.Close()
			return part, fmt.Errorf("read output of job %d: %w", id, err)
		}
		if tail && !inTail {
			inTail, pos = true, tailStart
		}
		if pos+n > offset {
			from = seq
			break
		}
		pos += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return part, fmt.Errorf("read output of job %d: %w", id, err)
	}
	if from < 0 {
		return part, nil
	}
	rows, err = tx.query(ctx, `SELECT tail, data FROM job_output WHERE job_id = $1 AND seq >= $2 ORDER BY seq`, id, from)
	if err != nil {
		return part, fmt.Errorf("read output of job %d: %w", id, err)
	}
	defer rows.Close()
	var b strings.Builder
	marked := false
	for rows.Next() {
		var tail bool
		var data []byte
		if err := rows.Scan(&tail, &data); err != nil {
			return part, fmt.Errorf("read output of job %d: %w", id, err)
		}
		if tail && !inTail {
			inTail, pos = true, tailStart
		}
		if tail && !marked && j.CutBytes > 0 {
			marked = true
			if gap := tailStart - max(offset, j.headBytes); gap > 0 {
				b.WriteString(wire.CutMark(gap))
			}
		}
		b.Write(data[min(max(offset-pos, 0), int64(len(data))):])
		pos += int64(len(data))
	}
	if err := rows.Err(); err != nil {
		return part, fmt.Errorf("read output of job %d: %w", id, err)
	}
	if !marked && j.CutBytes > 0 {
		// A cut that no kept output follows yet.
		if gap := tailStart - max(offset, j.headBytes); gap > 0 {
			b.WriteString(wire.CutMark(gap))
		}
	}
	text := b.String()
	if cut := partialRune(text); cut > 0 && j.Status == StatusRunning {
		text, part.Next = text[:len(text)-cut], part.Next-int64(cut)
	}
	part.Text = strings.ToValidUTF8(text, "\uFFFD")
	return part, nil
}

// progressLine is the line held back in carry as it stands, without the
// start of a character that has not all come yet.
func progressLine(carry []byte) string {
	line := string(finishCR(carry))
	line = line[:len(line)-partialRune(line)]
	return strings.ToValidUTF8(line, "\uFFFD")
}

// partialRune is how many bytes at the end of s start a UTF-8 character
// that is not complete.
func partialRune(s string) int {
	for n := 1; n < utf8.UTFMax && n <= len(s); n++ {
		if utf8.RuneStart(s[len(s)-n]) {
			if utf8.FullRuneInString(s[len(s)-n:]) {
				return 0
			}
			return n
		}
	}
	return 0
}
