package statedb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// listingFixture has lorries with % and _ in their paths, and with
// letters beyond ASCII, in two queues and every state.
func listingFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, Options{})
	f.lorries(t, "a/one", "a/two", "b/100%", "b/100x", "b/x_y", "b/xay", "b/x", "c/é", "c/\u00ff")
	f.queues(t, []Queue{{Name: "slow"}}, map[string]string{"a/two": "slow", "b/x_y": "slow", "b/xay": "slow", "c/é": "slow"})
	states := map[string]string{"a/two": StateFailing, "b/x_y": StateFailing, "b/100%": StateBackingOff,
		"c/é": StateHardFailed, "b/x": StateFailing}
	f.update(t, func(tx *Tx) error {
		for p, s := range states {
			if _, err := tx.exec(context.Background(), `UPDATE lorries SET state = $1 WHERE path = $2`, s, p); err != nil {
				return err
			}
		}
		return nil
	})
	return f
}

func (f *fixture) listLorries(t *testing.T, q LorryListing) ([]Lorry, string) {
	t.Helper()
	var ls []Lorry
	var next string
	f.view(t, func(tx *Tx) (err error) {
		ls, next, err = tx.ListLorries(context.Background(), q)
		return err
	})
	return ls, next
}

func TestListLorries(t *testing.T) {
	f := listingFixture(t)
	tests := []struct {
		name string
		q    LorryListing
		want string
		next string
	}{
		{name: "all", q: LorryListing{Limit: 100},
			want: "a/one a/two b/100% b/100x b/x b/x_y b/xay c/é c/\u00ff"},
		{name: "first page", q: LorryListing{Limit: 3}, want: "a/one a/two b/100%", next: "b/100%"},
		{name: "after", q: LorryListing{After: "b/100%", Limit: 3}, want: "b/100x b/x b/x_y", next: "b/x_y"},
		{name: "after a path that is not there", q: LorryListing{After: "b/1", Limit: 2}, want: "b/100% b/100x", next: "b/100x"},
		{name: "last page exactly full", q: LorryListing{After: "b/xay", Limit: 2}, want: "c/é c/\u00ff"},
		{name: "prefix", q: LorryListing{Prefix: "b/", Limit: 100}, want: "b/100% b/100x b/x b/x_y b/xay"},
		{name: "percent is no wildcard", q: LorryListing{Prefix: "b/100%", Limit: 100}, want: "b/100%"},
		{name: "underscore is no wildcard", q: LorryListing{Prefix: "b/x_", Limit: 100}, want: "b/x_y"},
		{name: "prefix not at the start", q: LorryListing{Prefix: "one", Limit: 100}, want: ""},
		{name: "prefix of a multi-byte character", q: LorryListing{Prefix: "c/\u00e9", Limit: 100}, want: "c/é"},
		{name: "prefix with after inside it", q: LorryListing{Prefix: "b/", After: "b/x", Limit: 100}, want: "b/x_y b/xay"},
		{name: "prefix with after before it", q: LorryListing{Prefix: "b/", After: "a/two", Limit: 1}, want: "b/100%", next: "b/100%"},
		{name: "prefix with after beyond it", q: LorryListing{Prefix: "b/", After: "c/", Limit: 100}, want: ""},
		{name: "state", q: LorryListing{State: StateFailing, Limit: 100}, want: "a/two b/x b/x_y"},
		{name: "state ok", q: LorryListing{State: StateOK, Limit: 100}, want: "a/one b/100x b/xay c/\u00ff"},
		{name: "state page", q: LorryListing{State: StateFailing, After: "a/two", Limit: 1}, want: "b/x", next: "b/x"},
		{name: "queue", q: LorryListing{Queue: "slow", Limit: 100}, want: "a/two b/x_y b/xay c/é"},
		{name: "default queue", q: LorryListing{Queue: DefaultQueue, Limit: 100}, want: "a/one b/100% b/100x b/x c/\u00ff"},
		{name: "no such queue", q: LorryListing{Queue: "nothing", Limit: 100}, want: ""},
		{name: "state and queue", q: LorryListing{State: StateFailing, Queue: "slow", Limit: 100}, want: "a/two b/x_y"},
		{name: "everything", q: LorryListing{State: StateFailing, Queue: DefaultQueue, Prefix: "b/", After: "b/1", Limit: 100}, want: "b/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ls, next := f.listLorries(t, tc.q)
			if got := lorryPaths(ls); got != tc.want || next != tc.next {
				t.Errorf("ListLorries(%+v) = %q, next %q; want %q, next %q", tc.q, got, next, tc.want, tc.next)
			}
		})
	}
}

