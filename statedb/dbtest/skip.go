package dbtest

import "testing"

// SQLiteOnly passes t by on PostgreSQL: a test of SQLite's own files,
// pragmas or limits, which PostgreSQL does not have. why says which.
func SQLiteOnly(t testing.TB, why string) {
	t.Helper()
	if Postgres() {
		t.Skip("SQLite only: " + why)
	}
}

// SkipOnPostgres passes t by on PostgreSQL, where the product has the
// defect named: the skip goes when the defect is fixed.
func SkipOnPostgres(t testing.TB, defect string) {
	t.Helper()
	if Postgres() {
		t.Skip(DefectPrefix + defect)
	}
}

// DefectOnPostgres is SkipOnPostgres for a part of a test: on PostgreSQL
// it logs the defect and says that the part is to be passed by.
func DefectOnPostgres(t testing.TB, defect string) bool {
	t.Helper()
	if Postgres() {
		t.Log(DefectPrefix + defect + " (part passed by)")
	}
	return Postgres()
}

// DefectPrefix begins the message of every test passed by for a defect
// on PostgreSQL, so that a run's -v output lists them.
const DefectPrefix = "known defect on PostgreSQL: "
