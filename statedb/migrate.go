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
		var err error
		v, err = tx.drv.schemaVersion(ctx, tx)
		return err
	})
	return v, err
}

// migration is one step of a backend's schema.
type migration struct {
	n    int
	name string
	body string
}

// migrations lists the steps of d's schema in order.
func migrations(d driver) ([]migration, error) {
	dir := d.migrationsDir()
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
	steps, err := migrations(db.drv)
	if err != nil {
		return err
	}
	newest := 0
	if len(steps) > 0 {
		newest = steps[len(steps)-1].n
	}
	return db.drv.migrate(ctx, db, steps, newest)
}

// checkVersion refuses a database whose schema is newer than the newest
// this program knows.
func checkVersion(have, newest int) error {
	if have > newest {
		return fmt.Errorf("database schema %d is newer than this program knows (%d)", have, newest)
	}
	return nil
}
