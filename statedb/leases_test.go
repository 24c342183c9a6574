package statedb

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestTakeLease(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	other := f.second(t, Options{})
	const term = 30 * time.Second
	take := func(db *DB, owner string) bool {
		t.Helper()
		var ok bool
		err := db.Update(ctx, func(tx *Tx) error {
			var err error
			ok, err = tx.TakeLease(ctx, "tick", owner, term)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	lease := func() Lease {
		t.Helper()
		var l Lease
		f.view(t, func(tx *Tx) error { var err error; l, err = tx.Lease(ctx, "tick"); return err })
		return l
	}
	tests := []struct {
		name  string
		at    int64
		db    *DB
		owner string
		want  bool
		// then is the lease after the call.
		then Lease
	}{
		{"free", 1000, f.db, "A", true, Lease{"tick", "A", 1000, 1030}},
		{"held by another, unexpired", 1010, other, "B", false, Lease{"tick", "A", 1000, 1030}},
		{"renewed by its owner", 1020, f.db, "A", true, Lease{"tick", "A", 1000, 1050}},
		{"held by another, at its last second", 1049, other, "B", false, Lease{"tick", "A", 1000, 1050}},
		{"expired", 1050, other, "B", true, Lease{"tick", "B", 1050, 1080}},
		{"the old owner finds it taken", 1051, f.db, "A", false, Lease{"tick", "B", 1050, 1080}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.Set(tt.at)
			if got := take(tt.db, tt.owner); got != tt.want {
				t.Errorf("TakeLease by %s at %d = %v; want %v", tt.owner, tt.at, got, tt.want)
			}
			if got := lease(); got != tt.then {
				t.Errorf("lease %+v; want %+v", got, tt.then)
			}
		})
	}

	err := f.db.Update(ctx, func(tx *Tx) error { return tx.ReleaseLease(ctx, "tick", "A") })
	if !errors.Is(err, ErrTaken) {
		t.Errorf("A releasing B's lease: %v; want ErrTaken", err)
	}
	if err := other.Update(ctx, func(tx *Tx) error { return tx.ReleaseLease(ctx, "tick", "B") }); err != nil {
		t.Fatal(err)
	}
	f.view(t, func(tx *Tx) error {
		if _, err := tx.Lease(ctx, "tick"); !errors.Is(err, ErrNotFound) {
			t.Errorf("lease after release: %v; want ErrNotFound", err)
		}
		return nil
	})
	if err := other.Update(ctx, func(tx *Tx) error { return tx.ReleaseLease(ctx, "tick", "B") }); err != nil {
		t.Errorf("releasing a lease no one holds: %v; want nil", err)
	}
	if !take(f.db, "A") {
		t.Errorf("A could not take the lease released before it expired")
	}
	var all []Lease
	f.view(t, func(tx *Tx) error { var err error; all, err = tx.Leases(ctx); return err })
	if len(all) != 1 || all[0].Owner != "A" {
		t.Errorf("leases %+v; want A's alone", all)
	}
	for _, bad := range []struct {
		kind, owner string
		term        time.Duration
	}{{"", "A", term}, {"tick", "", term}, {"tick", "A", 0}} {
		err := f.db.Update(ctx, func(tx *Tx) error { _, err := tx.TakeLease(ctx, bad.kind, bad.owner, bad.term); return err })
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("TakeLease(%q, %q, %s) = %v; want ErrInvalid", bad.kind, bad.owner, bad.term, err)
		}
	}
}
