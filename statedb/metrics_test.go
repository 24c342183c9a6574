package statedb

import (
	"context"
	"testing"
)

// TestLastJobIDAndUsage reads the figures /metrics takes from the
// database beside the rows: the last job id, which removing jobs does
// not lower, and the database's size; and reclaims its space.
func TestLastJobIDAndUsage(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	lastID := func() int64 {
		t.Helper()
		var id int64
		f.view(t, func(tx *Tx) error {
			var err error
			id, err = tx.LastJobID(ctx)
			return err
		})
		return id
	}
	if got := lastID(); got != 0 {
		t.Errorf("last job id of a new database = %d; want 0", got)
	}
	f.lorries(t, "a", "b", "c")
	for range 3 {
		a := f.mustGive(t, m1)
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(0)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := lastID(); got != 3 {
		t.Errorf("last job id after three jobs = %d; want 3", got)
	}
	f.update(t, func(tx *Tx) error { _, err := tx.exec(ctx, `DELETE FROM jobs`); return err })
	if got := lastID(); got != 3 {
		t.Errorf("last job id after removing every job = %d; want 3 still", got)
	}
	u, err := f.db.Usage(ctx)
	if err != nil || u.FileBytes <= 0 || u.FreeBytes < 0 {
		t.Errorf("Usage = %+v, %v; want a size and no error", u, err)
	}
	if _, _, err := f.db.Reclaim(ctx); err != nil {
		t.Errorf("Reclaim: %v", err)
	}
}
