package rules

import (
	"go/parser"
	"strconv"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/gosource"
)

// TestKnowsNoSQL keeps the store out of the rules: no file of the package
// imports a database package, or a package of ours but the protocol's
// (wire), which imports only the standard library.
func TestKnowsNoSQL(t *testing.T) {
	for _, f := range gosource.Dir(t, ".", parser.ImportsOnly) {
		for _, imp := range f.AST.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			ours := strings.HasPrefix(path, "lorrycontroller.dev/lc/")
			if strings.HasPrefix(path, "database/") || strings.Contains(path, ".") && !ours ||
				ours && path != "lorrycontroller.dev/lc/wire" {
				t.Errorf("%s imports %s", f.Path, path)
			}
		}
	}
}
