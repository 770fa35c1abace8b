package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/runtimes/hostedkube"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// eventually polls check every 100 ms until it returns "" or timeout passes, then fails with
// its last answer.
func eventually(t *testing.T, timeout time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// With --hosted-runtimes kubernetes, a hosted runtime is a Deployment of the runtime chart in a
// namespace of its own on the platform-managed cluster (here the loopback cluster), its token
// in a Secret only; a rotation changes the Secret and restarts the Deployment; a new provisioner
// (the control plane restarted) puts back what is missing and deletes what has no runtime; and
// deleting the runtime, or its account, deletes its namespace. Each namespace has a
// NetworkPolicy denying ingress; the pod carries the operator's placement, and a provisioner
// started with other options applies them again; the runtime runs under the control plane's
// policy for tenants' URLs. The runtime's data dir is on a PersistentVolumeClaim of the
// operator's size and class, created once (a provisioner with a larger size cannot grow it while
// it is unbound, and says so; it gives the size to new runtimes), put back when missing, and
// deleted with the namespace. kwok's nodes run no containers and nothing binds the claims:
// the pods never really start, so the runtime never connects; what is checked is what the
// cluster holds (TestHostedRuntimesOnRealNode runs one for real).
func TestHostedRuntimesOnKubernetes(t *testing.T) {
	c := kube.Shared(t)
	ctx := context.Background()
	prefix := fmt.Sprintf("fh%d-", time.Now().UnixNano()%1_000_000)
	const image = "registry.example.test/freshet:hosted-test"
	const dial = "https://freshet.example.test"
	dsn := storetest.DSN(t, store.SQLite)
	dataDir := t.TempDir()
	keyFile := filepath.Join(t.TempDir(), "master.key")
	if _, err := secrets.GenerateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	// A placement no kwok node has: the pod stays Pending, which is all this test needs.
	selector := map[string]string{"freshet.dev/hosted-pool": "tenants"}
	// A storage class the cluster does not have: the claim stays Pending, checked as an object.
	const storageClass = "freshet-test-hosted"
	cfgWith := func(image, size string) servertest.Config {
		return servertest.Config{Edit: func(o *server.Options) {
			o.DB, o.DataDir, o.MasterKeyFile = dsn, dataDir, keyFile
			o.Hosted = server.HostedOptions{Mode: server.HostedKubernetes, Kubeconfig: c.Kubeconfig, NamespacePrefix: prefix, Image: image, Server: dial,
				NodeSelector: selector, Tolerations: []string{"freshet.dev/hosted-pool=tenants:NoSchedule", "dedicated:NoExecute"},
				StorageSize: size, StorageClass: storageClass}
			o.Net = netpolicy.Options{PrivateNetworks: []string{"10.20.0.0/16"}, ProviderHosts: []string{"gitlab.corp.test"}}
		}}
	}
	cfg := cfgWith(image, "3Gi")
	s1 := servertest.StartWith(t, store.SQLite, cfg)
	h, err := s1.Admin.CreateHostedRuntime(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	me, err := s1.Admin.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns := prefix + strings.ReplaceAll(strings.ToLower(h.ID), "_", "-")
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})

	var sec *corev1.Secret
	var dep *appsv1.Deployment
	placed := func() string {
		var err error
		if sec, err = c.Client.CoreV1().Secrets(ns).Get(ctx, hostedkube.SecretName, metav1.GetOptions{}); err != nil {
			return "the token Secret: " + err.Error()
		}
		if dep, err = c.Client.AppsV1().Deployments(ns).Get(ctx, hostedkube.DeploymentName, metav1.GetOptions{}); err != nil {
			return "the Deployment: " + err.Error()
		}
		return ""
	}
	eventually(t, 30*time.Second, placed)
	token := string(sec.Data["token"])
	if !strings.HasPrefix(token, "frt_") {
		t.Fatalf("the Secret's token = %q, want a runtime token", token)
	}
	for _, labels := range []map[string]string{sec.Labels, dep.Labels} {
		if labels[hostedkube.LabelRuntimeID] != h.ID || labels[hostedkube.LabelAccountID] != me.Account.ID || labels[hostedkube.LabelHosted] != "true" {
			t.Errorf("labels %v, want the runtime %s and account %s", labels, h.ID, me.Account.ID)
		}
	}
	depJSON, _ := json.Marshal(dep)
	if strings.Contains(string(depJSON), token) {
		t.Fatal("the token is in the Deployment")
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 || pod.Containers[0].Image != image {
		t.Fatalf("containers = %+v, want one running %s", pod.Containers, image)
	}
	args := strings.Join(pod.Containers[0].Args, " ")
	for _, want := range []string{"runtime --server " + dial, "--token-file /etc/freshet/token", "--access-mode tunnel", "--hosted"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	checkRuntimePolicy(t, pod.Containers[0].Args)
	if len(pod.Containers[0].Env) != 0 {
		t.Errorf("env = %v, want none (the token is a mounted file)", pod.Containers[0].Env)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the runtime's pod mounts a service account token: it has no business with the platform's cluster")
	}
	wantTolerations := []corev1.Toleration{
		{Key: "freshet.dev/hosted-pool", Operator: corev1.TolerationOpEqual, Value: "tenants", Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}
	if !maps.Equal(pod.NodeSelector, selector) || !slices.Equal(pod.Tolerations, wantTolerations) {
		t.Errorf("placement: node selector %v, tolerations %+v; want %v and %+v", pod.NodeSelector, pod.Tolerations, selector, wantTolerations)
	}
	checkNetworkPolicy(t, c, ns)
	claim := checkDataClaim(t, c, ns, dep, "3Gi", storageClass)
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Get(ctx, "freshet-runtime-"+h.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a ClusterRoleBinding for the hosted runtime: %v", err)
	}
	rt, err := s1.Admin.GetRuntime(ctx, h.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range rt.Components {
		if comp.Name == "provisioner" {
			t.Errorf("a placed runtime shows %+v", comp)
		}
	}

	// A rotation: the Secret holds the new token and the pod template's annotation changed.
	oldAnn := dep.Spec.Template.Annotations[hostedkube.AnnotationTokenUpdated]
	if oldAnn == "" {
		t.Fatalf("pod template annotations %v", dep.Spec.Template.Annotations)
	}
	if _, err := s1.Admin.RotateRuntimeToken(ctx, h.Name); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string {
		if msg := placed(); msg != "" {
			return msg
		}
		if string(sec.Data["token"]) == token {
			return "the Secret still holds the old token"
		}
		if dep.Spec.Template.Annotations[hostedkube.AnnotationTokenUpdated] == oldAnn {
			return "the Deployment's pod template is unchanged: it does not restart"
		}
		return ""
	})

	// The control plane stops; meanwhile the Deployment and the NetworkPolicy go missing and a
	// namespace of a runtime that no longer exists is left over. The next provisioner, started
	// with another image, sets all right.
	s1.Stop()
	if err := c.Client.AppsV1().Deployments(ns).Delete(ctx, hostedkube.DeploymentName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, hostedkube.NetworkPolicyName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan := prefix + "rt-gone"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: orphan,
		Labels: map[string]string{hostedkube.LabelHosted: "true", hostedkube.LabelRuntimeID: "rt_gone"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A namespace of someone else's with the label but not the prefix is never touched.
	bystander := c.Namespace(t)
	if _, err := c.Client.CoreV1().Namespaces().Patch(ctx, bystander, "application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"`+hostedkube.LabelHosted+`":"true"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	const image2 = "registry.example.test/freshet:hosted-test-2"
	s2 := servertest.StartWith(t, store.SQLite, cfgWith(image2, "5Gi"))
	gone := func(name string) string {
		n, err := c.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && n.DeletionTimestamp != nil) {
			return ""
		}
		return fmt.Sprintf("namespace %s is still there (%v)", name, err)
	}
	eventually(t, 30*time.Second, placed)
	checkNetworkPolicy(t, c, ns)
	eventually(t, 30*time.Second, func() string { return gone(orphan) })
	if n, err := c.Client.CoreV1().Namespaces().Get(ctx, bystander, metav1.GetOptions{}); err != nil || n.DeletionTimestamp != nil {
		t.Fatalf("the bystander namespace (labelled, without the prefix) was deleted: %v", err)
	}
	if !slices.Contains(s2.HostedRunning(), h.ID) {
		t.Errorf("the new provisioner placed %v, not %s", s2.HostedRunning(), h.ID)
	}
	// A Deployment placed with other options (here the image) is applied again.
	eventually(t, 30*time.Second, func() string {
		if msg := placed(); msg != "" {
			return msg
		}
		if got := dep.Spec.Template.Spec.Containers[0].Image; got != image2 {
			return fmt.Sprintf("the Deployment runs %s after the provisioner's image changed to %s", got, image2)
		}
		return ""
	})
	// The runtime keeps its claim, the same one at its first size: its data outlives the new
	// pod.
	if again := checkDataClaim(t, c, ns, dep, "3Gi", storageClass); again.UID != claim.UID {
		t.Errorf("the data claim was replaced (uid %s, was %s): the runtime's data is lost", again.UID, claim.UID)
	}
	// The claim is not bound (nothing binds it here), so it cannot grow to the new 5Gi yet: the
	// runtime, placed all the same, says why (internal/runtimes/hostedkube's
	// TestReconcileGrowsTheDataClaim grows bound ones).
	eventually(t, 30*time.Second, func() string {
		rt, err := s2.Admin.GetRuntime(ctx, h.Name)
		if err != nil {
			return err.Error()
		}
		for _, comp := range rt.Components {
			if comp.Name == "provisioner" && strings.Contains(comp.Message, "stays 3Gi, not --hosted-runtimes-storage-size 5Gi") && strings.Contains(comp.Message, "not bound") {
				return ""
			}
		}
		return fmt.Sprintf("the runtime's components %+v say nothing of its claim kept at 3Gi", rt.Components)
	})

	// Deleting the runtime deletes its namespace, and with it the Deployment and the Secret.
	if err := s2.Admin.DeleteRuntime(ctx, h.Name); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() string {
		if _, err := c.Client.AppsV1().Deployments(ns).Get(ctx, hostedkube.DeploymentName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("the deleted runtime's Deployment: %v", err)
		}
		if _, err := c.Client.CoreV1().Secrets(ns).Get(ctx, hostedkube.SecretName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("the deleted runtime's Secret: %v", err)
		}
		if pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, hostedkube.ClaimName, metav1.GetOptions{}); !apierrors.IsNotFound(err) && (err != nil || pvc.DeletionTimestamp == nil) {
			return fmt.Sprintf("the deleted runtime's data claim: %v", err)
		}
		return gone(ns)
	})

	// Deleting an account deletes its hosted runtime's namespace.
	if _, err := s2.Admin.CreateAccount(ctx, "leaving"); err != nil {
		t.Fatal(err)
	}
	leaving := s2.Login(t, s2.AdminEmail, servertest.AdminPassword)
	if _, err := leaving.SwitchAccount(ctx, "leaving"); err != nil {
		t.Fatal(err)
	}
	h2, err := leaving.CreateHostedRuntime(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ns2 := prefix + strings.ReplaceAll(strings.ToLower(h2.ID), "_", "-")
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns2, metav1.DeleteOptions{})
	})
	eventually(t, 30*time.Second, func() string {
		if dep, err = c.Client.AppsV1().Deployments(ns2).Get(ctx, hostedkube.DeploymentName, metav1.GetOptions{}); err != nil {
			return "the second account's hosted runtime: " + err.Error()
		}
		return ""
	})
	// A runtime placed by the second provisioner has a claim of its size; a claim gone missing
	// is put back (empty) at the next reconcile.
	claim2 := checkDataClaim(t, c, ns2, dep, "5Gi", storageClass)
	if err := c.Client.CoreV1().PersistentVolumeClaims(ns2).Delete(ctx, hostedkube.ClaimName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 45*time.Second, func() string {
		pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns2).Get(ctx, hostedkube.ClaimName, metav1.GetOptions{})
		if err != nil || pvc.UID == claim2.UID {
			return fmt.Sprintf("the deleted data claim is not put back: %v", err)
		}
		return ""
	})
	if err := leaving.DeleteAccount(ctx, "leaving"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string { return gone(ns2) })
}

