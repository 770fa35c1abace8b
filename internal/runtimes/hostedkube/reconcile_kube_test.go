package hostedkube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// A larger --hosted-runtimes-storage-size grows the existing data claims where Kubernetes
// allows it: a claim bound to a volume, of a storage class with allowVolumeExpansion, gets the
// new request (the same claim: its data stays). A smaller size leaves the claim as it is (a
// claim cannot shrink), a claim of a class without expansion or not yet bound keeps its size
// with a note saying why — pass after pass, never a failure — and the API server refuses
// those two just the same. kwok binds no volumes: the test makes PersistentVolumes pre-bound
// to the claims (claimRef), which the controller-manager binds them to.
func TestReconcileGrowsTheDataClaim(t *testing.T) {
	c := kube.Shared(t)
	ctx := context.Background()
	id := time.Now().UnixNano() % 1_000_000
	prefix := fmt.Sprintf("fhg%d-", id)
	expanding, fixed := storageClass(t, c, "fhg-expanding", true), storageClass(t, c, "fhg-fixed", false)
	cluster := func(size, class string) *Cluster {
		t.Helper()
		cl, err := New(c.RESTConfig(), Options{Server: "https://freshet.example.test", NamespacePrefix: prefix, StorageSize: size, StorageClass: class})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cred := func(name string) runtimes.HostedCredential {
		cr := runtimes.HostedCredential{RuntimeID: "rt_" + name, AccountID: "acc_" + name, Name: name, Token: "frt_a_b", UpdatedAt: time.Now()}
		ns := prefix + "rt-" + name
		t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
		return cr
	}
	claim := func(cl *Cluster, cr runtimes.HostedCredential) *corev1.PersistentVolumeClaim {
		t.Helper()
		return dataClaim(t, c, cl.Namespace(cr.RuntimeID))
	}
	bind := func(cl *Cluster, cr runtimes.HostedCredential, class string) {
		t.Helper()
		bindDataClaim(t, c, cl.Namespace(cr.RuntimeID), class)
	}

	// Three runtimes at 1Gi: one on the class that expands, bound; one on the class that does
	// not, bound; one on the class that expands, left unbound.
	grows, stays, pending := cred("grows"), cred("stays"), cred("pending")
	onExpanding, onFixed := cluster("1Gi", expanding), cluster("1Gi", fixed)
	if res, err := onExpanding.Reconcile(ctx, []runtimes.HostedCredential{grows, pending}); err != nil || len(res.Failed) > 0 {
		t.Fatalf("place grows and pending: %+v %v", res, err)
	}
	if res, err := onFixed.Reconcile(ctx, []runtimes.HostedCredential{grows, pending, stays}); err != nil || !slices.Equal(res.Applied, []string{grows.RuntimeID, pending.RuntimeID, stays.RuntimeID}) {
		t.Fatalf("place stays: %+v %v", res, err) // the others applied again: another class is another digest
	}
	bind(onExpanding, grows, expanding)
	bind(onFixed, stays, fixed)
	before := claim(onExpanding, grows)

	all := []runtimes.HostedCredential{grows, stays, pending}
	bigger := cluster("3Gi", expanding)
	for pass := range 2 {
		res, err := bigger.Reconcile(ctx, all)
		if err != nil || len(res.Failed) > 0 {
			t.Fatalf("pass %d at 3Gi: %+v %v, want no failure", pass, res, err)
		}
		if pass == 0 && !slices.Equal(res.Resized, []string{grows.RuntimeID}) {
			t.Errorf("pass 0 at 3Gi resized %v, want %s", res.Resized, grows.RuntimeID)
		}
		if pass == 1 && len(res.Resized) > 0 {
			t.Errorf("pass 1 at 3Gi resized %v again", res.Resized)
		}
		if n := res.NotGrown[stays.RuntimeID]; !strings.Contains(n, "stays 1Gi") || !strings.Contains(n, "storage class "+fixed+" does not allow volume expansion") {
			t.Errorf("pass %d: the claim of a class without expansion: note %q", pass, n)
		}
		if n := res.NotGrown[pending.RuntimeID]; !strings.Contains(n, "stays 1Gi") || !strings.Contains(n, "not bound") {
			t.Errorf("pass %d: the unbound claim: note %q", pass, n)
		}
		if _, ok := res.NotGrown[grows.RuntimeID]; ok || len(res.Kept) > 0 {
			t.Errorf("pass %d: notes %v, kept %v", pass, res.NotGrown, res.Kept)
		}
	}
	after := claim(bigger, grows)
	if request(after) != "3Gi" || after.UID != before.UID || after.Spec.VolumeName != before.Spec.VolumeName {
		t.Errorf("the expandable claim requests %s (uid %s, volume %s), want 3Gi on the same claim %s and volume %s",
			request(after), after.UID, after.Spec.VolumeName, before.UID, before.Spec.VolumeName)
	}
	for _, cr := range []runtimes.HostedCredential{stays, pending} {
		if got := request(claim(bigger, cr)); got != "1Gi" {
			t.Errorf("%s's claim requests %s, want 1Gi kept", cr.Name, got)
		}
		// Kubernetes refuses them just the same: the provisioner only spares itself the error.
		patch := []byte(`{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}`)
		_, err := c.Client.CoreV1().PersistentVolumeClaims(bigger.Namespace(cr.RuntimeID)).Patch(ctx, ClaimName, types.MergePatchType, patch, metav1.PatchOptions{})
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("the API server grows %s's claim: %v", cr.Name, err)
		}
	}

	// A smaller size: the claim keeps its size and its data, said once per pass, no failure.
	smaller := cluster("2Gi", expanding)
	res, err := smaller.Reconcile(ctx, all)
	if err != nil || len(res.Failed) > 0 || len(res.Resized) > 0 {
		t.Fatalf("at 2Gi: %+v %v, want no failure and nothing resized", res, err)
	}
	if n := res.Kept[grows.RuntimeID]; !strings.Contains(n, "cannot shrink") || !strings.Contains(n, "3Gi") {
		t.Errorf("at 2Gi: the 3Gi claim: %q, want a note it cannot shrink", n)
	}
	if got := claim(smaller, grows); request(got) != "3Gi" || got.UID != before.UID {
		t.Errorf("at 2Gi the claim requests %s (uid %s), want the 3Gi claim kept", request(got), got.UID)
	}
}

