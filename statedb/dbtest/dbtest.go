// Package dbtest gives tests a fresh STATEDB on the backend under test.
//
// By default that is SQLite: a file in the test's temporary directory.
// With LORRY_CONTROLLER_TEST_STATEDB=postgres it is a new, empty
// PostgreSQL database, made for the test and dropped after it, on the
// server named by LORRY_CONTROLLER_TEST_POSTGRES (a postgres:// URL of a
// role that may create databases) or, when that is unset, on a private
// throwaway cluster that the test binary starts from the postgresql
// package's initdb and postgres, listening only on a unix socket in a
// temporary directory, as an unprivileged user when the tests run as
// root. With LORRY_CONTROLLER_TEST_PGBOUNCER=1 too, the tests reach that
// server through a pgbouncer in transaction mode that the test binary
// starts from the pgbouncer package, on a free loopback port; their
// addresses then say so (BouncerQuery). A package that uses it runs its tests through Main, which stops
// that cluster at the end.
package dbtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The environment variables that choose the backend and the server.
const (
	EnvBackend = "LORRY_CONTROLLER_TEST_STATEDB"
	EnvServer  = "LORRY_CONTROLLER_TEST_POSTGRES"
	EnvBouncer = "LORRY_CONTROLLER_TEST_PGBOUNCER"
)

// Postgres says whether the tests run on PostgreSQL.
func Postgres() bool { return os.Getenv(EnvBackend) == "postgres" }

// Bouncer says whether the tests reach PostgreSQL through pgbouncer.
func Bouncer() bool { return os.Getenv(EnvBouncer) == "1" }

// Place is where a test's STATEDB lives: the --statedb of a WEBAPP, the
// first argument of statedb.Open. Each call is a new, empty database.
func Place(t testing.TB) string {
	t.Helper()
	if !Postgres() {
		return filepath.Join(t.TempDir(), "state.db")
	}
	return Database(t)
}

// Database is a new PostgreSQL database for t, dropped when t ends,
// whatever the backend under test: tests of PostgreSQL itself use it. It
// is empty, or, if Main was given a prepare function, a copy of the
// database that prepare made (a migrated STATEDB, say).
func Database(t testing.TB) string {
	t.Helper()
	srv, err := server()
	if err != nil {
		t.Fatalf("PostgreSQL for the tests: %v", err)
	}
	name, err := srv.take()
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() { srv.drop(name) })
	return srv.url(name)
}

// DatabaseOrSkip is Database for a test that compares the backends in one
// run: when the tests run on PostgreSQL it is Database, and a server that
// cannot be had fails t; otherwise, when no server can be had (no
// LORRY_CONTROLLER_TEST_POSTGRES, and no PostgreSQL installed to start a
// private cluster from), it skips t, saying why.
func DatabaseOrSkip(t testing.TB) string {
	t.Helper()
	if !Postgres() {
		if _, err := server(); err != nil {
			t.Skipf("no PostgreSQL for the tests (%v): the half of the test on PostgreSQL runs where one can be had", err)
		}
	}
	return Database(t)
}

// PasswordDatabase is Database reached as a role of its own that logs in
// with a password, as an installation's WEBAPP does: the database's
// address, without the password, and the password. The role acts as the
// tests' role (it is a member, and takes it on at login), so what it
// makes is dropped with the database. A server that lets the role in
// without its password (LORRY_CONTROLLER_TEST_POSTGRES trusting every
// role) fails t: the test would prove nothing there. As DatabaseOrSkip,
// it skips t when the tests do not run on PostgreSQL and none can be had.
func PasswordDatabase(t testing.TB) (addr, password string) {
	t.Helper()
	addr = DatabaseOrSkip(t)
	srv, _ := server()
	role, password, err := srv.passwordRole()
	if err != nil {
		t.Fatalf("make a role with a password: %v", err)
	}
	t.Cleanup(func() { srv.exec(context.Background(), `DROP ROLE IF EXISTS `+role) })
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	// Straight to the server, which asks for the password: a pooler
	// in front of it lets every role in.
	if u, err = url.Parse(srv.direct(path.Base(u.Path))); err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	addr = u.String()
	if conn, err := pgx.Connect(context.Background(), addr); err == nil {
		conn.Close(context.Background())
		t.Fatalf("role %s logs in without its password: the server asks none (%s)", role, EnvServer)
	}
	return addr, password
}

