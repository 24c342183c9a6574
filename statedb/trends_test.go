package statedb

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// addJob stores a finished job of path directly, as if it had run from
// started to ended with status.
func (f *fixture) addJob(t *testing.T, path, status string, started, ended int64) {
	t.Helper()
	f.update(t, func(tx *Tx) error {
		_, err := tx.exec(context.Background(), `INSERT INTO jobs (path, kind, minion, host, pid, started, updated, ended, status, timeout)
			VALUES ($1, 'lorry', 'm1', 'h', 1, $2, $3, $4, $5, 0)`, path, started, ended, ended, status)
		return err
	})
}

func TestJobsPerHour(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	const hour = 3600
	now := int64(100*hour + 1800) // half past the hour
	f.clock.Set(now)
	start := int64(100*hour - 23*hour) // the first of the 24 hours shown
	for _, j := range []struct {
		status string
		ended  int64
	}{
		{StatusSucceeded, now},
		{StatusSucceeded, now - 10},
		{StatusFailed, now - 20},
		{StatusTimedOut, now - hour},
		{StatusSucceeded, start},         // the first second of the first hour
		{StatusKilled, start - 1},        // too old
		{StatusLost, start + 5*hour + 7}, // the sixth hour
	} {
		f.addJob(t, "p", j.status, j.ended-5, j.ended)
	}
	// A job still running has not ended: no hour counts it.
	f.update(t, func(tx *Tx) error {
		_, err := tx.exec(ctx, `INSERT INTO jobs (path, kind, minion, host, pid, started, updated, status, timeout)
			VALUES ('q', 'lorry', 'm1', 'h', 1, $1, $2, 'running', 0)`, now-100, now)
		return err
	})
	var hours []HourCount
	f.view(t, func(tx *Tx) error {
		var err error
		hours, err = tx.JobsPerHour(ctx, 24)
		return err
	})
	if len(hours) != 24 {
		t.Fatalf("JobsPerHour gave %d hours; want 24", len(hours))
	}
	var got []string
	for i, h := range hours {
		if h.Start != start+int64(i)*hour {
			t.Errorf("hour %d starts at %d; want %d", i, h.Start, start+int64(i)*hour)
		}
		for _, s := range []string{StatusSucceeded, StatusFailed, StatusTimedOut, StatusKilled, StatusLost} {
			if n := h.Counts[s]; n > 0 {
				got = append(got, fmt.Sprintf("%d:%s=%d", i, s, n))
			}
		}
	}
	want := "0:succeeded=1 5:lost=1 22:timed-out=1 23:succeeded=2 23:failed=1"
	if strings.Join(got, " ") != want {
		t.Errorf("JobsPerHour = %s; want %s", strings.Join(got, " "), want)
	}
}

// TestTrendQueriesUseIndexes checks that the trend queries read an index
// range rather than every job: what keeps them cheap with a month of jobs.
func TestTrendQueriesUseIndexes(t *testing.T) {
	sqliteOnly(t)
	f := newFixture(t, Options{})
	ctx := context.Background()
	for _, q := range []struct {
		name, sql, want string
	}{
		{"jobs per hour", `SELECT (ended - 0) / 3600, status, COUNT(*) FROM jobs INDEXED BY jobs_ended
			WHERE ended >= 0 AND ended < 100 GROUP BY 1, 2`, "USING COVERING INDEX jobs_ended (ended>? AND ended<?)"},
		{"runs of a lorry", `SELECT id, started, ended, status, exit FROM jobs WHERE path = 'p' ORDER BY id DESC LIMIT 50`,
			"USING INDEX jobs_path (path=?)"},
		{"queue samples", `SELECT queue, at - at % 300, MAX(COALESCE(oldest_wait, 0)) FROM queue_samples
			WHERE at >= 0 GROUP BY 1, 2 ORDER BY 1, 2`, "USING PRIMARY KEY (at>?)"},
	} {
		var plan []string
		f.view(t, func(tx *Tx) error {
			rows, err := tx.query(ctx, `EXPLAIN QUERY PLAN `+q.sql)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					return err
				}
				plan = append(plan, detail)
			}
			return rows.Err()
		})
		if !strings.Contains(strings.Join(plan, "; "), q.want) {
			t.Errorf("%s: plan %q; want it to say %q", q.name, plan, q.want)
		}
	}
}

func TestRecentRuns(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b")
	for i := range 5 {
		f.clock.Set(int64(1000 + 1000*i))
		for range 2 {
			a := f.mustGive(t, m1)
			f.clock.Set(int64(1000 + 1000*i + 10*(i+1)))
			code := int64(i % 2)
			if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Exit: &code}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var runs []Run
	f.view(t, func(tx *Tx) error {
		var err error
		runs, err = tx.RecentRuns(ctx, "a", 3)
		return err
	})
	var got []string
	for _, r := range runs {
		took := int64(-1)
		if r.Ended != nil {
			took = *r.Ended - r.Started
		}
		got = append(got, fmt.Sprintf("%d:%s:%ds", r.ID, r.Status, took))
	}
	// a runs first each round: jobs 5, 7 and 9 are its newest three.
	want := "5:succeeded:30s 7:failed:40s 9:succeeded:50s"
	if strings.Join(got, " ") != want {
		t.Errorf("RecentRuns(a, 3) = %s; want %s, oldest first", strings.Join(got, " "), want)
	}
}

func TestSampleQueues(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b")
	// Both fell due at 1000.
	f.update(t, func(tx *Tx) error { _, err := tx.exec(ctx, `UPDATE lorries SET next_due = 1000`); return err })
	sample := func(now int64, want bool) {
		t.Helper()
		f.clock.Set(now)
		var took bool
		f.update(t, func(tx *Tx) error {
			var err error
			took, err = tx.SampleQueues(ctx)
			return err
		})
		if took != want {
			t.Errorf("SampleQueues at %d took a sample: %v; want %v", now, took, want)
		}
	}
	waits := func(since, slot int64) string {
		t.Helper()
		var w map[string][]WaitPoint
		f.view(t, func(tx *Tx) error {
			var err error
			w, err = tx.QueueWaits(ctx, since, slot)
			return err
		})
		var out []string
		for q, pts := range w {
			for _, p := range pts {
				out = append(out, fmt.Sprintf("%s@%d=%d", q, p.At, p.Wait))
			}
		}
		return strings.Join(out, " ")
	}
	sample(1000, true)
	sample(1030, false) // within the minute
	sample(1060, true)
	// a runs: b is still due, since 1000.
	f.clock.Set(1100)
	f.mustGive(t, m1)
	sample(1200, true)
	if got, want := waits(3600, 60), "default@960=0 default@1020=60 default@1200=200"; got != want {
		t.Errorf("QueueWaits by the minute = %s; want %s", got, want)
	}
	// Slots of five minutes keep the longest wait of each.
	if got, want := waits(3600, 300), "default@900=60 default@1200=200"; got != want {
		t.Errorf("QueueWaits by five minutes = %s; want %s", got, want)
	}
	// A day later the samples older than a day are gone; nothing due is
	// a wait of 0.
	f.update(t, func(tx *Tx) error {
		_, err := tx.exec(ctx, `UPDATE lorries SET next_due = $1`, 1000+QueueSampleKeep+500)
		return err
	})
	sample(1100+QueueSampleKeep, true)
	if got, want := waits(10*QueueSampleKeep, 60), fmt.Sprintf("default@1200=200 default@%d=0", 1100+QueueSampleKeep-(1100+QueueSampleKeep)%60); got != want {
		t.Errorf("QueueWaits after a day = %s; want %s", got, want)
	}
}
