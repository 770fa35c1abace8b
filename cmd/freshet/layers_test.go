package main

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// layers is the layering docs/architecture.md draws, lowest first. A package may import
// packages of its own layer or of lower ones, never of a higher one: arrows run down. A package
// belongs to the layer of the longest prefix below that names it; every package of the module
// must be placed (a new one fails the test until it is).
var layers = []struct {
	name     string
	prefixes []string
}{
	{"leaves", []string{
		"internal/errdefs", "internal/paging", "internal/token", "internal/rbac", "internal/webhook",
		"internal/pipeline/spec", "internal/version", "internal/config", "internal/runner/mask",
		"internal/runner/executor", "internal/runner/imagesign", "internal/schedule", "internal/repourl", "internal/gitops/crd", "internal/gitops/internal/yamlx",
		"internal/tunnel/wire", "internal/runtimes/manifests", "internal/secrets", "internal/bus", "internal/netpolicy", "internal/gqlguard", "internal/sender",
		"api", "client", "internal/testenv/fill", "charts", "hub", "internal/helmchart",
	}},
	{"store", []string{"internal/store"}},
	{"domains and engines", []string{
		"internal/identity", "internal/audit", "internal/images", "internal/billing", "internal/pipeline", "internal/runtimes", "internal/events", "internal/analytics", "internal/notify", "internal/products", "internal/hub",
		"internal/cron", "internal/runner", "internal/gitops", "internal/gitops/rollouts", "internal/gitops/events", "internal/gitops/appset", "internal/tunnel/client", "internal/testenv",
		"internal/runner/executor/local", "internal/runner/executor/kubernetes", "internal/runner/executor/executortest",
		"internal/runner/executor/container",
	}},
	{"edges", []string{
		"internal/api", "internal/webui", "internal/tunnel", "internal/appproxy",
	}},
	{"wiring", []string{"internal/server", "internal/agent", "internal/backup"}},
	{"commands", []string{"internal/cli"}},
	{"programs and suites", []string{
		"cmd", "hack", "internal/e2e", "internal/faults", "internal/security", "internal/tunnel/bench",
	}},
}

// layerOf returns the index of rel's layer, or -1 when no prefix names it.
func layerOf(rel string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l.prefixes {
			if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best
}

func TestImportsRunDownTheLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	var unplaced []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		rel, ok := strings.CutPrefix(f[0], module)
		if !ok {
			continue
		}
		from := layerOf(rel)
		if from < 0 {
			unplaced = append(unplaced, rel)
			continue
		}
		checked++
		for _, imp := range f[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			to := layerOf(dep)
			if to > from {
				t.Errorf("%s (%s) imports %s (%s): an arrow up the layers", rel, layers[from].name, dep, layers[to].name)
			}
		}
	}
	sort.Strings(unplaced)
	for _, rel := range unplaced {
		t.Errorf("package %s is in no layer: place it in cmd/freshet/layers_test.go and in docs/architecture.md's layers", rel)
	}
	if checked < 40 {
		t.Fatalf("checked only %d packages: is go list run from the module root?", checked)
	}
}