// TestListLorriesWalk follows next to the end, as a tool does, and finds
// every lorry the filter selects once, in path order.
func TestListLorriesWalk(t *testing.T) {
	f := listingFixture(t)
	for _, q := range []LorryListing{{}, {Prefix: "b/"}, {State: StateFailing}, {Queue: "slow"}} {
		all, _ := f.listLorries(t, LorryListing{State: q.State, Queue: q.Queue, Prefix: q.Prefix, Limit: 100})
		for limit := 1; limit <= 4; limit++ {
			q.Limit, q.After = limit, ""
			var got []string
			for pages := 0; ; pages++ {
				if pages > len(all) {
					t.Fatalf("%+v: more pages than lorries", q)
				}
				ls, next := f.listLorries(t, q)
				for _, l := range ls {
					got = append(got, l.Path)
				}
				if next == "" {
					break
				}
				q.After = next
			}
			if g := strings.Join(got, " "); g != lorryPaths(all) {
				t.Errorf("walk of %+v: %q; want %q", q, g, lorryPaths(all))
			}
		}
	}
}

func TestListLorriesRefuses(t *testing.T) {
	f := listingFixture(t)
	for _, q := range []LorryListing{{State: "failed", Limit: 1}, {State: "due", Limit: 1}, {Limit: 0}, {Limit: -1}} {
		err := f.db.View(context.Background(), func(tx *Tx) error {
			_, _, err := tx.ListLorries(context.Background(), q)
			return err
		})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("ListLorries(%+v): %v; want ErrInvalid", q, err)
		}
	}
}

// TestListLorriesQueryPlan checks that every filter, alone or with
// others, is one search of an index in path order: no scan of the
// table, and no sort of what it found.
func TestListLorriesQueryPlan(t *testing.T) {
	sqliteOnly(t)
	f := newFixture(t, Options{})
	ctx := context.Background()
	tests := []struct {
		name  string
		q     LorryListing
		index string
	}{
		{name: "all", q: LorryListing{Limit: 100}, index: "sqlite_autoindex_lorries_1"},
		{name: "after", q: LorryListing{After: "m", Limit: 100}, index: "sqlite_autoindex_lorries_1"},
		{name: "prefix", q: LorryListing{Prefix: "group042/", After: "group042/x", Limit: 100}, index: "sqlite_autoindex_lorries_1"},
		{name: "state", q: LorryListing{State: StateFailing, After: "m", Limit: 100}, index: "lorries_state_path"},
		{name: "state and prefix", q: LorryListing{State: StateFailing, Prefix: "a/", Limit: 100}, index: "lorries_state_path"},
		{name: "queue", q: LorryListing{Queue: "slow", After: "m", Limit: 100}, index: "lorries_queue_path"},
		{name: "queue and prefix", q: LorryListing{Queue: "slow", Prefix: "a/", Limit: 100}, index: "lorries_queue_path"},
		{name: "state and queue", q: LorryListing{State: StateFailing, Queue: "slow", Limit: 100}, index: "lorries_"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			query, args := listLorriesQuery(tc.q)
			var plan []string
			f.view(t, func(tx *Tx) error {
				rows, err := tx.query(ctx, `EXPLAIN QUERY PLAN `+query, args...)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var id, parent, unused int64
					var detail string
					if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
						return err
					}
					plan = append(plan, detail)
				}
				return rows.Err()
			})
			if len(plan) != 1 || !strings.HasPrefix(plan[0], "SEARCH lorries USING INDEX "+tc.index) {
				t.Errorf("plan %q; want one search of index %s*, with no sort", plan, tc.index)
			}
		})
	}
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		prefix, end string
		ok          bool
	}{
		{prefix: ""},
		{prefix: "\xff\xff"},
		{prefix: "a", end: "b", ok: true},
		{prefix: "group042/", end: "group0420", ok: true},
		{prefix: "a\xff", end: "b", ok: true},
		{prefix: "c/\u00e9", end: "c/\xc3\xaa", ok: true},
	}
	for _, tc := range tests {
		if end, ok := prefixEnd(tc.prefix); end != tc.end || ok != tc.ok {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q, %v", tc.prefix, end, ok, tc.end, tc.ok)
		}
	}
}

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
