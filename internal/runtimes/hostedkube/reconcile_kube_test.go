package hostedkube

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

func TestMain(m *testing.M) { kube.Main(m) }

// With --hosted-runtimes-storage-size 0 a hosted runtime is placed without a data claim (its
// data dir is the pod's emptyDir), and a runtime so placed counts as placed: the next pass
// leaves it alone instead of applying it again for a claim it should not have. A provisioner
// started with a size again gives the runtime its claim.
func TestReconcileWithoutPersistence(t *testing.T) {
	c := kube.Shared(t)
	ctx := context.Background()
	prefix := fmt.Sprintf("fhp%d-", time.Now().UnixNano()%1_000_000)
	cr := runtimes.HostedCredential{RuntimeID: "rt_nopvc", AccountID: "acc_1", Name: "edge", Token: "frt_a_b", UpdatedAt: time.Now()}
	cluster := func(size string) *Cluster {
		t.Helper()
		cl, err := New(c.RESTConfig(), Options{Server: "https://freshet.example.test", NamespacePrefix: prefix, StorageSize: size, StorageClass: ""})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	off := cluster("0")
	ns := off.Namespace(cr.RuntimeID)
	t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	res, err := off.Reconcile(ctx, []runtimes.HostedCredential{cr})
	if err != nil || !slices.Equal(res.Applied, []string{cr.RuntimeID}) || len(res.Failed) > 0 {
		t.Fatalf("first pass: %+v %v, want %s applied", res, err, cr.RuntimeID)
	}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, ClaimName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a data claim with the storage size 0: %v", err)
	}
	dep, err := c.Client.AppsV1().Deployments(ns).Get(ctx, DeploymentName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			t.Errorf("the Deployment mounts claim %s with the storage size 0", v.PersistentVolumeClaim.ClaimName)
		}
	}
	if res, err := off.Reconcile(ctx, []runtimes.HostedCredential{cr}); err != nil || len(res.Applied) > 0 || len(res.Failed) > 0 {
		t.Errorf("second pass: %+v %v, want nothing applied: the runtime is placed as it should be", res, err)
	}

	on := cluster("2Gi")
	if res, err := on.Reconcile(ctx, []runtimes.HostedCredential{cr}); err != nil || !slices.Equal(res.Applied, []string{cr.RuntimeID}) {
		t.Fatalf("a provisioner with a size: %+v %v, want %s applied again", res, err, cr.RuntimeID)
	}
	pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, ClaimName, metav1.GetOptions{})
	if err != nil || pvc.Spec.Resources.Requests.Storage().String() != "2Gi" {
		t.Errorf("the data claim after the size is given: %v %v", pvc.Spec.Resources, err)
	}
}
