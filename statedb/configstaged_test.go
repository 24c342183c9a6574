package statedb

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// stagedConfig is a configuration of n lorries with something of every
// kind of lorry: scheduled, in a named queue or none, a scraper with its
// runtime, with and without backoff settings.
func stagedConfig(n int) []NewLorry {
	var want []NewLorry
	for i := range n {
		p := fmt.Sprintf("x/p%04d", i)
		l := NewLorry{Path: p, Text: `{"` + p + `":{"type":"git"}}`, Kind: "lorry", FromPath: "x.lorry",
			Interval: 100 + int64(i), Timeout: 50, UpstreamURL: "https://git.example.org/" + p}
		switch i % 4 {
		case 1:
			l.Schedule, l.FirstDue = `{"cron":"0 3 * * *"}`, 5000
		case 2:
			l.Queue, l.MaxBackoff, l.HardFailAfter = "fast", 600, 3
		case 3:
			l.Kind, l.CommitID = "scraper", "c0ffee"
			l.Runtime = Runtime{Name: "py", Version: "1", ID: "py-1", Python: "/usr/bin/python3"}
		}
		want = append(want, l)
	}
	return want
}

// lorryRows are the rows of lorries in queue order, each column named,
// without queue_pos.
func (f *fixture) lorryRows(t *testing.T) []string {
	t.Helper()
	var out []string
	f.view(t, func(tx *Tx) error {
		rows, err := tx.query(context.Background(), `SELECT * FROM lorries ORDER BY queue_pos`)
		if err != nil {
			return err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			var b strings.Builder
			for i, c := range cols {
				if c != "queue_pos" {
					fmt.Fprintf(&b, "%s=%v ", c, vals[i])
				}
			}
			out = append(out, b.String())
		}
		return rows.Err()
	})
	return out
}

// applyConfig applies want as control does: begun, added in batches of
// two, the unseen removed, ended, each step a transaction of its own.
func (f *fixture) applyConfig(t *testing.T, want []NewLorry) LorryChanges {
	t.Helper()
	ctx := context.Background()
	var ch LorryChanges
	f.update(t, func(tx *Tx) error { return tx.BeginConfigLorries(ctx) })
	for rest := want; len(rest) > 0; {
		n := min(500, len(rest))
		f.update(t, func(tx *Tx) error {
			c, err := tx.AddConfigLorries(ctx, rest[:n])
			ch.Added += c.Added
			return err
		})
		rest = rest[n:]
	}
	f.update(t, func(tx *Tx) error { return tx.KeepConfigLorries(ctx, Kept{}) })
	for after, done := "", false; !done; {
		f.update(t, func(tx *Tx) error {
			n, last, err := tx.RemoveUnseenLorries(ctx, after, 2)
			ch.Removed += n
			after, done = last, last == ""
			if err == nil && done {
				err = tx.CompleteConfigLorries(ctx)
			}
			return err
		})
	}
	f.update(t, func(tx *Tx) error { return tx.EndConfigLorries(ctx) })
	return ch
}

