package rollouts_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/internal/gitops/rollouts"
)

func (e *env) deployment(name, image string, replicas int32) {
	e.t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: image}}}}},
	}
	if _, err := e.c.Client.AppsV1().Deployments(e.ns).Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deploymentReplicas(name string) int32 {
	e.t.Helper()
	d, err := e.c.Client.AppsV1().Deployments(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return *d.Spec.Replicas
}

// A Rollout taking its template from a Deployment (workloadRef) with scaleDown: progressively
// runs the Deployment's pods under its own ReplicaSets and scales the Deployment to zero as its
// own become ready; a change to the Deployment's template is a new revision.
func TestWorkloadRefOnAPIServer(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: web, scaleDown: progressively}
  strategy:
    canary:
      maxSurge: 1
      maxUnavailable: 0
      steps:
      - setWeight: 33
      - pause: {}
`)
	// The Deployment does not exist yet: a message naming the field, nothing created.
	e.waitFor("missing deployment reported", 60*time.Second, func() (bool, string) {
		ro := e.rollout("web")
		return strings.Contains(ro.Status.Message, `deployment "web" (spec.workloadRef.name) does not exist`), ro.Status.Message
	})
	if got, _ := e.replicaSets("web"); got != "" {
		t.Fatalf("ReplicaSets %s without a template", got)
	}
	e.deployment("web", "registry.local/web:1", 3)
	ro := e.waitPhase("web", rollouts.PhaseHealthy, 2)
	e.waitRS("web", "1:3/3")
	if img := ro.Spec.Template.Spec.Containers; len(img) != 0 {
		t.Fatalf("the Rollout's own template was written: %v", img)
	}
	e.waitFor("deployment scaled to 0", 60*time.Second, func() (bool, string) {
		n := e.deploymentReplicas("web")
		return n == 0, fmt.Sprint(n)
	})

	// A new template in the Deployment: revision 2 goes through the steps.
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.local/web:2"}]}}}}`
	if _, err := e.c.Client.AppsV1().Deployments(e.ns).Patch(e.ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("web", rollouts.PhasePaused, 1)
	e.waitRS("web", "1:2/2 2:1/1")
	if n := e.deploymentReplicas("web"); n != 0 {
		t.Fatalf("deployment scaled back to %d on a later revision", n)
	}
	// A Rollout whose selector does not match the Deployment's template is refused by name.
	e.apply(`
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: other}
spec:
  replicas: 1
  selector: {matchLabels: {app: other}}
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  strategy: {canary: {}}
`)
	e.waitFor("InvalidSpec naming the template", 60*time.Second, func() (bool, string) {
		ro := e.rollout("other")
		return ro.Status.Phase == rollouts.PhaseDegraded && strings.Contains(ro.Status.Message, "spec.template.metadata.labels") &&
			strings.Contains(ro.Status.Message, "spec.workloadRef"), ro.Status.Message
	})
	if got, _ := e.replicaSets("other"); got != "" {
		t.Fatalf("ReplicaSets %s of an invalid Rollout", got)
	}
}
