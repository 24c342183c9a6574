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
