package engine_test

import (
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
)

// TestRefuseKinds: a hosted runtime's engine (Options.Refuse = workflows.RefuseOnHosted)
// refuses an Argo Workflow by name in an InvalidSpecError condition, and does not apply it.
func TestRefuseKinds(t *testing.T) {
	v := newEnv(t, func(o *engine.Options) { o.Refuse = workflows.RefuseOnHosted })
	v.repo.Commit("main", map[string]string{
		"pipe/cm.yaml": configMap("kept", "v1"),
		"pipe/wf.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: build}
spec:
  entrypoint: main
  templates: [{name: main, container: {image: alpine, command: ["true"]}}]
`,
	}, "pipe")
	v.upsert(v.application("pipe", "pipe", ""))
	s := v.refresh("pipe")
	found := false
	for _, c := range s.Conditions {
		if c.Type == engine.ConditionInvalidSpec && strings.Contains(c.Message, "Workflow build") &&
			strings.Contains(c.Message, "runs on hybrid runtimes only") {
			found = true
		}
	}
	if !found {
		t.Fatalf("conditions %+v", s.Conditions)
	}
	for _, r := range s.Resources {
		if r.Kind == "Workflow" {
			t.Fatalf("the Workflow is a resource of the app: %+v", s.Resources)
		}
	}
}
