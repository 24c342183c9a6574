// Package gosource parses the module's own Go files, tests left out, for
// the tests that check how the code is shaped (STYLE.md): what a package
// imports, what it calls, how long its functions and files are.
package gosource

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// File is one parsed Go file.
type File struct {
	// Path is the file's path: under the directory Dir or Module was
	// given, joined to it.
	Path string
	Fset *token.FileSet
	AST  *ast.File
}

// Pos is where n is, as "path:line:column".
func (f File) Pos(n ast.Node) string { return f.Fset.Position(n.Pos()).String() }

// Lines is how many lines n spans.
func (f File) Lines(n ast.Node) int {
	return f.Fset.Position(n.End()).Line - f.Fset.Position(n.Pos()).Line + 1
}

// Dir parses the Go files of the package in dir, its tests left out,
// with mode. It fails t if there are none: a test that checks no file
// checks nothing.
func Dir(t testing.TB, dir string, mode parser.Mode) []File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		files = append(files, parse(t, fset, name, mode))
	}
	if len(files) == 0 {
		t.Fatalf("no Go file in %s", dir)
	}
	return files
}

// Module parses the Go files of every package under root, the module's
// root, tests left out, with mode. It leaves out hidden directories,
// testdata and node_modules, and the directories skip names (paths
// relative to root, such as "apiclient").
func Module(t testing.TB, root string, mode parser.Mode, skip ...string) []File {
	t.Helper()
	fset := token.NewFileSet()
	var files []File
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
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || contains(skip, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, parse(t, fset, path, mode))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no Go file under %s", root)
	}
	return files
}

func parse(t testing.TB, fset *token.FileSet, path string, mode parser.Mode) File {
	t.Helper()
	f, err := parser.ParseFile(fset, path, nil, mode)
	if err != nil {
		t.Fatal(err)
	}
	return File{Path: path, Fset: fset, AST: f}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if filepath.Clean(x) == s {
			return true
		}
	}
	return false
}
