package statedb

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestQueuePositionAndTotal checks a lorry's place in the run queue and
// the run queue's total against the queue itself, with the queue
// positions spread over many ranges of lorry_buckets and moved by every
// write that moves them: entries added and removed, moved to the top
// (below zero) and to the bottom, and handed out. It checks the ranges'
// counts against the table too.
func TestQueuePositionAndTotal(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	paths := func(from, to int) []string {
		var ps []string
		for i := from; i < to; i++ {
			ps = append(ps, fmt.Sprintf("p%03d", i))
		}
		return ps
	}
	check := func(when string) {
		t.Helper()
		queue := f.queue(t)
		f.view(t, func(tx *Tx) error {
			for i, p := range queue {
				n, err := tx.QueuePosition(ctx, p)
				if err != nil {
					return err
				}
				if n != int64(i+1) {
					t.Errorf("%s: QueuePosition(%s) = %d; want %d", when, p, n, i+1)
				}
			}
			c, err := tx.CountLorries(ctx)
			if err != nil {
				return err
			}
			if c.Total != int64(len(queue)) {
				t.Errorf("%s: total %d; want %d", when, c.Total, len(queue))
			}
			var wrong int64
			err = tx.queryRow(ctx, `SELECT COUNT(*) FROM lorry_buckets AS b
				FULL JOIN (SELECT queue_pos >> 14 AS bucket, COUNT(*) AS n FROM lorries GROUP BY 1) AS c
					ON b.bucket = c.bucket
				WHERE b.n IS DISTINCT FROM c.n`).Scan(&wrong)
			if wrong != 0 {
				t.Errorf("%s: %d ranges of lorry_buckets are counted wrong or missing", when, wrong)
			}
			return err
		})
		err := f.db.View(ctx, func(tx *Tx) error {
			_, err := tx.QueuePosition(ctx, "no/such/lorry")
			return err
		})
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: QueuePosition of no lorry: %v; want ErrNotFound", when, err)
		}
	}
	f.lorries(t, paths(0, 40)...)
	check("added")
	f.update(t, func(tx *Tx) error {
		// In two steps, so that no position is taken twice on the way.
		if _, err := tx.exec(ctx, `UPDATE lorries SET queue_pos = queue_pos + 1000000`); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `UPDATE lorries SET queue_pos = (queue_pos - 1000000) * 5000 + 7`)
		return err
	})
	check("spread over ranges")
	f.update(t, func(tx *Tx) error {
		for _, p := range []string{"p013", "p027", "p039"} {
			if err := tx.MoveToTop(ctx, p); err != nil {
				return err
			}
		}
		return tx.MoveToBottom(ctx, "p000")
	})
	check("moved")
	for i := range 5 {
		f.mustGive(t, minion(fmt.Sprintf("m%d", i), "h"))
	}
	check("handed out")
	f.lorries(t, append(paths(10, 30), paths(50, 60)...)...)
	check("removed and added")
}
