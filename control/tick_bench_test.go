package control

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/cron"
	"lorrycontroller.dev/lc/statedb"
)

// BenchmarkTickBetweenEvents ticks, over and over, 20,000 daily schedules
// none of whose events comes meanwhile: what the Scheduler costs every
// second between events, in the write session that every hand-out and
// job-update waits for. Its write transactions are most of it.
func BenchmarkTickBetweenEvents(b *testing.B) {
	ctx := context.Background()
	fake := &clock.Fake{}
	fake.Set(1000) // 00:16:40 UTC; the events are from 12:00 on
	db, err := statedb.Open(ctx, filepath.Join(b.TempDir(), "state.db"), statedb.Options{Clock: fake})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	cfg := &confgit.Config{Commit: "c1"}
	for i := range 20_000 {
		text := daily(12+i%12, i%60, "UTC")
		it, err := cron.Parse([]byte(text), nil)
		if err != nil {
			b.Fatal(err)
		}
		p := fmt.Sprintf("s/%05d", i)
		cfg.Lorries = append(cfg.Lorries, confgit.Lorry{Path: p, Text: `{"` + p + `":{"type":"git","url":"u"}}`,
			Type: "git", Interval: time.Hour, Timeout: time.Minute, Schedule: text, Cron: it})
	}
	a := &App{DB: db, Config: &stubConfig{cfg: cfg}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		GhostTimeout: time.Minute, JobMaxAge: time.Hour, FakeClock: fake}
	if _, err := a.ApplyConfiguration(ctx); err != nil {
		b.Fatal(err)
	}
	// The first tick looks at every entry ahead of the clock too.
	if _, err := a.Tick(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		w, err := a.Tick(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if w.Written != 0 {
			b.Fatalf("a tick between events wrote %d entries", w.Written)
		}
	}
}
