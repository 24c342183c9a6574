package control

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// pausedConfig streams its lorries one batch at a time, as confgit.Source
// does, and stops after the first batch until resume is closed: a WEBAPP
// frozen mid-apply.
type pausedConfig struct {
	cfg            *confgit.Config
	paused, resume chan struct{}
}

func (p *pausedConfig) Read(context.Context) (*confgit.Config, error) { return p.cfg, nil }

func (p *pausedConfig) ReadEach(ctx context.Context, n int, sections func(*confgit.Config) error, each func([]confgit.Lorry) error) (*confgit.Config, error) {
	cfg := *p.cfg
	cfg.Lorries = nil
	if err := sections(&cfg); err != nil {
		return nil, err
	}
	for i, l := range p.cfg.Lorries {
		if i == 1 {
			close(p.paused)
			<-p.resume
		}
		if err := each([]confgit.Lorry{l}); err != nil {
			return nil, err
		}
	}
	return &cfg, nil
}

func lorriesOf(prefix string, n int) []confgit.Lorry {
	var ls []confgit.Lorry
	for i := range n {
		p := prefix + "/" + string(rune('a'+i))
		ls = append(ls, confgit.Lorry{Path: p, Text: `{"` + p + `":{"type":"git","url":"u"}}`, Type: "git",
			Interval: time.Hour, Timeout: time.Minute})
	}
	return ls
}

// TestFrozenApplyWritesNothing: WEBAPP A applies an old commit and is
// frozen past its lease's term mid-apply; WEBAPP B takes the lease,
// applies a newer commit and gives the lease up. A, woken, writes
// nothing more (its next transaction's fence refuses it), and the lorries
// are the newer commit's, whatever A had begun.
func TestFrozenApplyWritesNothing(t *testing.T) {
	ctx := context.Background()
	place := dbtest.Place(t)
	fake := &clock.Fake{}
	fake.Set(1000)
	a, _, _ := newAppAt(t, place, fake)
	b, _, _ := newAppAt(t, place, fake)
	a.Owner, b.Owner = "A", "B"
	// A's keeper does not renew while the test runs: A is frozen.
	a.LeaseTerm = time.Hour
	b.LeaseTerm = time.Minute
	a.ConfigBatch, b.ConfigBatch = 1, 1
	old := &pausedConfig{cfg: &confgit.Config{Commit: "old", Lorries: lorriesOf("old", 3)},
		paused: make(chan struct{}), resume: make(chan struct{})}
	a.Config = old
	b.Config = &stubConfig{cfg: &confgit.Config{Commit: "new", Lorries: lorriesOf("new", 2)}}

	type result struct {
		res ConfigResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := a.ApplyConfiguration(ctx)
		done <- result{res, err}
	}()
	<-old.paused
	fake.Set(fake.Now().Unix() + int64(time.Hour.Seconds()) + 1)
	if res, err := b.ApplyConfiguration(ctx); err != nil || res.Commit != "new" {
		t.Fatalf("B's apply while A is frozen: %+v, %v; want the new commit applied", res, err)
	}
	close(old.resume)
	r := <-done
	if !errors.Is(r.err, statedb.ErrTaken) {
		t.Errorf("A's apply, woken: %+v, %v; want ErrTaken", r.res, r.err)
	}
	err := a.DB.View(ctx, func(tx *statedb.Tx) error {
		st, err := tx.ConfigState(ctx)
		if err != nil {
			return err
		}
		if st.Commit != "new" {
			t.Errorf("configuration in use %q; want new", st.Commit)
		}
		ls, err := tx.Lorries(ctx)
		if err != nil {
			return err
		}
		var paths []string
		for _, l := range ls {
			paths = append(paths, l.Path)
		}
		slices.Sort(paths)
		want := []string{"new/a", "new/b"}
		if len(paths) != len(want) || paths[0] != want[0] || paths[1] != want[1] {
			t.Errorf("lorries %q; want %q", paths, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLeaseRenewedBesideItsWork: a lease is renewed while a transaction
// of its own work is open, however long that runs, rather than waiting
// for it and giving the work up. On PostgreSQL, whose sessions write side
// by side; on SQLite one writer holds the whole database, and the
// renewal waits for the transaction under way.
func TestLeaseRenewedBesideItsWork(t *testing.T) {
	ctx := context.Background()
	fake := &clock.Fake{}
	fake.Set(1000)
	a, _, _ := newAppAt(t, dbtest.Database(t), fake)
	a.LeaseTerm = 3 * time.Second
	work, ok, err := a.takeLease(ctx, "test-work", 0)
	if !ok || err != nil {
		t.Fatalf("takeLease = %v, %v", ok, err)
	}
	defer a.releaseLease(ctx, "test-work")
	expires := func() int64 {
		var l statedb.Lease
		if err := a.DB.View(ctx, func(tx *statedb.Tx) error { var err error; l, err = tx.Lease(ctx, "test-work"); return err }); err != nil {
			t.Fatal(err)
		}
		return l.Expires
	}
	// The work's transaction stays open until the keeper has renewed
	// the lease twice, past a whole term.
	err = a.DB.Update(work, func(tx *statedb.Tx) error {
		if err := a.checkLease(work, tx, "test-work"); err != nil {
			return err
		}
		deadline := time.Now().Add(30 * time.Second)
		for _, at := range []int64{1010, 1020} {
			fake.Set(at)
			for expires() < at+3 {
				if time.Now().After(deadline) {
					return fmt.Errorf("the lease was not renewed past %d while its work's transaction was open: expires %d", at, expires())
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the work's transaction: %v", err)
	}
	if work.Err() != nil {
		t.Errorf("the work ended: %v", context.Cause(work))
	}
}
