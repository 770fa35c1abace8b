package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every package under internal/ says what it provides in a package doc comment (in any of its
// files, test files included for test-only packages), so the map in docs/architecture.md can be
// checked against the code and a newcomer can read a package's purpose where it lives.
func TestEveryInternalPackageHasADocComment(t *testing.T) {
	dirs := map[string]bool{} // directory → has a package doc
	err := filepath.WalkDir("../../internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || name == "dist" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir := filepath.Dir(path)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if strings.HasSuffix(f.Name.Name, "_test") {
			// An external test package documents nothing of the package itself.
			dirs[dir] = dirs[dir] || false
			return nil
		}
		dirs[dir] = dirs[dir] || (f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found only %d packages under internal/: is the walk rooted right?", len(dirs))
	}
	for dir, documented := range dirs {
		if !documented {
			rel, _ := filepath.Rel("../..", dir)
			t.Errorf("package %s has no package doc comment: say what it provides (// Package %s …)", rel, filepath.Base(dir))
		}
	}
	if _, err := os.Stat("../../docs/architecture.md"); err != nil {
		t.Fatal(err)
	}
}