// storageClass makes a storage class of no real provisioner (nothing provisions its claims),
// allowing volume expansion or not; it returns its name, name and a suffix of the test's own.
func storageClass(t *testing.T, c *kube.Cluster, name string, expand bool) string {
	t.Helper()
	name = fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%1_000_000)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "freshet.test/none", AllowVolumeExpansion: &expand}
	if _, err := c.Client.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// dataClaim is the data claim of namespace ns.
func dataClaim(t *testing.T, c *kube.Cluster, ns string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), ClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc
}

// bindDataClaim makes a volume of the size and class of namespace ns's data claim, pre-bound
// to it (kwok binds nothing), and waits for the controller-manager to bind the claim to it.
func bindDataClaim(t *testing.T, c *kube.Cluster, ns, class string) {
	t.Helper()
	pvc := dataClaim(t, c, ns)
	name := "freshet-test-" + ns
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
		AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName:              class,
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
		ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
	}}
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		pvc := dataClaim(t, c, ns)
		if pvc.Status.Phase == corev1.ClaimBound && pvc.Spec.VolumeName == name {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim %s/%s is %s (volume %q), not bound to %s", pvc.Namespace, pvc.Name, pvc.Status.Phase, pvc.Spec.VolumeName, name)
		}
	}
}

// request is what a claim requests.
func request(pvc *corev1.PersistentVolumeClaim) string {
	q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	return q.String()
}
