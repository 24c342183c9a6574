package statedb

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/gosource"
)

// onPostgres says whether db runs on PostgreSQL, for the tests that
// check what only one backend does.
func onPostgres(db *DB) bool {
	_, ok := db.drv.(*pgDriver)
	return ok
}

// driverFile says whether name, a file of this package, is a driver's
// own: what it says of its backend is its own business.
func driverFile(name string) bool {
	for _, prefix := range []string{"sqlite", "pg", "postgres"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// TestSharedFilesAskNoBackend checks, by parsing them, that the files of
// this package that both drivers run never ask which backend they are on:
// no field or key named pg, no IsPostgres, no driver type named, but in
// driver.go, which chooses the driver from the database's place.
func TestSharedFilesAskNoBackend(t *testing.T) {
	checked := 0
	for _, f := range gosource.Dir(t, ".", 0) {
		if driverFile(f.Path) {
			continue
		}
		checked++
		for _, found := range backendQuestions(f.AST, f.Path == "driver.go") {
			t.Errorf("%s: %s; a shared file asks no backend: make it a method of the driver", f.Fset.Position(found.pos), found.what)
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d shared files; want the package's", checked)
	}
}

type backendQuestion struct {
	pos  token.Pos
	what string
}

// backendQuestions are the places in f that ask which backend they are
// on; chooser says that f is where the driver is chosen, which names the
// drivers and asks IsPostgres.
func backendQuestions(f *ast.File, chooser bool) []backendQuestion {
	var found []backendQuestion
	add := func(n ast.Node, what string) { found = append(found, backendQuestion{n.Pos(), what}) }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.TypeSpec:
			st, ok := n.Type.(*ast.StructType)
			if !ok {
				break
			}
			for _, field := range st.Fields.List {
				for _, id := range field.Names {
					if id.Name == "pg" {
						add(id, "field pg of "+n.Name.Name)
					}
				}
			}
		case *ast.SelectorExpr:
			if n.Sel.Name == "pg" {
				add(n, "reads a field pg")
			}
		case *ast.KeyValueExpr:
			if id, ok := n.Key.(*ast.Ident); ok && id.Name == "pg" {
				add(n, "sets a field pg")
			}
		case *ast.Ident:
			switch n.Name {
			case "IsPostgres", "isPostgres", "pgDriver", "sqliteDriver":
				if !chooser {
					add(n, "names "+n.Name)
				}
			}
		}
		return true
	})
	return found
}

// TestBackendQuestionsFound checks that backendQuestions finds each kind
// of question, so that TestSharedFilesAskNoBackend can fail.
func TestBackendQuestionsFound(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"field", "type session struct{ pg bool }"},
		{"read", "func f(tx *Tx) bool { return tx.pg }"},
		{"key", "func f() *session { return &session{pg: true} }"},
		{"IsPostgres", "func f(p string) bool { return IsPostgres(p) }"},
		{"isPostgres", "func f(p string) bool { return isPostgres(p) }"},
		{"assertion", "func f(db *DB) bool { _, ok := db.drv.(*pgDriver); return ok }"},
		{"sqlite", "func f(db *DB) bool { _, ok := db.drv.(sqliteDriver); return ok }"},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), tc.name+".go", "package statedb\n"+tc.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := backendQuestions(f, false); len(got) != 1 {
			t.Errorf("%s: %q: found %d questions; want 1", tc.name, tc.src, len(got))
		}
	}
}

// TestOnlyStatedbAsksBackend checks that no program code outside this
// package asks which backend a database is on: it says what it wants of
// the database (Backup, CheckBackups, DiskDir, ...), and the driver is
// chosen here, from the database's place, by Open. Tests may ask.
func TestOnlyStatedbAsksBackend(t *testing.T) {
	files := gosource.Module(t, "..", 0, "statedb")
	for _, f := range files {
		ast.Inspect(f.AST, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "IsPostgres" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "statedb" {
				t.Errorf("%s: asks statedb.IsPostgres; say what is wanted of the database instead", f.Pos(sel))
			}
			return true
		})
	}
	if len(files) < 50 {
		t.Fatalf("checked %d files; want the module's", len(files))
	}
}
