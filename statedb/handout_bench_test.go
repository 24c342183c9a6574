package statedb

import (
	"context"
	"fmt"
	"testing"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// BenchmarkHandOutKinds hands out and ends jobs from 100,000 lorries in 50
// queue-order queues whose due entries are the last 1% of each queue: the
// walk of each queue's index passes 1,980 entries not yet due before the
// first due one. "any" is a minion that takes every kind, "kinds" one
// started with --kinds lorry. Each job ends at once and its lorry is due
// again, so every hand-out finds the same queues. It runs on PostgreSQL
// with LORRY_CONTROLLER_TEST_STATEDB=postgres.
func BenchmarkHandOutKinds(b *testing.B) {
	ctx := context.Background()
	clk := &clock.Fake{}
	clk.Set(1_000_000)
	db, err := Open(ctx, dbtest.Place(b), Options{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const lorries, queues = 100_000, 50
	want := make([]NewLorry, lorries)
	c := QueueConfig{Lorries: make(map[string]string, lorries)}
	for i := range want {
		p := fmt.Sprintf("bench/group%03d/repo%06d", i%1000, i)
		want[i] = NewLorry{Path: p, Kind: "lorry", Interval: 3600, Timeout: 600,
			Text: `{"` + p + `":{"type":"git","url":"https://git.example.org/` + p + `.git"}}`}
		c.Lorries[p] = fmt.Sprintf("q%02d", i%queues)
	}
	for i := range queues {
		c.Queues = append(c.Queues, Queue{Name: fmt.Sprintf("q%02d", i), Sort: SortQueueOrder})
	}
	err = db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.SetConfigLorries(ctx, want, Kept{}); err != nil {
			return err
		}
		if err := tx.SetConfigQueues(ctx, c); err != nil {
			return err
		}
		// The last 1% of each queue in queue order is due, the rest
		// later, front first.
		_, err := tx.exec(ctx, `UPDATE lorries SET next_due = r.due
			FROM (SELECT path, CASE WHEN ROW_NUMBER() OVER w > COUNT(*) OVER w * 99 / 100 THEN $1 - 1
					ELSE $1 + ROW_NUMBER() OVER w END AS due
				FROM lorries WINDOW w AS (PARTITION BY queue ORDER BY queue_pos
					ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)) AS r
			WHERE lorries.path = r.path`, tx.Now)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		kinds []string
	}{{"any", nil}, {"kinds", []string{"lorry"}}} {
		b.Run(c.name, func(b *testing.B) {
			m := MinionID{Name: "bench", Host: "build", PID: 1, Kinds: c.kinds}
			for b.Loop() {
				err := db.Update(ctx, func(tx *Tx) error {
					a, err := tx.GiveMeJob(ctx, m)
					if err != nil {
						return err
					}
					if a.Idle != "" {
						return fmt.Errorf("no job: %s", a.Idle)
					}
					if _, err := tx.UpdateJob(ctx, JobUpdate{ID: a.Job.ID, Minion: m, Exit: new(int64)}); err != nil {
						return err
					}
					_, err = tx.exec(ctx, `UPDATE lorries SET next_due = $1 WHERE path = $2`, tx.Now-1, a.Lorry.Path)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
