package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestMain stops the clusters, then the registry the real-node test starts.
func TestMain(m *testing.M) {
	code := kube.Run(m)
	if err := containers.Teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "containers teardown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

const fieldManager = "freshet-test"

// waitFor polls cond every 100 ms until it returns true, an error, or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestServerIsTheBuiltKubernetesVersion(t *testing.T) {
	c := kube.Shared(t)
	v, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	// Without the version ldflags the server says v0.0.0-master+$Format:%H$.
	if v.GitVersion != "v1.33.13" || v.Major != "1" || v.Minor != "33" {
		t.Fatalf("server version = %+v, want v1.33.13", v)
	}
	u, err := url.Parse(c.Host())
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" {
		t.Fatalf("apiserver at %s, want loopback only", c.Host())
	}
}

func deploymentApply(ns string, replicas int32, image string) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app": "web"}
	return appsv1ac.Deployment("web", ns).
		WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(
					corev1ac.Container().WithName("web").WithImage(image).
						WithPorts(corev1ac.ContainerPort().WithContainerPort(8080)),
				))))
}

func TestServerSideApplyDeploymentServiceConfigMap(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	apply := metav1.ApplyOptions{FieldManager: fieldManager}

	cm, err := c.Client.CoreV1().ConfigMaps(ns).Apply(ctx,
		corev1ac.ConfigMap("settings", ns).WithData(map[string]string{"greeting": "hello"}), apply)
	if err != nil {
		t.Fatalf("apply ConfigMap: %v", err)
	}
	if cm.Data["greeting"] != "hello" {
		t.Fatalf("ConfigMap data = %v", cm.Data)
	}

	svc, err := c.Client.CoreV1().Services(ns).Apply(ctx, corev1ac.Service("web", ns).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(map[string]string{"app": "web"}).
			WithPorts(corev1ac.ServicePort().WithName("http").WithPort(80).WithTargetPort(intstr.FromInt32(8080)))), apply)
	if err != nil {
		t.Fatalf("apply Service: %v", err)
	}
	if !strings.HasPrefix(svc.Spec.ClusterIP, "10.0.0.") {
		t.Fatalf("Service clusterIP = %q, want one allocated from 10.0.0.0/24", svc.Spec.ClusterIP)
	}

	dep, err := c.Client.AppsV1().Deployments(ns).Apply(ctx, deploymentApply(ns, 2, "nginx:1.27"), apply)
	if err != nil {
		t.Fatalf("apply Deployment: %v", err)
	}
	var managed bool
	for _, mf := range dep.ManagedFields {
		if mf.Manager == fieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			managed = true
		}
	}
	if !managed {
		t.Fatalf("Deployment managedFields %+v lack an Apply entry of %s", dep.ManagedFields, fieldManager)
	}

	// controller-manager creates the ReplicaSet and Pods, the scheduler binds them to the kwok
	// node, kwok makes them Running and Ready, and the Deployment becomes Available.
	waitFor(t, 60*time.Second, "Deployment web Available with 2 ready replicas", func(ctx context.Context) (bool, error) {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue {
				return d.Status.ReadyReplicas == 2 && d.Status.AvailableReplicas == 2, nil
			}
		}
		return false, nil
	})
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("got %d pods, want 2", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "kwok-node-0" || p.Status.Phase != corev1.PodRunning {
			t.Fatalf("pod %s: node %q phase %s, want Running on kwok-node-0", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}

	// Server-side apply semantics: another manager changing an owned field conflicts...
	_, err = c.Client.AppsV1().Deployments(ns).Apply(ctx, deploymentApply(ns, 3, "nginx:1.27"),
		metav1.ApplyOptions{FieldManager: "someone-else"})
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply by another manager: err = %v, want a field-manager conflict", err)
	}
	// ...while the owner re-applies freely.
	dep, err = c.Client.AppsV1().Deployments(ns).Apply(ctx, deploymentApply(ns, 1, "nginx:1.27"), apply)
	if err != nil {
		t.Fatalf("re-apply by owner: %v", err)
	}
	if *dep.Spec.Replicas != 1 {
		t.Fatalf("replicas = %d after re-apply, want 1", *dep.Spec.Replicas)
	}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func TestCustomResourceDefinitionRoundTrip(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	// CRDs are cluster-scoped: a group unique to this namespace keeps reruns independent.
	group := ns + ".test.freshet.dev"
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets." + group},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{
							"type":     "object",
							"required": []any{"size"},
							"properties": map[string]any{
								"size":  map[string]any{"type": "integer", "minimum": int64(1)},
								"color": map[string]any{"type": "string"},
							},
						},
					},
				}},
			}},
		},
	}}
	if _, err := c.Dynamic.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Dynamic.Resource(crdGVR).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})
	waitFor(t, 30*time.Second, "CRD Established", func(ctx context.Context) (bool, error) {
		u, err := c.Dynamic.Resource(crdGVR).Get(ctx, "widgets."+group, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cd := range conds {
			m, _ := cd.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})

	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	widget := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     spec,
		}}
	}
	// The served API appears a moment after Established in discovery; retry create briefly.
	waitFor(t, 30*time.Second, "create Widget", func(ctx context.Context) (bool, error) {
		_, err := c.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, widget("w1", map[string]any{"size": int64(3), "color": "blue"}), metav1.CreateOptions{})
		return err == nil, err
	})
	got, err := c.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Widget: %v", err)
	}
	size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size")
	color, _, _ := unstructured.NestedString(got.Object, "spec", "color")
	if size != 3 || color != "blue" || got.GetUID() == "" {
		t.Fatalf("Widget round trip: got spec size=%d color=%q uid=%q", size, color, got.GetUID())
	}
	// The structural schema is enforced by the real apiserver.
	_, err = c.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, widget("w2", map[string]any{"size": int64(0)}), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("create Widget with size 0: err = %v, want Invalid (minimum 1)", err)
	}
}

