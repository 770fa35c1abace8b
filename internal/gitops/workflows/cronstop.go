package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// A CronWorkflow's stop strategy (Argo 3.6): spec.stopStrategy.expression is evaluated over the
// cronworkflow.* variables whenever its counters may have changed; once true the CronWorkflow is
// Stopped for good: status.phase Stopped, labelled cronworkflows.argoproj.io/completed, and no
// further run is scheduled.
const (
	// CronPhaseActive and CronPhaseStopped are a CronWorkflow's status.phase.
	CronPhaseActive  = "Active"
	CronPhaseStopped = "Stopped"
	// LabelCronCompleted marks a CronWorkflow its stop strategy stopped (Argo's label).
	LabelCronCompleted = "cronworkflows.argoproj.io/completed"
	// fieldStopExpression is the field a bad stop expression is reported at.
	fieldStopExpression = "spec.stopStrategy.expression"
)

// cronVars are the keys of the cronworkflow variable (Argo's names); labels and annotations
// are maps (cronworkflow.labels.team), labels.json and annotations.json their JSON.
var cronVars = []string{"name", "namespace", "labels", "annotations", "labels.json", "annotations.json",
	"failed", "succeeded", "lastScheduledTime"}

// cronEnv is the environment of a stop expression.
func cronEnv(cw *CronWorkflow, succeeded, failed int64, last *time.Time) map[string]any {
	strMap := func(m map[string]string) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	lj, _ := json.Marshal(cw.Labels)
	aj, _ := json.Marshal(cw.Annotations)
	var lst any
	if last != nil {
		lst = *last
	}
	return map[string]any{"cronworkflow": map[string]any{
		"name": cw.Name, "namespace": cw.Namespace,
		"labels": strMap(cw.Labels), "annotations": strMap(cw.Annotations),
		"labels.json": string(lj), "annotations.json": string(aj),
		"failed": int(failed), "succeeded": int(succeeded), "lastScheduledTime": lst,
	}}
}

func stopOptions(env map[string]any) []expr.Option {
	return []expr.Option{expr.Env(env), expr.AsBool(), expr.MaxNodes(maxExprNodes), expr.DisableBuiltin("repeat")}
}

// checkStopStrategy validates spec.stopStrategy: an expression that compiles to a boolean and
// names only the cronworkflow variables.
func checkStopStrategy(s *StopStrategy) error {
	if s == nil {
		return nil
	}
	e := s.Expression
	switch {
	case strings.TrimSpace(e) == "":
		return errdefs.Invalid(fieldStopExpression, "", "is required: an expression over cronworkflow.succeeded and cronworkflow.failed, e.g. cronworkflow.succeeded >= 1")
	case len(e) > maxExprLen:
		return errdefs.Invalid(fieldStopExpression, clip(e, 80), fmt.Sprintf("is longer than %d characters", maxExprLen))
	}
	return checkCronExpr(fieldStopExpression, e, e, "cronworkflow.succeeded >= 1")
}

// stopHolds evaluates the CronWorkflow's stop expression with the counters given.
func stopHolds(cw *CronWorkflow, succeeded, failed int64, last *time.Time) (bool, error) {
	env := cronEnv(cw, succeeded, failed, last)
	prg, err := expr.Compile(cw.Spec.StopStrategy.Expression, stopOptions(env)...)
	if err != nil {
		return false, errdefs.Invalid(fieldStopExpression, cw.Spec.StopStrategy.Expression, "does not compile to a boolean: "+oneLine(err))
	}
	machine := vm.VM{MemoryBudget: maxExprMemory}
	out, err := machine.Run(prg, env)
	if err != nil {
		return false, errdefs.Invalid(fieldStopExpression, cw.Spec.StopStrategy.Expression, "does not evaluate: "+oneLine(err))
	}
	b, ok := out.(bool)
	if !ok {
		return false, errdefs.Invalid(fieldStopExpression, cw.Spec.StopStrategy.Expression, fmt.Sprintf("gives %T, not a boolean", out))
	}
	return b, nil
}
