package statedb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// setSchemaVersion sets the schema version of the database at place, as
// a program that knows another schema would have left it, on a
// connection of its own.
func setSchemaVersion(t *testing.T, place string, v int) {
	t.Helper()
	driver, query := "sqlite", fmt.Sprintf(`PRAGMA user_version = %d`, v)
	if IsPostgres(place) {
		driver, query = "pgx", fmt.Sprintf(`UPDATE schema_version SET version = %d`, v)
	}
	raw, err := sql.Open(driver, place)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(context.Background(), query); err != nil {
		t.Fatalf("set the schema version to %d: %v", v, err)
	}
}

// A database written by a newer version, whose schema this program does
// not know, is refused on Open, and left as it was: once it has a schema
// this program knows again, it opens with its rows.
func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.lorries(t, "a", "b")
	newest, err := f.db.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if newest == 0 {
		t.Fatal("schema version 0 after Open; want the newest migration's")
	}
	if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}
	setSchemaVersion(t, f.path, newest+1)

	db, err := Open(ctx, f.path, Options{Clock: f.clock})
	if err == nil {
		db.Close()
		t.Fatalf("Open of a database of schema %d, this program's newest being %d: no error", newest+1, newest)
	}
	if want := fmt.Sprintf("database schema %d is newer than this program knows (%d)", newest+1, newest); !strings.Contains(err.Error(), want) {
		t.Errorf("Open of a newer database: %v; want it to say %q", err, want)
	}
	if err := Migrate(ctx, f.path); err == nil {
		t.Errorf("Migrate of a newer database: no error")
	}

	setSchemaVersion(t, f.path, newest)
	db, err = Open(ctx, f.path, Options{Clock: f.clock})
	if err != nil {
		t.Fatalf("Open after the newer schema was refused: %v", err)
	}
	defer db.Close()
	again := &fixture{db: db, clock: f.clock, path: f.path}
	if got := strings.Join(again.queue(t), " "); got != "a b" {
		t.Errorf("the run queue after the refused Open: %q; want a b", got)
	}
	if v, err := db.SchemaVersion(ctx); err != nil || v != newest {
		t.Errorf("schema version after the refused Open: %d, %v; want %d", v, err, newest)
	}
}
