package statedb

import (
	"context"
	"testing"
)

func scraperLorry(commit, runtimeID, text string) NewLorry {
	return NewLorry{Path: "scrape/x", Text: text, Kind: "scraper", Interval: 100, Timeout: 50,
		CommitID: commit, Runtime: Runtime{Name: "fn", Version: "2.3", ID: runtimeID, Python: "python3"}}
}

func (f *fixture) setLorries(t *testing.T, want ...NewLorry) LorryChanges {
	t.Helper()
	var ch LorryChanges
	f.update(t, func(tx *Tx) error {
		var err error
		ch, err = tx.SetConfigLorries(context.Background(), want, Kept{})
		return err
	})
	return ch
}

func TestSetConfigLorriesRecordsScraperCommit(t *testing.T) {
	f := newFixture(t, Options{})
	f.setLorries(t, scraperLorry("c1", "r1", `{"scrape/x":{"runtime":"fn","module":"m"}}`))
	l := f.lorry(t, "scrape/x")
	if l.Kind != "scraper" || l.CommitID != "c1" || l.Runtime != (Runtime{Name: "fn", Version: "2.3", ID: "r1", Python: "python3"}) {
		t.Fatalf("got %+v, want a scraper at c1 with runtime r1", l)
	}

	// A new commit that changes neither spec nor runtime is recorded
	// without counting as a change.
	ch := f.setLorries(t, scraperLorry("c2", "r1", `{"scrape/x":{"runtime":"fn","module":"m"}}`))
	if ch != (LorryChanges{Unchanged: 1}) || f.lorry(t, "scrape/x").CommitID != "c2" {
		t.Errorf("got %+v and commit %q, want unchanged at c2", ch, f.lorry(t, "scrape/x").CommitID)
	}
	// A new runtime is a change.
	ch = f.setLorries(t, scraperLorry("c3", "r2", `{"scrape/x":{"runtime":"fn","module":"m"}}`))
	if l := f.lorry(t, "scrape/x"); ch != (LorryChanges{Changed: 1}) || l.CommitID != "c3" || l.Runtime.ID != "r2" {
		t.Errorf("got %+v and %+v, want one change to c3 and r2", ch, l)
	}
}

func TestScraperJobKeepsWhatItWasHanded(t *testing.T) {
	f := newFixture(t, Options{})
	text := `{"scrape/x":{"runtime":"fn","module":"m"}}`
	f.setLorries(t, scraperLorry("c1", "r1", text))
	a := f.mustGive(t, m1)
	if a.Job.Kind != "scraper" || a.Job.CommitID != "c1" || a.Job.Runtime.ID != "r1" || a.Job.Text != text {
		t.Fatalf("got job %+v, want the scraper at c1 with runtime r1 and its text", a.Job)
	}

	// CONFGIT moves on while the job runs; asked again, the minion gets
	// the job as it was first handed out.
	f.setLorries(t, scraperLorry("c2", "r2", `{"scrape/x":{"runtime":"fn","module":"other"}}`))
	again := f.mustGive(t, m1)
	if !again.Again || again.Job.CommitID != "c1" || again.Job.Runtime.ID != "r1" || again.Job.Text != text {
		t.Errorf("asked again: got %+v, want the job at c1 with runtime r1", again.Job)
	}

	if j := f.job(t, a.Job.ID); j.RuntimeBuilt != nil || j.RuntimeBuildSeconds != nil {
		t.Errorf("before any report: got built %v in %v, want nil", j.RuntimeBuilt, j.RuntimeBuildSeconds)
	}
	built, secs := true, 12.5
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, RuntimeBuilt: &built, RuntimeBuildSeconds: &secs}); err != nil {
		t.Fatal(err)
	}
	// A later update without them keeps them; the end is recorded too.
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: exit(0)}); err != nil {
		t.Fatal(err)
	}
	j := f.job(t, a.Job.ID)
	if j.RuntimeBuilt == nil || !*j.RuntimeBuilt || j.RuntimeBuildSeconds == nil || *j.RuntimeBuildSeconds != 12.5 {
		t.Errorf("got built %v in %v, want true in 12.5s", j.RuntimeBuilt, j.RuntimeBuildSeconds)
	}
	if j.Status != StatusSucceeded {
		t.Errorf("got status %s, want %s", j.Status, StatusSucceeded)
	}
}

func TestLorryJobsKeepNoText(t *testing.T) {
	f := newFixture(t, Options{})
	f.lorries(t, "a/b")
	if a := f.mustGive(t, m1); a.Job.Text != "" || a.Job.CommitID != "" || a.Job.Runtime != (Runtime{}) {
		t.Errorf("got job %+v, want no text, commit or runtime for a lorry", a.Job)
	}
}

func TestLorryPageKindFilter(t *testing.T) {
	f := newFixture(t, Options{})
	f.setLorries(t,
		NewLorry{Path: "a/b", Text: `{}`, Kind: "lorry", Interval: 100, Timeout: 50},
		scraperLorry("c1", "r1", `{}`),
		NewLorry{Path: "z/y", Text: `{}`, Kind: "lorry", Interval: 100, Timeout: 50})
	for _, tc := range []struct {
		name   string
		filter LorryFilter
		want   string
		count  int64
	}{
		{name: "scrapers", filter: LorryFilter{Kind: "scraper"}, want: "scrape/x", count: 1},
		{name: "lorries", filter: LorryFilter{Kind: "lorry"}, want: "a/b z/y", count: 2},
		{name: "lorries by path", filter: LorryFilter{Kind: "lorry", Path: "z"}, want: "z/y", count: 1},
		{name: "scrapers never run", filter: LorryFilter{Kind: "scraper", State: LorryNever}, want: "scrape/x", count: 1},
	} {
		var got []Lorry
		var n int64
		f.view(t, func(tx *Tx) error {
			var err error
			if got, err = tx.LorryPage(context.Background(), tc.filter, 0, 10); err != nil {
				return err
			}
			n, err = tx.CountLorriesMatching(context.Background(), tc.filter)
			return err
		})
		if lorryPaths(got) != tc.want || n != tc.count {
			t.Errorf("%s: got %q (%d), want %q (%d)", tc.name, lorryPaths(got), n, tc.want, tc.count)
		}
	}
}
