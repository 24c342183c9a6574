package rules

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKnowsNoSQL keeps the store out of the rules: no file of the package
// imports a database package, or a package of ours but the protocol's
// (wire), which imports only the standard library.
func TestKnowsNoSQL(t *testing.T) {
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
			ours := strings.HasPrefix(path, "lorrycontroller.dev/lc/")
			if strings.HasPrefix(path, "database/") || strings.Contains(path, ".") && !ours ||
				ours && path != "lorrycontroller.dev/lc/wire" {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}
