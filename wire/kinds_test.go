package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKindsDefinedOnce keeps KindLorry and KindScraper the only
// definition of the job kinds: no non-test file of the packages that
// deal in kinds writes one as a string of its own.
func TestKindsDefinedOnce(t *testing.T) {
	for _, dir := range []string{"../confgit", "../control", "../routes", "../rules", "../statedb", "../minion"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
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
			// A struct tag names a JSON key, not a kind.
			tags := map[*ast.BasicLit]bool{}
			ast.Inspect(parsed, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.Field:
					tags[n.Tag] = true
				case *ast.BasicLit:
					s, err := strconv.Unquote(n.Value)
					if err == nil && !tags[n] && (s == KindLorry || s == KindScraper) {
						t.Errorf("%s: the kind %q written out; want wire.KindLorry or wire.KindScraper", fset.Position(n.Pos()), s)
					}
				}
				return true
			})
		}
	}
}
