package statedb

import (
	"bytes"
	"context"
	"testing"
)

// TestReclaimKeepsTheFileBounded fills the database with jobs and their
// output, removes the old ones round after round, and checks that the file
// shrinks back after each removal instead of keeping its largest size.
func TestReclaimKeepsTheFileBounded(t *testing.T) {
	sqliteOnly(t)
	f := newFixture(t, Options{})
	ctx := context.Background()
	paths := []string{"a", "b", "c", "d"}
	f.lorries(t, paths...)
	out := bytes.Repeat([]byte("fetching objects\n"), 2<<10) // 34 KiB
	now := int64(1000)
	round := func(jobsPerLorry int) {
		t.Helper()
		for range jobsPerLorry {
			for range paths {
				a := f.mustGive(t, m1)
				for range 4 {
					if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: out}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(0)}); err != nil {
					t.Fatal(err)
				}
			}
			now += 1000 // past every lorry's interval
			f.clock.Set(now)
		}
	}
	removeAndReclaim := func() (before, after Usage) {
		t.Helper()
		f.update(t, func(tx *Tx) error { _, err := tx.RemoveOldJobs(ctx, 1); return err })
		before, after, err := f.db.Reclaim(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return before, after
	}
	autoVacuum := func() int {
		t.Helper()
		// Not through a session's statement cache: this pragma's answer is
		// fixed when it is prepared.
		f.db.write.mu.Lock()
		defer f.db.write.mu.Unlock()
		var mode int
		if err := f.db.write.conn.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		return mode
	}

	if got := autoVacuum(); got != autoVacuumNone {
		t.Fatalf("auto_vacuum of a new database = %d; want %d", got, autoVacuumNone)
	}
	// The newest job of each lorry stays, with its output.
	live := int64(len(paths)) * 4 * int64(len(out))
	var firstAfter Usage
	for r := range 4 {
		round(5)
		before, after := removeAndReclaim()
		t.Logf("round %d: %d bytes (%d free) before, %d (%d free) after", r, before.FileBytes, before.FreeBytes, after.FileBytes, after.FreeBytes)
		if before.FileBytes < 4*live {
			t.Fatalf("round %d: %d bytes before removal; the test wants the jobs to have filled more than %d", r, before.FileBytes, 4*live)
		}
		if after.FreeBytes != 0 {
			t.Errorf("round %d: %d bytes still free after Reclaim; want 0", r, after.FreeBytes)
		}
		if after.FileBytes > 2*live {
			t.Errorf("round %d: %d bytes after Reclaim; want at most %d (twice the live output)", r, after.FileBytes, 2*live)
		}
		if r == 0 {
			firstAfter = after
			if got := autoVacuum(); got != autoVacuumIncremental {
				t.Errorf("auto_vacuum after the first Reclaim = %d; want %d", got, autoVacuumIncremental)
			}
		} else if after.FileBytes > firstAfter.FileBytes+live/4 {
			t.Errorf("round %d: %d bytes after Reclaim; the first round left %d: the file grows", r, after.FileBytes, firstAfter.FileBytes)
		}
	}

	var left []int64
	f.db.View(ctx, func(tx *Tx) error {
		var err error
		left, err = tx.JobIDs(ctx)
		return err
	})
	if len(left) != len(paths) {
		t.Errorf("jobs left = %v; want the newest of each of %d lorries", left, len(paths))
	}
	for _, id := range left {
		var o string
		f.db.View(ctx, func(tx *Tx) error {
			var err error
			o, err = tx.Output(ctx, id)
			return err
		})
		if want := 4 * len(out); len(o) != want {
			t.Errorf("job %d output is %d bytes after Reclaim; want %d", id, len(o), want)
		}
	}
}
