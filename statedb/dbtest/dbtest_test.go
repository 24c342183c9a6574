package dbtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
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
