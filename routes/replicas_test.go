package routes

import (
	"context"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// onBackend has the server use a STATEDB of the backend under test, on
// the server's clock.
func onBackend(t testing.TB) func(*Server) {
	return func(s *Server) {
		db, err := statedb.Open(context.Background(), dbtest.Place(t), statedb.Options{Clock: s.FakeClock, Notify: everyEvent()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s.App.DB = db
	}
}

// TestStatusReplicasUpAndDown: a WEBAPP that stops renewing its row is up
// for two lease terms, then down, in /1.0/status and on the status page.
func TestStatusReplicasUpAndDown(t *testing.T) {
	const term = 5 * time.Second
	ts := newTestServer(t, onBackend(t), func(s *Server) { s.LeaseTerm = term })
	ctx := context.Background()
	beat := func(name string) {
		t.Helper()
		a := &control.App{DB: ts.DB, LeaseTerm: term, Replica: control.Replica{Name: name, URL: "http://" + name + ".example.org"}}
		if err := a.Heartbeat(ctx, time.Unix(900, 0)); err != nil {
			t.Fatal(err)
		}
	}
	states := func() map[string]string {
		t.Helper()
		code, st := ts.call(t, "GET", "/1.0/status?run_queue=false", nil)
		if code != 200 {
			t.Fatalf("status = %d %v", code, st)
		}
		got := map[string]string{}
		for _, r := range st["replicas"].([]any) {
			r := r.(map[string]any)
			got[r["name"].(string)], _ = r["state"].(string)
		}
		return got
	}

	ts.FakeClock.Set(1000)
	beat("r1")
	beat("r2")
	// r2 is killed: only r1 goes on.
	for _, c := range []struct {
		now    int64
		r2     string
		header string
	}{
		{now: 1005, r2: control.ReplicaUp, header: "WEBAPPs <span class=\"count\">(2)</span>"},
		{now: 1010, r2: control.ReplicaUp, header: "WEBAPPs <span class=\"count\">(2)</span>"},
		{now: 1011, r2: control.ReplicaDown, header: "WEBAPPs <span class=\"count\">(2, 1 down)</span>"},
	} {
		ts.FakeClock.Set(c.now)
		beat("r1")
		if got := states(); got["r1"] != control.ReplicaUp || got["r2"] != c.r2 {
			t.Errorf("%d s after r2 was last seen: states %v; want r1 up, r2 %s", c.now-1000, got, c.r2)
		}
		body := newBrowser(t, ts).page("/1.0/status-html", 200)
		if !strings.Contains(body, c.header) {
			t.Errorf("%d s after r2 was last seen: the status page lacks %q", c.now-1000, c.header)
		}
		rows := body[strings.Index(body, `id="replicas"`):]
		for name, state := range map[string]string{"r1": control.ReplicaUp, "r2": c.r2} {
			class := "s-alive"
			if state == control.ReplicaDown {
				class = "s-lost"
			}
			want := `<td data-label="Name">` + name + `</td><td data-label="State"><span class="badge ` + class + `">` + state + `</span></td>`
			if !strings.Contains(rows, want) {
				t.Errorf("%d s after r2 was last seen: the status page lacks %q", c.now-1000, want)
			}
		}
	}
}
