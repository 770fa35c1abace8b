package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/freshet-dev/freshet/internal/pipeline/spec"
)

// launched is a composition a launch-composition step left running.
type launched struct {
	step, name, network string
	stop                func()
}

// compositionServices starts the services of st's composition on a network of their own.
func (e *engine) compositionServices(ctx context.Context, st *spec.Step) (string, func(), string) {
	return e.startServices(ctx, st.Name, &spec.Services{Composition: st.Composition.Services})
}

// composition runs a composition step: its services, then each candidate on their network, in
// written order. The first candidate that fails fails the step with its exit code; the
// services are removed when the step ends.
func (e *engine) composition(ctx context.Context, st *spec.Step) (spec.Result, int, int, string) {
	comp := st.Composition
	if comp == nil {
		return e.imageStepFailed(ctx, st, "the step has no composition")
	}
	network, stop, msg := e.compositionServices(ctx, st)
	if msg != "" {
		return e.imageStepFailed(ctx, st, "composition: "+msg)
	}
	defer stop()
	for _, cand := range comp.Candidates {
		fs := &spec.Step{Name: st.Name + "-" + cand.Name, Type: spec.TypeFreestyle, Image: cand.Image, Cmd: cand.Cmd,
			EntryPoint: cand.EntryPoint, Env: cand.Env, WorkingDir: cand.WorkingDir, PullPolicy: cand.PullPolicy, Timeout: st.Timeout}
		step, err := e.executorStep(fs)
		if err != nil {
			return e.imageStepFailed(ctx, st, fmt.Sprintf("candidate %s: %v", cand.Name, err))
		}
		step.Networks = append(step.Networks, network)
		e.logf("step %s: candidate %s (image %s)", st.Name, cand.Name, step.Image)
		r, err := e.exec.Run(ctx, e.ws, step, e.out)
		switch {
		case err != nil:
			return e.imageStepFailed(ctx, st, fmt.Sprintf("candidate %s: %v", cand.Name, err))
		case r.Canceled || ctx.Err() != nil:
			return spec.ResultTerminated, r.ExitCode, 1, "terminated"
		case r.TimedOut:
			return spec.ResultFailure, r.ExitCode, 1, fmt.Sprintf("candidate %s timed out after %s", cand.Name, step.Timeout)
		case r.Message != "":
			e.logf("step %s: candidate %s: %s", st.Name, cand.Name, r.Message)
			return spec.ResultFailure, r.ExitCode, 1, fmt.Sprintf("candidate %s: %s", cand.Name, r.Message)
		case r.ExitCode != 0:
			e.logf("step %s: candidate %s exited with code %d", st.Name, cand.Name, r.ExitCode)
			return spec.ResultFailure, r.ExitCode, 1, fmt.Sprintf("candidate %s: exit code %d", cand.Name, r.ExitCode)
		}
		e.mu.Lock()
		for _, ex := range r.Exports {
			e.vars[ex.Name] = ex.Value
		}
		e.mu.Unlock()
	}
	return spec.ResultSuccess, 0, 1, ""
}

// launchComposition runs a launch-composition step: its services start and keep running until
// the build ends; the steps after it join their network. A composition launched earlier in the
// build under the same environment name is removed first, as Codefresh replaces an environment
// of the same name.
func (e *engine) launchComposition(ctx context.Context, st *spec.Step) (spec.Result, int, int, string) {
	comp := st.Composition
	if comp == nil {
		return e.imageStepFailed(ctx, st, "the step has no composition")
	}
	name := comp.EnvironmentName
	if name == "" {
		name = st.Name
	}
	name = e.interp(name)
	e.mu.Lock()
	i := slices.IndexFunc(e.launched, func(l launched) bool { return l.name == name })
	var old launched
	if i >= 0 {
		old = e.launched[i]
		e.launched = slices.Delete(e.launched, i, i+1)
		e.networks = slices.DeleteFunc(e.networks, func(n string) bool { return n == old.network })
	}
	e.mu.Unlock()
	if i >= 0 {
		e.logf("step %s: environment %q (launched by step %s) is replaced", st.Name, name, old.step)
		old.stop()
	}
	network, stop, msg := e.compositionServices(ctx, st)
	if msg != "" {
		return e.imageStepFailed(ctx, st, "composition: "+msg)
	}
	e.mu.Lock()
	e.launched = append(e.launched, launched{step: st.Name, name: name, network: network, stop: stop})
	e.networks = append(e.networks, network)
	e.mu.Unlock()
	main := ""
	if comp.EntryPoint != "" {
		main = ", main service " + comp.EntryPoint
	}
	e.logf("step %s: environment %q is running%s; it stays up until the build ends, and later steps reach its services by name", st.Name, name, main)
	return spec.ResultSuccess, 0, 1, ""
}

// stopLaunched removes the compositions launch-composition steps left running.
func (e *engine) stopLaunched() {
	e.mu.Lock()
	l := e.launched
	e.launched = nil
	e.mu.Unlock()
	for i := len(l) - 1; i >= 0; i-- {
		l[i].stop()
	}
}
