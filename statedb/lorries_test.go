package statedb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func lorryPaths(ls []Lorry) string {
	var p []string
	for _, l := range ls {
		p = append(p, l.Path)
	}
	return strings.Join(p, " ")
}

func TestLorryPageFilters(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a/one", "a/two", "b/100%", "b/x_y", "b/xay", "c/never")
	// a/one succeeds, a/two fails, b/100% runs; all three go to the back.
	for _, want := range []string{"a/one", "a/two", "b/100%"} {
		if a := f.mustGive(t, m1); a.Lorry.Path != want {
			t.Fatalf("job for %s; want %s", a.Lorry.Path, want)
		}
		var code *int64
		switch want {
		case "a/one":
			code = exit(0)
		case "a/two":
			code = exit(1)
		}
		if code != nil {
			id := f.lorry(t, want).RunningJob
			if _, err := f.report(t, JobUpdate{ID: *id, Exit: code}); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name   string
		filter LorryFilter
		offset int
		limit  int
		want   string
		count  int64
	}{
		{name: "all", limit: 10, want: "b/x_y b/xay c/never a/one a/two b/100%", count: 6},
		{name: "second page", offset: 2, limit: 2, want: "c/never a/one", count: 6},
		{name: "past the end", offset: 10, limit: 2, want: "", count: 6},
		{name: "path, either case", filter: LorryFilter{Path: "A/"}, limit: 10, want: "a/one a/two", count: 2},
		{name: "percent is literal", filter: LorryFilter{Path: "0%"}, limit: 10, want: "b/100%", count: 1},
		{name: "underscore is literal", filter: LorryFilter{Path: "x_"}, limit: 10, want: "b/x_y", count: 1},
		{name: "due", filter: LorryFilter{State: LorryDue}, limit: 10, want: "b/x_y b/xay c/never", count: 3},
		{name: "failing", filter: LorryFilter{State: LorryFailing}, limit: 10, want: "a/two", count: 1},
		{name: "running", filter: LorryFilter{State: LorryRunning}, limit: 10, want: "b/100%", count: 1},
		{name: "never run", filter: LorryFilter{State: LorryNever, Path: "c"}, limit: 10, want: "c/never", count: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.view(t, func(tx *Tx) error {
				page, err := tx.LorryPage(ctx, tc.filter, tc.offset, tc.limit)
				if err != nil {
					return err
				}
				if got := lorryPaths(page); got != tc.want {
					t.Errorf("LorryPage = %q; want %q", got, tc.want)
				}
				n, err := tx.CountLorriesMatching(ctx, tc.filter)
				if n != tc.count || err != nil {
					t.Errorf("CountLorriesMatching = %d, %v; want %d", n, err, tc.count)
				}
				return nil
			})
		})
	}
	f.view(t, func(tx *Tx) error {
		if _, err := tx.LorryPage(ctx, LorryFilter{State: "bogus"}, 0, 1); !errors.Is(err, ErrInvalid) {
			t.Errorf("LorryPage with state bogus = %v; want ErrInvalid", err)
		}
		if n, err := tx.QueuePosition(ctx, "c/never"); n != 3 || err != nil {
			t.Errorf("QueuePosition(c/never) = %d, %v; want 3", n, err)
		}
		if _, err := tx.QueuePosition(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("QueuePosition(nope) = %v; want ErrNotFound", err)
		}
		return nil
	})
}

func TestFailingLorries(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b", "c", "d", "e")
	// a fails, b succeeds, c is lost (an error without an exit code), d
	// fails; each goes to the back as it is handed out.
	for i, code := range []*int64{exit(1), exit(0), nil, exit(2)} {
		a := f.mustGive(t, MinionID{Name: fmt.Sprint("m", i), Host: "h", PID: 1})
		if code == nil {
			continue
		}
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: code}); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Set(f.clock.Now().Unix() + 1000)
	f.update(t, func(tx *Tx) error { _, err := tx.RemoveGhostJobs(ctx, 10); return err })
	f.view(t, func(tx *Tx) error {
		for _, tc := range []struct {
			offset, limit int
			want          string
		}{{0, 10, "a c d"}, {1, 1, "c"}, {3, 5, ""}} {
			got, err := tx.FailingLorries(ctx, tc.offset, tc.limit)
			if err != nil {
				return err
			}
			if lorryPaths(got) != tc.want {
				t.Errorf("FailingLorries(%d, %d) = %q; want %q", tc.offset, tc.limit, lorryPaths(got), tc.want)
			}
		}
		// The index agrees with the count of the summary.
		counts, err := tx.CountLorries(ctx)
		if err != nil {
			return err
		}
		n, err := tx.CountLorriesMatching(ctx, LorryFilter{State: LorryFailing})
		if n != 3 || counts.Failing != 3 || err != nil {
			t.Errorf("failing: CountLorriesMatching = %d, %v, CountLorries = %d; want 3", n, err, counts.Failing)
		}
		page, err := tx.LorryPage(ctx, LorryFilter{State: LorryFailing}, 1, 5)
		if err != nil || lorryPaths(page) != "c d" {
			t.Errorf("LorryPage(failing, 1, 5) = %q, %v; want c d", lorryPaths(page), err)
		}
		return nil
	})
}
