package dbtest

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { Main(m) }

// TestDatabase makes two databases on the server and writes to each.
func TestDatabase(t *testing.T) {
	ctx := context.Background()
	for range 2 {
		conn, err := pgx.Connect(ctx, Database(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE t (x BIGINT)`); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM t`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("count = %d, %v", n, err)
		}
		conn.Close(ctx)
	}
}

// TestPasswordDatabase logs in to a database as a role that needs its
// password, and is refused without it.
func TestPasswordDatabase(t *testing.T) {
	ctx := context.Background()
	addr, password := PasswordDatabase(t)
	cfg, err := pgx.ParseConfig(addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = password
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect with the password: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE t (x BIGINT)`); err != nil {
		t.Fatal(err)
	}
	cfg.Password = "wrong"
	if c, err := pgx.ConnectConfig(ctx, cfg); err == nil {
		c.Close(ctx)
		t.Error("connected with a wrong password")
	}
}

// TestPooled checks that Pooled's addresses, and with
// LORRY_CONTROLLER_TEST_PGBOUNCER=1 Database's, lead through a pooler in
// transaction mode: two clients, open together, that take turns run on
// one server session.
func TestPooled(t *testing.T) {
	addrs := map[string]string{"Pooled": Pooled(t)}
	if Bouncer() {
		addrs["Database"] = Database(t)
	}
	ctx := context.Background()
	for name, addr := range addrs {
		var pids []int
		for range 2 {
			conn, err := pgx.Connect(ctx, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var pid int
			if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
		if pids[0] != pids[1] {
			t.Errorf("%s: server sessions %v; want one shared by both clients", name, pids)
		}
	}
}

// TestPgBouncerPortTaken starts a pgbouncer on a port that another
// pgbouncer listens on already, as when two test binaries found the same
// port free at once: it must fail to start, though the other answers on
// the port, so that it is tried on another port.
func TestPgBouncerPortTaken(t *testing.T) {
	srv, err := server()
	if err != nil {
		t.Fatalf("PostgreSQL for the tests: %v", err)
	}
	first, err := srv.pooler()
	if err != nil {
		t.Fatalf("pgbouncer for the tests: %v", err)
	}
	bin, host, port, err := pgBouncerTarget(srv.base)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cred, err := runAs(dir)
	if err != nil {
		t.Fatal(err)
	}
	second := &pgbouncer{dir: dir, user: first.user, port: first.port}
	if err := second.start(bin, host, port, cred); err == nil {
		second.stop()
		t.Fatalf("a second pgbouncer on port %d started; want it to fail, the port being the first's", first.port)
	}
}

// TestServerOutlivesItsThread starts a cluster from a goroutine locked
// to its thread, which then exits locked, so that the Go runtime ends
// the thread: Linux sends a child its parent-death signal when the
// thread that forked it ends, not the process. Any thread may end so,
// when any goroutine (a umask's, a user's) exits locked to it; the
// server must not go with it.
func TestServerOutlivesItsThread(t *testing.T) {
	var c *cluster
	for c == nil {
		started := make(chan *cluster, 1)
		go func() {
			runtime.LockOSThread()
			// The main thread is never ended, only parked: try again
			// on another.
			if unix.Gettid() == os.Getpid() {
				runtime.UnlockOSThread()
				started <- nil
				return
			}
			// Never unlocked: the thread ends with the goroutine.
			c, err := startCluster()
			if err != nil {
				t.Errorf("start a PostgreSQL cluster: %v", err)
				c = &cluster{}
			}
			started <- c
		}()
		c = <-started
	}
	if c.proc == nil {
		return
	}
	defer c.remove()
	select {
	case <-c.done:
		t.Fatal("the server exited when the thread that started it ended")
	case <-time.After(time.Second):
	}
	if err := answers(c.url()); err != nil {
		t.Fatalf("the server did not outlive the thread that started it: %v", err)
	}
}
