package statedb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// pgPlanNode is a node of PostgreSQL's EXPLAIN (FORMAT JSON).
type pgPlanNode struct {
	NodeType string       `json:"Node Type"`
	Relation string       `json:"Relation Name"`
	Index    string       `json:"Index Name"`
	Plans    []pgPlanNode `json:"Plans"`
}

// pgScans lists the scans of tables in the plan of query with args, as
// "Seq Scan on lorries" or "Index Scan on lorries using lorries_queue_due".
func pgScans(t *testing.T, tx *Tx, query string, args ...any) []string {
	t.Helper()
	var text string
	if err := tx.queryRow(context.Background(), `EXPLAIN (FORMAT JSON) `+query, args...).Scan(&text); err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	var plans []struct{ Plan pgPlanNode }
	if err := json.Unmarshal([]byte(text), &plans); err != nil || len(plans) != 1 {
		t.Fatalf("explain %s: %v\n%s", query, err, text)
	}
	var scans []string
	var walk func(n pgPlanNode)
	walk = func(n pgPlanNode) {
		if n.Relation != "" {
			s := n.NodeType + " on " + n.Relation
			if n.Index != "" {
				s += " using " + n.Index
			}
			scans = append(scans, s)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(plans[0].Plan)
	return scans
}

// TestPostgresHandOutPlans checks that on PostgreSQL the statements of
// the job protocol and the listings reach lorries and jobs only through
// an index, with the planner's statistics fresh and with them left behind
// by a large change of the run queue (which once made PostgreSQL hash
// every due entry of every queue at each hand-out). The SQLite plans have
// tests of their own (TestHeadsQueryPlan, TestListLorriesQueryPlan).
func TestPostgresHandOutPlans(t *testing.T) {
	if !dbtest.Postgres() {
		t.Skip("a test of PostgreSQL's plans")
	}
	ctx := context.Background()
	f := newFixture(t, Options{})
	fill := func(from, to int) {
		want := make([]NewLorry, 0, to)
		qs := QueueConfig{Lorries: map[string]string{}}
		for i, sort := range []string{SortQueueOrder, SortFIFO, SortLIFO, SortQueueOrder} {
			qs.Queues = append(qs.Queues, Queue{Name: fmt.Sprintf("q%d", i), Sort: sort})
		}
		for i := range to {
			p := fmt.Sprintf("group%03d/repo%06d", i%100, i)
			want = append(want, NewLorry{Path: p, Kind: "lorry", Interval: 3600, Text: "{}"})
			qs.Lorries[p] = fmt.Sprintf("q%d", i%4)
		}
		f.update(t, func(tx *Tx) error {
			if _, err := tx.SetConfigLorries(ctx, want, Kept{}); err != nil {
				return err
			}
			if err := tx.SetConfigQueues(ctx, qs); err != nil {
				return err
			}
			// Ended jobs, as the table holds after a while.
			if _, err := tx.exec(ctx, `INSERT INTO jobs (path, kind, minion, host, pid, started, updated, ended, status, timeout, queue)
				SELECT 'group001/repo' || i, 'lorry', 'm' || (i % 50), 'h', i, i, i, i, 'finished', 0, 'q1'
				FROM generate_series(CAST($1 AS BIGINT), CAST($2 AS BIGINT)) AS i`, from, to-1); err != nil {
				return err
			}
			// Due out of queue order, half of them later.
			_, err := tx.exec(ctx, `UPDATE lorries SET next_due = $1 + (queue_pos * 7919) % 7200 - 3600
				WHERE queue_pos >= $2`, tx.Now, from)
			return err
		})
	}
	check := func(when string) {
		f.update(t, func(tx *Tx) error {
			ask := `{"q0": "queue-order", "q1": "fifo", "q2": "lifo", "q3": "queue-order"}`
			statements := []struct {
				name  string
				query string
				args  []any
			}{
				{"hand-out state", pgHandOutQuery, []any{settingRunningQueue, settingMaxJobs, tx.Now}},
				{"minion state", minionStateQuery, []any{"m"}},
				{"claim", pgClaimFirstQuery, []any{tx.Now, ask, `{}`, "m", "h", 1}},
				{"claim of kind", pgClaimFirstOfKindQuery, []any{tx.Now, ask, `{}`, "m", "h", 1, "lorry"}},
				{"claim from known choices", pgClaimFirstQuery, []any{tx.Now, `{}`, `{"q1": 5}`, "m", "h", 1}},
				{"owned jobs", `SELECT ` + jobColumns + ` FROM jobs WHERE minion = $1 AND ` + liveStatus, []any{"m"}},
				{"report", jobAndRetireQuery, []any{"m", 1}},
				{"end", pgEndQuery, []any{StatusSucceeded, 0, tx.Now, nil, 0, 0, 0, 0, 0, "", []byte{}, "", 1, 0, 0, 0,
					"m", true}},
				{"final report", jobRetireLorryQuery, []any{"m", 1}},
				{"run and end", pgRunEndQuery, []any{StatusSucceeded, 0, tx.Now, nil, 0, 0, 0, 0, 0, "", []byte{}, "", 1, 0, 0, 0,
					"m", true, tx.Now, tx.Now + 3600, 0, "", nil, 0, StateOK, 0, tx.Now, "", "main",
					"group001/repo000001", 1, 0, StateOK}},
				{"progress report", pgProgressQuery, []any{tx.Now, 0, "", nil, 0, 0, 0, 0, 0, []byte{}, 1, 0, 0, 0, "m"}},
			}
			for _, l := range []LorryListing{{Limit: 100}, {State: StateFailing, Limit: 100},
				{Queue: "q1", After: "m", Limit: 100}, {Prefix: "group042/", Limit: 100}} {
				q, args := listLorriesQuery(l)
				statements = append(statements, struct {
					name  string
					query string
					args  []any
				}{fmt.Sprintf("list %+v", l), q, args})
			}
			for _, s := range statements {
				scans := pgScans(t, tx, s.query, s.args...)
				for _, scan := range scans {
					if scan == "Seq Scan on lorries" || scan == "Seq Scan on jobs" {
						t.Errorf("%s, %s: %s in its plan %q", when, s.name, scan, scans)
					}
				}
			}
			return nil
		})
	}
	fill(0, 1000)
	f.update(t, func(tx *Tx) error { _, err := tx.exec(ctx, `ANALYZE`); return err })
	fill(1000, 20000)
	check("statistics of 1,000 lorries, 20,000 in the run queue")
	f.update(t, func(tx *Tx) error { _, err := tx.exec(ctx, `ANALYZE`); return err })
	check("statistics fresh")
}

// TestPostgresRemovedLorriesPlan checks that finding the lorries a
// configuration no longer defines is an anti join on PostgreSQL, with
// more paths seen than its work_mem holds: asked with NOT IN, PostgreSQL
// looked each lorry up in the list of paths seen, and the first read of a
// million lorries never ended.
func TestPostgresRemovedLorriesPlan(t *testing.T) {
	if !dbtest.Postgres() {
		t.Skip("a test of PostgreSQL's plans")
	}
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.update(t, func(tx *Tx) error {
		if err := tx.BeginConfigLorries(ctx); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `SET LOCAL work_mem = '64kB'`); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `INSERT INTO config_seen (path)
			SELECT 'group/repo' || i FROM generate_series(1, 20000) AS i`); err != nil {
			return err
		}
		for _, q := range []struct{ name, sql string }{
			{"removed lorries", removedLorriesQuery},
		} {
			var text string
			if err := tx.queryRow(ctx, `EXPLAIN (FORMAT JSON) `+q.sql, "", 1000).Scan(&text); err != nil {
				return err
			}
			if strings.Contains(text, "SubPlan") {
				t.Errorf("%s: the paths seen are looked up in a subplan, once a lorry:\n%s", q.name, text)
			}
		}
		return nil
	})
}
