package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The queries below serve the web pages: one page of a long list at a
// time, so that a page stays small and quick with 100,000 lorries or
// millions of jobs.

// Lorry states a LorryFilter can select.
const (
	LorryDue     = "due"     // no running job and next_due has passed
	LorryFailing = "failing" // the last run failed
	LorryRunning = "running" // a job runs now
	LorryNever   = "never"   // never run
)

// LorryFilter selects lorries of the run queue. The zero value selects
// all of them.
type LorryFilter struct {
	// Path, if set, must occur in the lorry's path; ASCII letters match
	// either case.
	Path string
	// State, if set, is one of LorryDue, LorryFailing, LorryRunning and
	// LorryNever.
	State string
	// Kind, if set, is the entry's kind, such as "lorry" or "scraper".
	Kind string
}

// Valid says whether f's State is one the queries know.
func (f LorryFilter) Valid() error {
	switch f.State {
	case "", LorryDue, LorryFailing, LorryRunning, LorryNever:
		return nil
	}
	return fmt.Errorf("lorry state %q: %w", f.State, ErrInvalid)
}

// lorryFilterWhere is one constant condition for every filter, so that
// prepared statements serve them all, whatever is asked. Failing is CountLorries'
// definition: a non-zero exit, or an error without one (a lost job).
const lorryFilterWhere = `(?1 = '' OR path LIKE ?2 ESCAPE '\')
	AND (?3 = ''
		OR (?3 = 'due' AND running_job IS NULL AND next_due <= ?4)
		OR (?3 = 'failing' AND (last_run_exit IS NOT NULL AND last_run_exit != 0 OR last_run_error != ''))
		OR (?3 = 'running' AND running_job IS NOT NULL)
		OR (?3 = 'never' AND last_run IS NULL))
	AND (?5 = '' OR kind = ?5)`

func (f LorryFilter) args(now int64) []any {
	return []any{f.Path, likePattern(f.Path), f.State, now, f.Kind}
}