// checkRuntimePolicy checks that the runtime args start with is under the control plane's
// policy for tenants' URLs (10.20.0.0/16 besides public addresses, the git provider
// gitlab.corp.test besides the SaaS ones, no file:// repositories), as `freshet runtime` reads
// its flags.
func checkRuntimePolicy(t *testing.T, args []string) {
	t.Helper()
	if len(args) == 0 || args[0] != "runtime" {
		t.Fatalf("args %q do not run `freshet runtime`", args)
	}
	var o agent.Options
	fs := pflag.NewFlagSet("runtime", pflag.ContinueOnError)
	o.BindFlags(fs)
	fs.String("log-format", "text", "") // the command's own, beside the agent's (internal/cli)
	fs.String("log-level", "info", "")
	// The pod's data dir and token file are not here: those two are replaced.
	if err := fs.Parse(append(slices.Clone(args[1:]), "--data-dir", t.TempDir(), "--token", "frt_x")); err != nil {
		t.Fatalf("the runtime's args %q: %v", args, err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("the runtime's args %q: %v", args, err)
	}
	for _, c := range []struct {
		check func() error
		what  string
		ok    bool
	}{
		{func() error { return o.Policy.CheckServerURL("server", "https://10.20.3.4:6443") }, "a cluster in 10.20.0.0/16", true},
		{func() error { return o.Policy.CheckServerURL("server", "https://10.30.3.4:6443") }, "a cluster in 10.30.0.0/16", false},
		{func() error { return o.Policy.CheckServerURL("server", "https://127.0.0.1:6443") }, "a cluster on loopback", false},
		{func() error { return o.Policy.CheckRepoURL("repoURL", "http://169.254.169.254/x.git") }, "a repository at the metadata address", false},
		{func() error { return o.Policy.CheckRepoURL("repoURL", "file:///srv/git/x.git") }, "a file:// repository", false},
		{func() error { return o.Policy.CheckProviderURL("baseURL", "https://gitlab.corp.test") }, "the git provider gitlab.corp.test", true},
		{func() error { return o.Policy.CheckProviderURL("baseURL", "https://gitea.corp.test") }, "the git provider gitea.corp.test", false},
	} {
		if err := c.check(); (err == nil) != c.ok {
			t.Errorf("the hosted runtime started with %q: %s: %v, want allowed %v", args, c.what, err, c.ok)
		}
	}
}

// checkDataClaim checks the data claim of a hosted runtime's namespace (ReadWriteOnce, of size
// and class, labelled) and that its Deployment dep mounts it where the runtime keeps its data
// (--data-dir), replacing its pod by Recreate (the claim is ReadWriteOnce) and giving the
// volume the runtime's group; it returns the claim.
func checkDataClaim(t *testing.T, c *kube.Cluster, ns string, dep *appsv1.Deployment, size, class string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), hostedkube.ClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the hosted runtime's data claim: %v", err)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != size {
		t.Errorf("the data claim requests %s, want %s", got.String(), size)
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != class {
		t.Errorf("the data claim's storage class is %v, want %s", pvc.Spec.StorageClassName, class)
	}
	if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("the data claim's access modes %v, want ReadWriteOnce", pvc.Spec.AccessModes)
	}
	if pvc.Labels[hostedkube.LabelHosted] != "true" || pvc.Labels[hostedkube.LabelRuntimeID] == "" {
		t.Errorf("the data claim's labels %v", pvc.Labels)
	}
	if dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("the Deployment's strategy is %q: a rolling update would wait for ever on the claim", dep.Spec.Strategy.Type)
	}
	pod := dep.Spec.Template.Spec
	var volume string
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == hostedkube.ClaimName {
			volume = v.Name
		}
	}
	if volume == "" {
		t.Fatalf("the pod template has no volume of the claim: %+v", pod.Volumes)
	}
	args := pod.Containers[0].Args
	i := slices.Index(args, "--data-dir")
	if i < 0 || i+1 == len(args) {
		t.Fatalf("the runtime's args %q have no --data-dir", args)
	}
	if !slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == volume && m.MountPath == args[i+1] && !m.ReadOnly && m.SubPath == ""
	}) {
		t.Errorf("the runtime's data dir %s is not the claim's volume %s: mounts %+v", args[i+1], volume, pod.Containers[0].VolumeMounts)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil || pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.FSGroup != *pod.SecurityContext.RunAsUser {
		t.Errorf("the pod's security context %+v: the claim's volume is not made writable by the runtime's group", pod.SecurityContext)
	}
	return pvc
}

