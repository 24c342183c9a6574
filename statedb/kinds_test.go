package statedb

import (
	"context"
	"fmt"
	"testing"
)

// TestGiveMeJobKinds has a minion that takes lorries only, one that takes
// scrapers only and one that takes both ask for work from queues whose
// heads are of the other kind: each gets the first due entry of a kind it
// takes, in every sort order, and nothing when only the other kind is due.
func TestGiveMeJobKinds(t *testing.T) {
	for _, sort := range []string{SortQueueOrder, SortFIFO, SortLIFO} {
		t.Run(sort, func(t *testing.T) {
			f := newFixture(t, Options{})
			var want []NewLorry
			for _, p := range []string{"a-scraper", "b-scraper", "c-lorry", "d-scraper", "e-lorry"} {
				kind := "lorry"
				if p[2:] == "scraper" {
					kind = "scraper"
				}
				want = append(want, NewLorry{Path: p, Text: fmt.Sprintf(`{%q:{}}`, p), Kind: kind, Interval: 100, Timeout: 50})
			}
			f.update(t, func(tx *Tx) error {
				_, err := tx.SetConfigLorries(context.Background(), want, Kept{})
				return err
			})
			f.queues(t, []Queue{{Name: "q", Sort: sort}}, map[string]string{
				"a-scraper": "q", "b-scraper": "q", "c-lorry": "q", "d-scraper": "q", "e-lorry": "q"})
			// Due longest first in path order, so that every sort order
			// has a scraper at its head.
			for p, due := range map[string]int64{"a-scraper": 100, "b-scraper": 200, "c-lorry": 300, "d-scraper": 400, "e-lorry": 500} {
				if sort == SortLIFO {
					due = 1000 - due
				}
				f.update(t, func(tx *Tx) error {
					_, err := tx.exec(context.Background(), `UPDATE lorries SET next_due = ? WHERE path = ?`, due, p)
					return err
				})
			}
			f.clock.Set(1000)
			lorries := MinionID{Name: "lorries", Host: "h", PID: 1, Kinds: []string{"lorry"}}
			scrapers := MinionID{Name: "scrapers", Host: "h", PID: 2, Kinds: []string{"scraper"}}
			for _, wantPath := range []string{"c-lorry", "e-lorry"} {
				a := f.mustGive(t, MinionID{Name: "l-" + wantPath, Host: "h", PID: 1, Kinds: lorries.Kinds})
				if a.Lorry.Path != wantPath || a.Job.Kind != "lorry" {
					t.Errorf("lorry-only minion got %s (%s); want %s", a.Lorry.Path, a.Job.Kind, wantPath)
				}
			}
			f.idle(t, lorries, "only scrapers are due")
			a := f.mustGive(t, scrapers)
			if a.Lorry.Path != "a-scraper" {
				t.Errorf("scraper-only minion got %s; want a-scraper", a.Lorry.Path)
			}
			both := MinionID{Name: "both", Host: "h", PID: 3, Kinds: []string{"lorry", "scraper"}}
			if a := f.mustGive(t, both); a.Lorry.Path != "b-scraper" {
				t.Errorf("minion of both kinds got %s; want b-scraper", a.Lorry.Path)
			}
			if a := f.mustGive(t, MinionID{Name: "old", Host: "h", PID: 4}); a.Lorry.Path != "d-scraper" {
				t.Errorf("minion that names no kinds got %s; want d-scraper", a.Lorry.Path)
			}
		})
	}
}

// TestKindChoicesKeptApart has a minion of any kind and one of lorries
// only take turns within one second, while the session keeps each one's
// choices for a hand-out: neither is handed the other's choice, nor an
// entry the other has just taken.
func TestKindChoicesKeptApart(t *testing.T) {
	f := newFixture(t, Options{})
	var want []NewLorry
	for _, p := range []string{"s1-scraper", "l1-lorry", "s2-scraper", "l2-lorry"} {
		kind := "lorry"
		if p[3:] == "scraper" {
			kind = "scraper"
		}
		want = append(want, NewLorry{Path: p, Text: fmt.Sprintf(`{%q:{}}`, p), Kind: kind, Interval: 100, Timeout: 50})
	}
	f.update(t, func(tx *Tx) error {
		_, err := tx.SetConfigLorries(context.Background(), want, Kept{})
		return err
	})
	anyKind := func(n int) MinionID { return MinionID{Name: fmt.Sprintf("any-%d", n), Host: "h", PID: 1} }
	lorries := func(n int) MinionID {
		return MinionID{Name: fmt.Sprintf("lorries-%d", n), Host: "h", PID: 1, Kinds: []string{"lorry"}}
	}
	for i, step := range []struct {
		m    MinionID
		want string
	}{
		{anyKind(1), "s1-scraper"},
		{lorries(1), "l1-lorry"},
		{anyKind(2), "s2-scraper"},
		{lorries(2), "l2-lorry"},
	} {
		if a := f.mustGive(t, step.m); a.Lorry.Path != step.want {
			t.Errorf("hand-out %d to %s: got %s; want %s", i, step.m.Name, a.Lorry.Path, step.want)
		}
	}
	f.idle(t, anyKind(3), "every entry is running")
	f.idle(t, lorries(3), "every lorry is running")
}
