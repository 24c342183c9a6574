package routes

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// TestRemoveOldJobsReclaimsSpace runs jobs with output, then removes the old
// ones over HTTP: the newest job of each lorry stays, nothing is logged as
// an error, and, on SQLite, the database file shrinks back.
func TestRemoveOldJobsReclaimsSpace(t *testing.T) {
	logs := &logRecords{}
	ts := newTestServer(t, func(s *Server) { s.Log = slog.New(logs) })
	ts.configure(t, "a/one", "a/two")
	out := strings.Repeat("Receiving objects: 42% (420/1000)\n", 1000) // 34 KB
	minion := url.Values{"minion": {"m"}, "host": {"h"}, "pid": {"1"}}
	now := int64(1000)
	newest := map[string]string{}
	for range 8 {
		for range 2 {
			code, offer := ts.call(t, "POST", "/1.0/give-me-job", minion)
			if code != 200 {
				t.Fatalf("give-me-job = %d %v", code, offer)
			}
			id := fmt.Sprint(offer["job_id"])
			newest[offer["path"].(string)] = id
			for i := range 5 {
				v := url.Values{"job_id": {id}, "minion": {"m"}, "pid": {"1"}, "exit": {"no"}, "stdout": {out}}
				if i == 4 {
					v.Set("exit", "0")
				}
				if code, m := ts.call(t, "POST", "/1.0/job-update", v); code != 200 {
					t.Fatalf("job-update = %d %v", code, m)
				}
			}
		}
		now += 3600 // the lorries' interval
		ts.FakeClock.Set(now)
	}
	ctx := context.Background()
	// The file and its free pages are SQLite's; PostgreSQL's space is its
	// autovacuum's.
	sqlite := !dbtest.Postgres()
	var before statedb.Usage
	if sqlite {
		var err error
		if before, err = ts.DB.Usage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	code, m := ts.call(t, "POST", "/1.0/remove-old-jobs", url.Values{"max_age": {"60"}})
	if code != 200 || m["removed"] != 14.0 {
		t.Fatalf("remove-old-jobs = %d %v; want 14 of the 16 jobs removed", code, m)
	}
	_, m = ts.call(t, "GET", "/1.0/list-jobs", nil)
	left := toStrings(m["job_ids"])
	if len(left) != 2 || !(left[0] == newest["a/one"] && left[1] == newest["a/two"] || left[0] == newest["a/two"] && left[1] == newest["a/one"]) {
		t.Errorf("jobs left = %v; want the newest of each lorry, %v", left, newest)
	}
	// The newest job keeps its output.
	if _, job := ts.call(t, "GET", "/1.0/job/"+newest["a/one"], nil); len(job["output"].(string)) != 5*len(out) {
		t.Errorf("newest job's output is %d bytes; want %d", len(job["output"].(string)), 5*len(out))
	}
	if errs := logs.errors(); len(errs) > 0 {
		t.Errorf("remove-old-jobs logged errors %v; want none", errs)
	}
	if !sqlite {
		return
	}
	after, err := ts.DB.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("database: %d bytes (%d free) before, %d (%d free) after", before.FileBytes, before.FreeBytes, after.FileBytes, after.FreeBytes)
	if after.FileBytes*3 > before.FileBytes || after.FreeBytes != 0 {
		t.Errorf("database is %d bytes (%d free) after removing 14 of 16 jobs, %d before; want a third or less, nothing free",
			after.FileBytes, after.FreeBytes, before.FileBytes)
	}
}