// The first configuration of an empty run queue is staged and put in
// place at once; the lorries are as a configuration applied lorry by
// lorry makes them.
func TestStagedConfigLikeOneByOne(t *testing.T) {
	// More than one statement's worth.
	want := stagedConfig(stagedChunk + 7)
	staged := newFixture(t, Options{})
	ch := staged.applyConfig(t, want)
	if ch.Added != len(want) {
		t.Errorf("added %d; want %d", ch.Added, len(want))
	}
	// A run queue that holds a lorry already is applied lorry by lorry;
	// the lorry goes, being in neither configuration.
	oneByOne := newFixture(t, Options{})
	oneByOne.lorries(t, "a/old")
	oneByOne.applyConfig(t, want)
	got, wantRows := staged.lorryRows(t), oneByOne.lorryRows(t)
	if !reflect.DeepEqual(got, wantRows) {
		t.Errorf("staged lorries:\n%s\nwant, as applied one by one:\n%s", strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
	}
	// The staged ones follow the queue from its start, and a lorry
	// added later goes after them.
	if p := staged.lorry(t, "x/p0000").QueuePos; p != 0 {
		t.Errorf("first staged lorry at %d; want 0", p)
	}
	staged.applyConfig(t, append(want, NewLorry{Path: "x/z", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1}))
	if q := staged.queue(t); q[len(q)-1] != "x/z" || len(q) != len(want)+1 {
		t.Errorf("queue %v; want the %d staged then x/z", q, len(want))
	}
}

// A lorry that a host's listing puts at a staged path before the staged
// lorries are in place is taken over by the configuration, as it is when
// applied lorry by lorry; the host's other lorries stay.
func TestStagedConfigTakesOverHostLorry(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	want := stagedConfig(7)
	f.update(t, func(tx *Tx) error { return tx.BeginConfigLorries(ctx) })
	f.update(t, func(tx *Tx) error { _, err := tx.AddConfigLorries(ctx, want); return err })
	f.update(t, func(tx *Tx) error {
		_, _, err := tx.SetHostLorries(ctx, "h", []NewLorry{
			{Path: "x/p0000", Text: `{"host":1}`, Kind: "lorry", Interval: 9, Timeout: 9},
			{Path: "h/other", Text: `{"host":2}`, Kind: "lorry", Interval: 9, Timeout: 9},
		})
		return err
	})
	f.update(t, func(tx *Tx) error { return tx.KeepConfigLorries(ctx, Kept{}) })
	f.update(t, func(tx *Tx) error {
		if _, _, err := tx.RemoveUnseenLorries(ctx, "", 100); err != nil {
			return err
		}
		if err := tx.CompleteConfigLorries(ctx); err != nil {
			return err
		}
		return tx.EndConfigLorries(ctx)
	})
	if l := f.lorry(t, "x/p0000"); l.Generated || l.Text != want[0].Text || l.Interval != want[0].Interval {
		t.Errorf("x/p0000 generated %v, text %s, interval %d; want the configuration's, %s, %d",
			l.Generated, l.Text, l.Interval, want[0].Text, want[0].Interval)
	}
	if l := f.lorry(t, "h/other"); !l.Generated {
		t.Error("h/other is no longer the host's")
	}
	if q := f.queue(t); len(q) != len(want)+1 {
		t.Errorf("queue %v; want the %d lorries of the configuration and h/other", q, len(want))
	}
}

// Staged lorries are not in the run queue until put in place; an apply
// that stopped halfway leaves them staged, and the next apply puts them
// in place before it begins, as if they had been added one by one.
func TestStagedConfigStoppedHalfway(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	want := stagedConfig(7)
	f.update(t, func(tx *Tx) error { return tx.BeginConfigLorries(ctx) })
	f.update(t, func(tx *Tx) error { _, err := tx.AddConfigLorries(ctx, want[:3]); return err })
	// PostgreSQL applies lorry by lorry.
	if q := f.queue(t); len(q) != 0 && !dbtest.Postgres() {
		t.Errorf("queue while staging %v; want it empty", q)
	}
	// Another process takes over: the write session's paths seen are
	// its own, and what was staged is put in place when it begins.
	f.update(t, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `DELETE FROM config_seen`); err != nil {
			return err
		}
		return tx.BeginConfigLorries(ctx)
	})
	if q := f.queue(t); !slices.Equal(q, []string{"x/p0000", "x/p0001", "x/p0002"}) {
		t.Errorf("queue once the next apply began %v; want the three staged", q)
	}
	var partial bool
	f.view(t, func(tx *Tx) error {
		var err error
		partial, err = tx.ConfigPartial(ctx)
		return err
	})
	if !partial {
		t.Error("ConfigPartial = false during an apply")
	}
	f.update(t, func(tx *Tx) error { return tx.EndConfigLorries(ctx) })
	ch := f.applyConfig(t, want[2:])
	if ch.Added != len(want)-3 || ch.Removed != 2 {
		t.Errorf("changes %+v; want %d added, 2 removed", ch, len(want)-3)
	}
	var paths []string
	for _, l := range want[2:] {
		paths = append(paths, l.Path)
	}
	if q := f.queue(t); !slices.Equal(q, paths) {
		t.Errorf("queue %v; want %v", q, paths)
	}
}
