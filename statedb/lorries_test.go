package statedb

import (
	"context"
	"errors"
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
			if _, err := tx.exec(context.Background(), `UPDATE lorries SET state = ? WHERE path = ?`, s, p); err != nil {
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
