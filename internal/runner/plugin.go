package runner

import (
	"context"
	"fmt"

	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// plugin runs a typed plugin step: its step type's steps one after the other, each with the
// step's arguments as environment variables (and as ${{NAME}}, which in commands reaches the
// shell as data, like any variable). The first that fails fails the step with its exit code;
// what a step exports (cf_export) is seen by the next and by the rest of the build.
func (e *engine) plugin(ctx context.Context, st *spec.Step) (spec.Result, int, int, string) {
	p := st.Plugin
	if p == nil {
		return e.imageStepFailed(ctx, st, "the step has no step type")
	}
	parent := ctx
	if st.Timeout.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, st.Timeout.Duration)
		defer cancel()
	}
	// Arguments may refer to the build's variables (WHO: ${{CF_BRANCH}}); they are put in once.
	args := make([]executor.EnvVar, 0, len(p.Args))
	for _, a := range p.Args {
		args = append(args, executor.EnvVar{Name: a.Name, Value: e.interp(a.Value)})
	}
	version := ""
	if p.Version != "" {
		version = " " + p.Version
	}
	for _, in := range p.Steps {
		step, err := e.executorStepWith(in, args)
		if err != nil {
			return e.imageStepFailed(ctx, st, fmt.Sprintf("step type %s, step %s: %v", p.Name, in.Name, err))
		}
		step.Name = st.Name + "-" + in.Name
		e.logf("step %s: %s%s: %s", st.Name, p.Name, version, in.Name)
		r, err := e.exec.Run(ctx, e.ws, step, e.out)
		switch {
		case err != nil:
			return e.imageStepFailed(ctx, st, fmt.Sprintf("step type %s, step %s: %v", p.Name, in.Name, err))
		case parent.Err() != nil || (r.Canceled && ctx.Err() == nil):
			return spec.ResultTerminated, r.ExitCode, 1, "terminated"
		case r.TimedOut || ctx.Err() != nil:
			return spec.ResultFailure, r.ExitCode, 1, fmt.Sprintf("step type %s, step %s: timed out", p.Name, in.Name)
		case r.Message != "":
			e.logf("step %s: %s: %s", st.Name, in.Name, r.Message)
			return spec.ResultFailure, r.ExitCode, 1, fmt.Sprintf("step type %s, step %s: %s", p.Name, in.Name, r.Message)
		case r.ExitCode != 0:
			e.logf("step %s: %s exited with code %d", st.Name, in.Name, r.ExitCode)
			return spec.ResultFailure, r.ExitCode, 1, fmt.Sprintf("step type %s, step %s: exit code %d", p.Name, in.Name, r.ExitCode)
		}
		e.mu.Lock()
		for _, ex := range r.Exports {
			e.vars[ex.Name] = ex.Value
		}
		e.mu.Unlock()
	}
	return spec.ResultSuccess, 0, 1, ""
}
