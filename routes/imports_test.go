package routes

import (
	"go/ast"
	"go/parser"
	"testing"

	"lorrycontroller.dev/lc/gosource"
)

// TestCallsNoStore keeps the routes above the application: no non-test
// file names the store's handle or its transactions (statedb.DB,
// statedb.Tx), reaches the App's DB, or opens a transaction (View,
// Update). The routes call control, which applies the rules and reads and
// writes the store; statedb's value types may still appear in answers.
func TestCallsNoStore(t *testing.T) {
	for _, f := range gosource.Dir(t, ".", parser.SkipObjectResolution) {
		ast.Inspect(f.AST, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			name := sel.Sel.Name
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "statedb" {
				if name == "DB" || name == "Tx" {
					t.Errorf("%s: statedb.%s; want a method of control", f.Pos(sel), name)
				}
				return true
			}
			if name == "DB" || name == "View" || name == "Update" {
				t.Errorf("%s: .%s; want a method of control", f.Pos(sel), name)
			}
			return true
		})
	}
}
