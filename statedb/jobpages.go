package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Pages of jobs: millions of jobs are read a page at a time.

// JobFilter selects jobs. The zero value selects all of them.
type JobFilter struct {
	// Status, if set, is the job's status (StatusRunning, ...).
	Status string
	// Path, if set, must occur in the job's path; ASCII letters match
	// either case.
	Path string
}

// jobFilterStatus is the condition of a JobFilter's status; each dialect
// adds its match of the path (dialectSQL's jobsBefore, ...).
const jobFilterStatus = `($1 = '' OR status = $1)`

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
	jobs, err := tx.scanJobs(ctx, tx.q.jobsBefore,
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
	jobs, err := tx.scanJobs(ctx, tx.q.jobsAfter,
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
	query := tx.q.jobsOlder
	if newer {
		query = tx.q.jobsNewer
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
	return tx.scanJobs(ctx, `SELECT `+jobColumns+` FROM jobs WHERE path = $1 ORDER BY id DESC LIMIT $2`, path, limit)
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
