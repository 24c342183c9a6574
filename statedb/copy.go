package statedb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// CopyToPostgres moves a SQLite STATEDB into a PostgreSQL database: the
// step from one WEBAPP on a file to WEBAPPs sharing a database. Every
// table of the SQLite schema is copied, with every column that schema
// has (PRAGMA table_info), so that a column added later is not left
// behind; the PostgreSQL schema must have the same tables and columns.

// CopyOptions say how CopyToPostgres works.
type CopyOptions struct {
	// Password is the PostgreSQL database's password, when not in a
	// password file.
	Password string
	// Progress, if not nil, gets a line for each table copied, and one
	// now and then during a long table.
	Progress io.Writer
	// BatchRows is the most rows put into one INSERT, which is its own
	// transaction; 0 means 1,000.
	BatchRows int
}

// TableCount is how many rows a table has in the two databases after a
// copy.
type TableCount struct {
	Table          string
	SQLite, Target int64
}

// Largest amounts of one INSERT: PostgreSQL takes at most 65,535
// parameters in a statement, and a batch of job output is kept to a few
// megabytes.
const (
	copyMaxParams = 65535
	copyMaxBytes  = 8 << 20
	copyProgress  = 100000 // rows between progress lines within a table
)

// CopyToPostgres copies the SQLite STATEDB at path into the PostgreSQL
// database at addr, which it migrates first and which must then have no
// rows in any of the tables copied. The SQLite file must have the newest
// schema and be open nowhere else: it is held locked, so that no WEBAPP
// can change it, until the copy is over. It returns the row counts of
// every table in both databases, and an error if any differ.
func CopyToPostgres(ctx context.Context, path, addr string, opts CopyOptions) ([]TableCount, error) {
	if err := CheckCopyTarget(addr); err != nil {
		return nil, fmt.Errorf("%s: %w", Redact(addr), err)
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = 1000
	}
	src, err := openSQLiteSource(ctx, path)
	if err != nil {
		return nil, err
	}
	defer src.close()
	tables, err := src.tables(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dst, err := openPostgresTarget(ctx, addr, opts.Password)
	if err != nil {
		return nil, err
	}
	defer dst.close()
	if err := dst.check(ctx, tables); err != nil {
		return nil, fmt.Errorf("%s: %w", Redact(addr), err)
	}
	c := copier{src: src, dst: dst, opts: opts}
	for _, t := range tables {
		if err := c.table(ctx, t); err != nil {
			return nil, fmt.Errorf("copy %s: %w", t.name, err)
		}
		if err := c.sequences(ctx, t); err != nil {
			return nil, fmt.Errorf("copy %s: %w", t.name, err)
		}
	}
	return compareCounts(ctx, src, dst, tables)
}

// copyTable is a table of the SQLite schema and its columns.
type copyTable struct {
	name    string
	columns []string
	// types are the PostgreSQL types of the columns, by name.
	types map[string]string
	// identity is the PostgreSQL table's identity column, if any.
	identity string
}

// copier copies the tables one after another.
type copier struct {
	src  *sqliteSource
	dst  *postgresTarget
	opts CopyOptions
}

// table copies one table in batches.
func (c *copier) table(ctx context.Context, tb copyTable) error {
	start := time.Now()
	var total int64
	if err := c.src.conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+quoteName(tb.name)).Scan(&total); err != nil {
		return err
	}
	cols := make([]string, len(tb.columns))
	for i, col := range tb.columns {
		cols[i] = quoteName(col)
	}
	rows, err := c.src.conn.QueryContext(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM `+quoteName(tb.name))
	if err != nil {
		return err
	}
	defer rows.Close()
	perBatch := min(c.opts.BatchRows, copyMaxParams/len(cols))
	var batch []any
	var inBatch, bytes int
	var copied int64
	flush := func() error {
		if inBatch == 0 {
			return nil
		}
		if _, err := c.dst.conn.ExecContext(ctx, insertRows(tb.name, cols, inBatch), batch...); err != nil {
			return err
		}
		copied += int64(inBatch)
		if copied/copyProgress != (copied-int64(inBatch))/copyProgress {
			c.progressf("%s: %d of %d rows\n", tb.name, copied, total)
		}
		batch, inBatch, bytes = batch[:0], 0, 0
		return nil
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, col := range tb.columns {
			v, err := pgValue(vals[i], tb.types[col])
			if err != nil {
				return fmt.Errorf("column %s: %w", col, err)
			}
			batch = append(batch, v)
			bytes += valueSize(v)
		}
		inBatch++
		if inBatch >= perBatch || bytes >= copyMaxBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	c.progressf("%s: %d rows copied in %s\n", tb.name, copied, time.Since(start).Round(time.Millisecond))
	return nil
}

func (c *copier) progressf(format string, args ...any) {
	if c.opts.Progress != nil {
		fmt.Fprintf(c.opts.Progress, format, args...)
	}
}

// sequences sets the table's identity sequence past every id it has had:
// past the largest copied, and past the largest SQLite handed out
// (AUTOINCREMENT keeps the ids of removed rows from coming back).
func (c *copier) sequences(ctx context.Context, tb copyTable) error {
	if tb.identity == "" {
		return nil
	}
	// The tables with ids (jobs, outbox) are AUTOINCREMENT in SQLite, so
	// sqlite_sequence is there.
	var handed int64
	err := c.src.conn.QueryRowContext(ctx, `SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = $1), 0)`,
		tb.name).Scan(&handed)
	if err != nil {
		return err
	}
	col := quoteName(tb.identity)
	_, err = c.dst.conn.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence($1, $2),
		GREATEST((SELECT MAX(`+col+`) FROM `+quoteName(tb.name)+`), $3::bigint) + 1, false)`,
		tb.name, tb.identity, handed)
	return err
}