// Pooled is Database reached through a pgbouncer in transaction mode,
// whatever LORRY_CONTROLLER_TEST_PGBOUNCER says: tests of what such a
// pooler changes use it.
func Pooled(t testing.TB) string {
	t.Helper()
	srv, err := server()
	if err != nil {
		t.Fatalf("PostgreSQL for the tests: %v", err)
	}
	b, err := srv.pooler()
	if err != nil {
		t.Fatalf("pgbouncer for the tests: %v", err)
	}
	name, err := srv.take()
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() { srv.drop(name) })
	return b.url(name)
}

// Direct is the address of the test database at addr (from Place,
// Database or Pooled) on the server itself, not through a pooler: for
// what must not go through one, such as pg_dump and pg_restore. It is
// addr's database by its name, on the server the tests use.
func Direct(t testing.TB, addr string) string {
	t.Helper()
	srv, err := server()
	if err != nil {
		t.Fatalf("PostgreSQL for the tests: %v", err)
	}
	u, err := url.Parse(addr)
	if err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" {
		t.Fatalf("%s is not the address of a test database", addr)
	}
	return srv.direct(path.Base(u.Path))
}

// Create is Database for a caller without a testing.TB (a scenario's
// setup): the new database's address and what drops it.
func Create() (url string, drop func(), err error) {
	srv, err := server()
	if err != nil {
		return "", nil, fmt.Errorf("PostgreSQL for the tests: %w", err)
	}
	name, err := srv.take()
	if err != nil {
		return "", nil, fmt.Errorf("create test database: %w", err)
	}
	return srv.url(name), func() { srv.drop(name) }, nil
}

// prepare makes the database that each test's is a copy of.
var prepare func(ctx context.Context, url string) error

// Main runs the package's tests and then stops the private cluster, if
// they started one. Given prepare, each test's database is a copy of one
// database that prepare was run on, made once: migrating a STATEDB for
// each test would cost more than the test.
func Main(m *testing.M, prep ...func(ctx context.Context, url string) error) {
	if len(prep) > 0 {
		prepare = prep[0]
	}
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the private cluster, if the tests started one, for a package
// whose TestMain is its own.
func Stop() { stopServer() }

// Cluster is a private cluster of a test's own, whose server the test
// stops and starts again: a test of what its clients do when PostgreSQL
// goes away and comes back. With LORRY_CONTROLLER_TEST_PGBOUNCER=1 the
// test reaches it through a pgbouncer of its own, which stays up
// meanwhile.
type Cluster struct {
	c       *cluster
	through *pgbouncer
	admin   string
	made    int
	dbs     []string // the addresses Database gave
}

// NewCluster makes and starts a cluster for t, removed when t ends.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := startCluster()
	if err != nil {
		t.Fatalf("start a PostgreSQL cluster: %v", err)
	}
	t.Cleanup(c.remove)
	cl := &Cluster{c: c, admin: c.url()}
	if Bouncer() {
		base, _ := url.Parse(c.url())
		if cl.through, err = startPgBouncer(base); err != nil {
			t.Fatalf("start pgbouncer: %v", err)
		}
		t.Cleanup(cl.through.stop)
	}
	return cl
}

// Admin is the address of the cluster's maintenance database, reached
// directly: for what a client must not do through a pooler, such as
// ending other clients' sessions.
func (cl *Cluster) Admin() string { return cl.admin }

// Database makes a new database on the cluster and gives its address.
func (cl *Cluster) Database(t testing.TB) string {
	t.Helper()
	admin, err := connect(cl.admin)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.admin.Close(context.Background())
	cl.made++
	name := fmt.Sprintf("lc_cluster_%d", cl.made)
	if err := admin.exec(context.Background(), `CREATE DATABASE `+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	addr := admin.direct(name)
	if cl.through != nil {
		addr = cl.through.url(name)
	}
	cl.dbs = append(cl.dbs, addr)
	return addr
}

// Stop stops the cluster's server with a fast shutdown: it ends every
// session, rolling back its transaction.
func (cl *Cluster) Stop() { cl.c.stop() }

// Start starts the cluster's server again, and returns once it answers
// a query on every database made by Database: through the pgbouncer too
// if there is one, which refuses a database's clients for a while
// (server_login_retry) after it last failed to reach the server for it.
func (cl *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := cl.c.start(); err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	for _, addr := range cl.dbs {
		if err := answers(addr); err != nil {
			t.Fatalf("PostgreSQL started again: %v", err)
		}
	}
}

// answers waits until the database at addr answers a query.
func answers(addr string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, addr)
		if err == nil {
			_, err = conn.Exec(ctx, `SELECT 1`)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
