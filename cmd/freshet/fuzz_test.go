package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// fuzzTargets returns every Go native fuzz target of the module as "./DIR NAME", found the way
// the go tool finds them: a function FuzzXxx in a _test.go file taking one *testing.F.
func fuzzTargets(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && path != "../..") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !isFuzzName(fn.Name.Name) || len(fn.Type.Params.List) != 1 {
				continue
			}
			star, ok := fn.Type.Params.List[0].Type.(*ast.StarExpr)
			if sel, ok2 := star.X.(*ast.SelectorExpr); !ok || !ok2 || sel.Sel.Name != "F" {
				continue
			}
			rel, _ := filepath.Rel("../..", filepath.Dir(path))
			out = append(out, "./"+filepath.ToSlash(rel)+" "+fn.Name.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// isFuzzName is the go tool's rule: "Fuzz", then nothing or a character that is not lower case.
func isFuzzName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Fuzz")
	return ok && (rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z'))
}

// make fuzz runs hack/fuzz.sh, which finds its targets with grep: it must find every target the
// go tool would run, so that none is left out of `make fuzz`.
func TestMakeFuzzRunsEveryFuzzTarget(t *testing.T) {
	want := fuzzTargets(t)
	if len(want) < 30 {
		t.Fatalf("found only %d fuzz targets: is the walk rooted right?", len(want))
	}
	out, err := exec.Command("sh", "../../hack/fuzz.sh", "-list").Output()
	if err != nil {
		t.Fatalf("hack/fuzz.sh -list: %v", err)
	}
	got := strings.Fields(strings.TrimSpace(string(out)))
	var listed []string
	for i := 0; i+1 < len(got); i += 2 {
		listed = append(listed, got[i]+" "+got[i+1])
	}
	sort.Strings(listed)
	for _, w := range want {
		if !slices.Contains(listed, w) {
			t.Errorf("make fuzz (hack/fuzz.sh) does not run %s: declare it as `func FuzzXxx(f *testing.F)` at the start of a line", w)
		}
	}
	for _, l := range listed {
		if !slices.Contains(want, l) {
			t.Errorf("hack/fuzz.sh lists %s, which is not a fuzz target", l)
		}
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "hack/fuzz.sh") {
		t.Error("the Makefile's fuzz target does not run hack/fuzz.sh")
	}
}

// docs/testing.md's "Fuzz targets" table names every fuzz target, and only those.
func TestFuzzTargetsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Fuzz targets\n")
	if !ok {
		t.Fatal(`docs/testing.md has no "## Fuzz targets" section`)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(Fuzz[A-Za-z0-9_]*)`").FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
	}
	names := map[string]bool{}
	for _, tgt := range fuzzTargets(t) {
		dir, name, _ := strings.Cut(tgt, " ")
		names[name] = true
		if !documented[name] {
			t.Errorf("fuzz target %s (%s) is not in docs/testing.md's Fuzz targets table", name, dir)
		}
	}
	for name := range documented {
		if !names[name] {
			t.Errorf("docs/testing.md's Fuzz targets table names %s, which is no fuzz target", name)
		}
	}
}

// decodes matches the calls by which a package decodes bytes or strings it did not make.
var decodes = regexp.MustCompile(`json\.Unmarshal|json\.NewDecoder|yaml\.Unmarshal|yaml\.NewDecoder|yaml\.UnmarshalStrict|` +
	`\.DecodeString\(|func \([^)]*\) UnmarshalJSON\(|url\.Parse\(|strconv\.Parse|time\.ParseDuration|time\.Parse\(`)

// noFuzzTarget are the packages that decode (see decodes) but have no fuzz target of their own,
// each with why. A package that gains a target must leave this list.
var noFuzzTarget = map[string]string{
	"api/runnerv1":                       "the runner protocol's JSON codec: its messages are fuzzed where they are checked (FuzzRunnerStepUpdate, FuzzReport)",
	"client":                             "the Go API client decodes the server's answers, not untrusted input",
	"internal/agent":                     "decodes the control plane's own answer to the runtime; the repository URL goes through repourl (FuzzNormalize)",
	"internal/bus":                       "operator configuration (NATS URLs) and events the server itself published",
	"internal/gitops/git":                "URLs go through repourl (FuzzNormalize); git objects are go-git's",
	"internal/gitops/workflows/emissary": "decodes the artifacts' spec its own controller wrote into the pod (the Workflow's artifacts are fuzzed in FuzzDecodeWorkflow)",
	"internal/runner/executor/container": "decodes the container engine's build stream (the engine's JSON, not the step's bytes) and operator options",
	"internal/runner/executor/local":     "/proc/PID/stat of its own children and the sandbox's status pipe, written by Freshet",
	"internal/runtimes/hostedkube":       "decodes the objects its own chart rendering produced (internal/runtimes/manifests, from the embedded chart), not untrusted input",
	"internal/runtimes/install":          "the installer's own manifests and the user's kubeconfig, read by client-go on the user's machine",
	"internal/runtimes/manifests":        "renders its own embedded charts (internal/helmchart, FuzzRenderValues); decodes only the executor's Role, not input",
	"internal/store":                     "its own rows and the operator's DSN",
	"internal/testenv/usage":             "reads the test process's own /proc/self/status",
	"internal/store/storetest":           "test helper",
	"internal/testenv/containers":        "test helper",
	"internal/testenv/kube":              "test helper",
	"internal/testenv/promenv":           "test helper: reads the answers of the Prometheus it started",
	"internal/tunnel/bench":              "benchmark tool",
	"internal/tunnel/client":             "the runtime's side: the server URL from its own options and the control plane's JSON error answer to a refused handshake (a message shown, never acted on); frames are fuzzed in tunnel/wire",
	"internal/webui":                     "the development server URL from the environment",
}

// Every package that decodes input has a fuzz target, or says in noFuzzTarget why it needs
// none. Adding a decoder to a package without one fails here until either is done.
func TestEveryDecoderHasAFuzzTarget(t *testing.T) {
	fuzzed := map[string]bool{}
	for _, tgt := range fuzzTargets(t) {
		dir, _, _ := strings.Cut(tgt, " ")
		fuzzed[strings.TrimPrefix(dir, "./")] = true
	}
	decoding := map[string]string{} // package dir → first file that decodes
	for _, root := range []string{"api", "client", "internal", "cmd"} {
		err := filepath.WalkDir("../../"+root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); name == "testdata" || name == "node_modules" || name == "dist" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel("../..", filepath.Dir(path))
			rel = filepath.ToSlash(rel)
			if _, seen := decoding[rel]; !seen && decodes.Match(src) {
				decoding[rel] = filepath.Base(path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(decoding) < 20 {
		t.Fatalf("found only %d decoding packages: is the walk rooted right?", len(decoding))
	}
	for dir, file := range decoding {
		_, exempt := noFuzzTarget[dir]
		switch {
		case !fuzzed[dir] && !exempt:
			t.Errorf("%s decodes input (%s) but has no fuzz target: add `func FuzzXxx(f *testing.F)` for its decoder, "+
				"list it in docs/testing.md, or say in noFuzzTarget why it needs none", dir, file)
		case fuzzed[dir] && exempt:
			t.Errorf("%s has a fuzz target now: remove it from noFuzzTarget", dir)
		}
	}
	for dir := range noFuzzTarget {
		if _, ok := decoding[dir]; !ok {
			t.Errorf("noFuzzTarget lists %s, which decodes nothing (any more): remove it", dir)
		}
	}
}
