package statedb

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func (f *fixture) runNow(t *testing.T, path string) RunNow {
	t.Helper()
	var r RunNow
	f.update(t, func(tx *Tx) error {
		var err error
		r, err = tx.RunLorryNow(context.Background(), path)
		return err
	})
	return r
}

// An idle lorry asked to run now is due at once and first in the queue,
// whatever its interval says.
func TestRunLorryNowIdle(t *testing.T) {
	f := newFixture(t, Options{})
	f.lorries(t, "a", "b", "c")
	m := MinionID{Name: "m1", Host: "h", PID: 1}
	for range 3 {
		a := f.mustGive(t, m)
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m, Exit: exit(0)}); err != nil {
			t.Fatal(err)
		}
	}
	f.idle(t, m, "all ran, interval 100")

	if got, want := f.runNow(t, "b"), (RunNow{Path: "b", Due: true}); got != want {
		t.Errorf("RunLorryNow(b) = %+v; want %+v", got, want)
	}
	if got, want := f.queue(t), []string{"b", "a", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("queue = %v; want %v", got, want)
	}
	if a := f.mustGive(t, m); a.Lorry.Path != "b" {
		t.Errorf("got %s; want b", a.Lorry.Path)
	}

	err := f.db.Update(context.Background(), func(tx *Tx) error {
		_, err := tx.RunLorryNow(context.Background(), "nope")
		return err
	})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("RunLorryNow(nope) = %v; want ErrNotFound", err)
	}
}

// Runs asked for while a job runs come to exactly one more run, at once
// after the job ends, and none after that one.
func TestRunLorryNowWhileRunningCoalesces(t *testing.T) {
	for _, tc := range []struct {
		name string
		exit *int64
	}{
		{"succeeded", exit(0)},
		{"failed", exit(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.lorries(t, "a", "b")
			m := MinionID{Name: "m1", Host: "h", PID: 1}
			a := f.mustGive(t, m)
			if a.Lorry.Path != "a" {
				t.Fatalf("got %s; want a", a.Lorry.Path)
			}
			for range 3 {
				if got, want := f.runNow(t, "a"), (RunNow{Path: "a", QueuedAfterCurrentRun: true}); got != want {
					t.Errorf("RunLorryNow(a) = %+v; want %+v", got, want)
				}
			}
			if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m, Exit: tc.exit}); err != nil {
				t.Fatal(err)
			}
			if got, want := f.queue(t), []string{"a", "b"}; !reflect.DeepEqual(got, want) {
				t.Errorf("queue after the run = %v; want %v", got, want)
			}
			if l := f.lorry(t, "a"); l.NextDue > f.clock.Now().Unix() {
				t.Errorf("next_due = %d; want due now (%d)", l.NextDue, f.clock.Now().Unix())
			}
			again := f.mustGive(t, m)
			if again.Lorry.Path != "a" {
				t.Fatalf("got %s; want the follow-up run of a", again.Lorry.Path)
			}
			if _, err := f.report(t, JobUpdate{ID: again.Job.ID, Minion: m, Exit: exit(0)}); err != nil {
				t.Fatal(err)
			}
			b := f.mustGive(t, m)
			if b.Lorry.Path != "b" {
				t.Fatalf("got %s; want b", b.Lorry.Path)
			}
			if _, err := f.report(t, JobUpdate{ID: b.Job.ID, Minion: m, Exit: exit(0)}); err != nil {
				t.Fatal(err)
			}
			f.idle(t, m, "one follow-up run only")
		})
	}
}

// A push finds its lorries through their stored upstream URLs, from the
// configuration and from hosts alike.
func TestLorriesByUpstream(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.update(t, func(tx *Tx) error {
		_, err := tx.SetConfigLorries(ctx, []NewLorry{
			{Path: "a", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1, UpstreamURL: "https://up.example/x/a"},
			{Path: "b", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1, UpstreamURL: "https://up.example/x/b"},
			{Path: "c", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1},
		}, Kept{})
		if err != nil {
			return err
		}
		if _, err := tx.SetConfigHosts(ctx, []Host{{Name: "h", Type: "gitlab"}}); err != nil {
			return err
		}
		_, _, err = tx.SetHostLorries(ctx, "h", []NewLorry{
			{Path: "h/a", Text: "{}", Kind: "lorry", UpstreamURL: "https://up.example/x/a"},
		})
		return err
	})
	find := func(urls ...string) []string {
		var got []string
		err := f.db.View(ctx, func(tx *Tx) error {
			var err error
			got, err = tx.LorriesByUpstream(ctx, urls)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := find("https://up.example/x/a", "ssh://up.example/x/a"), []string{"a", "h/a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("find a = %v; want %v", got, want)
	}
	if got := find(""); len(got) != 0 {
		t.Errorf("find \"\" = %v; want none", got)
	}
	// A URL learnt for a lorry that is otherwise unchanged is stored.
	f.update(t, func(tx *Tx) error {
		_, err := tx.SetConfigLorries(ctx, []NewLorry{
			{Path: "a", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1, UpstreamURL: "https://up.example/x/a"},
			{Path: "b", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1, UpstreamURL: "https://up.example/x/b"},
			{Path: "c", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1, UpstreamURL: "https://up.example/x/c"},
		}, Kept{})
		return err
	})
	if got, want := find("https://up.example/x/c"), []string{"c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("find c = %v; want %v", got, want)
	}
}
