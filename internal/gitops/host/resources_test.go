package host_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

const service = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80}]
`

type fieldError struct {
	Error struct{ Code, Message, Field string }
}

// The node panel's endpoints on a live application: a managed Deployment's live and desired
// manifests, an owned Pod's live one, events, a Pod's log, restart and delete; each refused
// for what is not in the application's tree, for bad input and (changes) for viewers.
func TestResourceEndpoints(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue"), "web/deploy.yaml": deploy, "web/svc.yaml": service, "web/ing.yaml": ingress}, "first")
	if code := w.call("member", "POST", "applications", appYAML("web", w.source.URL(), w.ns, true), nil); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	w.waitApp("web", func(st engine.AppStatus) bool { return st.Sync == engine.Synced })
	q := func(group, kind, name string) string {
		return fmt.Sprintf("group=%s&kind=%s&namespace=%s&name=%s", group, kind, w.ns, name)
	}

	// The tree carries what the network view draws.
	var pod *appproxyv1.TreeNode
	deadline := time.Now().Add(60 * time.Second)
	var tree appproxyv1.List[*appproxyv1.TreeNode]
	for pod == nil {
		w.call("viewer", "GET", "applications/web/tree", "", &tree)
		for _, n := range tree.Items {
			for _, rs := range n.Children {
				for _, p := range rs.Children {
					if p.Kind == "Pod" {
						pod = p
					}
				}
			}
		}
		if pod == nil && time.Now().After(deadline) {
			t.Fatalf("no Pod in the tree: %+v", tree.Items)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, n := range tree.Items {
		switch n.Kind {
		case "Service":
			if n.Network == nil || n.Network.Selector["app"] != "web" {
				t.Errorf("Service network %+v, want selector app=web", n.Network)
			}
		case "Ingress":
			if n.Network == nil || strings.Join(n.Network.Backends, ",") != "web" {
				t.Errorf("Ingress network %+v, want backend web", n.Network)
			}
		}
	}
	if pod.Network == nil || pod.Network.Labels["app"] != "web" {
		t.Errorf("Pod network %+v, want labels app=web", pod.Network)
	}

	// A managed resource: live and desired manifests, Synced, no diff.
	var d appproxyv1.ResourceDetail
	if code := w.call("viewer", "GET", "applications/web/resource?"+q("apps", "Deployment", "web"), "", &d); code != http.StatusOK {
		t.Fatalf("deployment: %d %+v", code, d)
	}
	if !d.Managed || d.Status != "Synced" || d.Diff != "" || d.Live == nil || d.Desired == nil || d.UID == "" {
		t.Errorf("deployment detail %+v: want managed, Synced, live and desired", d)
	}
	if md, _ := d.Live["metadata"].(map[string]any); md["managedFields"] != nil || md["name"] != "web" {
		t.Errorf("live metadata %v: want the name, no managed fields", md)
	}
	if _, ok := d.Live["status"]; !ok {
		t.Errorf("live manifest without its status: %v", d.Live)
	}
	// An owned Pod: live only.
	d = appproxyv1.ResourceDetail{}
	if code := w.call("viewer", "GET", "applications/web/resource?"+q("", "Pod", pod.Name), "", &d); code != http.StatusOK || d.Managed || d.Live == nil || d.Desired != nil {
		t.Errorf("pod: %d %+v, want live, not managed, no desired", code, d)
	}
	// What is not in the tree is not found; bad input names the field.
	var e fieldError
	if code := w.call("viewer", "GET", "applications/web/resource?"+q("", "ConfigMap", "kube-root-ca.crt"), "", &e); code != http.StatusNotFound {
		t.Errorf("an object of the namespace outside the app: %d %+v, want 404", code, e)
	}
	if code := w.call("viewer", "GET", "applications/web/resource?name=web", "", &e); code != http.StatusBadRequest || e.Error.Field != "kind" {
		t.Errorf("no kind: %d %+v, want 400 naming kind", code, e)
	}
	if code := w.call("viewer", "GET", "applications/nope/resource?"+q("apps", "Deployment", "web"), "", &e); code != http.StatusNotFound {
		t.Errorf("unknown app: %d, want 404", code)
	}

	// Events: the Deployment controller scaled a ReplicaSet.
	deadline = time.Now().Add(30 * time.Second)
	for {
		var evs appproxyv1.List[appproxyv1.ResourceEvent]
		if code := w.call("viewer", "GET", "applications/web/resource/events?"+q("apps", "Deployment", "web"), "", &evs); code != http.StatusOK {
			t.Fatalf("events: %d", code)
		}
		if len(evs.Items) > 0 && evs.Items[0].Reason == "ScalingReplicaSet" && evs.Items[0].Count >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events of the Deployment: %+v, want ScalingReplicaSet", evs.Items)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Logs: a Pod's only. The loopback cluster's nodes may have no kubelet to serve a log:
	// then 503 naming the Pod, never an error body in a 200 nor a 500.
	if code := w.call("viewer", "GET", "applications/web/resource/logs?"+q("apps", "Deployment", "web"), "", &e); code != http.StatusBadRequest || e.Error.Field != "kind" {
		t.Errorf("logs of a Deployment: %d %+v, want 400 naming kind", code, e)
	}
	if code := w.call("viewer", "GET", "applications/web/resource/logs?"+q("", "Pod", pod.Name)+"&tailLines=-1", "", &e); code != http.StatusBadRequest || e.Error.Field != "tailLines" {
		t.Errorf("negative tailLines: %d %+v, want 400 naming tailLines", code, e)
	}
	req := httptest.NewRequest("GET", host.APIPrefix+"applications/web/resource/logs?"+q("", "Pod", pod.Name), nil)
	req.Header.Set(wire.HeaderAccount, "acc-1")
	req.Header.Set(wire.HeaderRole, "viewer")
	rec := httptest.NewRecorder()
	w.api.ServeHTTP(rec, req)
	switch {
	case rec.Code == http.StatusOK && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain"):
	case rec.Code == http.StatusServiceUnavailable && strings.Contains(rec.Body.String(), pod.Name):
	default:
		t.Errorf("log of the Pod: %d %s %q, want a text/plain 200 or a 503 naming the Pod", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	if code := w.call("viewer", "GET", "applications/web/resource/logs?"+q("", "Pod", "gone-1"), "", &e); code != http.StatusNotFound {
		t.Errorf("log of a Pod not in the tree: %d %+v, want 404", code, e)
	}

	// Restart: members only, workloads only; sets the template's restartedAt and leaves the
	// application in sync (the engine does not own the annotation).
	if code := w.call("viewer", "POST", "applications/web/resource/restart?"+q("apps", "Deployment", "web"), "", &e); code != http.StatusForbidden {
		t.Errorf("viewer restart: %d, want 403", code)
	}
	if code := w.call("member", "POST", "applications/web/resource/restart?"+q("", "ConfigMap", "settings"), "", &e); code != http.StatusBadRequest || e.Error.Field != "kind" {
		t.Errorf("restart a ConfigMap: %d %+v, want 400 naming kind", code, e)
	}
	var rr appproxyv1.RestartResult
	if code := w.call("member", "POST", "applications/web/resource/restart?"+q("apps", "Deployment", "web"), "", &rr); code != http.StatusOK || rr.RestartedAt.IsZero() {
		t.Fatalf("restart: %d %+v", code, rr)
	}
	dep, err := w.kc.AppsV1().Deployments(w.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || dep.Spec.Template.Annotations[engine.RestartedAtAnnotation] != rr.RestartedAt.Format(time.RFC3339) {
		t.Fatalf("template annotations after restart: %v %v, want restartedAt %s", dep.Spec.Template.Annotations, err, rr.RestartedAt)
	}
	// The live object is read from the engine's watch cache, which may not have the restart's
	// change yet while the desired one (a dry run against the apiserver) has it: look again.
	w.call("member", "POST", "applications/web/refresh", "", nil)
	deadline = time.Now().Add(20 * time.Second)
	for {
		d = appproxyv1.ResourceDetail{}
		code := w.call("viewer", "GET", "applications/web/resource?"+q("apps", "Deployment", "web"), "", &d)
		if code == http.StatusOK && d.Status == "Synced" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart the Deployment is %d %s (diff %s), want Synced", code, d.Status, d.Diff)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Delete: members only; the propagation is checked; the Pod goes (its ReplicaSet makes
	// another). The restart replaced the Pods: take one of the new ReplicaSet's.
	// The tree can still list a Pod of the old ReplicaSet that is going away by itself: a
	// delete that finds it gone (404) takes another Pod from a fresh tree.
	deadline = time.Now().Add(60 * time.Second)
	checked := false
	for {
		pod = nil
		w.call("viewer", "GET", "applications/web/tree", "", &tree)
		for _, n := range tree.Items {
			for _, rs := range n.Children {
				for _, p := range rs.Children {
					if p.Kind == "Pod" && p.Health.Status == "Healthy" {
						pod = p
					}
				}
			}
		}
		if pod == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no Pod in the tree after the restart: %+v", tree.Items)
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if !checked {
			if code := w.call("viewer", "DELETE", "applications/web/resource?"+q("", "Pod", pod.Name), "", &e); code != http.StatusForbidden {
				t.Errorf("viewer delete: %d, want 403", code)
			}
			if code := w.call("member", "DELETE", "applications/web/resource?"+q("", "Pod", pod.Name)+"&propagation=sideways", "", &e); code != http.StatusBadRequest || e.Error.Field != "propagation" {
				t.Errorf("bad propagation: %d %+v, want 400 naming propagation", code, e)
			}
			checked = true
		}
		code := w.call("member", "DELETE", "applications/web/resource?"+q("", "Pod", pod.Name)+"&propagation=background", "", nil)
		if code == http.StatusNoContent {
			break
		}
		if code != http.StatusNotFound || time.Now().After(deadline) {
			t.Fatalf("delete pod %s: %d", pod.Name, code)
		}
		time.Sleep(200 * time.Millisecond)
	}
	p, err := w.kc.CoreV1().Pods(w.ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err == nil && p.DeletionTimestamp == nil {
		t.Errorf("pod %s still there after delete", pod.Name)
	}
}

// Without the caller's identity nothing of a resource is answered.
func TestResourceEndpointsNeedIdentity(t *testing.T) {
	w := newWorld(t)
	req := httptest.NewRequest("GET", "/app-proxy/api/v1/applications/web/resource?kind=Pod&name=x", nil)
	req.Header.Set(wire.HeaderRole, "viewer")
	rec := httptest.NewRecorder()
	w.api.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("no account: %d, want 401", rec.Code)
	}
}
