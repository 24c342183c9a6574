package statedb

import "testing"

func TestPgSQL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT a FROM t WHERE b = ? AND c = ?`, `SELECT a FROM t WHERE b = $1 AND c = $2`},
		{`SELECT ?2, ?1, ?, ?1`, `SELECT $2, $1, $3, $1`},
		{`SELECT '?' || ?`, `SELECT '?' || $1`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
		{`SELECT MIN(next_due, ?1) FROM t`, `SELECT LEAST(next_due, $1) FROM t`},
		{`SELECT MAX(MIN(a, f(b, c)), d), MAX(x), MIN(y)`, `SELECT GREATEST(LEAST(a, f(b, c)), d), MAX(x), MIN(y)`},
		{`SELECT x FROM lorries INDEXED BY lorries_queue_due WHERE y`, `SELECT x FROM lorries WHERE y`},
		{`CREATE TEMP TABLE s (p TEXT PRIMARY KEY) WITHOUT ROWID`, `CREATE TEMP TABLE s (p TEXT PRIMARY KEY)`},
		{`INSERT INTO temp.s SELECT value FROM json_each(?)`, `INSERT INTO pg_temp.s SELECT value FROM lc_json_each($1)`},
		{`SELECT SQLMIN(a, b)`, `SELECT SQLMIN(a, b)`},
		{"SELECT x FROM lorries NOT INDEXED\n\tWHERE y", "SELECT x FROM lorries\n\tWHERE y"},
	} {
		if got := pgSQL(c.in); got != c.want {
			t.Errorf("pgSQL(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// The hot path's statements are still rewritten when prepared; every
// other statement must come out of pgSQL as it went in.
func init() {
	rewritten = func(file string) (func(string) string, bool) {
		switch file {
		case "handout.go", "pghandout.go", "jobupdate.go", "jobend.go":
			return pgSQL, true
		}
		return pgSQL, false
	}
}
