package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/gantry-gpu/gantry/"

// goPackage is one directory's non-test Go files as the layering rules see them.
type goPackage struct {
	imports []string // of this module, without the module path; and the standard ones
	calls   []string // every selector name used, e.g. AuditEventsBefore
}

// repoPackages parses every non-test Go file under the repository root, by directory
// relative to it ("services/store").
func repoPackages(t *testing.T) map[string]*goPackage {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]*goPackage{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		p := pkgs[filepath.ToSlash(rel)]
		if p == nil {
			p = &goPackage{}
			pkgs[filepath.ToSlash(rel)] = p
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			p.imports = append(p.imports, strings.TrimPrefix(path, module))
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				p.calls = append(p.calls, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 || pkgs["services/store"] == nil {
		t.Fatalf("found %d packages under %s: not the repository", len(pkgs), root)
	}
	return pkgs
}

// under reports whether pkg is dir or inside it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// ours reports whether an import path is one of this module's top-level folders.
func ours(imp string) bool {
	for _, top := range []string{"cmd", "web", "handlers", "models", "services", "templates", "static", "migrations"} {
		if under(imp, top) {
			return true
		}
	}
	return false
}

// Imports point down (docs/ARCHITECTURE.md): cmd → web → handlers → services → store →
// models; templates only from handlers; the scheduler is pure. A package that breaks
// the direction fails here with the import that does.
func TestImportsPointDown(t *testing.T) {
	pkgs := repoPackages(t)
	impure := []string{"database/sql", "net", "net/http", "os", "os/exec", "log", "log/slog", "gorm.io/gorm"}
	for name, p := range pkgs {
		for _, imp := range p.imports {
			var why string
			switch {
			case (name == "models" || name == "migrations") && ours(imp):
				why = name + " imports nothing of Gantry's"
			case name == "templates" && ours(imp) && imp != "models":
				why = "templates import only models"
			case name == "services/store" && ours(imp) && imp != "models" && imp != "migrations":
				why = "the store imports only models and migrations"
			case under(name, "services/scheduler") && !strings.HasSuffix(name, "tracebench") && (ours(imp) && !under(imp, "services/scheduler") || slices.Contains(impure, imp)):
				why = "the scheduler is pure: no database, network, files, logger or other Gantry package"
			case under(name, "services") && (under(imp, "web") || under(imp, "handlers") || under(imp, "templates") || under(imp, "cmd")):
				why = "services import no web layer"
			case name == "handlers" && (under(imp, "web") || under(imp, "cmd")):
				why = "handlers import neither web nor cmd"
			case under(name, "web") && under(imp, "cmd"):
				why = "web imports no command"
			case imp == "templates" && name != "handlers":
				why = "only handlers render templates"
			}
			if why != "" {
				t.Errorf("%s imports %s: %s", name, imp, why)
			}
		}
	}
}

// Audit events leave the server only through services/audit, which masks secret values
// in their details; sign-in throttling counts failed logins and shows none.
func TestAuditEventsAreReadThroughTheAuditLog(t *testing.T) {
	for name, p := range repoPackages(t) {
		if name == "services/store" || name == "services/audit" || name == "services/identity" {
			continue
		}
		for _, call := range p.calls {
			if call == "AuditEventsBefore" || call == "AuditEventsAfter" {
				t.Errorf("%s reads the store's %s: read events through services/audit, which masks secrets", name, call)
			}
		}
	}
}
