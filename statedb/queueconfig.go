package statedb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// QueueConfig is the queues of a configuration and which queue each of its
// entries and upstream hosts is in.
type QueueConfig struct {
	Queues  []Queue
	Lorries map[string]string // lorry path to queue; absent or "" is the default queue
	Hosts   map[string]string // upstream host name to queue, for its generated lorries; "" is the default
	// LorriesPlaced says that the lorries were put in their queues as
	// they were applied (NewLorry.Queue), and Lorries is not used: a
	// configuration applied in batches is not held whole.
	LorriesPlaced bool
}

// SetConfigQueues makes the stored queues exactly c.Queues and puts the
// configuration's lorries and the hosts' generated lorries in their
// queues. Entries of a queue that no longer exists (kept lorries of a
// broken file) go to the default queue. Running jobs keep the queue they
// were handed out in.
func (tx *Tx) SetConfigQueues(ctx context.Context, c QueueConfig) error {
	names := []string{DefaultQueue}
	for _, q := range c.Queues {
		if slices.Contains(names[1:], q.Name) {
			return fmt.Errorf("queue %q given twice: %w", q.Name, ErrInvalid)
		}
		if q.Name != DefaultQueue {
			names = append(names, q.Name)
		}
	}
	tx.s.cache.forget()
	if _, err := tx.exec(ctx, `DELETE FROM queues`); err != nil {
		return fmt.Errorf("store queues: %w", err)
	}
	for _, q := range c.Queues {
		if q.Sort == "" {
			q.Sort = SortQueueOrder
		}
		if _, err := tx.exec(ctx, `INSERT INTO queues (name, threads, sort, schedule) VALUES ($1, $2, $3, $4)`,
			q.Name, q.Threads, q.Sort, q.Schedule); err != nil {
			return fmt.Errorf("store queue %q: %w", q.Name, err)
		}
	}
	known, err := json.Marshal(names)
	if err != nil {
		return err
	}
	if _, err := tx.exec(ctx, tx.q.moveLorriesOfRemovedQueues, DefaultQueue, string(known)); err != nil {
		return fmt.Errorf("move lorries of removed queues: %w", err)
	}
	if _, err := tx.exec(ctx, tx.q.moveHostsOfRemovedQueues, DefaultQueue, string(known)); err != nil {
		return fmt.Errorf("move hosts of removed queues: %w", err)
	}
	if !c.LorriesPlaced {
		if err := tx.placeConfigLorries(ctx, c.Lorries); err != nil {
			return err
		}
	}
	for h, q := range c.Hosts {
		if q == "" {
			q = DefaultQueue
		}
		if _, err := tx.exec(ctx, `UPDATE hosts SET queue = $1 WHERE name = $2`, q, h); err != nil {
			return fmt.Errorf("put host %q in queue %q: %w", h, q, err)
		}
		if err := tx.syncHostQueue(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// syncHostQueue puts the generated lorries of host in the host's queue.
func (tx *Tx) syncHostQueue(ctx context.Context, host string) error {
	_, err := tx.exec(ctx, `UPDATE lorries SET queue = COALESCE((SELECT queue FROM hosts WHERE name = $1), $2)
		WHERE generated = 1 AND from_host = $3 AND queue != COALESCE((SELECT queue FROM hosts WHERE name = $4), $5)`,
		host, DefaultQueue, host, host, DefaultQueue)
	if err != nil {
		return fmt.Errorf("put lorries of host %q in its queue: %w", host, err)
	}
	return nil
}

// placeConfigLorries puts the configuration's lorries in their queues:
// lorries maps a path to its queue, and a lorry it leaves out is in the
// default queue.
func (tx *Tx) placeConfigLorries(ctx context.Context, lorries map[string]string) error {
	for p, q := range lorries {
		if q == "" {
			q = DefaultQueue
		}
		if _, err := tx.exec(ctx, `UPDATE lorries SET queue = $1 WHERE path = $2 AND generated = 0 AND queue != $3`,
			q, p, q); err != nil {
			return fmt.Errorf("put lorry %q in queue %q: %w", p, q, err)
		}
	}
	// A lorry the configuration defines without a queue is in the default
	// one, even if it was in another before.
	// SQLite bounds the number of parameters, so the paths go as one
	// JSON list.
	paths := make([]string, 0, len(lorries))
	for p := range lorries {
		paths = append(paths, p)
	}
	list, err := json.Marshal(paths)
	if err != nil {
		return err
	}
	if _, err := tx.exec(ctx, tx.q.unqueuedConfigLorries, DefaultQueue, DefaultQueue, string(list)); err != nil {
		return fmt.Errorf("put lorries in the default queue: %w", err)
	}
	return nil
}
