package rollouts

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzDecodeRollout: a Rollout from the cluster (written from git by anyone who can commit)
// either is refused with an error naming a field, or validates — and then one reconcile
// decision over it stays within bounds: no ReplicaSet asked for more than spec.replicas plus the
// surge, never a negative count, and a step index within the steps.
func FuzzDecodeRollout(f *testing.F) {
	for _, y := range []string{canaryYAML, blueGreenYAML, routedYAML, workloadYAML} {
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(j)
	}
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","spec":{"replicas":-1}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","spec":{"strategy":{"canary":{"steps":[{"setWeight":101}]}}}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","spec":{"strategy":{"canary":{"steps":[{"pause":{"duration":"1x"}}]}}}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","spec":{"strategy":{"canary":{"canaryService":"c","stableService":"s","trafficRouting":{"plugins":{"argoproj-labs/gatewayAPI":{"httpRoutes":[{"name":"r"}]}}},"steps":[{"setCanaryScale":{"weight":30}}]}}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ro, err := Decode(data)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("error %v does not name a field", err)
			}
			return
		}
		if _, err := json.Marshal(ro); err != nil {
			t.Fatalf("a decoded Rollout does not encode: %v", err)
		}
		if replicas(&ro.Spec) > 1000 {
			return // bounded work per input
		}
		if ro.Spec.WorkloadRef != nil {
			// As resolveWorkload does with the Deployment: its template (and selector, when the
			// Rollout has none), checked again before any decision.
			ro.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}
			if ro.Spec.Selector == nil {
				ro.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
			}
			if err := validateSpec(&ro.Spec, true); err != nil {
				if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
					t.Fatalf("error %v does not name a field", err)
				}
				return
			}
		}
		ro.UID = "u"
		p := compute(world{ro: ro, now: time.Unix(1e9, 0)})
		want := replicas(&ro.Spec)
		check := func(rs *appsv1.ReplicaSet, n int32) {
			if n < 0 || n > 2*want+1 {
				t.Fatalf("ReplicaSet %s scaled to %d of %d", rs.Name, n, want)
			}
		}
		if p.create != nil {
			check(p.create, specReplicas(p.create))
		}
		if i := p.status.CurrentStepIndex; i != nil && (*i < 0 || int(*i) > len(canarySteps(ro))) {
			t.Fatalf("step index %d of %d steps", *i, len(canarySteps(ro)))
		}
	})
}
