package statedb

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"lorrycontroller.dev/lc/wire"
)

// A successful job's ref changes are kept with the job and go with it; a
// failed job's are not kept.
func TestJobRefs(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a")
	changes := &wire.RefChanges{
		Created:   []wire.RefChange{{Ref: "refs/tags/v1", New: "1111111111111111111111111111111111111111"}},
		Updated:   []wire.RefChange{{Ref: "refs/heads/main", Old: "2222222222222222222222222222222222222222", New: "3333333333333333333333333333333333333333"}},
		Deleted:   []wire.RefChange{},
		Truncated: true,
	}
	refsOf := func(id int64) (*wire.RefChanges, error) {
		var c *wire.RefChanges
		err := f.db.View(ctx, func(tx *Tx) error {
			var err error
			c, err = tx.JobRefs(ctx, id)
			return err
		})
		return c, err
	}
	run := func(exitCode int64, refs *wire.RefChanges) int64 {
		t.Helper()
		f.clock.Set(f.clock.Now().Unix() + 1000)
		a := f.mustGive(t, m1)
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(exitCode), Refs: refs}); err != nil {
			t.Fatal(err)
		}
		return a.Job.ID
	}

	ok := run(0, changes)
	if got, err := refsOf(ok); err != nil || !reflect.DeepEqual(got, changes) {
		t.Errorf("refs of a successful job: got %+v, %v; want %+v", got, err, changes)
	}
	failed := run(1, changes)
	if got, err := refsOf(failed); !errors.Is(err, ErrNotFound) {
		t.Errorf("refs of a failed job: got %+v, %v; want ErrNotFound", got, err)
	}
	none := run(0, nil)
	if got, err := refsOf(none); !errors.Is(err, ErrNotFound) {
		t.Errorf("refs of a job that reported none: got %+v, %v; want ErrNotFound", got, err)
	}
	f.update(t, func(tx *Tx) error { return tx.RemoveJob(ctx, ok) })
	if got, err := refsOf(ok); !errors.Is(err, ErrNotFound) {
		t.Errorf("refs of a removed job: got %+v, %v; want ErrNotFound", got, err)
	}
}

// A successful job that changed refs puts one refs-changed into the outbox,
// with its changes; one that changed none, or failed, puts none.
func TestRefsChangedNotified(t *testing.T) {
	f := newFixture(t, Options{Notify: map[string]bool{EventRefsChanged: true}})
	f.lorries(t, "a", "b", "c")
	changes := &wire.RefChanges{Updated: []wire.RefChange{{Ref: "refs/heads/main",
		Old: "2222222222222222222222222222222222222222", New: "3333333333333333333333333333333333333333"}}}
	for _, r := range []struct {
		exit int64
		refs *wire.RefChanges
	}{{0, changes}, {0, &wire.RefChanges{}}, {1, changes}} {
		a := f.mustGive(t, m1)
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(r.exit), Refs: r.refs}); err != nil {
			t.Fatal(err)
		}
	}
	ds := f.outbox(t)
	if len(ds) != 1 || ds[0].Event != EventRefsChanged {
		t.Fatalf("outbox %+v; want one refs-changed", ds)
	}
	var p RefsChanged
	if err := json.Unmarshal([]byte(ds[0].Payload), &p); err != nil {
		t.Fatal(err)
	}
	if p.Lorry != "a" || p.JobID != 1 || !reflect.DeepEqual(p.Refs, changes) {
		t.Errorf("refs-changed payload %+v; want lorry a, job 1, refs %+v", p, changes)
	}
}
