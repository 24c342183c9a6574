package statedb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// view runs fn in a read transaction and fails the test on its error.
func (f *fixture) view(t *testing.T, fn func(*Tx) error) {
	t.Helper()
	if err := f.db.View(context.Background(), fn); err != nil {
		t.Fatal(err)
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

func TestJobPages(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	var paths []string
	for i := range 7 {
		paths = append(paths, fmt.Sprintf("p/%d", i))
	}
	f.lorries(t, paths...)
	// Jobs 1..7 for p/0..p/6; the odd ones fail, job 7 still runs.
	for i := range 7 {
		a := f.mustGive(t, MinionID{Name: fmt.Sprint("m", i), Host: "h", PID: int64(i + 1)})
		if i == 6 {
			break
		}
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: exit(int64(i % 2))}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(p JobPage) string {
		var s []string
		for _, j := range p.Jobs {
			s = append(s, fmt.Sprint(j.ID))
		}
		return fmt.Sprintf("%s newer=%v older=%v", strings.Join(s, " "), p.Newer, p.Older)
	}
	const all = int64(1) << 62
	tests := []struct {
		name   string
		filter JobFilter
		after  bool
		id     int64
		want   string
	}{
		{name: "newest", id: all, want: "7 6 5 newer=false older=true"},
		{name: "older", id: 5, want: "4 3 2 newer=true older=true"},
		{name: "oldest", id: 2, want: "1 newer=true older=false"},
		{name: "newer than 1", after: true, id: 1, want: "4 3 2 newer=true older=true"},
		{name: "newer than 4", after: true, id: 4, want: "7 6 5 newer=false older=true"},
		{name: "failed", filter: JobFilter{Status: StatusFailed}, id: all, want: "6 4 2 newer=false older=false"},
		{name: "claimed", filter: JobFilter{Status: StatusClaimed}, id: all, want: "7 newer=false older=false"},
		{name: "path", filter: JobFilter{Path: "P/3"}, id: all, want: "4 newer=false older=false"},
		{name: "nothing", filter: JobFilter{Status: StatusLost}, id: all, want: " newer=false older=false"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.view(t, func(tx *Tx) error {
				var p JobPage
				var err error
				if tc.after {
					p, err = tx.JobsAfter(ctx, tc.filter, tc.id, 3)
				} else {
					p, err = tx.JobsBefore(ctx, tc.filter, tc.id, 3)
				}
				if err != nil {
					return err
				}
				if got := ids(p); got != tc.want {
					t.Errorf("got %q; want %q", got, tc.want)
				}
				return nil
			})
		})
	}
	f.view(t, func(tx *Tx) error {
		running, err := tx.RunningJobs(ctx)
		if err != nil || len(running) != 1 || running[0].ID != 7 {
			t.Errorf("RunningJobs = %v, %v; want job 7", running, err)
		}
		recent, err := tx.RecentJobs(ctx, "p/1", 5)
		if err != nil || len(recent) != 1 || recent[0].ID != 2 || recent[0].Status != StatusFailed {
			t.Errorf("RecentJobs(p/1) = %+v, %v; want failed job 2", recent, err)
		}
		return nil
	})
}

func TestLastOutputLine(t *testing.T) {
	f := newFixture(t, Options{})
	f.lorries(t, "o/a")
	a := f.mustGive(t, m1)
	tests := []struct {
		name   string
		output string
		want   string
	}{
		{name: "no output yet", want: ""},
		{name: "lines", output: "first\nsecond\n", want: "second"},
		{name: "blank lines after", output: "third\n\n  \n", want: "third"},
		{name: "progress meter", output: "Receiving objects:  10%\rReceiving objects:  55%\r", want: "Receiving objects:  55%"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Stdout: []byte(tc.output)}); err != nil {
				t.Fatal(err)
			}
			f.view(t, func(tx *Tx) error {
				got, err := tx.LastOutputLine(context.Background(), a.Job.ID)
				if got != tc.want || err != nil {
					t.Errorf("LastOutputLine = %q, %v; want %q", got, err, tc.want)
				}
				return nil
			})
		})
	}
}

func TestOutputFrom(t *testing.T) {
	// A cap of 20 bytes: a head of 10 and a tail of 10.
	f := newFixture(t, Options{OutputLimit: 20})
	ctx := context.Background()
	f.lorries(t, "o/a")
	a := f.mustGive(t, m1)
	send := func(s string) {
		t.Helper()
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Stdout: []byte(s)}); err != nil {
			t.Fatal(err)
		}
	}
	from := func(offset int64) OutputPart {
		t.Helper()
		var p OutputPart
		f.view(t, func(tx *Tx) error {
			var err error
			p, err = tx.OutputFrom(ctx, a.Job.ID, offset)
			return err
		})
		return p
	}
	check := func(name string, offset int64, wantText string, wantNext int64) {
		t.Helper()
		p := from(offset)
		if p.Text != wantText || p.Next != wantNext {
			t.Errorf("%s: OutputFrom(%d) = %q, next %d; want %q, next %d", name, offset, p.Text, p.Next, wantText, wantNext)
		}
	}
	check("no output", 0, "", 0)
	send("0123")
	send("4567")
	check("all", 0, "01234567", 8)
	check("from the middle of a chunk", 3, "34567", 8)
	check("nothing new", 8, "", 8)
	check("offset beyond the end", 50, "", 50)
	send("89abcd") // head full at "9"; "abcd" starts the tail
	check("head into tail", 6, "6789abcd", 14)
	send("efghijkl") // tail "abcdefghijkl" is over 10: "abcd" is cut
	check("whole output", 0, "0123456789\n[... 4 bytes of output cut ...]\nefghijkl", 22)
	check("from inside the cut", 12, "\n[... 2 bytes of output cut ...]\nefghijkl", 22)
	check("from the tail", 16, "ghijkl", 22)
	// A character cut in two is held back while the job runs.
	send("\xc3")
	check("half a character", 22, "", 22)
	send("\xa9!")
	check("whole character", 22, "é!", 25)
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: exit(0), Stdout: []byte("\xe2\x82")}); err != nil {
		t.Fatal(err)
	}
	check("half a character at the end", 25, "\uFFFD", 27)
	f.view(t, func(tx *Tx) error {
		if _, err := tx.OutputFrom(ctx, 99, 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("OutputFrom(99) = %v; want ErrNotFound", err)
		}
		return nil
	})
	// The whole output read from offset 0 is what Output returns.
	var whole string
	f.view(t, func(tx *Tx) error {
		var err error
		whole, err = tx.Output(ctx, a.Job.ID)
		return err
	})
	if p := from(0); p.Text != strings.ToValidUTF8(whole, "\uFFFD") {
		t.Errorf("OutputFrom(0) = %q; Output = %q", p.Text, whole)
	}
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
