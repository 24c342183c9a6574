package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || rel == "apiclient") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFuncLines {
				long = append(long, fmt.Sprintf("function %s in %s is %d lines; want at most %d", funcName(fn), rel, n, maxFuncLines))
			}
		}
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if top == "statedb" || top == "routes" || top == "control" {
			if n := fset.File(f.Pos()).LineCount(); n > maxPackageLines {
				long = append(long, fmt.Sprintf("file %s is %d lines; want at most %d", rel, n, maxPackageLines))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
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
