package main

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/freshet-dev/freshet/"

// The runtime and the runner run in customers' networks and speak the agent protocol: they must
// never link control-plane code. The public client must link nothing internal at all.
var boundaries = []struct {
	from      []string // package patterns the rule applies to
	forbidden []string // import path prefixes they must not depend on
}{
	{
		from: []string{"./internal/agent/...", "./internal/runner/...", "./internal/gitops/...", "./internal/appproxy/...", "./internal/tunnel/client/...",
			"./internal/rollouts/...", "./internal/workflow/...", "./internal/trigger/..."},
		forbidden: []string{"internal/server", "internal/store", "internal/identity", "internal/audit", "internal/api/",
			"internal/rbac", "internal/billing", "internal/pipeline", "internal/secrets", "internal/runtimes",
			"internal/events", "internal/cron", "internal/analytics", "internal/cli"},
	},
	{
		from:      []string{"./client/..."},
		forbidden: []string{"internal/"},
	},
}

func TestPackageBoundaries(t *testing.T) {
	checked := 0
	for _, b := range boundaries {
		for _, pattern := range b.from {
			pkgs := goList(t, pattern)
			for _, pkg := range pkgs {
				checked++
				for _, dep := range goList(t, "-deps", pkg) {
					rel, ok := strings.CutPrefix(dep, module)
					if !ok {
						continue
					}
					for _, f := range b.forbidden {
						if strings.HasPrefix(rel, f) && !allowed(rel) {
							t.Errorf("%s imports %s: it must not depend on %s*", pkg, dep, f)
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no package was checked: the patterns match nothing")
	}
}

// allowed are packages in the control plane's tree that are pure and shared with agents: the
// pipeline spec compiler (the runner executes what it compiles; it does no I/O).
func allowed(rel string) bool {
	return rel == "internal/pipeline/spec"
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-e", "-f", "{{.ImportPath}}"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !strings.Contains(l, "matched no packages") {
			pkgs = append(pkgs, l)
		}
	}
	return pkgs
}
