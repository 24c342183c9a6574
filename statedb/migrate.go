package statedb

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// SchemaVersion is the number of the newest migration applied (each
// backend numbers its own).
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := db.View(ctx, func(tx *Tx) error {
		if tx.pg {
			return tx.queryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v)
		}
		return tx.queryRow(ctx, `PRAGMA user_version`).Scan(&v)
	})
	return v, err
}

// migration is one step of a backend's schema.
type migration struct {
	n    int
	name string
	body string
}

// migrations lists the steps of the backend's schema in order.
func (db *DB) migrations() ([]migration, error) {
	dir := "migrations/sqlite"
	if db.pg {
		dir = "migrations/postgres"
	}
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	var steps []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		steps = append(steps, migration{n, e.Name(), string(body)})
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].n < steps[j].n })
	return steps, nil
}

func (db *DB) migrate(ctx context.Context) error {
	steps, err := db.migrations()
	if err != nil {
		return err
	}
	newest := 0
	if len(steps) > 0 {
		newest = steps[len(steps)-1].n
	}
	if db.pg {
		return db.migratePostgres(ctx, steps, newest)
	}
	conn := db.write.conn
	for _, s := range steps {
		// Each step checks the version inside its own write transaction, so
		// two processes opening a new database do not both migrate it.
		if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			return err
		}
		apply := func() error {
			var have int
			if err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&have); err != nil {
				return err
			}
			if err := checkVersion(have, newest); err != nil || have >= s.n {
				return err
			}
			if _, err := conn.ExecContext(ctx, s.body); err != nil {
				return fmt.Errorf("migration %s: %w", s.name, err)
			}
			// PRAGMA takes no bound parameters; s.n is our own integer.
			_, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, s.n))
			return err
		}
		if err := apply(); err != nil {
			conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
			return err
		}
		if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
			conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
			return fmt.Errorf("migration %s: %w", s.name, err)
		}
	}
	return nil
}

// checkVersion refuses a database whose schema is newer than the newest
// this program knows.
func checkVersion(have, newest int) error {
	if have > newest {
		return fmt.Errorf("database schema %d is newer than this program knows (%d)", have, newest)
	}
	return nil
}
