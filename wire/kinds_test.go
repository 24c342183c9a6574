package wire

import (
	"go/ast"
	"go/parser"
	"strconv"
	"testing"

	"lorrycontroller.dev/lc/gosource"
)

// TestKindsDefinedOnce keeps KindLorry and KindScraper the only
// definition of the job kinds: no non-test file of the packages that
// deal in kinds writes one as a string of its own.
func TestKindsDefinedOnce(t *testing.T) {
	for _, dir := range []string{"../confgit", "../control", "../routes", "../rules", "../statedb", "../minion"} {
		for _, f := range gosource.Dir(t, dir, parser.SkipObjectResolution) {
			// A struct tag names a JSON key, not a kind.
			tags := map[*ast.BasicLit]bool{}
			ast.Inspect(f.AST, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.Field:
					tags[n.Tag] = true
				case *ast.BasicLit:
					s, err := strconv.Unquote(n.Value)
					if err == nil && !tags[n] && (s == KindLorry || s == KindScraper) {
						t.Errorf("%s: the kind %q written out; want wire.KindLorry or wire.KindScraper", f.Pos(n), s)
					}
				}
				return true
			})
		}
	}
}
