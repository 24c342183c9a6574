package control

import (
	"context"
	"errors"
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