// likePattern makes s a LIKE pattern matching any text that contains s.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// LorryPage returns at most limit lorries that f selects, in queue order,
// skipping the first offset of them.
func (tx *Tx) LorryPage(ctx context.Context, f LorryFilter, offset, limit int) ([]Lorry, error) {
	if err := f.Valid(); err != nil {
		return nil, err
	}
	if f == failingOnly {
		return tx.FailingLorries(ctx, offset, limit)
	}
	// The whole queue is read in the order of its index, which stops at
	// the page. A filtered one is read whole and its matches sorted: the
	// index would fetch each of 100,000 rows in turn to test it.
	query := `SELECT ` + lorryColumns + ` FROM lorries INDEXED BY lorries_queue
		WHERE ` + lorryFilterWhere + ` ORDER BY queue_pos LIMIT ?6 OFFSET ?7`
	if f != (LorryFilter{}) {
		query = `SELECT ` + lorryColumns + ` FROM lorries NOT INDEXED
		WHERE ` + lorryFilterWhere + ` ORDER BY queue_pos LIMIT ?6 OFFSET ?7`
	}
	rows, err := tx.query(ctx, query, append(f.args(tx.Now), limit, offset)...)
	if err != nil {
		return nil, fmt.Errorf("list lorries: %w", err)
	}
	defer rows.Close()
	out := []Lorry{}
	for rows.Next() {
		l, err := scanLorry(rows)
		if err != nil {
			return nil, fmt.Errorf("list lorries: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// LorriesAfter returns at most limit lorries of the run queue in queue
// order, from the first whose queue position is after pos. It walks the
// queue's index from pos, so a caller that reads the queue a page at a
// time, with the last position of each page, never reads it twice.
func (tx *Tx) LorriesAfter(ctx context.Context, pos int64, limit int) ([]Lorry, error) {
	rows, err := tx.query(ctx, `SELECT `+lorryColumns+` FROM lorries INDEXED BY lorries_queue
		WHERE queue_pos > ? ORDER BY queue_pos LIMIT ?`, pos, limit)
	if err != nil {
		return nil, fmt.Errorf("list lorries: %w", err)
	}
	defer rows.Close()
	out := []Lorry{}
	for rows.Next() {
		l, err := scanLorry(rows)
		if err != nil {
			return nil, fmt.Errorf("list lorries: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// failingOnly is the filter that the lorries_failing index answers.
var failingOnly = LorryFilter{State: LorryFailing}

// FailingLorries returns at most limit lorries whose last run failed, in
// queue order, skipping the first offset of them. Failing is
// CountLorries' definition: a non-zero exit, or an error without one (a
// lost job). An index holds them, so this is quick wherever in a long
// queue they are.
func (tx *Tx) FailingLorries(ctx context.Context, offset, limit int) ([]Lorry, error) {
	rows, err := tx.query(ctx, `SELECT `+lorryColumns+` FROM lorries INDEXED BY lorries_failing
		WHERE last_run_exit != 0 OR last_run_error != '' ORDER BY queue_pos LIMIT ? OFFSET ?`, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("list failing lorries: %w", err)
	}
	defer rows.Close()
	out := []Lorry{}
	for rows.Next() {
		l, err := scanLorry(rows)
		if err != nil {
			return nil, fmt.Errorf("list failing lorries: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// CountLorriesMatching counts the lorries that f selects.
func (tx *Tx) CountLorriesMatching(ctx context.Context, f LorryFilter) (int64, error) {
	if err := f.Valid(); err != nil {
		return 0, err
	}
	var n int64
	var err error
	if f == failingOnly {
		err = tx.queryRow(ctx, `SELECT COUNT(*) FROM lorries INDEXED BY lorries_failing
			WHERE last_run_exit != 0 OR last_run_error != ''`).Scan(&n)
	} else {
		err = tx.queryRow(ctx, `SELECT COUNT(*) FROM lorries WHERE `+lorryFilterWhere, f.args(tx.Now)...).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("count lorries: %w", err)
	}
	return n, nil
}

// QueuePosition is the 1-based place of the lorry at path in the run
// queue.
func (tx *Tx) QueuePosition(ctx context.Context, path string) (int64, error) {
	var n int64
	err := tx.queryRow(ctx, `SELECT COUNT(*) FROM lorries
		WHERE queue_pos <= (SELECT queue_pos FROM lorries WHERE path = ?)`, path).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("place of lorry %q: %w", path, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("no lorry %q: %w", path, ErrNotFound)
	}
	return n, nil
}

// JobFilter selects jobs. The zero value selects all of them.
type JobFilter struct {
	// Status, if set, is the job's status (StatusRunning, ...).
	Status string
	// Path, if set, must occur in the job's path; ASCII letters match
	// either case.
	Path string
}

const jobFilterWhere = `(?1 = '' OR status = ?1) AND (?2 = '' OR path LIKE ?3 ESCAPE '\')`

// JobPage is one page of jobs, newest first.
type JobPage struct {
	Jobs []Job
	// Newer and Older say whether jobs that the filter selects come
	// before the first or after the last of Jobs.
	Newer, Older bool
}

// JobsBefore returns at most limit jobs that f selects with ids below
// before, newest first. Paging by id rather than by offset keeps each
// page as quick as the first however many jobs there are, and a page
// does not shift while new jobs start.
func (tx *Tx) JobsBefore(ctx context.Context, f JobFilter, before int64, limit int) (JobPage, error) {
	var p JobPage
	jobs, err := tx.scanJobs(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE `+jobFilterWhere+` AND id < ?4 ORDER BY id DESC LIMIT ?5`,
		f.Status, f.Path, likePattern(f.Path), before, limit+1)
	if err != nil {
		return p, err
	}
	if len(jobs) > limit {
		jobs, p.Older = jobs[:limit], true
	}
	p.Jobs = jobs
	if len(jobs) > 0 {
		p.Newer, err = tx.anyJob(ctx, f, true, jobs[0].ID)
	}
	return p, err
}

// JobsAfter returns at most limit jobs that f selects with ids above
// after: the page before a JobsBefore page. They are newest first too.
func (tx *Tx) JobsAfter(ctx context.Context, f JobFilter, after int64, limit int) (JobPage, error) {
	var p JobPage
	jobs, err := tx.scanJobs(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE `+jobFilterWhere+` AND id > ?4 ORDER BY id LIMIT ?5`,
		f.Status, f.Path, likePattern(f.Path), after, limit+1)
	if err != nil {
		return p, err
	}
	if len(jobs) > limit {
		jobs, p.Newer = jobs[:limit], true
	}
	for i, j := 0, len(jobs)-1; i < j; i, j = i+1, j-1 {
		jobs[i], jobs[j] = jobs[j], jobs[i]
	}
	p.Jobs = jobs
	if len(jobs) > 0 {
		p.Older, err = tx.anyJob(ctx, f, false, jobs[len(jobs)-1].ID)
	}
	return p, err
}

// anyJob says whether a job that f selects has an id above id (newer) or
// below it.
func (tx *Tx) anyJob(ctx context.Context, f JobFilter, newer bool, id int64) (bool, error) {
	query := `SELECT 1 FROM jobs WHERE ` + jobFilterWhere + ` AND id < ?4 LIMIT 1`
	if newer {
		query = `SELECT 1 FROM jobs WHERE ` + jobFilterWhere + ` AND id > ?4 LIMIT 1`
	}
	var one int
	err := tx.queryRow(ctx, query, f.Status, f.Path, likePattern(f.Path), id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("list jobs: %w", err)
	}
	return true, nil
}

// RecentJobs returns the newest jobs of the lorry at path, at most limit,
// newest first.
func (tx *Tx) RecentJobs(ctx context.Context, path string, limit int) ([]Job, error) {
	return tx.scanJobs(ctx, `SELECT `+jobColumns+` FROM jobs WHERE path = ? ORDER BY id DESC LIMIT ?`, path, limit)
}

// RunningJobs returns the running jobs, oldest first.
func (tx *Tx) RunningJobs(ctx context.Context) ([]Job, error) {
	return tx.scanJobs(ctx, `SELECT `+jobColumns+` FROM jobs WHERE `+liveStatus+` ORDER BY id`)
}

func (tx *Tx) scanJobs(ctx context.Context, query string, args ...any) ([]Job, error) {
	rows, err := tx.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	out := []Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
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
	if len(carry) > 0 {
		tail = append(append(tail, '\n'), carry...)
	}
	lines := strings.FieldsFunc(string(tail), func(r rune) bool { return r == '\n' || r == '\r' })
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return s, nil
		}
	}
	return "", nil
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
	part := OutputPart{Job: j, Next: max(offset, j.OutputBytes)}
	if offset >= j.OutputBytes {
		return part, nil
	}
	// Head chunks cover the output from 0 to headBytes; the tail resumes
	// after the cut bytes and runs to OutputBytes. Lengths alone find the
	// first chunk that holds the offset.
	rows, err := tx.query(ctx, `SELECT seq, tail, length(data) FROM job_output WHERE job_id = ? ORDER BY seq`, id)
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
	rows, err = tx.query(ctx, `SELECT tail, data FROM job_output WHERE job_id = ? AND seq >= ? ORDER BY seq`, id, from)
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
				fmt.Fprintf(&b, "\n[... %d bytes of output cut ...]\n", gap)
			}
		}
		b.Write(data[min(max(offset-pos, 0), int64(len(data))):])
		pos += int64(len(data))
	}
	if err := rows.Err(); err != nil {
		return part, fmt.Errorf("read output of job %d: %w", id, err)
	}
	text := b.String()
	if cut := partialRune(text); cut > 0 && j.Status == StatusRunning {
		text, part.Next = text[:len(text)-cut], part.Next-int64(cut)
	}
	part.Text = strings.ToValidUTF8(text, "\uFFFD")
	return part, nil
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
