package main

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/freshet-dev/freshet/"

// The runtime and the runner run in customers' networks and speak the agent protocol: they must
// never link control-plane code. The public client and the API contracts it shares with the
// server and the runtime (api/...) must link nothing internal at all.
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
		from:      []string{"./client/...", "./api/..."},
		forbidden: []string{"internal/"},
	},
}

func TestPackageBoundaries(t *testing.T) {
	for _, b := range boundaries {
		checked := 0
		for _, pattern := range b.from {
			pkgs := goList(t, pattern)
			if len(pkgs) == 0 {
				t.Logf("%s matches no package (yet)", pattern)
			}
			for pkg, deps := range pkgs {
				checked++
				for _, dep := range deps {
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
		if checked == 0 {
			t.Errorf("no package of %v was checked: the patterns match nothing", b.from)
		}
	}
}

// allowed are packages in the control plane's tree that are pure and shared with agents: the
// pipeline spec compiler (the runner executes what it compiles; it does no I/O).
func allowed(rel string) bool {
	return rel == "internal/pipeline/spec"
}

// goList lists the packages of this module that pattern matches, with everything each depends
// on (tests excluded). The pattern is relative to the module's root (the test runs in
// cmd/freshet); one that matches nothing gives none (go list -e would print the pattern itself).
func goList(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", pattern)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	pkgs := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], module) {
			pkgs[f[0]] = f[1:]
		}
	}
	return pkgs
}
