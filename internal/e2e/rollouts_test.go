package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/proc"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func webRollout(image string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "` + image + `"}]}
  strategy:
    canary:
      canaryService: web-canary
      stableService: web-stable
      steps:
      - setWeight: 50
      - pause: {}
`
}

const webServices = `apiVersion: v1
kind: Service
metadata: {name: web-canary}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: web-stable}
spec: {selector: {app: web}, ports: [{port: 80}]}
`

// keysOf returns an object's keys, sorted.
func keysOf(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}

// A user runs a canary deployed by a GitOps application with the `freshet rollout` commands,
// through the control plane and the local runtime's app-proxy, on the loopback cluster.
func TestRolloutCommands(t *testing.T) {
	kc := kube.Shared(t)
	ns := kc.Namespace(t)
	repo := gitserver.New(t).NewRepo("apps")
	repo.Commit("main", map[string]string{"web/rollout.yaml": webRollout("registry.local/web:1"), "web/services.yaml": webServices}, "Add web")

	home := t.TempDir()
	env := []string{"FRESHET_CLI_CONFIG=" + filepath.Join(home, "cli.yaml"), "FRESHET_SERVER=", "FRESHET_TOKEN=", "FRESHET_RUNTIME="}
	in := startUp(t, filepath.Join(home, "data"), proc.FreePort(t), "FRESHET_ADMIN_PASSWORD=rollouts-password-1", "KUBECONFIG="+kc.Kubeconfig)
	mustCLI(t, env, "login", "--server", in.url, "-u", "admin@freshet.local", "-p", "rollouts-password-1")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, code := run(t, env, 30*time.Second, "app", "list"); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the local runtime does not serve applications after 30s:\n%s", in.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustRun(t, env, time.Minute, "app", "create", "guestbook", "--repo", repo.URL(), "--path", "web",
		"--dest-server", "https://kubernetes.default.svc", "--dest-namespace", ns, "--sync-policy", "automated")

	// The CLI's session, for what the CLI has no command for (a push notification, GraphQL).
	cfg, err := os.ReadFile(filepath.Join(home, "cli.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*token: (\S+)$`).FindSubmatch(cfg)
	if m == nil {
		t.Fatalf("no token in the CLI config:\n%s", cfg)
	}
	post := func(path, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", in.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+string(m[1]))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// notify tells the runtime about a push, as the control plane does after a push webhook:
	// the automated sync takes the new commit at once rather than at the next poll.
	notify := func() {
		t.Helper()
		resp := post("/runtimes/local/app-proxy/api/v1/notify", `{"repoURL": "`+repo.URL()+`"}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("notify: %d", resp.StatusCode)
		}
	}
	gql := func(query string) map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"query": query})
		req, _ := http.NewRequest("POST", in.url+"/runtimes/local/app-proxy/api/graphql", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+string(m[1]))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Data   map[string]any
			Errors []any
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Errors) > 0 {
			t.Fatalf("graphql %s: %v %v", query, err, out.Errors)
		}
		return out.Data
	}
	list := func(args ...string) []map[string]any {
		t.Helper()
		var out []map[string]any
		if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, append([]string{"rollout", "list", "-o", "json"}, args...)...)), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	waitFor := func(what string, cond func(r map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		var last []map[string]any
		for time.Now().Before(deadline) {
			last = list("--app", "guestbook")
			if len(last) == 1 && cond(last[0]) {
				return last[0]
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Fatalf("waiting for %s; last list: %v\n%s", what, last, in.stderr)
		return nil
	}
	is := func(phase string, step float64) func(map[string]any) bool {
		return func(r map[string]any) bool { return r["phase"] == phase && r["step"] == step }
	}

	r := waitFor("the first revision Healthy", is("Healthy", 2))
	if got, want := keysOf(r), []string{"app", "canaryRevision", "name", "namespace", "phase", "stableRevision", "step", "strategy"}; !slices.Equal(got, want) {
		t.Fatalf("rollout list -o json has fields %v, want exactly %v", got, want)
	}
	if r["name"] != "web" || r["namespace"] != ns || r["app"] != "guestbook" || r["strategy"] != "canary" || r["stableRevision"] != 1.0 || r["canaryRevision"] != nil {
		t.Fatalf("rollout list: %v", r)
	}
	if other := list("--app", "another"); len(other) != 0 {
		t.Fatalf("rollouts of an app without any: %v", other)
	}

	// A new image from git: the canary stops at its pause.
	c2 := repo.Commit("main", map[string]string{"web/rollout.yaml": webRollout("registry.local/web:2")}, "web 2")
	notify()
	waitFor("the canary paused", is("Paused", 1))
	var got map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "rollout", "get", "web", "-o", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if k, want := keysOf(got), []string{"analysisRuns", "app", "canaryRevision", "name", "namespace", "phase", "stableRevision", "step", "steps", "strategy"}; !slices.Equal(k, want) {
		t.Fatalf("rollout get -o json has fields %v, want exactly %v", k, want)
	}
	steps, _ := got["steps"].([]any)
	if len(steps) != 2 || got["canaryRevision"] != 2.0 || got["stableRevision"] != 1.0 {
		t.Fatalf("rollout get -o json: %v", got)
	}
	if s0, s1 := steps[0].(map[string]any), steps[1].(map[string]any); s0["status"] != "Succeeded" || s0["type"] != "setWeight" || s0["value"] != "50" || s1["status"] != "Running" || s1["type"] != "pause" {
		t.Fatalf("steps: %v", steps)
	}
	view := mustRun(t, env, time.Minute, "rollout", "get", "web")
	for _, want := range []string{"Status:       ॥ Paused (CanaryPauseStep)", "✔ 0. setWeight: 50", "▶ 1. pause (until promoted)", "Weight:     50%",
		"2         canary", "registry.local/web:2", "1         stable"} {
		if !strings.Contains(view, want) {
			t.Errorf("rollout get lacks %q:\n%s", want, view)
		}
	}

	// Abort and retry.
	if out := mustRun(t, env, time.Minute, "rollout", "abort", "web"); out != "Rollout "+ns+"/web aborted.\n" {
		t.Fatalf("abort: %q", out)
	}
	waitFor("aborted", func(r map[string]any) bool { return r["phase"] == "Degraded" })
	if _, errs, code := run(t, env, time.Minute, "rollout", "promote", "nope"); code != 1 || !strings.Contains(errs, `no rollout "nope" in runtime local`) {
		t.Fatalf("promote of a missing rollout: exit %d %s", code, errs)
	}
	mustRun(t, env, time.Minute, "rollout", "retry", "web", "--app", "guestbook")
	waitFor("paused again after the retry", is("Paused", 1))

	// watch (not a terminal: a line per change) sees the full promotion through.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	watch := exec.CommandContext(ctx, binary, "rollout", "watch", "web", "--until-complete")
	watch.Env = append(os.Environ(), env...)
	var wout, werr bytes.Buffer
	watch.Stdout, watch.Stderr = &wout, &werr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	mustRun(t, env, time.Minute, "rollout", "promote", "web", "--full")
	if err := watch.Wait(); err != nil {
		t.Fatalf("watch: %v\n%s%s", err, wout.String(), werr.String())
	}
	lines := strings.Split(strings.TrimSpace(wout.String()), "\n")
	if len(lines) < 2 || !strings.Contains(lines[0], ns+"/web Paused step 1/2 weight 50% stable 1 canary 2") ||
		!strings.Contains(lines[len(lines)-1], ns+"/web Healthy step 2/2 weight 100% stable 2 canary -") {
		t.Fatalf("watch printed:\n%s", wout.String())
	}

	// Undo: back to revision 1's template, rolled out as revision 3.
	if _, errs, code := run(t, env, time.Minute, "rollout", "undo", "web", "--to-revision", "9"); code != 1 || !strings.Contains(errs, "toRevision") || !strings.Contains(errs, "it has 1, 2") {
		t.Fatalf("undo to a revision that does not exist: exit %d %s", code, errs)
	}
	mustRun(t, env, time.Minute, "rollout", "undo", "web")
	r = waitFor("the undo's canary", is("Paused", 1))
	if r["canaryRevision"] != 3.0 || r["stableRevision"] != 2.0 {
		t.Fatalf("after undo: %v", r)
	}
	rolloutsGVR := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
	u, err := kc.Dynamic.Resource(rolloutsGVR).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(u.Object["spec"]); !strings.Contains(string(b), `"image":"registry.local/web:1"`) {
		t.Fatalf("after undo the template is %s", b)
	}
	mustRun(t, env, time.Minute, "rollout", "promote", "web", "--full")
	waitFor("the undo promoted", is("Healthy", 2))

	// Restart: spec.restartAt set, the controller records it once every pod is replaced.
	if out := mustRun(t, env, time.Minute, "rollout", "restart", "web"); out != "Rollout "+ns+"/web restarted.\n" {
		t.Fatalf("restart: %q", out)
	}
	deadline = time.Now().Add(2 * time.Minute)
	for {
		u, err := kc.Dynamic.Resource(rolloutsGVR).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := u.Object["spec"].(map[string]any)
		status, _ := u.Object["status"].(map[string]any)
		if spec["restartAt"] != nil && spec["restartAt"] == status["restartedAt"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restart not done: restartAt %v, restartedAt %v", spec["restartAt"], status["restartedAt"])
		}
		time.Sleep(500 * time.Millisecond)
	}

	// The app-proxy's GraphQL through the control plane: the list with a detail, a pause and a
	// resume.
	data := gql(`{ rollouts(app: "guestbook") { name namespace app phase strategy step stableRevision canaryRevision detail } }`)
	ros, _ := data["rollouts"].([]any)
	if len(ros) != 1 {
		t.Fatalf("graphql rollouts: %v", data)
	}
	ro := ros[0].(map[string]any)
	detail, _ := ro["detail"].(map[string]any)
	if ro["name"] != "web" || ro["stableRevision"] != 3.0 || detail == nil || len(detail["revisions"].([]any)) != 3 {
		t.Fatalf("graphql rollout: %v", ro)
	}
	data = gql(`mutation { pauseRollout(namespace: "` + ns + `", name: "web") }`)
	if p, _ := data["pauseRollout"].(map[string]any); p == nil || p["paused"] != true {
		t.Fatalf("graphql pauseRollout: %v", data)
	}
	data = gql(`mutation { resumeRollout(namespace: "` + ns + `", name: "web") }`)
	if p, _ := data["resumeRollout"].(map[string]any); p == nil || p["paused"] != false {
		t.Fatalf("graphql resumeRollout: %v", data)
	}

	// Every operation went through the control plane and is in the audit log; reads are not.
	var evs []struct{ Action, Detail string }
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "audit", "list", "--action", "runtime.app-proxy", "-o", "json")), &evs); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, e := range evs {
		if i := strings.Index(e.Detail, "/rollouts/"+ns+"/web/"); i >= 0 {
			ops = append(ops, strings.Fields(e.Detail[i+len("/rollouts/"+ns+"/web/"):])[0])
		}
	}
	slices.Reverse(ops) // newest first
	if want := []string{"abort", "retry", "promote", "undo", "undo", "promote", "restart"}; !slices.Equal(ops, want) {
		t.Errorf("audited rollout operations %v, want %v (all: %+v)", ops, want, evs)
	}
	// The runtime reported the abort to the control plane (gitops.rollout-changed), and
	// analytics made the deployment of web 2 a failed change: its application went Degraded.
	deadline = time.Now().Add(time.Minute)
	for {
		var deps []struct {
			Revision   string     `json:"revision"`
			DegradedAt *time.Time `json:"degradedAt"`
		}
		if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "deployments", "list", "--app", "guestbook", "-o", "json")), &deps); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range deps {
			found = found || d.Revision == c2 && d.DegradedAt != nil
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deployment of %s is not marked degraded by the abort: %+v", c2, deps)
		}
		time.Sleep(500 * time.Millisecond)
	}
	in.stop(t)
}
