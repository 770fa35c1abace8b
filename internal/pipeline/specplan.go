package pipeline

import (
	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
)

// compileSpec parses and validates a pipeline spec (the codefresh.yml dialect).
func compileSpec(yaml string) (*spec.Pipeline, error) {
	return spec.Parse([]byte(yaml))
}

// plannedSteps lists the steps a build of specYAML will show, in order, all pending: parallel
// groups are followed by their children.
func plannedSteps(specYAML string) ([]runnerv1.StepState, error) {
	p, err := compileSpec(specYAML)
	if err != nil {
		return nil, err
	}
	var out []runnerv1.StepState
	var walk func(steps []*spec.Step)
	walk = func(steps []*spec.Step) {
		for _, st := range steps {
			out = append(out, runnerv1.StepState{Name: st.Name, Stage: st.Stage, Position: len(out), Status: "pending"})
			walk(st.Parallel)
		}
	}
	walk(p.Steps)
	return out, nil
}
