package routes

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestCallsNoStore keeps the routes above the application: no non-test
// file names the store's handle or its transactions (statedb.DB,
// statedb.Tx), reaches the App's DB, or opens a transaction (View,
// Update). The routes call control, which applies the rules and reads and
// writes the store; statedb's value types may still appear in answers.
func TestCallsNoStore(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		parsed, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(parsed, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			name := sel.Sel.Name
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "statedb" {
				if name == "DB" || name == "Tx" {
					t.Errorf("%s: statedb.%s; want a method of control", fset.Position(sel.Pos()), name)
				}
				return true
			}
			if name == "DB" || name == "View" || name == "Update" {
				t.Errorf("%s: .%s; want a method of control", fset.Position(sel.Pos()), name)
			}
			return true
		})
	}
}
