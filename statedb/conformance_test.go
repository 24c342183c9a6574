package statedb_test

import (
	"testing"

	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/statedb/storetest"
)

// TestConformance runs the store's conformance suite against each driver
// in one run: SQLite on a file of the test's own, and PostgreSQL on the
// tests' server (a private cluster when none is named), whichever backend
// the rest of the package's tests are on.
func TestConformance(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		storetest.Exercise(t, dbtest.SQLite)
	})
	t.Run("postgres", func(t *testing.T) {
		dbtest.DatabaseOrSkip(t)
		storetest.Exercise(t, dbtest.Database)
	})
}