func job(ns, name string, annotations map[string]string) *batchv1.Job {
	zero := int32(0)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "true"}}},
				},
			},
		},
	}
}

// waitJob waits until the Job has condition Complete or Failed and returns which.
func waitJob(t *testing.T, c *kube.Cluster, ns, name string) batchv1.JobConditionType {
	t.Helper()
	var final batchv1.JobConditionType
	waitFor(t, 60*time.Second, "Job "+name+" to finish", func(ctx context.Context) (bool, error) {
		j, err := c.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
				final = cond.Type
				return true, nil
			}
		}
		return false, nil
	})
	return final
}

func jobPod(t *testing.T, c *kube.Cluster, ns, jobName string) corev1.Pod {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "job-name=" + jobName})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("Job %s has %d pods, want 1", jobName, len(pods.Items))
	}
	return pods.Items[0]
}

func TestJobCompletes(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	if _, err := c.Client.BatchV1().Jobs(ns).Create(t.Context(), job(ns, "ok", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitJob(t, c, ns, "ok"); got != batchv1.JobComplete {
		t.Fatalf("Job finished with %s, want Complete", got)
	}
	j, err := c.Client.BatchV1().Jobs(ns).Get(t.Context(), "ok", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.Succeeded != 1 || j.Status.Failed != 0 {
		t.Fatalf("Job status succeeded=%d failed=%d, want 1/0", j.Status.Succeeded, j.Status.Failed)
	}
	p := jobPod(t, c, ns, "ok")
	if p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod phase %s, want Succeeded", p.Status.Phase)
	}
}

func TestJobMadeToFailFails(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	j := job(ns, "broken", map[string]string{kube.AnnotationExitCode: "3"})
	if _, err := c.Client.BatchV1().Jobs(ns).Create(t.Context(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitJob(t, c, ns, "broken"); got != batchv1.JobFailed {
		t.Fatalf("Job finished with %s, want Failed", got)
	}
	p := jobPod(t, c, ns, "broken")
	if p.Status.Phase != corev1.PodFailed {
		t.Fatalf("pod phase %s, want Failed", p.Status.Phase)
	}
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Terminated == nil ||
		p.Status.ContainerStatuses[0].State.Terminated.ExitCode != 3 {
		t.Fatalf("container statuses %+v, want terminated with exit code 3", p.Status.ContainerStatuses)
	}
}

func TestPodExitCodeAnnotationOnBarePod(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	for name, code := range map[string]string{"zero": "0", "two": "2"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{
				kube.AnnotationExitCode: code, kube.AnnotationRunDuration: "1s"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "step", Image: "alpine"}}},
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]corev1.PodPhase{"zero": corev1.PodSucceeded, "two": corev1.PodFailed}
	sawRunning := map[string]bool{}
	for name, phase := range want {
		waitFor(t, 30*time.Second, "pod "+name+" "+string(phase), func(ctx context.Context) (bool, error) {
			p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Status.Phase == corev1.PodRunning {
				sawRunning[name] = true
			}
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				if p.Status.Phase != phase {
					return false, fmt.Errorf("phase %s, want %s", p.Status.Phase, phase)
				}
				return true, nil
			}
			return false, nil
		})
	}
	// run-duration 1s keeps the pod Running first; the 100 ms poll sees that for at least one.
	if !sawRunning["zero"] && !sawRunning["two"] {
		t.Errorf("no pod was seen Running before it terminated, despite %s", kube.AnnotationRunDuration)
	}
}

func TestRBACDeniesRestrictedServiceAccount(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	apply := metav1.ApplyOptions{FieldManager: fieldManager}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Apply(ctx, corev1ac.ServiceAccount("restricted", ns), apply); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().Roles(ns).Apply(ctx, rbacv1ac.Role("configmap-reader", ns).WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("configmaps").WithVerbs("get", "list")), apply); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Apply(ctx, rbacv1ac.RoleBinding("restricted-reads-configmaps", ns).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName("configmap-reader")).
		WithSubjects(rbacv1ac.Subject().WithKind("ServiceAccount").WithName("restricted").WithNamespace(ns)), apply); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	impersonated := c.RESTConfig()
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":restricted"}

	// A real token, issued by the TokenRequest API and signed with the instance's SA key.
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "restricted",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	tokenCfg := rest.AnonymousClientConfig(c.RESTConfig())
	tokenCfg.BearerToken = tr.Status.Token

	for name, cfg := range map[string]*rest.Config{"impersonation": impersonated, "token": tokenCfg} {
		t.Run(name, func(t *testing.T) {
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Waits out the RBAC authorizer's informer, which sees the new binding a moment later.
			waitFor(t, 10*time.Second, "the Role binding to take effect", func(ctx context.Context) (bool, error) {
				_, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
				return err == nil, err
			})
			_, err = cs.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{})
			if !apierrors.IsForbidden(err) {
				t.Fatalf("get secret: err = %v, want Forbidden", err)
			}
			_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			if !apierrors.IsForbidden(err) {
				t.Fatalf("create configmap: err = %v, want Forbidden (the Role grants get/list only)", err)
			}
			_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			if !apierrors.IsForbidden(err) {
				t.Fatalf("list configmaps in another namespace: err = %v, want Forbidden", err)
			}
		})
	}

	// A garbage token is not a credential at all.
	bad := rest.AnonymousClientConfig(c.RESTConfig())
	bad.BearerToken = "not-a-token"
	cs, err := kubernetes.NewForConfig(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("list with a bad token: err = %v, want Unauthorized", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestTwoClustersAtOnce(t *testing.T) {
	a := kube.Shared(t)
	b := kube.New(t)
	if a.Host() == b.Host() {
		t.Fatalf("both clusters at %s", a.Host())
	}
	ctx := t.Context()
	nsA := a.Namespace(t)
	if _, err := a.Client.CoreV1().ConfigMaps(nsA).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "only-in-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace, and so the ConfigMap, exist in a only.
	_, err := b.Client.CoreV1().ConfigMaps(nsA).Get(ctx, "only-in-a", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("get a's ConfigMap from b: err = %v, want NotFound", err)
	}
	// Each has its own working controllers, scheduler and kwok node.
	for name, c := range map[string]*kube.Cluster{"a": a, "b": b} {
		ns := c.Namespace(t)
		if _, err := c.Client.AppsV1().Deployments(ns).Apply(ctx, deploymentApply(ns, 1, "nginx"), metav1.ApplyOptions{FieldManager: fieldManager}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		waitFor(t, 60*time.Second, name+": Deployment Available", func(ctx context.Context) (bool, error) {
			d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return d.Status.AvailableReplicas == 1, nil
		})
	}
	va, errA := a.Client.Discovery().ServerVersion()
	vb, errB := b.Client.Discovery().ServerVersion()
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	if va.GitVersion != vb.GitVersion {
		t.Fatalf("versions differ: %s vs %s", va.GitVersion, vb.GitVersion)
	}
}
