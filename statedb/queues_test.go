package statedb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/rules"
)

// queues configures the queues and which lorry is in which.
func (f *fixture) queues(t *testing.T, qs []Queue, lorries map[string]string) {
	t.Helper()
	f.update(t, func(tx *Tx) error {
		return tx.SetConfigQueues(context.Background(), QueueConfig{Queues: qs, Lorries: lorries})
	})
}

func minion(name, host string) MinionID { return MinionID{Name: name, Host: host, PID: 1} }

func TestThreadsScheduleBeforeAnyFired(t *testing.T) {
	item := `{"minute": 0, "hour": 6, "year": 2030, "dst_fixes": ["skip", "repeat_use_only_early"], "timezone": "UTC",
		"max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`
	sched, err := ParseThreadsSchedule(`[{"schedule": ` + item + `, "threads": 5}]`)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	if got, active := ThreadsAt(exit(2), sched, now); got == nil || *got != 2 || active != -1 {
		t.Errorf("before any entry fired: threads %v, active %d; want 2, -1", got, active)
	}
	later := time.Date(2030, 1, 1, 7, 0, 0, 0, time.UTC).Unix()
	if got, active := ThreadsAt(exit(2), sched, later); got == nil || *got != 5 || active != 0 {
		t.Errorf("after it fired: threads %v, active %d; want 5, 0", got, active)
	}
}

func TestRemovedQueueFallsBackToDefault(t *testing.T) {
	f := newFixture(t, Options{})
	f.lorries(t, "a")
	f.queues(t, []Queue{{Name: "x"}}, map[string]string{"a": "x"})
	// A later configuration keeps "a" (its file broke) but drops queue x.
	f.queues(t, nil, nil)
	if got := f.lorry(t, "a").Queue; got != DefaultQueue {
		t.Errorf("queue of a after x was removed: %q; want %s", got, DefaultQueue)
	}
}

func TestHostLorriesTakeTheHostsQueue(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.update(t, func(tx *Tx) error {
		if _, err := tx.SetConfigHosts(ctx, []Host{{Name: "up", Type: "gitlab", Protocol: "https", Section: "{}"}}); err != nil {
			return err
		}
		return tx.SetConfigQueues(ctx, QueueConfig{Queues: []Queue{{Name: "mirrors"}}, Hosts: map[string]string{"up": "mirrors"}})
	})
	f.update(t, func(tx *Tx) error {
		_, _, err := tx.SetHostLorries(ctx, "up", []NewLorry{{Path: "up/r", Text: "{}", Kind: "lorry", Interval: 10}})
		return err
	})
	if got := f.lorry(t, "up/r").Queue; got != "mirrors" {
		t.Errorf("generated lorry in queue %q; want mirrors", got)
	}
	a := f.mustGive(t, minion("m", "h"))
	if j := f.job(t, a.Job.ID); a.Lorry.Queue != "mirrors" {
		t.Errorf("job %d handed from queue %q; want mirrors", j.ID, a.Lorry.Queue)
	}
}

// TestHeadsQueryPlan checks that the hand-out reaches the lorries only by
// an index, in subqueries of one queue each: never in a join over the due
// entries of all open queues, which runs a subquery per due entry. The
// hand-out to a minion of one kind must keep to the same plan.
func TestHeadsQueryPlan(t *testing.T) {
	for _, c := range []struct {
		name  string
		query string
		args  []any
	}{
		{"any", headsQuery, nil},
		{"kind", headsOfKindQuery, []any{"lorry"}},
	} {
		t.Run(c.name, func(t *testing.T) { testHeadsQueryPlan(t, c.query, c.args) })
	}
}

