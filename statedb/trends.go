package statedb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// Trends: what the charts of the pages draw. Each query reads an index
// range and aggregates in SQL, so that it costs the same with a hundred
// lorries as with a hundred thousand.

// Run is one job of a lorry as its strip of runs draws it.
type Run struct {
	ID      int64
	Started int64
	Ended   *int64
	Status  string
	Exit    *int64
}

// RecentRuns returns the newest runs of the lorry at path, at most limit,
// oldest first.
func (tx *Tx) RecentRuns(ctx context.Context, path string, limit int) ([]Run, error) {
	rows, err := tx.query(ctx, `SELECT id, started, ended, status, exit FROM jobs
		WHERE path = $1 ORDER BY id DESC LIMIT $2`, path, limit)
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", path, err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		var r Run
		var ended, exit sql.NullInt64
		if err := rows.Scan(&r.ID, &r.Started, &ended, &r.Status, &exit); err != nil {
			return nil, fmt.Errorf("list runs of %s: %w", path, err)
		}
		r.Ended, r.Exit = nullInt(ended), nullInt(exit)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", path, err)
	}
	slices.Reverse(out)
	return out, nil
}

// HourCount is how many jobs ended in the hour from Start, by status.
type HourCount struct {
	Start  int64
	Counts map[string]int64
}

// JobsPerHour counts the jobs that ended in each of the last hours hours,
// the current one last, by status. Every hour is there, empty or not.
func (tx *Tx) JobsPerHour(ctx context.Context, hours int) ([]HourCount, error) {
	end := (tx.Now/3600 + 1) * 3600
	start := end - int64(hours)*3600
	out := make([]HourCount, hours)
	for i := range out {
		out[i] = HourCount{Start: start + int64(i)*3600, Counts: map[string]int64{}}
	}
	rows, err := tx.query(ctx, tx.q.jobsPerHour, start, end)
	if err != nil {
		return nil, fmt.Errorf("count jobs per hour: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h, n int64
		var status string
		if err := rows.Scan(&h, &status, &n); err != nil {
			return nil, fmt.Errorf("count jobs per hour: %w", err)
		}
		out[h].Counts[status] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count jobs per hour: %w", err)
	}
	return out, nil
}

const (
	// QueueSampleEvery is the least time between two samples of the
	// queues.
	QueueSampleEvery = 60
	// QueueSampleKeep is how long samples of the queues are kept.
	QueueSampleKeep = 24 * 3600
)

// SampleQueues records each queue's due entries and the wait of the one
// due longest, unless the last sample is less than QueueSampleEvery old,
// and forgets samples older than QueueSampleKeep. It says whether it took
// a sample.
func (tx *Tx) SampleQueues(ctx context.Context) (bool, error) {
	var last sql.NullInt64
	if err := tx.queryRow(ctx, `SELECT MAX(at) FROM queue_samples`).Scan(&last); err != nil {
		return false, fmt.Errorf("read last queue sample: %w", err)
	}
	// A clock set back (pretend-time) samples at once.
	if last.Valid && tx.Now >= last.Int64 && tx.Now-last.Int64 < QueueSampleEvery {
		return false, nil
	}
	states, err := tx.QueueStates(ctx)
	if err != nil {
		return false, err
	}
	for _, q := range states {
		var wait *int64
		if q.OldestDue != nil {
			w := max(tx.Now-*q.OldestDue, 0)
			wait = &w
		}
		if _, err := tx.exec(ctx, `INSERT INTO queue_samples (at, queue, due, oldest_wait) VALUES ($1, $2, $3, $4)
			ON CONFLICT (at, queue) DO UPDATE SET due = excluded.due, oldest_wait = excluded.oldest_wait`,
			tx.Now, q.Name, q.Due, wait); err != nil {
			return false, fmt.Errorf("sample queue %q: %w", q.Name, err)
		}
	}
	if _, err := tx.exec(ctx, `DELETE FROM queue_samples WHERE at < $1`, tx.Now-QueueSampleKeep); err != nil {
		return false, fmt.Errorf("forget old queue samples: %w", err)
	}
	return true, nil
}

// WaitPoint is the longest wait of a queue's oldest due entry in the slot
// of time from At; 0 when nothing was due.
type WaitPoint struct {
	At   int64
	Wait int64
}

// QueueWaits returns the samples of the last since seconds, in slots of
// slot seconds, by queue. A slot with no sample (the WEBAPP was down) is
// absent.
func (tx *Tx) QueueWaits(ctx context.Context, since, slot int64) (map[string][]WaitPoint, error) {
	rows, err := tx.query(ctx, `SELECT queue, at - at % $1, MAX(COALESCE(oldest_wait, 0)) FROM queue_samples
		WHERE at >= $2 GROUP BY 1, 2 ORDER BY 1, 2`, slot, tx.Now-since)
	if err != nil {
		return nil, fmt.Errorf("read queue samples: %w", err)
	}
	defer rows.Close()
	out := map[string][]WaitPoint{}
	for rows.Next() {
		var q string
		var p WaitPoint
		if err := rows.Scan(&q, &p.At, &p.Wait); err != nil {
			return nil, fmt.Errorf("read queue samples: %w", err)
		}
		out[q] = append(out[q], p)
	}
	return out, rows.Err()
}
