package statedb

import (
	"context"
	"database/sql"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/ast/astutil"
	"golang.org/x/tools/go/packages"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// A backend a statement is prepared on.
type backend int

const (
	forSQLite backend = 1 << iota
	forPostgres
	forBoth = forSQLite | forPostgres
)

// statement is a constant SQL text of this package and where it is.
type statement struct {
	text string
	pos  string
	on   backend
}

// sqlHelpers are the methods that take SQL text, and the index of the
// argument that is the text (after the receiver).
var sqlHelpers = map[string]int{
	"(*Tx).exec":      1,
	"(*Tx).query":     1,
	"(*Tx).queryRow":  1,
	"(*session).stmt": 1,
}

// builtAtRunTime are the functions whose SQL text is not a constant,
// built as they run, each with the reason. Every one must still pass a
// constant statement for the test to find: the parts they add are
// constants of their own.
var builtAtRunTime = map[string]string{
	"(*Tx).ListLorries": "only the filters given are in its query (listLorriesQuery); listLorriesTexts has every form",
	"(*Tx).jobRetireAndLorry": "its column lists are jobColumns and lorryColumns with their tables named (qualified), " +
		"made once when the program starts",
}

// listLorriesTexts is the query of ListLorries for every combination of
// its filters.
func listLorriesTexts() []string {
	var out []string
	for _, prefix := range []string{"", "a/b", "\xff"} {
		for _, after := range []string{"", "a/c"} {
			for _, state := range []string{"", StateHardFailed} {
				for _, queue := range []string{"", DefaultQueue} {
					q, _ := listLorriesQuery(LorryListing{Prefix: prefix, After: after, State: state, Queue: queue, Limit: 1})
					out = append(out, q)
				}
			}
		}
	}
	return out
}

// TestEveryStatementPrepares prepares every statement of the package, as
// written, on the database of each backend that runs it: those of
// sqlite*.go and sqliteSQL on SQLite, those of pg*.go and postgres*.go
// and postgresSQL on PostgreSQL, those of the other files on both. The
// statements are found in the package's source: each constant SQL text
// given to a helper that prepares it (sqlHelpers), or to a function that
// passes it on to one, and each field of the drivers' dialectSQL values.
func TestEveryStatementPrepares(t *testing.T) {
	stmts := packageStatements(t)
	if len(stmts) < 100 {
		t.Fatalf("found %d statements; the search of the source is broken", len(stmts))
	}
	t.Run("sqlite", func(t *testing.T) {
		place := filepath.Join(t.TempDir(), "state.db")
		prepareAll(t, "sqlite", place, forSQLite, stmts)
	})
	t.Run("postgres", func(t *testing.T) {
		addr := dbtest.DatabaseOrSkip(t)
		prepareAll(t, "pgx", dbtest.Direct(t, addr), forPostgres, stmts)
	})
}

// prepareAll migrates the database at place, then prepares on one
// connection of driverName each statement that runs on b, after making
// the temporary tables that the statements use.
func prepareAll(t *testing.T, driverName, place string, b backend, stmts []statement) {
	ctx := context.Background()
	db, err := Open(ctx, place, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	pool, err := sql.Open(driverName, place)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if b == forSQLite {
		if _, err := conn.ExecContext(ctx, touchedQueues); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	for _, st := range stmts {
		if st.on&b == 0 || !strings.HasPrefix(st.text, "CREATE TEMP") {
			continue
		}
		if _, err := conn.ExecContext(ctx, st.text); err != nil {
			t.Errorf("%s: %v\n%s", st.pos, err, st.text)
		}
	}
	for _, st := range stmts {
		if st.on&b == 0 {
			continue
		}
		text := st.text
		p, err := conn.PrepareContext(ctx, text)
		if err != nil {
			t.Errorf("%s: %v\n%s", st.pos, err, text)
			continue
		}
		p.Close()
		n++
	}
	t.Logf("%d statements prepared", n)
}

// packageStatements are the package's statements, found in its non-test
// source, type-checked so that constants are folded.
func packageStatements(t *testing.T) []statement {
	t.Helper()
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
			packages.NeedTypes | packages.NeedTypesInfo,
	}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("load the package: %v", pkgs[0].Errors)
	}
	pkg := pkgs[0]
	f := &finder{
		fset:    pkg.Fset,
		info:    pkg.TypesInfo,
		helpers: map[*types.Func]int{},
		seen:    map[string]bool{},
		dynamic: map[string]bool{},
	}
	scope := pkg.Types.Scope()
	for name, i := range sqlHelpers {
		recv, method, _ := strings.Cut(name, ").")
		obj := scope.Lookup(strings.TrimPrefix(recv, "(*"))
		if obj == nil {
			t.Fatalf("no type %s", recv)
		}
		m, _, _ := types.LookupFieldOrMethod(types.NewPointer(obj.Type()), true, pkg.Types, method)
		fn, ok := m.(*types.Func)
		if !ok {
			t.Fatalf("no helper %s", name)
		}
		f.helpers[fn] = i
	}
	// A function that passes its parameter to a helper becomes one:
	// look again until no new one is found.
	for more := true; more; {
		more = false
		for _, file := range pkg.Syntax {
			more = f.file(file) || more
		}
	}
	for _, file := range pkg.Syntax {
		f.dialects(file)
	}
	for fn := range f.dynamic {
		if builtAtRunTime[fn] == "" {
			t.Errorf("%s gives a helper SQL text that is not a constant: write each statement whole, or say why it is built in builtAtRunTime", fn)
		}
	}
	for fn := range builtAtRunTime {
		if !f.dynamic[fn] {
			t.Errorf("builtAtRunTime names %s, which builds no SQL text now", fn)
		}
	}
	for _, text := range listLorriesTexts() {
		f.stmts = append(f.stmts, statement{text: text, pos: "listLorriesQuery", on: forBoth})
	}
	sort.Slice(f.stmts, func(i, j int) bool { return f.stmts[i].pos < f.stmts[j].pos })
	return f.stmts
}

// finder finds the statements of a package.
type finder struct {
	fset    *token.FileSet
	info    *types.Info
	helpers map[*types.Func]int
	stmts   []statement
	seen    map[string]bool // by position and text
	dynamic map[string]bool // the functions that build SQL text
}

// backendOf is the backend that runs the statements of file.
func backendOf(file string) backend {
	switch base := filepath.Base(file); {
	case strings.HasPrefix(base, "sqlite"):
		return forSQLite
	case strings.HasPrefix(base, "pg"), strings.HasPrefix(base, "postgres"):
		return forPostgres
	}
	return forBoth
}

// file looks at the calls of the helpers in file, and says whether it
// found a new helper.
func (f *finder) file(file *ast.File) bool {
	more := false
	for _, decl := range file.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		encl, _ := f.info.Defs[fd.Name].(*types.Func)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn := calledFunc(f.info, call)
			i, ok := f.helpers[fn]
			if !ok || i >= len(call.Args) {
				return true
			}
			more = f.arg(file, fd, encl, call.Args[i]) || more
			return true
		})
	}
	return more
}

