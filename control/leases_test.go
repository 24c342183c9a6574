package control

import (
	"context"
	"errors"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/statedb"
)

// TestLeaseHeldElsewhere checks what each kind of periodic work does when
// another process holds its lease: a tick and a periodic listing skip
// their round, reading the configuration and a forced listing answer
// ErrBusy, and each runs again once the lease is released.
func TestLeaseHeldElsewhere(t *testing.T) {
	ctx := context.Background()
	a, _, conf := newApp(t, "a/one")
	a.Owner, a.LeaseWait = "this", time.Millisecond
	const other = "another process"
	var others []statedb.Lease
	for _, kind := range []string{LeaseConfig, LeaseListing, LeaseTick} {
		l, ok, err := a.DB.TakeLease(ctx, kind, other, time.Hour)
		if err != nil || !ok {
			t.Fatalf("take %s: %v, %v", kind, ok, err)
		}
		others = append(others, l)
	}
	conf.cfg.Commit = "c2"
	if _, err := a.ApplyConfiguration(ctx); !errors.Is(err, ErrBusy) || !errors.Is(err, statedb.ErrConflict) {
		t.Errorf("ApplyConfiguration: %v; want ErrBusy, a conflict", err)
	}
	if ls, err := a.ListDueHosts(ctx, false); err != nil || len(ls) != 0 {
		t.Errorf("ListDueHosts: %v, %v; want nothing", ls, err)
	}
	if _, err := a.ListDueHosts(ctx, true); !errors.Is(err, ErrBusy) {
		t.Errorf("forced ListDueHosts: %v; want ErrBusy", err)
	}
	if _, err := a.Tick(ctx); err != nil {
		t.Errorf("Tick: %v; want a skipped round", err)
	}
	if err := a.DB.View(ctx, func(tx *statedb.Tx) error {
		last, err := tx.LastTick(ctx)
		if last != 0 {
			t.Errorf("LastTick after a skipped tick = %d; want 0", last)
		}
		st, err2 := tx.ConfigState(ctx)
		if st.Commit != "c1" {
			t.Errorf("configuration in use %q; want c1", st.Commit)
		}
		return errors.Join(err, err2)
	}); err != nil {
		t.Fatal(err)
	}

	for _, l := range others {
		if err := a.DB.ReleaseLease(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := a.ApplyConfiguration(ctx); err != nil || res.Commit != "c2" {
		t.Errorf("ApplyConfiguration: %+v, %v; want c2 applied", res, err)
	}
	if _, err := a.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.DB.View(ctx, func(tx *statedb.Tx) error {
		if last, err := tx.LastTick(ctx); err != nil || last != tx.Now {
			t.Errorf("LastTick = %d, %v; want %d", last, err, tx.Now)
		}
		leases, err := tx.Leases(ctx)
		if len(leases) != 0 {
			t.Errorf("leases left held: %+v", leases)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestApplyHalfDoneElsewhere checks that a commit this process applied
// whole is read again when another process began applying a configuration
// since and did not finish: the lorries are not the commit's any more.
func TestApplyHalfDoneElsewhere(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newApp(t, "a/one")
	a.Config = &streamConfig{stubConfig: stubConfig{cfg: a.Config.(*stubConfig).cfg}}
	if _, err := a.ApplyConfiguration(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := a.ApplyConfiguration(ctx)
	if err != nil || res.Added+res.Changed+res.Removed != 0 {
		t.Fatalf("second apply: %+v, %v", res, err)
	}
	// Another process begins and stops halfway.
	if err := a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.BeginConfigLorries(ctx) }); err != nil {
		t.Fatal(err)
	}
	if err := a.DB.View(ctx, func(tx *statedb.Tx) error {
		p, err := tx.ConfigPartial(ctx)
		if !p {
			t.Error("ConfigPartial after BeginConfigLorries = false")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	st := a.Config.(*streamConfig)
	st.read = 0
	if _, err := a.ApplyConfiguration(ctx); err != nil {
		t.Fatal(err)
	}
	if st.read != 1 {
		t.Errorf("lorries read %d times after a half-done apply; want 1", st.read)
	}
	if err := a.DB.View(ctx, func(tx *statedb.Tx) error {
		p, err := tx.ConfigPartial(ctx)
		if p {
			t.Error("ConfigPartial after a whole apply = true")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// streamConfig is a stubConfig that streams, as confgit.Source does, and
// counts the reads of its lorries.
type streamConfig struct {
	stubConfig
	read int
}

func (s *streamConfig) ReadEach(ctx context.Context, n int, sections func(*confgit.Config) error, each func([]confgit.Lorry) error) (*confgit.Config, error) {
	cfg := *s.cfg
	cfg.Lorries = nil
	if err := sections(&cfg); errors.Is(err, confgit.ErrSkipFiles) {
		return &cfg, nil
	} else if err != nil {
		return nil, err
	}
	s.read++
	if err := each(s.cfg.Lorries); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// TestLeaseKeptAndLost checks that a lease taken for work is renewed while
// the work runs, and that the work's context ends once a renewal finds
// the lease lost to another process.
func TestLeaseKeptAndLost(t *testing.T) {
	ctx := context.Background()
	a, fake, _ := newApp(t)
	a.LeaseTerm = 3 * time.Second
	work, ok, err := a.takeLease(ctx, "test-work", 0)
	if !ok || err != nil {
		t.Fatalf("takeLease = %v, %v", ok, err)
	}
	taken := func() statedb.Lease {
		var l statedb.Lease
		a.DB.View(ctx, func(tx *statedb.Tx) error { l, _ = tx.Lease(ctx, "test-work"); return nil })
		return l
	}
	// The renewals move the expiry on with the clock.
	fake.Set(1002)
	deadline := time.Now().Add(20 * time.Second)
	for taken().Expires < 1005 {
		if time.Now().After(deadline) {
			t.Fatalf("lease not renewed: %+v", taken())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if work.Err() != nil {
		t.Fatalf("work ended while its lease was kept: %v", context.Cause(work))
	}
	// The clock jumps past the expiry and another process takes it.
	fake.Set(1100)
	if _, ok, err := a.DB.TakeLease(ctx, "test-work", "another", time.Minute); !ok || err != nil {
		t.Fatalf("another's TakeLease = %v, %v", ok, err)
	}
	select {
	case <-work.Done():
		if !errors.Is(context.Cause(work), statedb.ErrTaken) {
			t.Errorf("cause = %v; want ErrTaken", context.Cause(work))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("work went on after its lease was lost")
	}
	a.releaseLease(ctx, "test-work")
	if l := taken(); l.Owner != "another" {
		t.Errorf("releasing a lost lease took it from its holder: %+v", l)
	}
}
