package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The two ends of CopyToPostgres.

// sqliteSource is the SQLite STATEDB being copied, on one connection
// that holds the database's lock.
type sqliteSource struct {
	db   *sql.DB
	conn *sql.Conn
}

// openSQLiteSource opens the SQLite file at path and takes its lock for
// good, refusing a file that another connection has open (a running
// WEBAPP's) or whose schema is not the newest.
func openSQLiteSource(ctx context.Context, path string) (*sqliteSource, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a file", path)
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=rw&_pragma=busy_timeout(0)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &sqliteSource{db: db}
	if s.conn, err = db.Conn(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// In exclusive locking mode the first write transaction keeps the
	// file locked until the connection closes; taking that lock fails at
	// once while another connection has a WAL database open.
	if _, err := s.conn.ExecContext(ctx, `PRAGMA locking_mode = EXCLUSIVE`); err != nil {
		s.close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := s.conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		s.close()
		return nil, fmt.Errorf("%s is in use (%v): stop the WEBAPP and anything else that has it open, then copy it", path, err)
	}
	if err := s.checkVersion(ctx); err != nil {
		s.close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// checkVersion refuses a schema other than the newest SQLite one.
func (s *sqliteSource) checkVersion(ctx context.Context) error {
	steps, err := sqliteMigrations()
	if err != nil {
		return err
	}
	newest := steps[len(steps)-1].n
	var have int
	if err := s.conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&have); err != nil {
		return err
	}
	switch {
	case have == 0:
		return errors.New("not a STATEDB, or an empty one")
	case have < newest:
		return fmt.Errorf("the schema is %d, older than this program's %d: start this version's WEBAPP on it once, and stop it, before copying it", have, newest)
	}
	return checkVersion(have, newest)
}

func (s *sqliteSource) close() {
	if s.conn != nil {
		s.conn.ExecContext(context.Background(), `ROLLBACK`)
		s.conn.Close()
	}
	s.db.Close()
}

// kept are the tables that triggers keep from other tables: they are not
// copied, since the target's triggers fill them as the rows they count
// are copied.
var kept = []string{"live_jobs"}

// tables lists the SQLite schema's tables with their columns, each after
// the tables its foreign keys refer to, but for the kept ones.
func (s *sqliteSource) tables(ctx context.Context) ([]copyTable, error) {
	// lorry_buckets is worked out from lorries by SQLite's triggers;
	// PostgreSQL counts the run queue without it.
	names, err := queryStrings(ctx, s.conn, `SELECT name FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name != 'lorry_buckets' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	byName := map[string]copyTable{}
	refs := map[string][]string{}
	for _, name := range names {
		if slices.Contains(kept, name) {
			continue
		}
		cols, err := queryStrings(ctx, s.conn, `SELECT name FROM pragma_table_info($1) ORDER BY cid`, name)
		if err != nil {
			return nil, err
		}
		byName[name] = copyTable{name: name, columns: cols}
		if refs[name], err = queryStrings(ctx, s.conn, `SELECT DISTINCT "table" FROM pragma_foreign_key_list($1)`, name); err != nil {
			return nil, err
		}
	}
	var ordered []copyTable
	done := map[string]bool{}
	var visit func(name string, depth int) error
	visit = func(name string, depth int) error {
		if done[name] || byName[name].name == "" {
			return nil
		}
		if depth > len(names) {
			return fmt.Errorf("table %s: its foreign keys go round in a circle", name)
		}
		for _, r := range refs[name] {
			if r != name {
				if err := visit(r, depth+1); err != nil {
					return err
				}
			}
		}
		done[name] = true
		ordered = append(ordered, byName[name])
		return nil
	}
	for _, name := range names {
		if err := visit(name, 0); err != nil {
			return nil, err
		}
	}
	return ordered, nil
}

// postgresTarget is the PostgreSQL database copied into, on one
// connection.
type postgresTarget struct {
	db   *sql.DB
	conn *sql.Conn
}

// openPostgresTarget migrates the database at addr and opens it.
func openPostgresTarget(ctx context.Context, addr, password string) (*postgresTarget, error) {
	shown := Redact(addr)
	db, err := Open(ctx, addr, Options{Password: password})
	if err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, fmt.Errorf("open %s: %w", shown, err)
	}
	cfg, err := pgx.ParseConfig(pgConnString(addr))
	if err != nil {
		return nil, fmt.Errorf("open %s: not a PostgreSQL address", shown)
	}
	if password != "" {
		cfg.Password = password
	}
	t := &postgresTarget{db: stdlib.OpenDB(*cfg)}
	if t.conn, err = t.db.Conn(ctx); err != nil {
		t.db.Close()
		return nil, fmt.Errorf("open %s: %w", shown, err)
	}
	return t, nil
}

func (t *postgresTarget) close() {
	if t.conn != nil {
		t.conn.Close()
	}
	t.db.Close()
}

// check finds the PostgreSQL types of the tables' columns, refuses a
// schema that differs from SQLite's in its tables or columns, and
// refuses a table that has rows.
func (t *postgresTarget) check(ctx context.Context, tables []copyTable) error {
	for i := range tables {
		tb := &tables[i]
		rows, err := t.conn.QueryContext(ctx, `SELECT column_name, data_type, is_identity
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`, tb.name)
		if err != nil {
			return err
		}
		tb.types = map[string]string{}
		for rows.Next() {
			var col, typ, identity string
			if err := rows.Scan(&col, &typ, &identity); err != nil {
				rows.Close()
				return err
			}
			tb.types[col] = typ
			if identity == "YES" {
				tb.identity = col
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(tb.types) == 0 {
			return fmt.Errorf("has no table %s", tb.name)
		}
		for _, col := range tb.columns {
			if tb.types[col] == "" {
				return fmt.Errorf("table %s has no column %s", tb.name, col)
			}
		}
		if len(tb.types) != len(tb.columns) {
			return fmt.Errorf("table %s has columns that the SQLite STATEDB has not", tb.name)
		}
		var any bool
		if err := t.conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+quoteName(tb.name)+`)`).Scan(&any); err != nil {
			return err
		}
		if any {
			return fmt.Errorf("table %s has rows: copy only into an empty database", tb.name)
		}
	}
	return nil
}

// queryStrings is the first column of query's rows.
func queryStrings(ctx context.Context, conn *sql.Conn, query string, args ...any) ([]string, error) {
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
