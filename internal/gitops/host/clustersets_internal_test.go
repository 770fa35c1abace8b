package host

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/appset"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

// The ApplicationSet status in Argo CD's shape: a RollingSync's applicationStatus and
// RolloutProgressing, the resources' sync and health, and a refused spec.
func TestArgoSetStatus(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &appset.Status{Name: "envs", Applications: []string{"a", "b"}, GeneratedAt: at,
		Conditions: []appset.Condition{{Type: appset.ConditionErrorOccurred, Status: "False", Since: at},
			{Type: appset.ConditionResourcesUpToDate, Status: "True", Message: "2 applications generated", Since: at},
			{Type: appset.ConditionRolloutProgressing, Status: "True", Message: "step 1", Since: at}},
		Steps: []appset.AppStep{{App: "a", Step: 1, Status: "Progressing", Message: "syncing"}, {App: "b", Step: 0, Status: "Waiting"}}}
	apps := map[string]engine.AppStatus{"a": {Sync: engine.OutOfSync, Health: health.Result{Status: health.Progressing, Message: "rolling"}}}
	out := argoSetStatus(st, problem{}, "ns", apps)
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, want := range []string{
		`{"application":"a","message":"syncing","status":"Progressing","step":"1"}`,
		`{"application":"b","message":"","status":"Waiting","step":"-1"}`,
		`"reason":"ApplicationSetModified","status":"True","type":"RolloutProgressing"`,
		`"reason":"ApplicationSetUpToDate","status":"False","type":"ErrorOccurred"`,
		`"reason":"ParametersGenerated","status":"True","type":"ParametersGenerated"`,
		`{"group":"argoproj.io","health":{"message":"rolling","status":"Progressing"},"kind":"Application","name":"a","namespace":"ns","status":"OutOfSync","version":"v1alpha1"}`,
		`{"group":"argoproj.io","kind":"Application","name":"b","namespace":"ns","status":"Unknown","version":"v1alpha1"}`,
		`"lastTransitionTime":"2026-01-02T03:04:05Z"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %s:\n%s", want, got)
		}
	}
	// A refused new spec of a running set: ErrorOccurred with the problem, the resources kept.
	data, _ = json.Marshal(argoSetStatus(st, problem{msg: "spec.generatorz: unknown field", since: at}, "ns", apps))
	if got := string(data); !strings.Contains(got, `"message":"spec.generatorz: unknown field","reason":"ErrorOccurred","status":"True","type":"ErrorOccurred"`) || !strings.Contains(got, `"name":"a"`) {
		t.Errorf("refused spec: %s", got)
	}
	// Never run: conditions only.
	data, _ = json.Marshal(argoSetStatus(nil, problem{msg: "bad", since: at}, "ns", nil))
	if got := string(data); !strings.Contains(got, `"type":"ErrorOccurred"`) || !strings.Contains(got, `"resources":null`) {
		t.Errorf("not run: %s", got)
	}
}
