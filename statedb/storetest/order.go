package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb"
)

func (s suite) queueOrderAndMoves(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b", "c", "d")
	f.update(t, func(tx *statedb.Tx) error {
		if err := tx.MoveToTop(ctx, "c"); err != nil {
			return err
		}
		if err := tx.MoveToBottom(ctx, "a"); err != nil {
			return err
		}
		if err := tx.MoveToTop(ctx, "nope"); !errors.Is(err, statedb.ErrNotFound) {
			t.Errorf("MoveToTop(nope) = %v; want ErrNotFound", err)
		}
		return nil
	})
	if got, want := strings.Join(f.queue(t), " "), "c b d a"; got != want {
		t.Fatalf("queue = %q; want %q", got, want)
	}
	var order []string
	for i := range 4 {
		a := f.mustGive(t, statedb.MinionID{Name: fmt.Sprint("m", i), Host: "h", PID: 1})
		order = append(order, a.Lorry.Path)
	}
	if got, want := strings.Join(order, " "), "c b d a"; got != want {
		t.Errorf("hand-out order = %q; want %q", got, want)
	}
	f.idle(t, statedb.MinionID{Name: "m9", Host: "h", PID: 1}, "GiveMeJob with all running")
}

func (s suite) queueSortOrders(t *testing.T) {
	for _, tc := range []struct {
		name string
		sort string
		want []string
	}{
		{"queue-order", statedb.SortQueueOrder, []string{"a", "b", "c"}},
		{"fifo", statedb.SortFIFO, []string{"c", "a", "b"}},
		{"lifo", statedb.SortLIFO, []string{"b", "a", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := s.newFixture(t, statedb.Options{})
			// Due at different times: c longest, b most recently.
			f.lorriesDue(t, newLorries("a", "b", "c"), map[string]int64{"a": 500, "b": 900, "c": 100})
			f.queues(t, []statedb.Queue{{Name: "q", Sort: tc.sort}}, map[string]string{"a": "q", "b": "q", "c": "q"})
			var got []string
			for i := range 3 {
				got = append(got, f.mustGive(t, minion(fmt.Sprint("m", i), "h")).Lorry.Path)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("sort %s handed out %v; want %v", tc.sort, got, tc.want)
			}
		})
	}
}

// giveMeJobKinds has a minion that takes lorries only, one that takes
// scrapers only and one that takes both ask for work from queues whose
// heads are of the other kind: each gets the first due entry of a kind it
// takes, in every sort order, and nothing when only the other kind is due.
func (s suite) giveMeJobKinds(t *testing.T) {
	for _, sort := range []string{statedb.SortQueueOrder, statedb.SortFIFO, statedb.SortLIFO} {
		t.Run(sort, func(t *testing.T) {
			f := s.newFixture(t, statedb.Options{})
			var want []statedb.NewLorry
			for _, p := range []string{"a-scraper", "b-scraper", "c-lorry", "d-scraper", "e-lorry"} {
				kind := "lorry"
				if p[2:] == "scraper" {
					kind = "scraper"
				}
				want = append(want, statedb.NewLorry{Path: p, Text: fmt.Sprintf(`{%q:{}}`, p), Kind: kind, Interval: 100, Timeout: 50})
			}
			// Due longest first in path order, so that every sort order
			// has a scraper at its head.
			due := map[string]int64{"a-scraper": 100, "b-scraper": 200, "c-lorry": 300, "d-scraper": 400, "e-lorry": 500}
			if sort == statedb.SortLIFO {
				for p := range due {
					due[p] = 1000 - due[p]
				}
			}
			f.lorriesDue(t, want, due)
			f.queues(t, []statedb.Queue{{Name: "q", Sort: sort}}, map[string]string{
				"a-scraper": "q", "b-scraper": "q", "c-lorry": "q", "d-scraper": "q", "e-lorry": "q"})
			lorries := statedb.MinionID{Name: "lorries", Host: "h", PID: 1, Kinds: []string{"lorry"}}
			scrapers := statedb.MinionID{Name: "scrapers", Host: "h", PID: 2, Kinds: []string{"scraper"}}
			for _, wantPath := range []string{"c-lorry", "e-lorry"} {
				a := f.mustGive(t, statedb.MinionID{Name: "l-" + wantPath, Host: "h", PID: 1, Kinds: lorries.Kinds})
				if a.Lorry.Path != wantPath || a.Job.Kind != "lorry" {
					t.Errorf("lorry-only minion got %s (%s); want %s", a.Lorry.Path, a.Job.Kind, wantPath)
				}
			}
			f.idle(t, lorries, "only scrapers are due")
			a := f.mustGive(t, scrapers)
			if a.Lorry.Path != "a-scraper" {
				t.Errorf("scraper-only minion got %s; want a-scraper", a.Lorry.Path)
			}
			both := statedb.MinionID{Name: "both", Host: "h", PID: 3, Kinds: []string{"lorry", "scraper"}}
			if a := f.mustGive(t, both); a.Lorry.Path != "b-scraper" {
				t.Errorf("minion of both kinds got %s; want b-scraper", a.Lorry.Path)
			}
			if a := f.mustGive(t, statedb.MinionID{Name: "old", Host: "h", PID: 4}); a.Lorry.Path != "d-scraper" {
				t.Errorf("minion that names no kinds got %s; want d-scraper", a.Lorry.Path)
			}
		})
	}
}

