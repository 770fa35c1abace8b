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
