package statedb

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// holdServer makes the next transaction of every other client of the
// pooler at addr run on another server session than the last one: it
// holds that one, in a transaction of its own, until the test ends.
func holdServer(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	if _, err := conn.Exec(ctx, `BEGIN; SELECT 1`); err != nil {
		t.Fatal(err)
	}
}

// TestTransactionPooling runs two DBs on one database behind pgbouncer
// in transaction mode (dbtest.Pooled), whose address names
// default_query_exec_mode: a configuration applied in several
// transactions, each on another server session, and hand-outs, reports
// and reads of the two in turn, all answer.
func TestTransactionPooling(t *testing.T) {
	ctx := context.Background()
	addr := dbtest.Pooled(t)
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(ctx, addr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	a, b := dbs[0], dbs[1]

	want := make([]NewLorry, 20)
	for i := range want {
		p := fmt.Sprintf("pool/repo%02d", i)
		want[i] = NewLorry{Path: p, Kind: "lorry", Interval: 3600, Timeout: 600,
			Text: `{"` + p + `":{"type":"git","url":"https://git.example.org/` + p + `.git"}}`}
	}
	steps := []func(tx *Tx) error{
		func(tx *Tx) error { return tx.BeginConfigLorries(ctx) },
		func(tx *Tx) error { _, err := tx.AddConfigLorries(ctx, want[:10]); return err },
		func(tx *Tx) error { _, err := tx.AddConfigLorries(ctx, want[10:]); return err },
		func(tx *Tx) error { return tx.KeepConfigLorries(ctx, Kept{}) },
		func(tx *Tx) error { _, _, err := tx.RemoveUnseenLorries(ctx, "", removeBatch); return err },
		func(tx *Tx) error { return tx.CompleteConfigLorries(ctx) },
		func(tx *Tx) error { return tx.EndConfigLorries(ctx) },
	}
	for i, step := range steps {
		if err := a.Update(ctx, step); err != nil {
			t.Fatalf("step %d of applying the configuration: %v", i+1, err)
		}
		holdServer(t, addr)
		if err := b.View(ctx, func(tx *Tx) error { _, err := tx.ConfigPartial(ctx); return err }); err != nil {
			t.Errorf("read between steps %d and %d: %v", i+1, i+2, err)
		}
	}

	for i := range 2 * readSessions {
		db := dbs[i%2]
		m := MinionID{Name: fmt.Sprintf("m%d", i), Host: "h", PID: int64(i + 1)}
		var got Assignment
		err := db.UpdateShared(ctx, func(tx *Tx) error {
			var err error
			got, err = tx.GiveMeJob(ctx, m)
			return err
		})
		if err != nil || got.Idle != "" {
			t.Fatalf("hand-out %d: %+v, %v; want a job", i+1, got, err)
		}
		err = db.UpdateReports(ctx, func(tx *Tx) error {
			_, err := tx.UpdateJob(ctx, JobUpdate{ID: got.Job.ID, Minion: m, Stdout: []byte("out\n")})
			return err
		})
		if err != nil {
			t.Errorf("report %d: %v", i+1, err)
		}
		var n int
		err = db.View(ctx, func(tx *Tx) error {
			l, _, err := tx.ListLorries(ctx, LorryListing{Limit: 100})
			n = len(l)
			return err
		})
		if err != nil || n != len(want) {
			t.Errorf("read %d: %d lorries, %v; want %d", i+1, n, err, len(want))
		}
		if i%3 == 0 {
			holdServer(t, addr)
		}
	}
	for i, db := range dbs {
		if err := db.Ping(ctx); err != nil {
			t.Errorf("health check of DB %d: %v", i+1, err)
		}
	}
}

// TestHealthCheckSeesStatementsFail opens a DB behind pgbouncer in
// transaction mode with an address that leaves pgx's default mode, in
// which each session prepares its statements on the server session it
// happens to have: its reads fail, and so must its health check.
func TestHealthCheckSeesStatementsFail(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(dbtest.Pooled(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("default_query_exec_mode")
	u.RawQuery = q.Encode()
	db, err := Open(ctx, u.String(), Options{})
	if err != nil {
		// Failing at once is an answer too.
		t.Logf("open: %v", err)
		return
	}
	defer db.Close()
	failed := 0
	for i := range 4 * readSessions {
		err := db.View(ctx, func(tx *Tx) error {
			var n int
			return tx.queryRow(ctx, `SELECT COUNT(*) FROM lorries WHERE path = $1`, fmt.Sprint(i)).Scan(&n)
		})
		if err == nil {
			continue
		}
		failed++
		if perr := db.Ping(ctx); perr == nil {
			t.Errorf("health check after read %d failed with %v: nil; want an error", i+1, err)
		}
		if i%2 == 0 {
			holdServer(t, u.String())
		}
	}
	if failed == 0 {
		t.Errorf("every read answered; want reads with sessions' own prepared statements to fail behind the pooler")
	}
}
