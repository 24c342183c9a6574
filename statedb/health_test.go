package statedb

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestCheckWritesSeesAFullDatabase(t *testing.T) {
	sqliteOnly(t)
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.lorries(t, "a/b")
	m1 := MinionID{Name: "m1", Host: "h", PID: 1}
	a := f.mustGive(t, m1)
	if err := f.db.CheckWrites(ctx); err != nil {
		t.Fatalf("CheckWrites on a new database: %v", err)
	}

	size, err := f.db.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.LimitSize(ctx, size); err != nil {
		t.Fatal(err)
	}
	// The write that finds the database full is remembered.
	_, err = f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: bytes.Repeat([]byte("x"), 1<<20)})
	if err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("job update into a full database: %v; want it full", err)
	}
	if err := f.db.Ping(ctx); err != nil {
		t.Errorf("Ping of a full database: %v; want reads to answer", err)
	}
	if err := f.db.CheckWrites(ctx); err == nil {
		t.Errorf("CheckWrites after a write failed for want of space: nil; want the failure")
	}
	// A new look at the database, with no write of its own to go by,
	// still sees it full.
	f.db.lastWrite.Store(nil)
	if err := f.db.CheckWrites(ctx); err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("CheckWrites of a full database with no write to go by: %v; want it full", err)
	}

	// Space is back, but no real write has said so yet: the probe does
	// not override the write that failed.
	if err := f.db.LimitSize(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.db.CheckWrites(ctx); err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("CheckWrites once space is back, before a real write: %v; want the write's failure", err)
	}
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: bytes.Repeat([]byte("x"), 1<<20)}); err != nil {
		t.Errorf("job update once space is back: %v", err)
	}
	if err := f.db.CheckWrites(ctx); err != nil {
		t.Errorf("CheckWrites after a real write committed: %v; want nil", err)
	}
	// With no write to go by, the probe runs.
	f.db.lastWrite.Store(nil)
	if err := f.db.CheckWrites(ctx); err != nil {
		t.Errorf("CheckWrites by its probe: %v; want nil", err)
	}
	var probe bool
	f.db.View(ctx, func(tx *Tx) error {
		_, probe, err = tx.setting(ctx, "write_probe")
		return err
	})
	if probe {
		t.Errorf("the write probe left its row behind")
	}
}

func TestStorageFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{name: "not found", err: ErrNotFound, want: false},
		{name: "full", err: codeError(13), want: true},
		{name: "io error, extended", err: codeError(10 | 3<<8), want: true},
		{name: "constraint", err: codeError(19), want: false},
	} {
		if got := storageFailure(tc.err); got != tc.want {
			t.Errorf("%s: storageFailure = %v; want %v", tc.name, got, tc.want)
		}
	}
}

type codeError int

func (e codeError) Error() string { return "sqlite error" }
func (e codeError) Code() int     { return int(e) }
