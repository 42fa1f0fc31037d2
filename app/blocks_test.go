package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// No darwin file hands AppKit a completion handler built from a Go func:
// darwinkit v0.5.0 turns a func argument of objc.Call into a block whose
// dispose helper reads memory it has just freed, and AppKit keeps a
// completion handler after the call returns, so it is disposed later, on
// AppKit's schedule. Such handlers are compiler-made blocks in an
// Objective-C preamble that call back into Go through a cgo.Handle
// (app/picker, app/notify).
func TestNoGoFuncAsCompletionHandler(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_darwin.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isObjcCall(call.Fun) {
				return true
			}
			handler, goFunc := false, false
			for _, a := range call.Args {
				if _, ok := a.(*ast.FuncLit); ok {
					goFunc = true
				}
				if sel, ok := a.(*ast.CallExpr); ok && len(sel.Args) == 1 {
					if lit, ok := sel.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, _ := strconv.Unquote(lit.Value); strings.HasSuffix(s, "Handler:") {
							handler = true
						}
					}
				}
			}
			if handler && goFunc {
				t.Errorf("%s: a Go func passed as a completion handler", fset.Position(call.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isObjcCall reports whether fun is objc.Call[T] (darwinkit's message
// send, which turns a func argument into a block).
func isObjcCall(fun ast.Expr) bool {
	if ix, ok := fun.(*ast.IndexExpr); ok {
		fun = ix.X
	}
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "objc" && sel.Sel.Name == "Call"
}