// compareCounts counts every table's rows in both databases.
func compareCounts(ctx context.Context, src *sqliteSource, dst *postgresTarget, tables []copyTable) ([]TableCount, error) {
	var counts []TableCount
	var differ []string
	for _, tb := range tables {
		n := TableCount{Table: tb.name}
		q := `SELECT COUNT(*) FROM ` + quoteName(tb.name)
		if err := src.conn.QueryRowContext(ctx, q).Scan(&n.SQLite); err != nil {
			return nil, err
		}
		if err := dst.conn.QueryRowContext(ctx, q).Scan(&n.Target); err != nil {
			return nil, err
		}
		if n.SQLite != n.Target {
			differ = append(differ, fmt.Sprintf("%s has %d rows in SQLite but %d in PostgreSQL", tb.name, n.SQLite, n.Target))
		}
		counts = append(counts, n)
	}
	if len(differ) > 0 {
		return counts, errors.New(strings.Join(differ, "; "))
	}
	return counts, nil
}

// insertRows is an INSERT of n rows of cols into table.
func insertRows(table string, cols []string, n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + quoteName(table) + " (" + strings.Join(cols, ", ") + ") VALUES ")
	p := 1
	for r := range n {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for i := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "$%d", p)
			p++
		}
		b.WriteByte(')')
	}
	return b.String()
}

// pgValue is v, as SQLite's driver gives it, in the Go type that pgx
// stores into a column of PostgreSQL type typ. (SQLite keeps a value's own
// type whatever the column's, so a blob column may hold text.)
func pgValue(v any, typ string) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch typ {
	case "bytea":
		switch x := v.(type) {
		case []byte:
			// An empty blob comes as nil, which pgx stores as NULL.
			if x == nil {
				x = []byte{}
			}
			return x, nil
		case string:
			return []byte(x), nil
		}
	case "text", "character varying":
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	case "bigint", "integer", "smallint":
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			if x == float64(int64(x)) {
				return int64(x), nil
			}
		}
	case "double precision", "real":
		switch x := v.(type) {
		case float64:
			return x, nil
		case int64:
			return float64(x), nil
		}
	default:
		return v, nil
	}
	return nil, fmt.Errorf("cannot store %T %v as %s", v, v, typ)
}

func valueSize(v any) int {
	switch x := v.(type) {
	case []byte:
		return len(x)
	case string:
		return len(x)
	}
	return 8
}

// quoteName is name as an SQL identifier.
func quoteName(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