// checkNetworkPolicy checks the NetworkPolicy of a hosted runtime's namespace: every pod of it
// selected, ingress and egress both governed, no ingress rule (nothing may connect to the
// runtime: it dials out) and one egress rule allowing everything (it dials the control plane,
// git repositories, registries and its customers' clusters).
func checkNetworkPolicy(t *testing.T, c *kube.Cluster, ns string) {
	t.Helper()
	np, err := c.Client.NetworkingV1().NetworkPolicies(ns).Get(context.Background(), hostedkube.NetworkPolicyName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the hosted runtime's NetworkPolicy: %v", err)
	}
	sp := np.Spec
	if len(sp.PodSelector.MatchLabels) != 0 || len(sp.PodSelector.MatchExpressions) != 0 {
		t.Errorf("the NetworkPolicy selects %+v, want every pod of the namespace", sp.PodSelector)
	}
	if !slices.Equal(sp.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("policy types %v, want Ingress and Egress", sp.PolicyTypes)
	}
	if len(sp.Ingress) != 0 {
		t.Errorf("ingress rules %+v, want none (all ingress denied)", sp.Ingress)
	}
	if len(sp.Egress) != 1 || len(sp.Egress[0].To) != 0 || len(sp.Egress[0].Ports) != 0 {
		t.Errorf("egress rules %+v, want one allowing everything", sp.Egress)
	}
	if np.Labels[hostedkube.LabelHosted] != "true" || np.Labels[hostedkube.LabelRuntimeID] == "" {
		t.Errorf("the NetworkPolicy's labels %v", np.Labels)
	}
}

// When the platform's cluster cannot be reached, the hosted runtime shows why, as its
// provisioner component, and the provisioner keeps trying.
func TestHostedRuntimesClusterUnreachable(t *testing.T) {
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Port 1 on loopback: nothing listens there.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) {
		o.Hosted = server.HostedOptions{Mode: server.HostedKubernetes, Kubeconfig: kubeconfig, Server: "https://freshet.example.test"}
	}})
	h, err := s.Admin.CreateHostedRuntime(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var last client.Runtime
	eventually(t, 30*time.Second, func() string {
		last, err = s.Admin.GetRuntime(ctx, h.Name)
		if err != nil {
			return err.Error()
		}
		for _, comp := range last.Components {
			if comp.Name == "provisioner" && comp.Health == "degraded" && strings.Contains(comp.Message, "the platform's cluster cannot be reached; retrying") {
				return ""
			}
		}
		return fmt.Sprintf("the runtime shows %+v, want its provisioner degraded, saying the cluster cannot be reached", last)
	})
}
