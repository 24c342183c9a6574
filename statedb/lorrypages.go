package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// LorryListing selects one page of lorries in path order, for tools that
// walk a long run queue a page at a time (ListLorries).
type LorryListing struct {
	// State, if set, is one of States.
	State string
	// Queue, if set, is the queue the lorries are in.
	Queue string
	// Prefix, if set, begins every path. It is a plain string: no
	// character in it is a wildcard.
	Prefix string
	// After, if set, is the path the previous page ended at; the page
	// begins after it.
	After string
	// Limit is the most lorries the page holds, at least 1.
	Limit int
}

// ListLorries returns the page of lorries that q selects, in path order,
// and the path to give as q.After for the next page: "" when none follows.
// The page is one search of an index from its first path (the primary
// key, or by state or queue lorries_state_path or lorries_queue_path), so
// that a page costs the same at the end of 100,000 lorries as at their
// start, and a filter with few matches reads only those.
func (tx *Tx) ListLorries(ctx context.Context, q LorryListing) ([]Lorry, string, error) {
	if q.State != "" && !slices.Contains(States, q.State) {
		return nil, "", fmt.Errorf("lorry state %q is none of %s: %w", q.State, strings.Join(States, ", "), ErrInvalid)
	}
	if q.Limit < 1 {
		return nil, "", fmt.Errorf("page of %d lorries: %w", q.Limit, ErrInvalid)
	}
	query, args := listLorriesQuery(q)
	out, err := tx.queryLorries(ctx, "list lorries", query, args...)
	if err != nil {
		return nil, "", err
	}
	if len(out) <= q.Limit {
		return out, "", nil
	}
	out = out[:q.Limit]
	return out, out[len(out)-1].Path, nil
}

// listLorriesQuery is ListLorries' query for q and its arguments. Only
// the filters given are in it: one condition that holds every filter, as
// LorryPage's does, keeps SQLite from searching an index by any of them.
func listLorriesQuery(q LorryListing) (string, []any) {
	// One lower bound only, the later of the two: given both, SQLite
	// would search from one of them and test the other on every row, and
	// a walk from a prefix's start to its end would read its first pages
	// again for every page.
	var where []string
	var args []any
	cond := func(c string, v any) {
		args = append(args, v)
		where = append(where, c+` $`+strconv.Itoa(len(args)))
	}
	if q.Prefix != "" && q.Prefix > q.After {
		cond(`path >=`, q.Prefix)
	} else {
		cond(`path >`, q.After)
	}
	if end, ok := prefixEnd(q.Prefix); ok {
		cond(`path <`, end)
	}
	if q.State != "" {
		cond(`state =`, q.State)
	}
	if q.Queue != "" {
		cond(`queue =`, q.Queue)
	}
	// One more than the page, to tell whether another follows.
	args = append(args, q.Limit+1)
	return `SELECT ` + lorryColumns + ` FROM lorries
		WHERE ` + strings.Join(where, ` AND `) + ` ORDER BY path LIMIT $` + strconv.Itoa(len(args)), args
}

// prefixEnd is the least string greater than every string that begins
// with prefix, in SQLite's byte order, so that "path >= prefix AND path <
// end" is a range of the index on path; ok is false when there is none
// (an empty prefix, or one of 0xff bytes only).
func prefixEnd(prefix string) (end string, ok bool) {
	b := []byte(prefix)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "", false
	}
	b[len(b)-1]++
	return string(b), true
}

// Pages of the run queue: a long queue is read a page at a time, so that
// a reader stays quick with 100,000 lorries.

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

// lorryFilterState is one constant condition for every filter but the
// path, which each dialect matches in its own way (dialectSQL's
// lorryPage, ...), so that prepared statements serve them all, whatever
// is asked. Failing is CountLorries'
// definition: a non-zero exit, or an error without one (a lost job).
const lorryFilterState = `($3 = ''
		OR ($3 = 'due' AND running_job IS NULL AND next_due <= $4)
		OR ($3 = 'failing' AND (last_run_exit IS NOT NULL AND last_run_exit != 0 OR last_run_error != ''))
		OR ($3 = 'running' AND running_job IS NOT NULL)
		OR ($3 = 'never' AND last_run IS NULL))
	AND ($5 = '' OR kind = $5)`

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
	query := tx.q.lorryPage
	if f != (LorryFilter{}) {
		query = tx.q.lorryPageFiltered
	}
	return tx.queryLorries(ctx, "list lorries", query, append(f.args(tx.Now), limit, offset)...)
}

// LorriesAfter returns at most limit lorries of the run queue in queue
// order, from the first whose queue position is after pos. It walks the
// queue's index from pos, so a caller that reads the queue a page at a
// time, with the last position of each page, never reads it twice.
func (tx *Tx) LorriesAfter(ctx context.Context, pos int64, limit int) ([]Lorry, error) {
	return tx.queryLorries(ctx, "list lorries", tx.q.lorriesAfter, pos, limit)
}

// failingOnly is the filter that the lorries_failing index answers.
var failingOnly = LorryFilter{State: LorryFailing}

// FailingLorries returns at most limit lorries whose last run failed, in
// queue order, skipping the first offset of them. Failing is
// CountLorries' definition: a non-zero exit, or an error without one (a
// lost job). An index holds them, so this is quick wherever in a long
// queue they are.
func (tx *Tx) FailingLorries(ctx context.Context, offset, limit int) ([]Lorry, error) {
	return tx.queryLorries(ctx, "list failing lorries", tx.q.failingLorries, limit, offset)
}

// CountLorriesMatching counts the lorries that f selects.
func (tx *Tx) CountLorriesMatching(ctx context.Context, f LorryFilter) (int64, error) {
	if err := f.Valid(); err != nil {
		return 0, err
	}
	var n int64
	var err error
	if f == failingOnly {
		err = tx.queryRow(ctx, tx.q.countFailing).Scan(&n)
	} else {
		err = tx.queryRow(ctx, tx.q.countMatching, f.args(tx.Now)...).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("count lorries: %w", err)
	}
	return n, nil
}

// QueuePosition is the 1-based place of the lorry at path in the run
// queue: the entries of the ranges of queue positions
// before the lorry's (lorry_buckets) and those of its own range up to it:
// a walk of at most 16,384 entries of the index, where counting every
// entry before it walked up to a million.
func (tx *Tx) QueuePosition(ctx context.Context, path string) (int64, error) {
	var n int64
	err := tx.queryRow(ctx, tx.q.queuePosition, path).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		n, err = 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("place of lorry %q: %w", path, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("no lorry %q: %w", path, ErrNotFound)
	}
	return n, nil
}

// queryLorries runs query, which selects lorryColumns, and returns its
// lorries; what names the list in errors.
func (tx *Tx) queryLorries(ctx context.Context, what, query string, args ...any) ([]Lorry, error) {
	rows, err := tx.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	out := []Lorry{}
	for rows.Next() {
		l, err := scanLorry(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
