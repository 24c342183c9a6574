package statedb

import (
	"context"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// TestClockSkew: two processes share a database, one of them on a
// machine whose clock is 90 s ahead (or behind). Following the server's
// clock, both keep one time: the one ahead never takes the lease the
// other holds, and never ends the other's live job as a ghost.
func TestClockSkew(t *testing.T) {
	for _, skew := range []time.Duration{90 * time.Second, -90 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			ctx := context.Background()
			place := dbtest.Place(t)
			open := func(c clock.Clock) *DB {
				db, err := Open(ctx, place, Options{Clock: c, ServerClock: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			right, skewed := open(clock.System{}), open(clock.Offset(skew))
			if d := right.Now() - skewed.Now(); d < -1 || d > 1 {
				t.Errorf("the two processes' times differ by %d s; want at most 1", d)
			}
			if off := skewed.ClockOffset(); (off + skew).Abs() > time.Second {
				t.Errorf("offset of the server's clock %v; want %v", off, -skew)
			}

			// Whichever is ahead, the other's fresh lease is its.
			first, second := right, skewed
			if skew < 0 {
				first, second = skewed, right
			}
			if _, ok, err := first.TakeLease(ctx, "tick", "first", 30*time.Second); err != nil || !ok {
				t.Fatalf("first TakeLease = %v, %v", ok, err)
			}
			if l, ok, err := second.TakeLease(ctx, "tick", "second", 30*time.Second); err != nil || ok {
				t.Errorf("the second took the first's fresh lease: %+v, %v, %v", l, ok, err)
			}

			// A job just handed out by the one is no ghost to the other.
			want := []NewLorry{{Path: "a", Text: `{"a":{"type":"git"}}`, Kind: "lorry", Interval: 100, Timeout: 50}}
			err := first.Update(ctx, func(tx *Tx) error {
				if _, err := tx.SetConfigLorries(ctx, want, Kept{}); err != nil {
					return err
				}
				a, err := tx.GiveMeJob(ctx, MinionID{Name: "m", Host: "h", PID: 1})
				if err == nil && a.Idle != "" {
					t.Fatalf("no job handed out: %+v", a)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, db := range []*DB{right, skewed} {
				var ids []int64
				if err := db.Update(ctx, func(tx *Tx) error { var err error; ids, err = tx.RemoveGhostJobs(ctx, 60); return err }); err != nil {
					t.Fatal(err)
				}
				if len(ids) != 0 {
					t.Errorf("a live job ended as a ghost, 60 s timeout: %v", ids)
				}
			}
		})
	}
}
