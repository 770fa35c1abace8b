package host_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// manualApp is an Application resource without automated sync: only operations sync it.
func manualApp(name, ns, repo, path string, historyLimit int) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s
  annotations: {link.argocd.argoproj.io/docs: "https://docs.example.com/web"}
spec:
  project: default
  revisionHistoryLimit: %d
  source: {repoURL: %s, path: %s, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, name, ns, historyLimit, repo, path, ns)
}

const cronJob = `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          initContainers: [{name: init, image: "registry.example.com/init:1"}]
          containers: [{name: job, image: "registry.example.com/web:%s"}]
`

const ingress = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  tls: [{hosts: [web.example.com]}]
  rules:
  - host: web.example.com
    http:
      paths:
      - {path: /app, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
  - host: plain.example.com
`

// requestSync writes an operation on the resource as `argocd app sync` does (the Argo CD API
// server updates the resource; a merge patch is the same write).
func requestSync(t *testing.T, dyn dynamic.Interface, ns, name, op string) {
	t.Helper()
	if _, err := dyn.Resource(host.ApplicationsResource).Namespace(ns).Patch(context.Background(), name, types.MergePatchType,
		[]byte(`{"operation":`+op+`}`), metav1.PatchOptions{FieldManager: "argocd-server"}); err != nil {
		t.Fatalf("write operation: %v", err)
	}
}

// operationDone is an operation finished and removed from the resource, begun after since.
func operationDone(since time.Time) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		if _, has := u.Object["operation"]; has {
			return false
		}
		phase := str(u, "status", "operationState", "phase")
		started, err := time.Parse(time.RFC3339, str(u, "status", "operationState", "startedAt"))
		return err == nil && !started.Before(since.Truncate(time.Second)) && phase != "" && phase != "Running"
	}
}

func history(u *unstructured.Unstructured) []map[string]any {
	hs, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
	out := make([]map[string]any, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.(map[string]any))
	}
	return out
}

func TestClusterApplicationOperation(t *testing.T) {
	w := newWorldWith(t, func(ns string, o *host.Options) { o.ClusterApps, o.ClusterAppsNamespace = true, ns })
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(kube.Shared(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	sha1 := w.source.Commit("main", map[string]string{
		"web/cm.yaml":   fmt.Sprintf(cm, "blue"),
		"web/cron.yaml": fmt.Sprintf(cronJob, "1"),
		"web/ing.yaml":  ingress,
	}, "first")
	waitCRD(t, dyn)
	kubectlApply(t, dyn, w.ns, manualApp("web", w.ns, w.source.URL(), "web", 2))
	waitCR(t, dyn, w.ns, "web", "OutOfSync", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "OutOfSync"
	})

	// argocd app sync: the sync runs once, the operation is removed, operationState and
	// history say what ran, who asked and when.
	since := time.Now()
	requestSync(t, dyn, w.ns, "web", `{"sync":{"revision":"main","prune":true,"syncOptions":["ApplyOutOfSyncOnly=false"],"syncStrategy":{"hook":{}}},"initiatedBy":{"username":"alice"},"retry":{"limit":2}}`)
	u := waitCR(t, dyn, w.ns, "web", "the operation done", operationDone(since))
	if got := str(u, "status", "operationState", "phase"); got != "Succeeded" {
		t.Fatalf("operationState.phase = %q (%s), want Succeeded", got, str(u, "status", "operationState", "message"))
	}
	if got := str(u, "status", "operationState", "operation", "initiatedBy", "username"); got != "alice" {
		t.Errorf("operationState.operation.initiatedBy.username = %q, want alice", got)
	}
	if opts, _, _ := unstructured.NestedStringSlice(u.Object, "status", "operationState", "operation", "sync", "syncOptions"); !slices.Equal(opts, []string{"ApplyOutOfSyncOnly=false"}) {
		t.Errorf("operationState.operation.sync.syncOptions = %v", opts)
	}
	if got := str(u, "status", "operationState", "syncResult", "revision"); got != sha1 {
		t.Errorf("operationState.syncResult.revision = %q, want %q", got, sha1)
	}
	if msg := str(u, "status", "operationState", "message"); !strings.Contains(msg, "operation.retry") {
		t.Errorf("operationState.message %q does not name the ignored operation.retry", msg)
	}
	for _, f := range []string{"startedAt", "finishedAt"} {
		if _, err := time.Parse(time.RFC3339, str(u, "status", "operationState", f)); err != nil {
			t.Errorf("operationState.%s: %v", f, err)
		}
	}
	if _, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Fatalf("ConfigMap after the operation: %v", err)
	}
	u = waitCR(t, dyn, w.ns, "web", "one history entry", func(u *unstructured.Unstructured) bool { return len(history(u)) == 1 })
	h := history(u)[0]
	if h["revision"] != sha1 || h["deployedAt"] == nil || h["deployStartedAt"] == nil || h["id"] == nil {
		t.Errorf("status.history[0] = %v", h)
	}
	if src, _ := h["source"].(map[string]any); src["repoURL"] != w.source.URL() || src["path"] != "web" {
		t.Errorf("status.history[0].source = %v", h["source"])
	}
	if by, _ := h["initiatedBy"].(map[string]any); by["username"] != "alice" {
		t.Errorf("status.history[0].initiatedBy = %v", h["initiatedBy"])
	}
	// status.summary: the CronJob's images and the Ingress's and annotations' URLs.
	u = waitCR(t, dyn, w.ns, "web", "a summary", func(u *unstructured.Unstructured) bool {
		imgs, _, _ := unstructured.NestedStringSlice(u.Object, "status", "summary", "images")
		return len(imgs) > 0
	})
	if imgs, _, _ := unstructured.NestedStringSlice(u.Object, "status", "summary", "images"); !slices.Equal(imgs, []string{"registry.example.com/init:1", "registry.example.com/web:1"}) {
		t.Errorf("status.summary.images = %v", imgs)
	}
	if urls, _, _ := unstructured.NestedStringSlice(u.Object, "status", "summary", "externalURLs"); !slices.Equal(urls, []string{"http://plain.example.com", "https://docs.example.com/web", "https://web.example.com/app"}) {
		t.Errorf("status.summary.externalURLs = %v", urls)
	}
	// Once: no second sync of the same request.
	time.Sleep(time.Second)
	var hist struct{ Items []engine.HistoryEntry }
	if code := w.call("viewer", "GET", "applications/web/history", "", &hist); code != http.StatusOK || len(hist.Items) != 1 || hist.Items[0].User != "alice" {
		t.Errorf("history through the API: %d, %+v, want one sync by alice", code, hist.Items)
	}

	// More syncs: the history keeps spec.revisionHistoryLimit (2) entries, newest last; the
	// summary follows the new image.
	var shas []string
	for i := 2; i <= 4; i++ {
		sha := w.source.Commit("main", map[string]string{"web/cron.yaml": fmt.Sprintf(cronJob, fmt.Sprint(i))}, fmt.Sprint("v", i))
		shas = append(shas, sha)
		since := time.Now()
		requestSync(t, dyn, w.ns, "web", fmt.Sprintf(`{"sync":{"revision":%q},"initiatedBy":{"username":"bob"}}`, sha))
		u = waitCR(t, dyn, w.ns, "web", "operation "+sha, operationDone(since))
		if got := str(u, "status", "operationState", "phase"); got != "Succeeded" {
			t.Fatalf("sync to %s: %s %s", sha, got, str(u, "status", "operationState", "message"))
		}
	}
	u = waitCR(t, dyn, w.ns, "web", "history of the last two", func(u *unstructured.Unstructured) bool {
		hs := history(u)
		return len(hs) == 2 && hs[1]["revision"] == shas[2]
	})
	if hs := history(u); hs[0]["revision"] != shas[1] || hs[0]["id"].(int64) >= hs[1]["id"].(int64) {
		t.Errorf("status.history = %v, want %s then %s with increasing ids", hs, shas[1], shas[2])
	}
	waitCR(t, dyn, w.ns, "web", "the new image in the summary", func(u *unstructured.Unstructured) bool {
		imgs, _, _ := unstructured.NestedStringSlice(u.Object, "status", "summary", "images")
		return slices.Contains(imgs, "registry.example.com/web:4")
	})

	// A dry run changes nothing and records no history.
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "green")}, "green")
	since = time.Now()
	requestSync(t, dyn, w.ns, "web", `{"sync":{"dryRun":true},"initiatedBy":{"username":"carol"}}`)
	u = waitCR(t, dyn, w.ns, "web", "the dry run done", operationDone(since))
	if got := str(u, "status", "operationState", "phase"); got != "Succeeded" {
		t.Errorf("dry run: %s %s", got, str(u, "status", "operationState", "message"))
	}
	if dry, _, _ := unstructured.NestedBool(u.Object, "status", "operationState", "operation", "sync", "dryRun"); !dry {
		t.Errorf("operationState.operation.sync.dryRun not recorded")
	}
	if got, _ := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{}); got.Data["color"] != "blue" {
		t.Errorf("a dry run changed the ConfigMap: %v", got.Data)
	}
	if hs := history(u); len(hs) != 2 || hs[1]["revision"] != shas[2] {
		t.Errorf("a dry run changed the history: %v", hs)
	}

	// A selective sync with the apply strategy: only the selected resource.
	since = time.Now()
	requestSync(t, dyn, w.ns, "web", `{"sync":{"resources":[{"kind":"ConfigMap","name":"settings"}],"syncStrategy":{"apply":{}}},"initiatedBy":{"username":"carol"}}`)
	u = waitCR(t, dyn, w.ns, "web", "the selective sync done", operationDone(since))
	if got := str(u, "status", "operationState", "phase"); got != "Succeeded" {
		t.Errorf("selective sync: %s %s", got, str(u, "status", "operationState", "message"))
	}
	if got, _ := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{}); got.Data["color"] != "green" {
		t.Errorf("the selective sync did not apply the ConfigMap: %v", got.Data)
	}

	// Bad input: a clear operationState Error naming the field; the request is removed and
	// nothing runs.
	since = time.Now()
	requestSync(t, dyn, w.ns, "web", `{"sync":{"syncOptions":["Bogus=1"],"resources":[{"kind":"ConfigMap"}]},"initiatedBy":{"username":"mallory"}}`)
	u = waitCR(t, dyn, w.ns, "web", "the invalid operation refused", operationDone(since))
	msg := str(u, "status", "operationState", "message")
	if got := str(u, "status", "operationState", "phase"); got != "Error" || !strings.Contains(msg, "operation.sync.syncOptions[0]") || !strings.Contains(msg, "operation.sync.resources[0].name") || strings.Contains(msg, "line 1") {
		t.Errorf("invalid operation: %s %q", got, msg)
	}
	if got := str(u, "status", "operationState", "operation", "initiatedBy", "username"); got != "mallory" {
		t.Errorf("the refused request is not recorded: %q", got)
	}
	// An operation on an app the runtime refused: an Error naming the spec problem.
	bad := strings.Replace(manualApp("bad", w.ns, w.source.URL(), "web", 2), "namespace: "+w.ns+"}", "namespace: Not_A_Namespace}", 1)
	kubectlApply(t, dyn, w.ns, bad)
	waitCR(t, dyn, w.ns, "bad", "an InvalidSpecError", func(u *unstructured.Unstructured) bool {
		return hasCondition(u, "InvalidSpecError", "spec.destination.namespace")
	})
	since = time.Now()
	requestSync(t, dyn, w.ns, "bad", `{"sync":{},"initiatedBy":{"username":"alice"}}`)
	u = waitCR(t, dyn, w.ns, "bad", "the operation refused", operationDone(since))
	if got, msg := str(u, "status", "operationState", "phase"), str(u, "status", "operationState", "message"); got != "Error" || !strings.Contains(msg, "spec.destination.namespace") {
		t.Errorf("operation on an invalid app: %s %q", got, msg)
	}
}

// A multi-source Application resource (a chart with a $values file from a second repository):
// each status.history entry names both sources and each one's revision, as Argo CD writes it;
// the API's history does too; a rollback to the first entry brings both sources back.
func TestClusterMultiSourceHistory(t *testing.T) {
	w := newWorldWith(t, func(ns string, o *host.Options) { o.ClusterApps, o.ClusterAppsNamespace = true, ns })
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(kube.Shared(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	values := gitserver.New(t).NewRepo("values")
	chart1 := w.source.Commit("main", map[string]string{
		"chart/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/values.yaml":       "color: red\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ms}\ndata: {color: {{ .Values.color | quote }}}\n",
	}, "chart")
	values1 := values.Commit("main", map[string]string{"envs/prod.yaml": "color: blue\n"}, "blue")
	waitCRD(t, dyn)
	kubectlApply(t, dyn, w.ns, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ms, namespace: %[1]s}
spec:
  project: default
  revisionHistoryLimit: 5
  sources:
  - {repoURL: %[2]s, path: chart, targetRevision: main, helm: {valueFiles: [$values/envs/prod.yaml]}}
  - {repoURL: %[3]s, targetRevision: main, ref: values}
  destination: {server: https://kubernetes.default.svc, namespace: %[1]s}
`, w.ns, w.source.URL(), values.URL()))
	color := func() string {
		cm, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "ms", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return cm.Data["color"]
	}
	sync := func(what string) *unstructured.Unstructured {
		t.Helper()
		since := time.Now()
		requestSync(t, dyn, w.ns, "ms", `{"sync":{},"initiatedBy":{"username":"alice"}}`)
		u := waitCR(t, dyn, w.ns, "ms", what, operationDone(since))
		if got := str(u, "status", "operationState", "phase"); got != "Succeeded" {
			t.Fatalf("%s: %s %s", what, got, str(u, "status", "operationState", "message"))
		}
		return u
	}
	sync("the first sync")
	values2 := values.Commit("main", map[string]string{"envs/prod.yaml": "color: green\n"}, "green")
	u := sync("the second sync")
	if got := color(); got != "green" {
		t.Fatalf("color after the second sync: %q", got)
	}
	// status.history: both entries with both sources and each one's revision.
	checkEntry := func(h map[string]any, revs []string) {
		t.Helper()
		got, _, _ := unstructured.NestedStringSlice(h, "revisions")
		srcs, _, _ := unstructured.NestedSlice(h, "sources")
		if !slices.Equal(got, revs) || len(srcs) != 2 || h["revision"] != nil || h["source"] != nil {
			t.Errorf("history entry %v: revisions %q, want %q, and two sources", h, got, revs)
			return
		}
		s0, s1 := srcs[0].(map[string]any), srcs[1].(map[string]any)
		if s0["repoURL"] != w.source.URL() || s0["path"] != "chart" || s1["repoURL"] != values.URL() || s1["ref"] != "values" {
			t.Errorf("history entry sources %v", srcs)
		}
	}
	hs := history(u)
	if len(hs) != 2 {
		t.Fatalf("status.history = %v, want two entries", hs)
	}
	checkEntry(hs[0], []string{chart1, values1})
	checkEntry(hs[1], []string{chart1, values2})

	// The API's history says the same.
	var hist struct{ Items []engine.HistoryEntry }
	if code := w.call("viewer", "GET", "applications/ms/history", "", &hist); code != http.StatusOK || len(hist.Items) != 2 ||
		!slices.Equal(hist.Items[0].Revisions, []string{chart1, values1}) || len(hist.Items[0].Sources) != 2 || hist.Items[0].Sources[1].Ref != "values" {
		t.Fatalf("history through the API: %d %+v", code, hist.Items)
	}

	// A rollback to the first entry: the values repository's earlier commit is back, and the
	// new entry names both sources at their first revisions.
	var rb engine.RollbackResult
	if code := w.call("member", "POST", "applications/ms/rollback", fmt.Sprintf(`{"id": %d}`, hist.Items[0].ID), &rb); code != http.StatusOK || rb.Result == nil || rb.Result.Phase != engine.PhaseSucceeded {
		t.Fatalf("rollback: %d %+v", code, rb)
	}
	if got := color(); got != "blue" || rb.Result.Revision != chart1+","+values1 {
		t.Errorf("after the rollback: color %q at %q, want blue at %s,%s", got, rb.Result.Revision, chart1, values1)
	}
	u = waitCR(t, dyn, w.ns, "ms", "the rollback in the history", func(u *unstructured.Unstructured) bool { return len(history(u)) == 3 })
	checkEntry(history(u)[2], []string{chart1, values1})
	// status.sync of a multi-source app has revisions (what the sources' target revisions
	// resolve to: the values branch's head), as Argo CD writes it.
	if revs, _, _ := unstructured.NestedStringSlice(u.Object, "status", "sync", "revisions"); !slices.Equal(revs, []string{chart1, values2}) || str(u, "status", "sync", "revision") != "" {
		t.Errorf("status.sync: revision %q revisions %q", str(u, "status", "sync", "revision"), revs)
	}
}
