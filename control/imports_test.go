package control

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKnowsNoHTTP keeps the transport out of the application: no file of
// the package imports net/http or the routes that serve it.
func TestKnowsNoHTTP(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "net/http" || path == "lorrycontroller.dev/lc/routes" {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}
