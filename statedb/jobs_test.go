package statedb

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

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
