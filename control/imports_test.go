package control

import (
	"go/parser"
	"strconv"
	"testing"

	"lorrycontroller.dev/lc/gosource"
)

// TestKnowsNoHTTP keeps the transport out of the application: no file of
// the package imports net/http or the routes that serve it.
func TestKnowsNoHTTP(t *testing.T) {
	for _, f := range gosource.Dir(t, ".", parser.ImportsOnly) {
		for _, imp := range f.AST.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "net/http" || path == "lorrycontroller.dev/lc/routes" {
				t.Errorf("%s imports %s", f.Path, path)
			}
		}
	}
}
