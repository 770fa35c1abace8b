package agent_test

import (
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/rollouts"
)

// TestRolloutsAppLabelIsTheEngines: the runtime reports a Rollout's transitions for the
// application whose label the GitOps engine put on it. Checked here, where the runtime links
// both, so that the rollouts tests do not link the engine (and the Helm SDK) for a constant.
func TestRolloutsAppLabelIsTheEngines(t *testing.T) {
	if rollouts.AppLabel != engine.LabelApp {
		t.Fatalf("rollouts.AppLabel %q, the engine tracks applications with %q", rollouts.AppLabel, engine.LabelApp)
	}
}
