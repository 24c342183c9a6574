package statedb

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"lorrycontroller.dev/lc/clock"
)

// BenchmarkCountLorries counts a run queue of 200,000 lorries, as every
// status page does, against the single pass over the table it replaced.
func BenchmarkCountLorries(b *testing.B) {
	ctx := context.Background()
	clk := &clock.Fake{}
	clk.Set(1000)
	db, err := Open(ctx, filepath.Join(b.TempDir(), "state.db"), Options{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const n, batch = 200_000, 5000
	for start := 0; start < n; start += batch {
		want := make([]NewLorry, 0, batch)
		for i := start; i < start+batch; i++ {
			p := fmt.Sprintf("bench/group%03d/project%07d", i%500, i)
			want = append(want, NewLorry{Path: p, Text: `{"` + p + `":{"type":"git","url":"https://git.example.org/` + p + `.git"}}`,
				Kind: "lorry", FromPath: "bench.lorry", Interval: 3600, Timeout: 600})
		}
		err := db.Update(ctx, func(tx *Tx) error {
			if err := tx.BeginConfigLorries(ctx); err != nil {
				return err
			}
			_, err := tx.AddConfigLorries(ctx, want)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	const onePass = `SELECT COUNT(*),
			COALESCE(SUM(running_job IS NULL AND next_due <= $1), 0),
			COALESCE(SUM(last_run_exit IS NOT NULL AND last_run_exit != 0 OR last_run_error != ''), 0),
			COALESCE(SUM(running_job IS NOT NULL), 0)
		FROM lorries`
	b.Run("indexes", func(b *testing.B) {
		for b.Loop() {
			err := db.View(ctx, func(tx *Tx) error {
				c, err := tx.CountLorries(ctx)
				if err == nil && c.Total != n {
					err = fmt.Errorf("counted %d lorries; want %d", c.Total, n)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-pass", func(b *testing.B) {
		for b.Loop() {
			err := db.View(ctx, func(tx *Tx) error {
				var c LorryCounts
				return tx.queryRow(ctx, onePass, tx.Now).Scan(&c.Total, &c.Due, &c.Failing, &c.Running)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
