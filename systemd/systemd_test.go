package systemd

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/routes"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, statedb.Migrate) }

func healthyServer(t *testing.T) (*routes.Server, *statedb.DB) {
	t.Helper()
	db, err := statedb.Open(context.Background(), dbtest.Place(t), statedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &routes.Server{App: &control.App{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), GhostTimeout: time.Minute}}, db
}

func TestWatchdogPingsOnlyWhileHealthy(t *testing.T) {
	srv, db := healthyServer(t)
	var pings atomic.Int32
	wd := &Watchdog{Every: 200 * time.Millisecond, Check: SelfCheck(srv.Handler()),
		Log:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Ping: func() error { pings.Add(1); return nil }}
	ctx := context.Background()
	if !wd.runOnce(ctx) || pings.Load() != 1 {
		t.Fatalf("healthy: pinged %d times; want 1", pings.Load())
	}
	db.Close()
	if wd.runOnce(ctx) || pings.Load() != 1 {
		t.Errorf("database closed: pinged %d times in all; want still 1", pings.Load())
	}
}
