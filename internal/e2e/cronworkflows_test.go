package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/proc"
)

// A user runs `freshet cron` (argo cron's operations) through the control plane and the local
// runtime's app-proxy to its workflow controller on the loopback cluster: lint refuses a bad
// stop strategy naming the field and passes a good manifest, create, list, get, update (a bad
// when refused naming spec.when), suspend, resume and delete work, and the changes are audited.
func TestCronWorkflowCommands(t *testing.T) {
	kc := kube.Shared(t)
	ns := kc.Namespace(t)
	home := t.TempDir()
	env := []string{"FRESHET_CLI_CONFIG=" + filepath.Join(home, "cli.yaml"), "FRESHET_SERVER=", "FRESHET_TOKEN=", "FRESHET_RUNTIME="}
	in := startUp(t, filepath.Join(home, "data"), proc.FreePort(t), "FRESHET_ADMIN_PASSWORD=cron-password-1", "KUBECONFIG="+kc.Kubeconfig)
	mustCLI(t, env, "login", "--server", in.url, "-u", "admin@freshet.local", "-p", "cron-password-1")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, _, code := run(t, env, 30*time.Second, "cron", "list", "-n", ns); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			_, errs, _ := run(t, env, 30*time.Second, "cron", "list", "-n", ns)
			t.Fatalf("the local runtime does not serve cron workflows after 60s: %s\n%s", errs, in.stderr)
		}
		time.Sleep(300 * time.Millisecond)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const good = `apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: e2e-nightly}
spec:
  schedules: ["0 3 * * *"]
  timezone: Europe/Berlin
  stopStrategy: {expression: "cronworkflow.failed >= 3"}
  workflowSpec:
    entrypoint: main
    templates:
    - {name: main, suspend: {}}
`
	bad := write("bad.yaml", strings.Replace(good, "cronworkflow.failed", "cronworkflow.fialed", 1))
	for _, verb := range []string{"lint", "create"} {
		_, errs, code := run(t, env, time.Minute, "cron", verb, "-f", bad, "-n", ns)
		if code == 0 || !strings.Contains(errs, `spec.stopStrategy.expression: "cronworkflow.fialed >= 3" names cronworkflow.fialed`) {
			t.Fatalf("%s of a bad stop strategy: exit %d: %s", verb, code, errs)
		}
	}
	file := write("good.yaml", good)
	if out := mustRun(t, env, time.Minute, "cron-workflow", "lint", "-f", file, "-n", ns); !strings.Contains(out, "CronWorkflow "+ns+"/e2e-nightly: no errors found.") {
		t.Fatalf("lint: %s", out)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "cron", "list", "-n", ns, "-o", "json")), &list); err != nil || len(list) != 0 {
		t.Fatalf("after lint and refusals: %v, %v", list, err)
	}
	if out := mustRun(t, env, time.Minute, "cron", "create", "-f", file, "-n", ns); !strings.Contains(out, "CronWorkflow "+ns+"/e2e-nightly created.") {
		t.Fatalf("create: %s", out)
	}
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "cron", "list", "-n", ns, "-o", "json")), &list); err != nil ||
		len(list) != 1 || list[0]["name"] != "e2e-nightly" || list[0]["stopExpression"] != "cronworkflow.failed >= 3" || list[0]["creator"] != "admin@freshet.local" {
		t.Fatalf("list: %v, %v", list, err)
	}
	if out := mustRun(t, env, time.Minute, "cron", "get", "e2e-nightly"); !strings.Contains(out, "Schedules:") || !strings.Contains(out, "0 3 * * *") ||
		!strings.Contains(out, "StopStrategy:") || !strings.Contains(out, "NextScheduledTime:") {
		t.Fatalf("get: %s", out)
	}
	// update replaces the spec (a bad when is refused naming it, nothing changed), keeps the status.
	badWhen := write("bad-when.yaml", strings.Replace(good, `  timezone: Europe/Berlin`, `  timezone: Europe/Berlin
  when: "{{= cronworkflow.succeeded >  }}"`, 1))
	if _, errs, code := run(t, env, time.Minute, "cron", "update", "-f", badWhen, "-n", ns); code == 0 || !strings.Contains(errs, "spec.when") {
		t.Fatalf("update with a bad when: exit %d: %s", code, errs)
	}
	updated := write("updated.yaml", strings.Replace(strings.Replace(good, `"0 3 * * *"`, `"30 4 * * *"`, 1), `  timezone: Europe/Berlin`, `  timezone: Europe/Berlin
  when: "{{= cronworkflow.lastScheduledTime == nil || (now() - cronworkflow.lastScheduledTime).Hours() > 12 }}"`, 1))
	if out := mustRun(t, env, time.Minute, "cron", "update", "-f", updated); !strings.Contains(out, "CronWorkflow "+ns+"/e2e-nightly updated.") {
		t.Fatalf("update: %s", out)
	}
	if out := mustRun(t, env, time.Minute, "cron", "get", "e2e-nightly"); !strings.Contains(out, "30 4 * * *") || !strings.Contains(out, "When:") {
		t.Fatalf("get after update: %s", out)
	}
	mustRun(t, env, time.Minute, "cron", "suspend", "e2e-nightly")
	var cw map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "cron", "get", ns+"/e2e-nightly", "-o", "json")), &cw); err != nil || cw["suspended"] != true || cw["nextScheduledTime"] != nil {
		t.Fatalf("after suspend: %v, %v", cw, err)
	}
	if out := mustRun(t, env, time.Minute, "cron", "resume", "e2e-nightly", "-o", "json"); !strings.Contains(out, `"suspended": false`) {
		t.Fatalf("resume: %s", out)
	}
	if out := mustRun(t, env, time.Minute, "cron", "delete", "e2e-nightly"); !strings.Contains(out, "deleted") {
		t.Fatalf("delete: %s", out)
	}
	if _, errs, code := run(t, env, time.Minute, "cron", "get", "e2e-nightly"); code == 0 || !strings.Contains(errs, `no cron workflow "e2e-nightly"`) {
		t.Fatalf("get after delete: exit %d: %s", code, errs)
	}

	var evs []map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, env, "audit", "list", "--action", "runtime.app-proxy", "-o", "json")), &evs); err != nil {
		t.Fatal(err)
	}
	var details []string
	for _, e := range evs {
		d, _ := e["detail"].(string)
		details = append(details, d)
	}
	joined := strings.Join(details, "\n")
	for _, want := range []string{"POST /app-proxy/api/v1/cron-workflows → 201", "POST /app-proxy/api/v1/cron-workflows → 400",
		"POST /app-proxy/api/v1/cron-workflows/" + ns + "/e2e-nightly/suspend → 200", "PUT /app-proxy/api/v1/cron-workflows/" + ns + "/e2e-nightly → 200",
		"PUT /app-proxy/api/v1/cron-workflows/" + ns + "/e2e-nightly → 400", "DELETE /app-proxy/api/v1/cron-workflows/" + ns + "/e2e-nightly → 204"} {
		if !strings.Contains(joined, want) {
			t.Errorf("audit lacks %q:\n%s", want, joined)
		}
	}
}
