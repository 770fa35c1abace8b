package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
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

// docs/architecture.md names every package of the module, and README.md links every document
// under docs/: the map and the index stay true as packages and documents are added.
func TestTheMapNamesEveryPackageAndTheIndexEveryDoc(t *testing.T) {
	arch, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	n := 0
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, module)
		if !ok {
			continue
		}
		n++
		if !strings.Contains(string(arch), "`"+rel+"`") {
			t.Errorf("docs/architecture.md does not name package %s (as `%s`, with what it provides)", rel, rel)
		}
	}
	if n < 40 {
		t.Fatalf("listed only %d packages", n)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	for _, d := range docs {
		if name := "docs/" + filepath.Base(d); !strings.Contains(string(readme), "("+name+")") {
			t.Errorf("README.md does not link %s: add it to the documentation list", name)
		}
	}
}