// kindChoicesKeptApart has a minion of any kind and one of lorries
// only take turns within one second, while the session keeps each one's
// choices for a hand-out: neither is handed the other's choice, nor an
// entry the other has just taken.
func (s suite) kindChoicesKeptApart(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	var want []statedb.NewLorry
	for _, p := range []string{"s1-scraper", "l1-lorry", "s2-scraper", "l2-lorry"} {
		kind := "lorry"
		if p[3:] == "scraper" {
			kind = "scraper"
		}
		want = append(want, statedb.NewLorry{Path: p, Text: fmt.Sprintf(`{%q:{}}`, p), Kind: kind, Interval: 100, Timeout: 50})
	}
	f.update(t, func(tx *statedb.Tx) error {
		_, err := tx.SetConfigLorries(context.Background(), want, statedb.Kept{})
		return err
	})
	anyKind := func(n int) statedb.MinionID {
		return statedb.MinionID{Name: fmt.Sprintf("any-%d", n), Host: "h", PID: 1}
	}
	lorries := func(n int) statedb.MinionID {
		return statedb.MinionID{Name: fmt.Sprintf("lorries-%d", n), Host: "h", PID: 1, Kinds: []string{"lorry"}}
	}
	for i, step := range []struct {
		m    statedb.MinionID
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

func (s suite) dueAfterInterval(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "a")
	a := f.mustGive(t, m1)
	f.clock.Set(1010)
	if _, err := f.report(t, statedb.JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(0), DiskUsage: exit(4096)}); err != nil {
		t.Fatal(err)
	}
	l := f.lorry(t, "a")
	if l.LastRun == nil || *l.LastRun != 1000 || l.NextDue != 1100 || *l.LastRunExit != 0 || *l.DiskUsage != 4096 {
		t.Errorf("lorry after success = %+v; want last_run 1000, next_due 1100, exit 0, du 4096", l)
	}
	f.clock.Set(1099)
	f.idle(t, m1, "before interval")
	f.clock.Set(1100)
	if got := f.mustGive(t, m1); got.Lorry.Path != "a" {
		t.Errorf("after interval got %q", got.Lorry.Path)
	}
}

func (s suite) sameMinionAgainAndRestart(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "a", "b")
	first := f.mustGive(t, m1)
	again := f.mustGive(t, m1)
	if again.Job.ID != first.Job.ID || !again.Again {
		t.Errorf("asking again gave job %d (again=%v); want %d again", again.Job.ID, again.Again, first.Job.ID)
	}
	restarted := statedb.MinionID{Name: "m1", Host: "h", PID: 2}
	next := f.mustGive(t, restarted)
	if next.Job.ID == first.Job.ID {
		t.Fatalf("restarted minion got its old job %d", first.Job.ID)
	}
	if j := f.job(t, first.Job.ID); j.Status != statedb.StatusLost || j.Ended == nil {
		t.Errorf("old job = %s; want lost and ended", j.Status)
	}
	if l := f.lorry(t, first.Lorry.Path); l.RunningJob != nil || !strings.Contains(l.LastRunError, "restarted") || !strings.Contains(l.LastRunError, "killed what was left of the job") {
		t.Errorf("lorry of lost job = %+v; want free with an error saying why", l)
	}
	// With nothing left to hand out, a restart is still noticed.
	again = f.mustGive(t, restarted)
	if again.Job.ID != next.Job.ID {
		t.Fatalf("asking again gave job %d; want %d", again.Job.ID, next.Job.ID)
	}
	f.idle(t, statedb.MinionID{Name: "m1", Host: "h", PID: 3}, "restart with nothing due")
	if j := f.job(t, next.Job.ID); j.Status != statedb.StatusLost {
		t.Errorf("job of restarted minion = %s; want lost even when no other job is given", j.Status)
	}
	var minions []statedb.Minion
	f.db.View(context.Background(), func(tx *statedb.Tx) error {
		var err error
		minions, err = tx.Minions(context.Background())
		return err
	})
	if len(minions) != 1 || minions[0].PID != 3 || minions[0].JobID != nil {
		t.Errorf("minions = %+v; want m1 seen with pid 3 and no job", minions)
	}
}

// restartedMinionGetsWhatItsLostJobLeftDue checks that a minion
// coming back with a new pid is handed the lorry that its old job, ended
// as lost in the same hand-out, left due: a run was asked for while the
// job ran, and nothing else is due.
func (s suite) restartedMinionGetsWhatItsLostJobLeftDue(t *testing.T) {
	f := s.newFixture(t, statedb.Options{})
	f.lorries(t, "a")
	first := f.mustGive(t, m1)
	f.update(t, func(tx *statedb.Tx) error {
		_, err := tx.RunLorryNow(context.Background(), "a")
		return err
	})
	next := f.mustGive(t, statedb.MinionID{Name: "m1", Host: "h", PID: 2})
	if next.Lorry.Path != "a" || next.Job.ID == first.Job.ID {
		t.Errorf("restarted minion got job %d of %q; want a new job of a", next.Job.ID, next.Lorry.Path)
	}
	if j := f.job(t, first.Job.ID); j.Status != statedb.StatusLost {
		t.Errorf("old job = %s; want lost", j.Status)
	}
}
