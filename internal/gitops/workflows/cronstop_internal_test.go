package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// TestStopStrategy: Argo's stop expressions over the counters and the CronWorkflow's own
// variables; one that fails at run time is an error naming the field.
func TestStopStrategy(t *testing.T) {
	cw := &CronWorkflow{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ci", Labels: map[string]string{"team": "a"},
		Annotations: map[string]string{"owner": "ann"}}}
	last := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		expr              string
		succeeded, failed int64
		last              *time.Time
		want              bool
	}{
		{"cronworkflow.succeeded >= 1", 0, 5, nil, false},
		{"cronworkflow.succeeded >= 1", 1, 0, nil, true},
		{"cronworkflow.failed >= 3", 2, 2, nil, false},
		{"cronworkflow.failed >= 3", 0, 3, nil, true},
		{"cronworkflow.succeeded + cronworkflow.failed > 4", 3, 2, nil, true},
		{"cronworkflow.labels.team == 'a' && cronworkflow.annotations.owner == 'ann' && cronworkflow.name == 'nightly'", 0, 0, nil, true},
		{"cronworkflow.namespace == 'prod'", 0, 0, nil, false},
		{"cronworkflow.lastScheduledTime == nil", 0, 0, nil, true},
		{"cronworkflow.lastScheduledTime != nil && cronworkflow.lastScheduledTime.Hour() == 3", 0, 0, &last, true},
		{"cronworkflow['labels.json'] contains 'team'", 0, 0, nil, true},
	} {
		cw.Spec.StopStrategy = &StopStrategy{Expression: c.expr}
		if err := checkStopStrategy(cw.Spec.StopStrategy); err != nil {
			t.Errorf("%s: refused: %v", c.expr, err)
			continue
		}
		got, err := stopHolds(cw, c.succeeded, c.failed, c.last)
		if err != nil || got != c.want {
			t.Errorf("%s with succeeded %d, failed %d: %v, %v; want %v", c.expr, c.succeeded, c.failed, got, err, c.want)
		}
	}
	cw.Spec.StopStrategy = &StopStrategy{Expression: "cronworkflow.labels.missing > 1"}
	if _, err := stopHolds(cw, 0, 0, nil); !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != fieldStopExpression || !strings.Contains(err.Error(), "does not evaluate") {
		t.Errorf("an expression failing at run time: %v", err)
	}
	if err := checkStopStrategy(&StopStrategy{Expression: strings.Repeat("1 == 1 && ", 500) + "true"}); errdefs.Field(err) != fieldStopExpression {
		t.Errorf("a long expression: %v", err)
	}
}
