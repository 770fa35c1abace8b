package rollouts

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

const workloadYAML = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web, namespace: ns, uid: u1, generation: 1}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: web, scaleDown: progressively}
  strategy:
    canary:
      steps:
      - setWeight: 50
`

func TestWorkloadRefValidation(t *testing.T) {
	if _, err := decodeYAML(t, workloadYAML); err != nil {
		t.Fatalf("valid workloadRef refused: %v", err)
	}
	for _, tc := range []struct{ from, to, field string }{
		{"kind: Deployment", "kind: StatefulSet", "spec.workloadRef.kind"},
		{"name: web, scaleDown", "scaleDown", "spec.workloadRef.name"},
		{"scaleDown: progressively", "scaleDown: sometimes", "spec.workloadRef.scaleDown"},
		{"  strategy:", "  template: {metadata: {labels: {app: web}}}\n  strategy:", "spec.template"},
		{"setWeight: 50", "setWeight: 101", "spec.strategy.canary.steps[0].setWeight"},
	} {
		_, err := decodeYAML(t, strings.Replace(workloadYAML, tc.from, tc.to, 1))
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != tc.field {
			t.Errorf("%s: got %v (field %q), want %s", tc.to, err, errdefs.Field(err), tc.field)
		}
	}
}

func TestWorkloadScaleDown(t *testing.T) {
	ro, err := decodeYAML(t, workloadYAML)
	if err != nil {
		t.Fatal(err)
	}
	rs := func(rev string) *plan {
		return &plan{newRS: &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{RevisionAnnotation: rev}}}}
	}
	for _, tc := range []struct {
		scaleDown string
		rev       string
		phase     Phase
		ready     int32
		want      int32
		ok        bool
	}{
		{ScaleDownProgressively, "1", PhaseProgressing, 0, 0, false}, // nothing ready yet: leave it
		{ScaleDownProgressively, "1", PhaseProgressing, 3, 1, true},
		{ScaleDownProgressively, "1", PhaseHealthy, 4, 0, true},
		{ScaleDownOnSuccess, "1", PhaseProgressing, 3, 0, false},
		{ScaleDownOnSuccess, "1", PhaseHealthy, 4, 0, true},
		{ScaleDownNever, "1", PhaseHealthy, 4, 0, false},
		{"", "1", PhaseHealthy, 4, 0, false},
		{ScaleDownOnSuccess, "2", PhaseHealthy, 4, 0, false}, // a later revision: the migration is over
	} {
		ro.Spec.WorkloadRef.ScaleDown = tc.scaleDown
		n, ok := workloadScale(ro, rs(tc.rev), &RolloutStatus{Phase: tc.phase, ReadyReplicas: tc.ready})
		if n != tc.want || ok != tc.ok {
			t.Errorf("%+v: got %d %v", tc, n, ok)
		}
	}
}
