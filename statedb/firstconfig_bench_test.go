package statedb

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// BenchmarkFirstConfig applies a configuration of 100,000 lorries to an
// empty database as the WEBAPP's first read does: in batches of 1,000, a
// transaction each, then the removal pass and the end, each in its own.
// The lorries are shaped as cmd/lcsim's: 50 sections with a queue each,
// ten lorries a file, one file in 20 on a schedule.
func BenchmarkFirstConfig(b *testing.B) {
	const n, batch, perFile, sections = 100_000, 1000, 10, 50
	ctx := context.Background()
	var want [][]NewLorry
	for start := 0; start < n; start += batch {
		var ls []NewLorry
		for i := start; i < start+batch; i++ {
			f := i / perFile
			file := fmt.Sprintf("s%02d/f%06d.lorry", f%sections, f)
			p := fmt.Sprintf("s%02d/f%06d-%d", f%sections, f, i%perFile)
			url := "https://git.example.org/" + p + ".git"
			l := NewLorry{Path: p, Text: `{"` + p + `":{"type":"git","url":"` + url + `"}}`,
				Kind: "lorry", FromPath: file, Interval: 3600, Timeout: 3600, UpstreamURL: url,
				Queue: fmt.Sprintf("q%02d", f%sections)}
			if f%20 == 19 {
				l.Schedule, l.FirstDue = "0 3 * * *", 1000+3600
			}
			ls = append(ls, l)
		}
		want = append(want, ls)
	}
	// The machine may be shared: the CPU time of the process says what
	// the wall time may not.
	cpu0 := cpuTime(b)
	var size int64 // of the database, in bytes
	for b.Loop() {
		b.StopTimer()
		clk := &clock.Fake{}
		clk.Set(1000)
		db, err := Open(ctx, dbtest.Place(b), Options{Clock: clk})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := db.Update(ctx, func(tx *Tx) error { return tx.BeginConfigLorries(ctx) }); err != nil {
			b.Fatal(err)
		}
		added := 0
		for _, ls := range want {
			err := db.Update(ctx, func(tx *Tx) error {
				ch, err := tx.AddConfigLorries(ctx, ls)
				added += ch.Added
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Update(ctx, func(tx *Tx) error { return tx.KeepConfigLorries(ctx, Kept{}) }); err != nil {
			b.Fatal(err)
		}
		for after, done := "", false; !done; {
			err := db.Update(ctx, func(tx *Tx) error {
				_, last, err := tx.RemoveUnseenLorries(ctx, after, batch)
				after, done = last, last == ""
				if done {
					return tx.CompleteConfigLorries(ctx)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Update(ctx, func(tx *Tx) error { return tx.EndConfigLorries(ctx) }); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		var c LorryCounts
		err = db.View(ctx, func(tx *Tx) error {
			var err error
			if c, err = tx.CountLorries(ctx); err != nil || onPostgres(db) {
				return err
			}
			return tx.queryRow(ctx, `SELECT page_count * page_size FROM pragma_page_count, pragma_page_size`).Scan(&size)
		})
		if err != nil {
			b.Fatal(err)
		}
		if added != n || c.Total != n {
			b.Fatalf("added %d, counted %d lorries; want %d", added, c.Total, n)
		}
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(size)/(1<<20), "db-MiB")
	// The peak of the whole process, the configuration built above
	// (some 30 MiB) included.
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-MiB")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
