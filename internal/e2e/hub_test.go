package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/proc"
)

// A user takes a template from the Hub into a Delivery Pipeline with `freshet up`: `freshet
// hub use` commits it, through the control plane, the tunnel and the local runtime's
// app-proxy, to a Git Source's repository (real git over HTTP) with the application that
// deploys it; the runtime syncs it to the loopback cluster, where the workflow controller
// lists it; the use is audited.
func TestHubUse(t *testing.T) {
	kc := kube.Shared(t)
	ns := kc.Namespace(t)
	repo := gitserver.New(t).NewRepo("pipelines")
	repo.Commit("main", map[string]string{"apps/README.md": "applications of the CI runtime"}, "init")

	home := t.TempDir()
	env := []string{"FRESHET_CLI_CONFIG=" + filepath.Join(home, "cli.yaml"), "FRESHET_SERVER=", "FRESHET_TOKEN=", "FRESHET_RUNTIME="}
	in := startUp(t, filepath.Join(home, "data"), proc.FreePort(t), "FRESHET_ADMIN_PASSWORD=hub-password-1", "KUBECONFIG="+kc.Kubeconfig)
	mustCLI(t, env, "login", "--server", in.url, "-u", "admin@freshet.local", "-p", "hub-password-1")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, _, code := run(t, env, 30*time.Second, "workflow-template", "list", "-n", ns); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			_, errs, _ := run(t, env, 30*time.Second, "workflow-template", "list", "-n", ns)
			t.Fatalf("the local runtime does not serve workflow templates after 60s: %s\n%s", errs, in.stderr)
		}
		time.Sleep(300 * time.Millisecond)
	}
	mustRun(t, env, time.Minute, "git-source", "create", "ci", "--runtime", "local", "--repo", repo.URL(), "--path", "apps", "--include", "*.yaml",
		"--dest-name", "in-cluster", "--dest-namespace", ns)

	out := mustRun(t, env, 2*time.Minute, "hub", "use", "notify", "--runtime", "local", "--git-source", "ci", "-o", "json")
	var res struct {
		File, Commit, Application string
		ApplicationCreated        bool
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.File != "workflow-templates/notify.yaml" || !res.ApplicationCreated || res.Commit != repo.RevParse("main") {
		t.Fatalf("hub use: %v %s", err, out)
	}
	if f, ok := repo.ReadFile("main", "workflow-templates/notify.yaml"); !ok || !strings.Contains(f, "argo-hub/description") {
		t.Fatalf("the template in git: %v %s", ok, f)
	}
	if _, errs, code := run(t, env, time.Minute, "hub", "use", "notify", "--runtime", "local", "--git-source", "ci"); code == 0 || !strings.Contains(errs, "exists") {
		t.Errorf("using it again without --upsert: %d %s", code, errs)
	}
	deadline = time.Now().Add(2 * time.Minute)
	for {
		out, _, code := run(t, env, 30*time.Second, "workflow-template", "list", "-n", ns)
		if code == 0 && strings.Contains(out, "notify") {
			break
		}
		if time.Now().After(deadline) {
			apps, _, _ := run(t, env, 30*time.Second, "app", "list")
			t.Fatalf("the template never reached the cluster:\n%s\n%s", out, apps)
		}
		time.Sleep(500 * time.Millisecond)
	}
	audit := mustRun(t, env, time.Minute, "audit", "list", "-o", "json")
	if !strings.Contains(audit, `"hub.template.use"`) || !strings.Contains(audit, "workflow-templates/notify.yaml") {
		t.Errorf("the use is not audited:\n%.2000s", audit)
	}
}