// record records the constant SQL text of expr, if it is one, and says
// whether it was.
func (f *finder) record(file *ast.File, fd *ast.FuncDecl, expr ast.Expr) bool {
	tv, ok := f.info.Types[expr]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return false
	}
	text := constant.StringVal(tv.Value)
	pos := f.fset.Position(expr.Pos())
	where := fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line)
	if !f.seen[where+"\x00"+text] {
		f.seen[where+"\x00"+text] = true
		on := backendOf(pos.Filename) & branchOf(file, fd, expr)
		f.stmts = append(f.stmts, statement{text: text, pos: where, on: on})
	}
	return true
}

// arg records the SQL text arg given in function encl, declared by fd,
// and says whether it found a new helper.
func (f *finder) arg(file *ast.File, fd *ast.FuncDecl, encl *types.Func, arg ast.Expr) bool {
	if f.record(file, fd, arg) {
		return false
	}
	if f.dialectField(arg) {
		// A driver's own statement: found in its value.
		return false
	}
	if id, ok := ast.Unparen(arg).(*ast.Ident); ok && encl != nil {
		if v, ok := f.info.Uses[id].(*types.Var); ok {
			params := encl.Type().(*types.Signature).Params()
			for i := range params.Len() {
				if params.At(i) == v {
					if _, known := f.helpers[encl]; known {
						return false
					}
					f.helpers[encl] = i
					return true
				}
			}
			if f.locals(file, fd, v) {
				return false
			}
		}
	}
	f.dynamic[funcName(encl)] = true
	return false
}

// locals records the values given to the local variable v in fd, and
// says whether each is a constant.
func (f *finder) locals(file *ast.File, fd *ast.FuncDecl, v *types.Var) bool {
	var values []ast.Expr
	whole := true
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				id, ok := lhs.(*ast.Ident)
				if !ok || f.info.ObjectOf(id) != v {
					continue
				}
				if len(n.Rhs) != len(n.Lhs) || n.Tok != token.ASSIGN && n.Tok != token.DEFINE {
					whole = false
					continue
				}
				values = append(values, n.Rhs[i])
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if f.info.ObjectOf(id) == v && i < len(n.Values) {
					values = append(values, n.Values[i])
				}
			}
		}
		return true
	})
	if !whole || len(values) == 0 {
		return false
	}
	for _, e := range values {
		if tv := f.info.Types[e]; (tv.Value == nil || tv.Value.Kind() != constant.String) && !f.dialectField(e) {
			return false
		}
	}
	for _, e := range values {
		f.record(file, fd, e)
	}
	return true
}

