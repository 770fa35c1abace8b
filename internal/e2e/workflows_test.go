package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/proc"
)

// A user runs Delivery Pipelines with `freshet workflow`, through the control plane and the
// local runtime's app-proxy to its workflow controller on the loopback cluster: a submit that
// fails lint is refused naming the field, a submit from a WorkflowTemplate with a parameter is
// terminated, its finish reaches the control plane's archive, which keeps it after the Workflow
// is deleted from the cluster; a submit --wait runs to the end; the operations are audited.
func TestWorkflowCommands(t *testing.T) {
	kc := kube.Shared(t)
	ns := kc.Namespace(t)
	home := t.TempDir()
	env := []string{"FRESHET_CLI_CONFIG=" + filepath.Join(home, "cli.yaml"), "FRESHET_SERVER=", "FRESHET_TOKEN=", "FRESHET_RUNTIME="}
	in := startUp(t, filepath.Join(home, "data"), proc.FreePort(t), "FRESHET_ADMIN_PASSWORD=workflows-password-1", "KUBECONFIG="+kc.Kubeconfig)
	mustCLI(t, env, "login", "--server", in.url, "-u", "admin@freshet.local", "-p", "workflows-password-1")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, _, code := run(t, env, 30*time.Second, "workflow", "list", "-n", ns); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			_, errs, _ := run(t, env, 30*time.Second, "workflow", "list", "-n", ns)
			t.Fatalf("the local runtime does not serve workflows after 60s: %s\n%s", errs, in.stderr)
		}
		time.Sleep(300 * time.Millisecond)
	}
	cfg, err := os.ReadFile(filepath.Join(home, "cli.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*token: (\S+)$`).FindSubmatch(cfg)
	if m == nil {
		t.Fatalf("no token in the CLI config:\n%s", cfg)
	}
	get := func(path string, out any) int {
		t.Helper()
		req, _ := http.NewRequest("GET", in.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+string(m[1]))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == 200 && out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Refused as argo lint refuses it: the field is named, nothing is created.
	bad := write("cyclic.yaml", `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: cyclic}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: A, template: w, dependencies: [B]}
      - {name: B, template: w, dependencies: [A]}
  - name: w
    suspend: {duration: "1"}
`)
	_, errs, code := run(t, env, time.Minute, "workflow", "submit", "-f", bad, "-n", ns)
	if code == 0 || !strings.Contains(errs, `spec.templates[0].dag.tasks: "A -> B -> A" is a dependency cycle`) && !strings.Contains(errs, `spec.templates[0].dag.tasks: "B -> A -> B" is a dependency cycle`) {
		t.Fatalf("a cyclic DAG: exit %d: %s", code, errs)
	}
	var wfs []map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "workflow", "list", "-n", ns, "-o", "json")), &wfs); err != nil || len(wfs) != 0 {
		t.Fatalf("after a refused submit: %v, %v", wfs, err)
	}

	// A WorkflowTemplate applied in the cluster, as a Git Source would.
	tmpl := `apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata: {name: release}
spec:
  entrypoint: main
  arguments: {parameters: [{name: version, value: "0.0.0"}]}
  templates:
  - name: main
    steps:
    - - {name: approve, template: approve}
  - name: approve
    suspend: {}
    outputs:
      parameters:
      - {name: decision, enum: [approve, reject], valueFrom: {supplied: {}}}
`
	j, _ := yaml.YAMLToJSON([]byte(tmpl))
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	wt := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowtemplates"}
	if _, err := kc.Dynamic.Resource(wt).Namespace(ns).Create(t.Context(), &u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var tmpls []map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "workflow-template", "list", "-n", ns, "-o", "json")), &tmpls); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tmpls, func(x map[string]any) bool { return x["name"] == "release" && x["namespace"] == ns }) {
		t.Fatalf("workflow-template list: %v", tmpls)
	}

	var sub map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "workflow", "submit", "--from", "workflowtemplate/release", "-p", "version=2.0.0", "-n", ns, "-o", "json")), &sub); err != nil {
		t.Fatal(err)
	}
	name, _ := sub["name"].(string)
	if !strings.HasPrefix(name, "release-") || sub["creator"] != "admin@freshet.local" {
		t.Fatalf("submitted: %v", sub)
	}
	var got map[string]any
	waitGet := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			got = nil
			if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "workflow", "get", name, "-o", "json")), &got); err != nil {
				t.Fatal(err)
			}
			if cond() {
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
		t.Fatalf("waiting for %s; last: %v\n%s", what, got, in.stderr)
	}
	waitGet("the approval waiting", func() bool {
		nodes, _ := got["nodes"].([]any)
		for _, n := range nodes {
			if n := n.(map[string]any); n["type"] == "Suspend" && n["phase"] == "Running" {
				return true
			}
		}
		return false
	})
	for _, k := range []string{"name", "phase", "startedAt", "finishedAt", "nodes"} {
		if _, ok := got[k]; !ok {
			t.Fatalf("workflow get -o json lacks %s: %v", k, got)
		}
	}
	if got["phase"] != "Running" || got["finishedAt"] != nil || got["startedAt"] == nil {
		t.Fatalf("running: %v", got)
	}
	// An approval's answer outside the parameter's enum is refused, naming it; the node waits on.
	if _, errs, code := run(t, env, time.Minute, "workflow", "resume", name, "--node", "approve", "-p", "decision=maybe"); code == 0 ||
		!strings.Contains(errs, "parameters.decision") || !strings.Contains(errs, "is not one of [approve reject]") {
		t.Fatalf("resume with a bad value: exit %d: %s", code, errs)
	}
	out := mustRun(t, env, time.Minute, "workflow", "terminate", name)
	if !strings.Contains(out, "Workflow "+ns+"/"+name+" terminated.") {
		t.Fatalf("terminate: %s", out)
	}
	waitGet("terminated", func() bool { return got["phase"] == "Failed" })
	if got["message"] != "Stopped with strategy 'Terminate'" || got["finishedAt"] == nil {
		t.Fatalf("terminated: %v", got)
	}
	if _, errs, code := run(t, env, time.Minute, "workflow", "terminate", name); code == 0 || !strings.Contains(errs, "has finished") {
		t.Fatalf("terminate again: exit %d: %s", code, errs)
	}
	// Logs go through the tunnel as a stream: a workflow of suspend steps has no pod, so none.
	if out := mustRun(t, env, time.Minute, "workflow", "logs", name, "-f"); out != "" {
		t.Fatalf("logs of a workflow without pods: %q", out)
	}
	// GraphQL reads and operates the same Workflows.
	gql := func(query string) map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"query": query})
		req, _ := http.NewRequest("POST", in.url+"/runtimes/local/app-proxy/api/graphql", strings.NewReader(string(body)))
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
	d := gql(`{ workflows(namespace: "` + ns + `") { name phase message finishedAt } }`)
	if l, _ := d["workflows"].([]any); len(l) != 1 || l[0].(map[string]any)["name"] != name || l[0].(map[string]any)["phase"] != "Failed" {
		t.Fatalf("graphql workflows: %v", d)
	}
	d = gql(`mutation { submitWorkflow(namespace: "` + ns + `", from: "workflowtemplate/release", parameters: ["version=3"]) }`)
	gname, _ := d["submitWorkflow"].(map[string]any)["name"].(string)
	if !strings.HasPrefix(gname, "release-") || gname == name {
		t.Fatalf("graphql submit: %v", d)
	}
	d = gql(`mutation { stopWorkflow(namespace: "` + ns + `", name: "` + gname + `") }`)
	if d["stopWorkflow"].(map[string]any)["shutdown"] != "Stop" {
		t.Fatalf("graphql stop: %v", d)
	}
	view := mustRun(t, env, time.Minute, "workflow", "get", name)
	for _, want := range []string{"Status:", "Failed (Stopped with strategy 'Terminate')", "Template:", "release", "Parameter:", "version=2.0.0", "approve"} {
		if !strings.Contains(view, want) {
			t.Errorf("workflow get lacks %q:\n%s", want, view)
		}
	}

	// The finish reaches the control plane's archive.
	type archived struct {
		ID, Name, UID, Phase, Message, Trigger, TriggeredBy, Template, Runtime string
		NodeCount                                                              int
		Nodes                                                                  []map[string]any
	}
	var list struct{ Items []archived }
	deadline = time.Now().Add(time.Minute)
	for {
		if st := get("/api/v1/archived-workflows?namespace="+ns+"&name="+name, &list); st != 200 {
			t.Fatalf("archive: %d", st)
		}
		if len(list.Items) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminated workflow never reached the archive\n%s", in.stderr)
		}
		time.Sleep(300 * time.Millisecond)
	}
	a := list.Items[0]
	if a.Phase != "Failed" || a.Message != "Stopped with strategy 'Terminate'" || a.Trigger != "submit" || a.TriggeredBy != "admin@freshet.local" ||
		a.Template != "release" || a.Runtime != "local" || a.NodeCount == 0 || a.UID == "" {
		t.Fatalf("archived: %+v", a)
	}
	// The runtime deletes the Workflow; the control plane keeps it.
	wfr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflows"}
	if err := kc.Dynamic.Resource(wfr).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, env, time.Minute, "workflow", "get", name, "-n", ns); code == 0 || !strings.Contains(errs, "not found") {
		t.Fatalf("get of a deleted workflow: exit %d: %s", code, errs)
	}
	var one archived
	if st := get("/api/v1/archived-workflows/"+a.UID, &one); st != 200 || one.ID != a.ID || len(one.Nodes) != a.NodeCount {
		t.Fatalf("archived after deletion: %d %+v", st, one)
	}

	// submit --wait runs to the end.
	good := write("pause.yaml", `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {generateName: pause-}
spec:
  entrypoint: main
  templates:
  - name: main
    suspend: {duration: "1"}
`)
	out = mustRun(t, env, 2*time.Minute, "workflow", "submit", "-f", good, "-n", ns, "--wait")
	if !strings.Contains(out, "Succeeded") {
		t.Fatalf("submit --wait:\n%s", out)
	}

	// The operations are audited in the account.
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
	for _, want := range []string{"POST /app-proxy/api/v1/workflows → 201", "POST /app-proxy/api/v1/workflows → 400",
		"POST /app-proxy/api/v1/workflows/" + ns + "/" + name + "/terminate → 200", "POST /app-proxy/api/v1/workflows/" + ns + "/" + name + "/terminate → 409"} {
		if !strings.Contains(joined, want) {
			t.Errorf("audit lacks %q:\n%s", want, joined)
		}
	}
}
