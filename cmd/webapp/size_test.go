package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/gosource"
)

// The sizes the code is held to: the WEBAPP's wiring reads as parse the
// configuration, open the store, build the application, serve, stop;
// what is more belongs in the package of its subject.
const (
	maxWiringLines  = 450
	maxFuncLines    = 100
	maxPackageLines = 500
)

// subcommands are the files of the WEBAPP's subcommands, which are not
// its wiring.
var subcommands = []string{"backup.go", "call.go", "checkconfig.go", "migratedb.go", "token.go"}

// TestWiringSize: the WEBAPP's own files, all but its subcommands' and
// the tests, hold at most maxWiringLines lines together.
func TestWiringSize(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	var counts []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || slices.Contains(subcommands, f) {
			continue
		}
		n := lineCount(t, f)
		total += n
		counts = append(counts, fmt.Sprintf("%s %d", f, n))
	}
	if total > maxWiringLines {
		t.Errorf("the WEBAPP's wiring is %d lines; want at most %d (%s)", total, maxWiringLines, strings.Join(counts, ", "))
	}
}

// TestSourceSizes: no function of the module, tests and generated code
// aside, is over maxFuncLines lines, and no file of statedb, routes or
// control, tests aside, is over maxPackageLines.
func TestSourceSizes(t *testing.T) {
	root := filepath.Join("..", "..")
	var long []string
	for _, f := range gosource.Module(t, root, parser.ParseComments|parser.SkipObjectResolution, "apiclient") {
		if ast.IsGenerated(f.AST) {
			continue
		}
		rel, err := filepath.Rel(root, f.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.AST.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && f.Lines(fn) > maxFuncLines {
				long = append(long, fmt.Sprintf("function %s in %s is %d lines; want at most %d", funcName(fn), rel, f.Lines(fn), maxFuncLines))
			}
		}
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if top == "statedb" || top == "routes" || top == "control" {
			if n := f.Fset.File(f.AST.Pos()).LineCount(); n > maxPackageLines {
				long = append(long, fmt.Sprintf("file %s is %d lines; want at most %d", rel, n, maxPackageLines))
			}
		}
	}
	slices.Sort(long)
	for _, l := range long {
		t.Error(l)
	}
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	if idx, ok := typ.(*ast.IndexListExpr); ok {
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return "(" + id.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}

// lineCount is the number of lines of file.
func lineCount(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}
