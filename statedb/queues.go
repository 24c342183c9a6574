package statedb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"

	"lorrycontroller.dev/lc/cron"
)

// DefaultQueue is the queue of every entry whose section names none. It
// exists without a queue section, and then has no limit.
const DefaultQueue = "default"

// Sort orders of a queue: which of its due entries goes first.
const (
	SortQueueOrder = "queue-order" // the run-queue order
	SortFIFO       = "fifo"        // the one due longest
	SortLIFO       = "lifo"        // the one due most recently
)

// Queue is a queue section of the configuration.
type Queue struct {
	Name string
	// Threads is the most jobs of the queue running at once across all
	// minions; nil is no limit.
	Threads *int64
	Sort    string
	// Schedule is the "threads-schedule" list as JSON, "" for none: each
	// entry's threads apply from when its schedule fires until another
	// entry's fires.
	Schedule string
}

// ThreadsEntry is one entry of a queue's threads-schedule.
type ThreadsEntry struct {
	Item    *cron.Item
	Threads *int64
}

// ParseThreadsSchedule reads a threads-schedule list from its JSON text, as
// Queue.Schedule holds it.
func ParseThreadsSchedule(text string) ([]ThreadsEntry, error) {
	if text == "" {
		return nil, nil
	}
	var raw []struct {
		Schedule json.RawMessage `json:"schedule"`
		Threads  *int64          `json:"threads"`
	}
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, fmt.Errorf("threads-schedule: %w", err)
	}
	out := make([]ThreadsEntry, len(raw))
	for i, r := range raw {
		it, err := cron.Parse(r.Schedule, nil)
		if err != nil {
			return nil, fmt.Errorf("threads-schedule item [%d]: %w", i, err)
		}
		out[i] = ThreadsEntry{Item: it, Threads: r.Threads}
	}
	return out, nil
}

// ThreadsAt is the limit of a queue at time now: that of the entry of its
// schedule that fired last, or Threads before any has fired. active is the
// index of that entry, -1 for none.
func ThreadsAt(threads *int64, sched []ThreadsEntry, now int64) (limit *int64, active int) {
	if len(sched) == 0 {
		return threads, -1
	}
	items := make([]*cron.Item, len(sched))
	for i, e := range sched {
		items[i] = e.Item
	}
	i, ok := cron.Latest(items, now)
	if !ok {
		return threads, -1
	}
	return sched[i].Threads, i
}

func (tx *Tx) readQueues(ctx context.Context) ([]Queue, error) {
	rows, err := tx.query(ctx, `SELECT name, threads, sort, schedule FROM queues ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	defer rows.Close()
	var out []Queue
	hasDefault := false
	for rows.Next() {
		var q Queue
		var threads sql.NullInt64
		if err := rows.Scan(&q.Name, &threads, &q.Sort, &q.Schedule); err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		q.Threads = nullInt(threads)
		hasDefault = hasDefault || q.Name == DefaultQueue
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	if !hasDefault {
		out = append(out, Queue{Name: DefaultQueue, Sort: SortQueueOrder})
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	}
	return out, nil
}
