package statedb

import (
	"context"
	sqldriver "database/sql/driver"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// jobCycleStatements are the statements of the job cycle of a driver, by
// name: those written once for both, the driver's own fields of
// dialectSQL and the statements of its own files.
func jobCycleStatements(d *dialectSQL, postgres bool) map[string]string {
	s := map[string]string{"freeOrphanedLorry": d.freeOrphanedLorry,
		"insertClaimedJob": insertClaimedJob, "jobAndRetireQuery": jobAndRetireQuery,
		"jobRetireLorryQuery": jobRetireLorryQuery, "minionStateQuery": minionStateQuery}
	if postgres {
		s["pgClaimFirstQuery"] = pgClaimFirstQuery
		s["pgClaimFirstOfKindQuery"] = pgClaimFirstOfKindQuery
		s["pgAnyDueQuery"] = pgAnyDueQuery
		s["pgHandOutQuery"] = pgHandOutQuery
		s["pgProgressQuery"] = pgProgressQuery
		s["pgEndQuery"] = pgEndQuery
		s["pgRunEndQuery"] = pgRunEndQuery
		return s
	}
	s["minionHeardQuery"] = minionHeardQuery
	s["saveProgressQuery"] = saveProgressQuery
	s["recordEndQuery"] = recordEndQuery
	s["freeMinionQuery"] = freeMinionQuery
	s["freeHeardMinionQuery"] = freeHeardMinionQuery
	return s
}

var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// TestJobCycleStatementsNumberTheirArguments prepares every statement of
// the job cycle of each driver on its own database, both in one run, as
// written:
// each numbers its arguments $1 to $N with none left out, and its
// database reads N arguments, no more and no fewer. (A statement spliced
// from others by replacing "$1" with "$15" would turn a "$12" of theirs
// into "$152".)
func TestJobCycleStatementsNumberTheirArguments(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		place func() string
	}{
		{"sqlite", func() string { return filepath.Join(t.TempDir(), "state.db") }},
		{"postgres", func() string { return dbtest.Database(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open(ctx, c.place(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, postgres := db.drv.(*pgDriver)
			for name, query := range jobCycleStatements(db.drv.sql(), postgres) {
				if query == "" {
					t.Errorf("%s: no statement", name)
					continue
				}
				var used []int
				for _, m := range placeholder.FindAllStringSubmatch(query, -1) {
					n, _ := strconv.Atoi(m[1])
					if !slices.Contains(used, n) {
						used = append(used, n)
					}
				}
				slices.Sort(used)
				for i, n := range used {
					if n != i+1 {
						t.Errorf("%s: uses $%d after $%d: arguments %v", name, n, i, used)
						break
					}
				}
				got, err := paramCount(ctx, db, query, postgres, len(used))
				if err != nil {
					t.Errorf("%s: prepare: %v\n%s", name, err, query)
					continue
				}
				if got != len(used) {
					t.Errorf("%s: its database reads %d arguments; the statement numbers %d", name, got, len(used))
				}
			}
		})
	}
}

// paramCount prepares query on db's write connection and answers how
// many arguments its database reads; SQLite's is given n, as NULL.
func paramCount(ctx context.Context, db *DB, query string, postgres bool, n int) (int, error) {
	args := make([]sqldriver.NamedValue, n)
	for i := range args {
		args[i] = sqldriver.NamedValue{Ordinal: i + 1}
	}
	read := 0
	err := db.write.conn.Raw(func(dc any) error {
		if postgres {
			sd, err := dc.(*stdlib.Conn).Conn().Prepare(ctx, "", query)
			if err != nil {
				return err
			}
			read = len(sd.ParamOIDs)
			return nil
		}
		// SQLite's program reads each argument with a Variable
		// instruction, whose first operand is the argument's number.
		rows, err := dc.(sqldriver.QueryerContext).QueryContext(ctx, `EXPLAIN `+query, args)
		if err != nil {
			return err
		}
		defer rows.Close()
		row := make([]sqldriver.Value, len(rows.Columns()))
		for rows.Next(row) == nil {
			if row[1] == "Variable" {
				read = max(read, int(row[2].(int64)))
			}
		}
		return nil
	})
	return read, err
}