// branchOf is the backends on which expr, in fd, may run, as the checks
// of a pg field around it say, and fd's name: a function named pg... runs
// on PostgreSQL, one named sqlite... on SQLite.
func branchOf(file *ast.File, fd *ast.FuncDecl, expr ast.Expr) backend {
	on := forBoth
	switch {
	case strings.HasPrefix(fd.Name.Name, "pg"):
		on = forPostgres
	case strings.HasPrefix(fd.Name.Name, "sqlite"):
		on = forSQLite
	}
	path, _ := astutil.PathEnclosingInterval(file, expr.Pos(), expr.End())
	for i := 1; i < len(path); i++ {
		child := path[i-1]
		switch n := path[i].(type) {
		case *ast.IfStmt:
			pg, ok := pgCheck(n.Cond)
			if !ok {
				continue
			}
			if child == n.Else {
				pg = !pg
			} else if child != n.Body {
				continue
			}
			on &= backendFor(pg)
		case *ast.BlockStmt:
			// An earlier "if x.pg { ...; return }" leaves the rest of
			// the block to the other backend.
			for _, st := range n.List {
				if st.Pos() >= child.Pos() {
					break
				}
				is, ok := st.(*ast.IfStmt)
				if !ok || is.Else != nil || len(is.Body.List) == 0 {
					continue
				}
				pg, ok := pgCheck(is.Cond)
				if _, ret := is.Body.List[len(is.Body.List)-1].(*ast.ReturnStmt); ok && ret {
					on &= backendFor(!pg)
				}
			}
		}
	}
	return on
}

// pgCheck says whether cond is a check of a pg field, and whether it is
// true on PostgreSQL.
func pgCheck(cond ast.Expr) (pg, ok bool) {
	cond = ast.Unparen(cond)
	if u, isNot := cond.(*ast.UnaryExpr); isNot && u.Op == token.NOT {
		pg, ok := pgCheck(u.X)
		return !pg, ok
	}
	sel, isSel := cond.(*ast.SelectorExpr)
	return true, isSel && sel.Sel.Name == "pg"
}

func backendFor(pg bool) backend {
	if pg {
		return forPostgres
	}
	return forSQLite
}

// dialects records the fields of the drivers' dialectSQL values.
func (f *finder) dialects(file *ast.File) {
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				var on backend
				switch name.Name {
				case "sqliteSQL":
					on = forSQLite
				case "postgresSQL":
					on = forPostgres
				default:
					continue
				}
				lit, ok := ast.Unparen(vs.Values[i]).(*ast.CompositeLit)
				if !ok {
					continue
				}
				for _, elt := range lit.Elts {
					kv := elt.(*ast.KeyValueExpr)
					pos := f.fset.Position(kv.Pos())
					where := fmt.Sprintf("%s:%d %s.%s", filepath.Base(pos.Filename), pos.Line, name.Name, kv.Key.(*ast.Ident).Name)
					tv := f.info.Types[kv.Value]
					if tv.Value == nil || tv.Value.Kind() != constant.String {
						f.dynamic[where] = true
						continue
					}
					f.stmts = append(f.stmts, statement{text: constant.StringVal(tv.Value), pos: where, on: on})
				}
			}
		}
	}
}

// dialectField says whether e is a field of a dialectSQL.
func (f *finder) dialectField(e ast.Expr) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	v, ok := f.info.Uses[sel.Sel].(*types.Var)
	return ok && v.IsField() && isDialectSQL(f.info.TypeOf(sel.X))
}

func isDialectSQL(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "dialectSQL"
}

// calledFunc is the function or method that call calls, if it names one.
func calledFunc(info *types.Info, call *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = fun
	case *ast.SelectorExpr:
		id = fun.Sel
	default:
		return nil
	}
	fn, _ := info.Uses[id].(*types.Func)
	if fn != nil {
		fn = fn.Origin()
	}
	return fn
}

func funcName(fn *types.Func) string {
	if fn == nil {
		return "a function literal at package level"
	}
	if sig := fn.Type().(*types.Signature); sig.Recv() != nil {
		recv := types.TypeString(sig.Recv().Type(), func(*types.Package) string { return "" })
		return "(" + recv + ")." + fn.Name()
	}
	return fn.Name()
}
