package hostedkube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/charts"
	"github.com/freshet-dev/freshet/internal/helmchart"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// The freshet chart's ClusterRole (hostedRuntimes.mode kubernetes without a kubeconfig: the
// in-cluster configuration) grants what the provisioner does: acting as the chart's
// ServiceAccount bound to it, a pass places a runtime, a token rotation applies it again, and
// a larger storage size grows its data claim (bound, of a class allowing expansion), and its
// deletion (or its runtime no longer stored) removes its namespace.
func TestChartClusterRoleGrantsTheProvisioner(t *testing.T) {
	c := kube.Shared(t)
	ctx := t.Context()
	ns := c.Namespace(t)
	release := fmt.Sprintf("rb%d", time.Now().UnixNano()%1_000_000)
	ch, err := helmchart.Load(charts.Freshet)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Render(ch, helmchart.Release{Name: release, Namespace: ns}, map[string]any{
		"replicaCount":   1,
		"masterKey":      map[string]any{"value": "k1:q83vEjSvwLFvDcm2WZB7hjRMLx4nBvqQ/FTqgS+BJRg="},
		"database":       map[string]any{"url": "postgres://db/freshet"},
		"nats":           map[string]any{"url": "nats://nats:4222"},
		"hostedRuntimes": map[string]any{"mode": "kubernetes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var sa string
	for _, o := range objs {
		b, _ := json.Marshal(o)
		switch o["kind"] {
		case "ServiceAccount":
			var s corev1.ServiceAccount
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &s, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			sa = s.Name
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = c.Client.RbacV1().ClusterRoles().Delete(context.Background(), r.Name, metav1.DeleteOptions{})
			})
		case "ClusterRoleBinding":
			var r rbacv1.ClusterRoleBinding
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &r, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = c.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), r.Name, metav1.DeleteOptions{})
			})
		}
	}
	if sa == "" {
		t.Fatal("the chart renders no ServiceAccount")
	}
	cfg := c.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The RBAC authorizer's informer sees the new binding a moment later.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := as.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: LabelHosted + "=true"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chart's ClusterRoleBinding never took effect: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Nothing beyond it: the ServiceAccount reads no ConfigMaps.
	if _, err := as.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("the chart's ServiceAccount lists ConfigMaps: it is granted more than the provisioner uses")
	}

	prefix := fmt.Sprintf("fhr%d-", time.Now().UnixNano()%1_000_000)
	expanding := storageClass(t, c, "fhr-expanding", true)
	cl, err := New(cfg, Options{Server: "https://freshet.example.test", NamespacePrefix: prefix, StorageClass: expanding})
	if err != nil {
		t.Fatal(err)
	}
	a := runtimes.HostedCredential{RuntimeID: "rt_rbaca", AccountID: "acc_1", Name: "a", Token: "frt_a_1", UpdatedAt: time.Now()}
	b := runtimes.HostedCredential{RuntimeID: "rt_rbacb", AccountID: "acc_1", Name: "b", Token: "frt_b_1", UpdatedAt: time.Now()}
	for _, id := range []string{a.RuntimeID, b.RuntimeID} {
		name := cl.Namespace(id)
		t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	res, err := cl.Reconcile(ctx, []runtimes.HostedCredential{a, b})
	if err != nil || len(res.Failed) > 0 || len(res.Applied) != 2 {
		t.Fatalf("place two runtimes as the chart's ServiceAccount: %+v %v", res, err)
	}
	a.Token, a.UpdatedAt = "frt_a_2", a.UpdatedAt.Add(time.Second)
	res, err = cl.Reconcile(ctx, []runtimes.HostedCredential{a, b})
	if err != nil || len(res.Failed) > 0 || !slices.Equal(res.Applied, []string{a.RuntimeID}) {
		t.Fatalf("apply a rotated token as the chart's ServiceAccount: %+v %v", res, err)
	}
	bindDataClaim(t, c, cl.Namespace(a.RuntimeID), expanding)
	larger, err := New(cfg, Options{Server: "https://freshet.example.test", NamespacePrefix: prefix, StorageClass: expanding, StorageSize: "2Gi"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = larger.Reconcile(ctx, []runtimes.HostedCredential{a, b})
	if err != nil || len(res.Failed) > 0 || !slices.Equal(res.Resized, []string{a.RuntimeID}) || len(res.NotGrown) != 1 {
		t.Fatalf("grow a data claim as the chart's ServiceAccount: %+v %v", res, err)
	}
	if got := request(dataClaim(t, c, cl.Namespace(a.RuntimeID))); got != "2Gi" {
		t.Fatalf("the grown claim requests %s, want 2Gi", got)
	}
	if err := cl.Remove(ctx, b.RuntimeID); err != nil {
		t.Fatalf("remove a runtime as the chart's ServiceAccount: %v", err)
	}
	res, err = cl.Reconcile(ctx, nil)
	if err != nil || !slices.Contains(res.Removed, cl.Namespace(a.RuntimeID)) {
		t.Fatalf("remove a runtime no longer stored as the chart's ServiceAccount: %+v %v", res, err)
	}
}
