package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"lorrycontroller.dev/lc/statedb"
)

func (s suite) takeLease(t *testing.T) {
	ctx := context.Background()
	f := s.newFixture(t, statedb.Options{})
	other := f.second(t, statedb.Options{})
	const term = 30 * time.Second
	take := func(db *statedb.DB, owner string) (statedb.Lease, bool) {
		t.Helper()
		var l statedb.Lease
		var ok bool
		err := db.Update(ctx, func(tx *statedb.Tx) error {
			var err error
			l, ok, err = tx.TakeLease(ctx, "tick", owner, term)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return l, ok
	}
	lease := func() statedb.Lease {
		t.Helper()
		var l statedb.Lease
		f.view(t, func(tx *statedb.Tx) error { var err error; l, err = tx.Lease(ctx, "tick"); return err })
		return l
	}
	tests := []struct {
		name  string
		at    int64
		db    *statedb.DB
		owner string
		want  bool
		// then is the lease after the call.
		then statedb.Lease
	}{
		{"free", 1000, f.db, "A", true, tick("A", 1, 1000, 1030)},
		{"held by another, unexpired", 1010, other, "B", false, tick("A", 1, 1000, 1030)},
		{"renewed by its owner", 1020, f.db, "A", true, tick("A", 1, 1000, 1050)},
		{"held by another, at its last second", 1049, other, "B", false, tick("A", 1, 1000, 1050)},
		{"expired", 1050, other, "B", true, tick("B", 2, 1050, 1080)},
		{"the old owner finds it taken", 1051, f.db, "A", false, tick("B", 2, 1050, 1080)},
		{"expired, taken again by its owner", 1080, other, "B", true, tick("B", 3, 1080, 1110)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.Set(tt.at)
			got, ok := take(tt.db, tt.owner)
			if ok != tt.want {
				t.Errorf("TakeLease by %s at %d = %v; want %v", tt.owner, tt.at, ok, tt.want)
			}
			if ok && got != tt.then {
				t.Errorf("TakeLease by %s at %d gave %+v; want %+v", tt.owner, tt.at, got, tt.then)
			}
			if got := lease(); got != tt.then {
				t.Errorf("lease %+v; want %+v", got, tt.then)
			}
		})
	}

	held := lease()
	a := held
	a.Owner = "A"
	err := f.db.Update(ctx, func(tx *statedb.Tx) error { return tx.ReleaseLease(ctx, a) })
	if !errors.Is(err, statedb.ErrTaken) {
		t.Errorf("A releasing B's lease: %v; want ErrTaken", err)
	}
	if err := other.Update(ctx, func(tx *statedb.Tx) error { return tx.ReleaseLease(ctx, held) }); err != nil {
		t.Fatal(err)
	}
	f.view(t, func(tx *statedb.Tx) error {
		if _, err := tx.Lease(ctx, "tick"); !errors.Is(err, statedb.ErrNotFound) {
			t.Errorf("lease after release: %v; want ErrNotFound", err)
		}
		return nil
	})
	if err := other.Update(ctx, func(tx *statedb.Tx) error { return tx.ReleaseLease(ctx, held) }); err != nil {
		t.Errorf("releasing a lease no one holds: %v; want nil", err)
	}
	if l, ok := take(f.db, "A"); !ok || l.Token != held.Token+1 {
		t.Errorf("A taking the lease released before it expired: %+v, %v; want token %d", l, ok, held.Token+1)
	}
	var all []statedb.Lease
	f.view(t, func(tx *statedb.Tx) error { var err error; all, err = tx.Leases(ctx); return err })
	if len(all) != 1 || all[0].Owner != "A" {
		t.Errorf("leases %+v; want A's alone", all)
	}
	for _, bad := range []struct {
		kind, owner string
		term        time.Duration
	}{{"", "A", term}, {"tick", "", term}, {"tick", "A", 0}} {
		err := f.db.Update(ctx, func(tx *statedb.Tx) error { _, _, err := tx.TakeLease(ctx, bad.kind, bad.owner, bad.term); return err })
		if !errors.Is(err, statedb.ErrInvalid) {
			t.Errorf("TakeLease(%q, %q, %s) = %v; want ErrInvalid", bad.kind, bad.owner, bad.term, err)
		}
	}
}

// fencedLease: a holder frozen past its term, whose lease another
// took, and gave up, and took again, in any order, finds at every step
// that its transactions' fence (CheckLease) and its renewals refuse it,
// and never gets its old token back; while the holder that no one
// disturbed passes its fence after its term ran out, as no one did its
// work meanwhile.
func (s suite) fencedLease(t *testing.T) {
	ctx := context.Background()
	f := s.newFixture(t, statedb.Options{})
	other := f.second(t, statedb.Options{})
	const term = 10 * time.Second
	check := func(db *statedb.DB, l statedb.Lease) error {
		return db.Update(ctx, func(tx *statedb.Tx) error { return tx.CheckLease(ctx, l) })
	}
	a, ok, err := f.db.TakeLease(ctx, "read-configuration", "A", term)
	if err != nil || !ok {
		t.Fatalf("A's TakeLease = %v, %v", ok, err)
	}
	if err := check(f.db, a); err != nil {
		t.Errorf("A's fence in its term: %v", err)
	}
	f.clock.Set(1000 + 60)
	if err := check(f.db, a); err != nil {
		t.Errorf("A's fence past its term, no one else having taken it: %v", err)
	}
	if err := f.db.RenewLease(ctx, a, term); err != nil {
		t.Errorf("A's renewal past its term, no one else having taken it: %v", err)
	}
	f.clock.Set(1000 + 120)

	// What B may do while A is frozen, each ending with A's fence
	// checked.
	steps := []struct {
		name string
		do   func() error
	}{
		{"B takes it", func() error {
			_, ok, err := other.TakeLease(ctx, "read-configuration", "B", term)
			return errors.Join(err, boolErr(ok))
		}},
		{"B renews it", func() error {
			l, _ := currentLease(ctx, other, "read-configuration")
			return other.RenewLease(ctx, l, term)
		}},
		{"B gives it up", func() error {
			l, _ := currentLease(ctx, other, "read-configuration")
			return other.ReleaseLease(ctx, l)
		}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if err := check(f.db, a); !errors.Is(err, statedb.ErrTaken) {
			t.Errorf("after %s, A's fence: %v; want ErrTaken", st.name, err)
		}
		if err := f.db.RenewLease(ctx, a, term); !errors.Is(err, statedb.ErrTaken) {
			t.Errorf("after %s, A's renewal: %v; want ErrTaken", st.name, err)
		}
		if err := f.db.ReleaseLease(ctx, a); err != nil && !errors.Is(err, statedb.ErrTaken) {
			t.Errorf("after %s, A's release: %v; want nil or ErrTaken", st.name, err)
		}
	}
	if l, err := currentLease(ctx, f.db, "read-configuration"); !errors.Is(err, statedb.ErrNotFound) {
		t.Errorf("A's release made the lease %+v, %v; want it free still", l, err)
	}
	// A, woken, may take it again as a new holding, under a new token;
	// its old one stays refused.
	a2, ok, err := f.db.TakeLease(ctx, "read-configuration", "A", term)
	if err != nil || !ok || a2.Token <= a.Token+1 {
		t.Fatalf("A's new TakeLease = %+v, %v, %v; want a token past %d", a2, ok, err, a.Token+1)
	}
	if err := check(f.db, a); !errors.Is(err, statedb.ErrTaken) {
		t.Errorf("A's old fence, A holding again: %v; want ErrTaken", err)
	}
	if err := check(f.db, a2); err != nil {
		t.Errorf("A's new fence: %v", err)
	}
}

// tick is a lease of kind tick.
func tick(owner string, token, taken, expires int64) statedb.Lease {
	return statedb.Lease{Kind: "tick", Owner: owner, Token: token, Taken: taken, Expires: expires}
}

func boolErr(ok bool) error {
	if !ok {
		return errors.New("not taken")
	}
	return nil
}

func currentLease(ctx context.Context, db *statedb.DB, kind string) (statedb.Lease, error) {
	var l statedb.Lease
	err := db.View(ctx, func(tx *statedb.Tx) error { var err error; l, err = tx.Lease(ctx, kind); return err })
	return l, err
}