func testHeadsQueryPlan(t *testing.T, query string, kind []any) {
	sqliteOnly(t)
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.update(t, func(tx *Tx) error {
		rows, err := tx.query(ctx, `EXPLAIN QUERY PLAN `+query, append([]any{tx.Now,
			`{"a": "fifo", "b": "lifo", "c": "queue-order"}`}, kind...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		details := map[int64]string{}
		type step struct {
			parent int64
			detail string
		}
		var steps []step
		for rows.Next() {
			var id, parent, unused int64
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			details[id] = detail
			steps = append(steps, step{parent, detail})
		}
		if err := rows.Err(); err != nil {
			return err
		}
		n := 0
		for _, s := range steps {
			if !strings.Contains(s.detail, "lorries") {
				continue
			}
			n++
			if !strings.HasPrefix(s.detail, "SEARCH lorries USING INDEX lorries_queue_") ||
				!strings.HasPrefix(details[s.parent], "CORRELATED SCALAR SUBQUERY") {
				t.Errorf("plan step %q under %q; want a search of a queue index in a subquery", s.detail, details[s.parent])
			}
		}
		if n != 4 {
			t.Errorf("plan reads lorries in %d steps, want 4 (fifo, lifo, probe, queue-order): %v", n, steps)
		}
		return nil
	})
}

// TestQueuesKeptBetweenHandOuts checks that the queue list the write
// session keeps between hand-outs follows every change: the session's own,
// one undone by a rollback, and another connection's.
func TestQueuesKeptBetweenHandOuts(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	names := func() []string {
		var out []string
		f.update(t, func(tx *Tx) error {
			qs, err := tx.Queues(ctx)
			for _, q := range qs {
				out = append(out, q.Name)
			}
			return err
		})
		return out
	}
	f.queues(t, []Queue{{Name: "a", Sort: SortFIFO}}, nil)
	if got := names(); !slices.Equal(got, []string{"a", DefaultQueue}) {
		t.Fatalf("queues = %v; want a, default", got)
	}
	f.queues(t, []Queue{{Name: "b", Sort: SortFIFO}}, nil)
	if got := names(); !slices.Equal(got, []string{"b", DefaultQueue}) {
		t.Errorf("queues after the session changed them = %v; want b, default", got)
	}

	undone := errors.New("undone")
	err := f.db.Update(ctx, func(tx *Tx) error {
		if err := tx.SetConfigQueues(ctx, QueueConfig{Queues: []Queue{{Name: "c", Sort: SortFIFO}}}); err != nil {
			return err
		}
		if _, err := tx.Queues(ctx); err != nil {
			return err
		}
		return undone
	})
	if !errors.Is(err, undone) {
		t.Fatal(err)
	}
	if got := names(); !slices.Equal(got, []string{"b", DefaultQueue}) {
		t.Errorf("queues after a rollback = %v; want b, default", got)
	}

	other, err := Open(ctx, f.path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	err = other.Update(ctx, func(tx *Tx) error {
		return tx.SetConfigQueues(ctx, QueueConfig{Queues: []Queue{{Name: "d", Sort: SortLIFO}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Equal(got, []string{"d", DefaultQueue}) {
		t.Errorf("queues after another connection changed them = %v; want d, default", got)
	}
}

// TestLiveCounts checks the counts of live jobs by queue and host that
// the triggers on jobs keep, against the jobs themselves, through every
// kind of change to a job: claimed, confirmed, ended, moved to another
// queue or host while live or after, deleted live or ended, and inserted
// already ended (as a copy does). On PostgreSQL the ends are taken off
// the counts by the next hand-out's transaction (pgFoldEnded), and
// counted as ended meanwhile.
func TestLiveCounts(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	steps := []string{
		`INSERT INTO jobs (path, kind, minion, host, pid, started, updated, status, timeout, queue)
			VALUES ('a', 'lorry', 'm1', 'h1', 1, 0, 0, 'claimed', 0, 'q1')`,
		`INSERT INTO jobs (path, kind, minion, host, pid, started, updated, status, timeout, queue)
			VALUES ('b', 'lorry', 'm2', 'h1', 1, 0, 0, 'claimed', 0, 'q1')`,
		`INSERT INTO jobs (path, kind, minion, host, pid, started, updated, status, timeout, queue)
			VALUES ('c', 'lorry', 'm3', 'h2', 1, 0, 0, 'running', 0, 'q2')`,
		`INSERT INTO jobs (path, kind, minion, host, pid, started, updated, status, timeout, queue)
			VALUES ('d', 'lorry', 'm4', 'h2', 1, 0, 0, 'finished', 0, 'q2')`,
		`UPDATE jobs SET status = 'running' WHERE path = 'a'`,
		`UPDATE jobs SET status = 'failed' WHERE path = 'b'`,
		`UPDATE jobs SET queue = 'q3' WHERE path = 'a'`,
		`UPDATE jobs SET host = 'h3' WHERE path = 'c'`,
		`UPDATE jobs SET queue = 'q9', host = 'h9' WHERE path = 'd'`,
		`UPDATE jobs SET status = 'lost', queue = 'q1' WHERE path = 'c'`,
		`UPDATE jobs SET status = 'claimed' WHERE path = 'b'`,
		`DELETE FROM jobs WHERE path = 'd'`,
		`DELETE FROM jobs WHERE path = 'a'`,
		`INSERT INTO jobs (path, kind, minion, host, pid, started, updated, status, timeout, queue)
			VALUES ('e', 'lorry', 'm5', 'h1', 1, 0, 0, 'running', 0, 'q ''x'' "y"')`,
		`UPDATE jobs SET status = 'finished'`,
	}
	counts := func(tx *Tx, query string) map[string]int64 {
		rows, err := tx.query(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]int64{}
		for rows.Next() {
			var q, h string
			var n int64
			if err := rows.Scan(&q, &h, &n); err != nil {
				t.Fatal(err)
			}
			got[q+"/"+h] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, step := range steps {
		f.update(t, func(tx *Tx) error {
			if _, err := tx.exec(ctx, step); err != nil {
				return fmt.Errorf("%s: %w", step, err)
			}
			kept := counts(tx, liveCountQuery)
			real := counts(tx, `SELECT queue, host, COUNT(*) FROM jobs WHERE `+liveStatus+` GROUP BY queue, host`)
			if !maps.Equal(kept, real) {
				t.Errorf("after %s:\nkept counts %v\nlive jobs   %v", strings.Join(strings.Fields(step), " "), kept, real)
			}
			// As a hand-out reads them, for a minion on h1.
			got, err := tx.runningByQueueAndHost(ctx, "h1")
			if err != nil {
				return err
			}
			if st, err := tx.handOutState(ctx, MinionID{Name: "m", Host: "h1"}); err != nil {
				return err
			} else if st.live != nil {
				got = *st.live
			}
			want := liveCounts{byQueue: map[string]int64{}}
			for k, n := range real {
				q, h, _ := strings.Cut(k, "/")
				want.byQueue[q] += n
				want.all += n
				if h == "h1" {
					want.onHost += n
				}
			}
			if !maps.Equal(got.byQueue, want.byQueue) || got.all != want.all || got.onHost != want.onHost {
				t.Errorf("after %s: a hand-out counts %+v; want %+v", strings.Join(strings.Fields(step), " "), got, want)
			}
			return nil
		})
		if !onPostgres(f.db) {
			continue
		}
		// A hand-out's transaction takes the ends off the counts; they
		// stay as they were.
		err := f.db.UpdateShared(ctx, func(tx *Tx) error {
			var left int64
			if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM live_jobs_ended`).Scan(&left); err != nil {
				return err
			}
			if left != 0 {
				t.Errorf("after %s: %d ends left after a hand-out's begin", strings.Join(strings.Fields(step), " "), left)
			}
			kept := counts(tx, liveCountQuery)
			real := counts(tx, `SELECT queue, host, COUNT(*) FROM jobs WHERE `+liveStatus+` GROUP BY queue, host`)
			if !maps.Equal(kept, real) {
				t.Errorf("after %s and the ends taken off:\nkept counts %v\nlive jobs   %v", strings.Join(strings.Fields(step), " "), kept, real)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestAppendJSONString checks the queue names written for headsQuery
// against encoding/json, with the characters JSON escapes.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "heavy", `a"b`, `a\b`, "tab\there", "nul\x00", "é-ü", "\x1f"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back, got string
		if err := json.Unmarshal(appendJSONString(nil, s), &got); err != nil {
			t.Errorf("%q: %v", s, err)
		}
		json.Unmarshal(want, &back)
		if got != back {
			t.Errorf("%q: decoded %q", s, got)
		}
	}
}

// TestKeptChoicesAgreeWithAFreshLook runs random hand-outs, job ends,
// clock steps, changes of due times, queues and sorts, shared
// transactions and rolled back ones, and checks every hand-out against a
// fresh look at every queue the minion takes: the choices a session keeps
// between hand-outs must never hand out another entry than that.
func TestKeptChoicesAgreeWithAFreshLook(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	rng := rand.New(rand.NewPCG(7, 2026))
	var paths []string
	for i := range 60 {
		paths = append(paths, fmt.Sprintf("l%02d", i))
	}
	f.lorries(t, paths...)
	names := []string{"q0", "q1", "q2", DefaultQueue}
	sorts := []string{SortQueueOrder, SortFIFO, SortLIFO}
	configure := func() {
		var qs []Queue
		for _, n := range names[:3] {
			qs = append(qs, Queue{Name: n, Sort: sorts[rng.IntN(len(sorts))]})
		}
		in := map[string]string{}
		for _, p := range paths {
			in[p] = names[rng.IntN(len(names))]
		}
		f.queues(t, qs, in)
	}
	configure()

	// fresh is the path the hand-out must choose for minion queues,
	// found without what the session keeps; "" if none is due.
	fresh := func(tx *Tx, queues []string) string {
		qs, err := tx.readQueues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		open := map[string]string{}
		for _, q := range qs {
			if rules.TakesQueue(q.Name, queues, nil) {
				open[q.Name] = q.Sort
			}
		}
		ask, err := json.Marshal(open)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.query(ctx, tx.q.heads, tx.Now, string(ask))
		if err != nil {
			t.Fatal(err)
		}
		var pos sql.NullInt64
		for rows.Next() {
			var q string
			var p sql.NullInt64
			if err := rows.Scan(&q, &p); err != nil {
				t.Fatal(err)
			}
			if p.Valid && (!pos.Valid || p.Int64 < pos.Int64) {
				pos = p
			}
		}
		rows.Close()
		if !pos.Valid {
			return ""
		}
		var p string
		if err := tx.queryRow(ctx, `SELECT path FROM lorries WHERE queue_pos = $1`, pos.Int64).Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var live []int64
	handOut := func(tx *Tx, step int) (want, got string) {
		m := minion(fmt.Sprint("m", step), "h")
		for _, n := range names {
			if rng.IntN(3) > 0 {
				m.Queues = append(m.Queues, n)
			}
		}
		if len(m.Queues) == 0 {
			m.Queues = names
		}
		want = fresh(tx, m.Queues)
		a, err := tx.GiveMeJob(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if a.Idle == "" {
			live = append(live, a.Job.ID)
		}
		return want, a.Lorry.Path
	}
	handOuts := 0
	for step := range 1500 {
		switch r := rng.IntN(100); {
		case r < 45:
			var want, got string
			f.update(t, func(tx *Tx) error { want, got = handOut(tx, step); return nil })
			handOuts++
			if got != want {
				t.Fatalf("step %d: handed out %q; a fresh look at the queues chooses %q", step, got, want)
			}
		case r < 50:
			// Several hand-outs and an end in one shared transaction.
			var wg sync.WaitGroup
			for i := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := f.db.UpdateShared(ctx, func(tx *Tx) error {
						want, got := handOut(tx, step*10+i)
						if got != want {
							t.Errorf("step %d: shared hand-out chose %q; a fresh look chooses %q", step, got, want)
						}
						return nil
					})
					if err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
		case r < 53:
			// A hand-out undone.
			undo := errors.New("undo")
			n := len(live)
			err := f.db.Update(ctx, func(tx *Tx) error {
				handOut(tx, step)
				return undo
			})
			if !errors.Is(err, undo) {
				t.Fatal(err)
			}
			live = live[:n]
		case r < 80 && len(live) > 0:
			i := rng.IntN(len(live))
			id := live[i]
			live = slices.Delete(live, i, i+1)
			if _, err := f.report(t, JobUpdate{ID: id, Exit: exit(int64(rng.IntN(2)))}); err != nil {
				t.Fatal(err)
			}
		case r < 90:
			f.clock.Set(f.clock.Now().Unix() + int64(rng.IntN(80)))
		case r < 96:
			p := paths[rng.IntN(len(paths))]
			f.update(t, func(tx *Tx) error {
				_, err := tx.exec(ctx, `UPDATE lorries SET next_due = $1 WHERE path = $2`, tx.Now-int64(rng.IntN(300)), p)
				return err
			})
		default:
			configure()
		}
	}
	if handOuts < 500 {
		t.Errorf("only %d hand-outs", handOuts)
	}
}

// TestNewLorriesDueFromWhenAdded checks that a lorry never run is due
// from when it was added, from the configuration or from a host's
// listing: its queue's oldest due entry has waited since then, not since
// 1970. A changed spec keeps that time; a schedule taken away makes it
// due by now at the latest.
func TestNewLorriesDueFromWhenAdded(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	added := f.clock.Now().Unix()
	f.lorries(t, "a")
	f.update(t, func(tx *Tx) error {
		if _, err := tx.SetConfigHosts(ctx, []Host{{Name: "up", Type: "gitlab", Protocol: "https", Section: "{}"}}); err != nil {
			return err
		}
		_, _, err := tx.SetHostLorries(ctx, "up", []NewLorry{{Path: "up/r", Text: "{}", Kind: "lorry", Interval: 10}})
		return err
	})
	f.clock.Set(added + 300)
	for _, p := range []string{"a", "up/r"} {
		if got := f.lorry(t, p).NextDue; got != added {
			t.Errorf("%s: next_due %d; want %d, when it was added", p, got, added)
		}
	}
	f.view(t, func(tx *Tx) error {
		states, err := tx.QueueStates(ctx)
		if err != nil {
			return err
		}
		if len(states) != 1 || states[0].OldestDue == nil || *states[0].OldestDue != added {
			t.Errorf("queue states %+v; want the default queue's oldest due at %d", states, added)
		}
		return nil
	})

	// A changed spec keeps the time it fell due.
	set := func(l NewLorry) {
		f.update(t, func(tx *Tx) error { _, err := tx.SetConfigLorries(ctx, []NewLorry{l}, Kept{}); return err })
	}
	a := NewLorry{Path: "a", Text: `{"a":{"type":"git"}}`, Kind: "lorry", Interval: 200, Timeout: 50}
	set(a)
	if got := f.lorry(t, "a").NextDue; got != added {
		t.Errorf("after a changed spec: next_due %d; want %d", got, added)
	}
	// A schedule puts it off; taking the schedule away makes it due now.
	a.Schedule, a.FirstDue = `{"cron": "0 3 * * *"}`, added+86400
	set(a)
	if got := f.lorry(t, "a").NextDue; got != added+86400 {
		t.Errorf("scheduled: next_due %d; want %d", got, added+86400)
	}
	a.Schedule, a.FirstDue = "", 0
	set(a)
	if got := f.lorry(t, "a").NextDue; got != added+300 {
		t.Errorf("schedule taken away: next_due %d; want now, %d", got, added+300)
	}
}

// TestHandOutStateQueryPlan checks that the due probe of every hand-out
// reads the partial index of idle entries from its end, on SQLite; its
// PostgreSQL plan is checked by TestPostgresHandOutPlans.
func TestHandOutStateQueryPlan(t *testing.T) {
	sqliteOnly(t)
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.view(t, func(tx *Tx) error {
		rows, err := tx.query(ctx, `EXPLAIN QUERY PLAN `+handOutStateQuery, settingRunningQueue, settingMaxJobs, "h", tx.Now, "m")
		if err != nil {
			return err
		}
		defer rows.Close()
		var lorries []string
		for rows.Next() {
			var id, parent, unused int64
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			if strings.Contains(detail, "lorries") {
				lorries = append(lorries, detail)
			}
		}
		if len(lorries) != 1 || !strings.HasPrefix(lorries[0], "SEARCH lorries USING ") || !strings.Contains(lorries[0], "INDEX lorries_idle_due") {
			t.Errorf("the due probe reads lorries by %q; want one search of lorries_idle_due", lorries)
		}
		return rows.Err()
	})
}

// TestHandOutsInOneTransaction checks that hand-outs that share a
// transaction, as UpdateShared's do, hand out the same entries in the same
// order, and say the same when there is none, as hand-outs each in a
// transaction of its own: over queues of each sort and minions that take
// any kind or lorries only, and over a queue whose threads run out as its
// due entries do. On PostgreSQL the transaction's hand-outs keep the
// queues' choices they found and whether anything was due.
func TestHandOutsInOneTransaction(t *testing.T) {
	ctx := context.Background()
	three := int64(3)
	tests := []struct {
		name   string
		queues []Queue
		// due is how many of the 24 entries are due.
		due int
	}{
		{name: "three sorts", queues: []Queue{{Name: "qa", Sort: SortQueueOrder},
			{Name: "qb", Sort: SortFIFO}, {Name: "qc", Sort: SortLIFO}}, due: 21},
		{name: "threads", queues: []Queue{{Name: "qa", Sort: SortQueueOrder, Threads: &three}}, due: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setup := func() *fixture {
				f := newFixture(t, Options{})
				var paths []string
				queueOf := map[string]string{}
				for i := range 24 {
					p := fmt.Sprintf("one/%02d", i)
					paths = append(paths, p)
					queueOf[p] = tt.queues[i%len(tt.queues)].Name
				}
				f.lorries(t, paths...)
				f.update(t, func(tx *Tx) error {
					if err := tx.SetConfigQueues(ctx, QueueConfig{Queues: tt.queues, Lorries: queueOf}); err != nil {
						return err
					}
					// Due out of queue order; the last ones by that order
					// not yet.
					_, err := tx.exec(ctx, `UPDATE lorries SET next_due = $1 - (queue_pos * 37) % 500
						+ CASE WHEN queue_pos < $2 THEN 0 ELSE 1000 END`, tx.Now, tt.due)
					return err
				})
				return f
			}
			minion := func(i int) MinionID {
				m := MinionID{Name: fmt.Sprint("m", i), Host: "h", PID: 1}
				if i%2 == 1 {
					m.Kinds = []string{"lorry"}
				}
				return m
			}
			asks := tt.due + 2
			var shared, apart []string
			f := setup()
			f.update(t, func(tx *Tx) error {
				for i := range asks {
					a, err := tx.GiveMeJob(ctx, minion(i))
					if err != nil {
						return err
					}
					shared = append(shared, pathOrIdle(a))
				}
				return nil
			})
			g := setup()
			for i := range asks {
				a, err := g.give(t, minion(i))
				if err != nil {
					t.Fatal(err)
				}
				apart = append(apart, pathOrIdle(a))
			}
			if !slices.Equal(shared, apart) {
				t.Errorf("hand-outs in one transaction:\n%q\neach in its own:\n%q", shared, apart)
			}
			if want := "idle: no lorry is due"; apart[len(apart)-1] != want {
				t.Errorf("hand-outs: %q; want the last ones to say %q", apart, want)
			}
		})
	}
}

// pathOrIdle is the lorry handed out in a, or why there is none.
func pathOrIdle(a Assignment) string {
	if a.Idle != "" {
		return "idle: " + a.Idle
	}
	return a.Lorry.Path
}

// TestQueueStatesCountEachQueue reads the due entries of every queue in
// one statement: each queue's own count and oldest due time, whatever
// characters its name holds, none for a queue with nothing due or
// nothing in it, and a running entry not counted; and CountLorries'
// four counts, in one statement too, and TotalLorries.
func TestQueueStatesCountEachQueue(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	odd := `q "x" 'é' \ %_`
	f.lorries(t, "a", "b", "c", "d", "e")
	f.queues(t, []Queue{{Name: odd}, {Name: "y"}, {Name: "empty"}},
		map[string]string{"a": odd, "b": odd, "c": "y", "e": "y"})
	f.update(t, func(tx *Tx) error {
		for p, due := range map[string]int64{"a": 990, "b": 900, "c": 950, "d": 5000, "e": 5000} {
			if _, err := tx.exec(ctx, `UPDATE lorries SET next_due = $1 WHERE path = $2`, due, p); err != nil {
				return err
			}
		}
		return nil
	})
	if got := f.mustGive(t, minion("m", "h")).Lorry.Path; got != "a" {
		t.Fatalf("handed out %s; want a, first in the queue", got)
	}
	type want struct {
		due    int64
		oldest *int64
	}
	wants := map[string]want{odd: {1, exit(900)}, "y": {1, exit(950)}, "empty": {0, nil}, DefaultQueue: {0, nil}}
	f.view(t, func(tx *Tx) error {
		states, err := tx.QueueStates(ctx)
		if err != nil {
			return err
		}
		if len(states) != len(wants) {
			t.Errorf("%d queue states; want %d", len(states), len(wants))
		}
		for _, st := range states {
			w, ok := wants[st.Name]
			if !ok {
				t.Errorf("queue %q not configured", st.Name)
				continue
			}
			if st.Due != w.due || (st.OldestDue == nil) != (w.oldest == nil) || st.OldestDue != nil && *st.OldestDue != *w.oldest {
				t.Errorf("queue %q: due %d, oldest %v; want %d, %v", st.Name, st.Due, fmtPtr(st.OldestDue), w.due, fmtPtr(w.oldest))
			}
		}
		c, err := tx.CountLorries(ctx)
		if err != nil {
			return err
		}
		if c != (LorryCounts{Total: 5, Due: 2, Failing: 0, Running: 1}) {
			t.Errorf("counts %+v; want 5 in all, 2 due, none failing, 1 running", c)
		}
		if n, err := tx.TotalLorries(ctx); n != 5 || err != nil {
			t.Errorf("TotalLorries: %d, %v; want 5", n, err)
		}
		return nil
	})
}

func fmtPtr(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
