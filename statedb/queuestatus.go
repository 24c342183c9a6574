package statedb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// QueueState is a queue as the status shows it.
type QueueState struct {
	Queue
	// Now is the limit in force now (nil: none), and Active the index of
	// the schedule entry that set it (-1: Threads applies).
	Now    *int64
	Active int
	// Entries is the parsed schedule.
	Entries []ThreadsEntry
	Running int64
	Due     int64
	// OldestDue is when the entry that has been due longest fell due; nil
	// when none is due.
	OldestDue *int64
}

// QueueStates lists every queue with its limit now, its running jobs and
// its due entries.
func (tx *Tx) QueueStates(ctx context.Context) ([]QueueState, error) {
	qs, err := tx.Queues(ctx)
	if err != nil {
		return nil, err
	}
	live, err := tx.runningByQueueAndHost(ctx, "")
	if err != nil {
		return nil, err
	}
	due, err := tx.queuesDue(ctx, qs)
	if err != nil {
		return nil, err
	}
	out := make([]QueueState, len(qs))
	for i, q := range qs {
		st := QueueState{Queue: q, Running: live.byQueue[q.Name]}
		if st.Entries, err = tx.threadsSchedule(q.Schedule); err != nil {
			return nil, fmt.Errorf("queue %q: %w", q.Name, err)
		}
		st.Now, st.Active = ThreadsAt(q.Threads, st.Entries, tx.Now)
		d := due[q.Name]
		st.Due, st.OldestDue = d.n, nullInt(d.oldest)
		out[i] = st
	}
	return out, nil
}

// queueDue is how many entries of a queue are due, and since when the
// first of them.
type queueDue struct {
	n      int64
	oldest sql.NullInt64
}

// queuesDue counts the due entries of each of qs, in one statement: on
// PostgreSQL a round trip a queue took most of a status read's time
// under load.
func (tx *Tx) queuesDue(ctx context.Context, qs []Queue) (map[string]queueDue, error) {
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	list, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, tx.q.queuesDue, string(list), tx.Now)
	if err != nil {
		return nil, fmt.Errorf("count due lorries: %w", err)
	}
	defer rows.Close()
	due := make(map[string]queueDue, len(qs))
	for rows.Next() {
		var name string
		var d queueDue
		if err := rows.Scan(&name, &d.n, &d.oldest); err != nil {
			return nil, fmt.Errorf("count due lorries: %w", err)
		}
		due[name] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count due lorries: %w", err)
	}
	return due, nil
}

// runningByQueueAndHost counts the live (claimed or running) jobs by
// queue, those on the minion host named, and all of them, from the
// counts that the triggers on jobs keep (live_counts): a few rows (one per
// queue and host that ever ran a job), whatever the jobs table holds.
func (tx *Tx) runningByQueueAndHost(ctx context.Context, host string) (liveCounts, error) {
	rows, err := tx.query(ctx, liveCountQuery)
	if err != nil {
		return liveCounts{}, fmt.Errorf("count running jobs: %w", err)
	}
	defer rows.Close()
	c := liveCounts{byQueue: map[string]int64{}}
	for rows.Next() {
		var q, h string
		var n int64
		if err := rows.Scan(&q, &h, &n); err != nil {
			return liveCounts{}, fmt.Errorf("count running jobs: %w", err)
		}
		c.byQueue[q] += n
		c.all += n
		if h == host {
			c.onHost += n
		}
	}
	return c, rows.Err()
}

// liveCountQuery reads the counts of live jobs by queue and host.
const liveCountQuery = `SELECT queue, host, n FROM live_counts WHERE n > 0`

// liveCounts are the live jobs by queue, on one host, and in all.
type liveCounts struct {
	byQueue     map[string]int64
	onHost, all int64
}
