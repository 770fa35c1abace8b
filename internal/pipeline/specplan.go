package pipeline

import (
	"context"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
)

// StepCatalog reads the operator's step catalogue: a git repository of typed plugin step
// definitions, NAME/step.yaml and NAME/VERSION/step.yaml (see spec.ReadStepType).
type StepCatalog interface {
	// ReadStepFile returns the file at path in the catalogue's configured revision; found is
	// false when there is no such file. An error means the catalogue could not be read.
	ReadStepFile(ctx context.Context, path string) (data []byte, found bool, err error)
}

// catalogTypes are the step types one spec names, as read from the catalogue.
type catalogTypes struct {
	defs  map[string]*spec.StepTypeDef
	errs  map[string]error
	texts map[string]string
}

func (t catalogTypes) StepType(name, version string) (*spec.StepTypeDef, error) {
	key := name
	if version != "" {
		key += ":" + version
	}
	if err := t.errs[key]; err != nil {
		return nil, err
	}
	if d := t.defs[key]; d != nil {
		return d, nil
	}
	return nil, spec.ErrStepTypeNotFound
}

// stepTypes reads from the step catalogue the typed plugin steps specYAML names: the options
// to compile it with, and the definitions' texts for the runner (nil when there are none).
// Without a catalogue the options resolve nothing, so that such steps are refused naming the
// missing catalogue. A step type that cannot be read is reported by the compile, on its step.
func (s *Service) stepTypes(ctx context.Context, specYAML string) (spec.Options, map[string]string) {
	refs := spec.PluginRefs([]byte(specYAML))
	if len(refs) == 0 || s.steps == nil {
		return spec.Options{}, nil
	}
	t := catalogTypes{defs: map[string]*spec.StepTypeDef{}, errs: map[string]error{}, texts: map[string]string{}}
	for _, ref := range refs {
		name, version, err := spec.SplitStepType(ref)
		if err != nil {
			continue // the compile reports it
		}
		def, text, err := spec.ReadStepType(name, version, func(path string) ([]byte, bool, error) {
			return s.steps.ReadStepFile(ctx, path)
		})
		if err != nil {
			t.errs[ref] = err
			continue
		}
		t.defs[ref], t.texts[ref] = def, string(text)
	}
	return spec.Options{StepTypes: t}, t.texts
}

// compileSpec parses and validates a pipeline spec (the codefresh.yml dialect), with its typed
// plugin steps read from the step catalogue; it returns the step types' texts for the runner.
func (s *Service) compileSpec(ctx context.Context, yaml string) (*spec.Pipeline, map[string]string, error) {
	opts, texts := s.stepTypes(ctx, yaml)
	p, err := spec.ParseWith([]byte(yaml), opts)
	if err != nil {
		return nil, nil, err
	}
	return p, texts, nil
}

// LintSpec returns every problem of a spec, errors and warnings, as the API's lint and a build
// see them: typed plugin steps are resolved in the step catalogue.
func (s *Service) LintSpec(ctx context.Context, yaml string) []spec.Issue {
	opts, _ := s.stepTypes(ctx, yaml)
	return spec.LintWith([]byte(yaml), opts)
}

// plannedSteps lists the steps a build of p will show, in order, all pending: parallel groups
// are followed by their children.
func plannedSteps(p *spec.Pipeline) []runnerv1.StepState {
	var out []runnerv1.StepState
	var walk func(steps []*spec.Step)
	walk = func(steps []*spec.Step) {
		for _, st := range steps {
			out = append(out, runnerv1.StepState{Name: st.Name, Stage: st.Stage, Position: len(out), Status: "pending"})
			walk(st.Parallel)
		}
	}
	walk(p.Steps)
	return out
}
