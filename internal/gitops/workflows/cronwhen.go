package workflows

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// A CronWorkflow's spec.when (Argo 3.6) is checked before each scheduled run: an expr-lang
// expression over the same cronworkflow variables as the stop strategy (Argo writes it as an
// expression tag, "{{= cronworkflow.lastScheduledTime == nil || (now() -
// cronworkflow.lastScheduledTime).Seconds() > 360 }}"); a run it is false for is skipped, with
// an Event WorkflowSkipped, and status.lastScheduledTime is left at the last run made.
//
// Its last-used schedule: the controller keeps the schedule it last ran by in Argo's annotation,
// so that a changed schedule does not run the times it missed under the old one.
const (
	fieldWhen = "spec.when"
	// AnnotationLastUsedSchedule is Argo's annotation of the schedule a CronWorkflow was last
	// scheduled by (Argo's GetScheduleString: each schedule, "CRON_TZ=ZONE " before it when a
	// timezone is set, joined by commas).
	AnnotationLastUsedSchedule = "cronworkflows.argoproj.io/last-used-schedule"
)

// cronScheduleString is the last-used-schedule annotation's value for spec s, as Argo writes it.
func cronScheduleString(s *CronWorkflowSpec) string {
	list := s.Schedules
	if s.Schedule != "" {
		list = []string{s.Schedule}
	}
	out := make([]string, len(list))
	for i, e := range list {
		if s.Timezone != "" {
			e = "CRON_TZ=" + s.Timezone + " " + e
		}
		out[i] = e
	}
	return strings.Join(out, ",")
}

// whenExpression is the expression of spec.when: the text itself, or with each {{= EXPR }}
// expression tag read as (EXPR) — the tag's value in place, without ever writing a value into
// the text. Argo's simple {{cronworkflow.x}} tags are refused (they insert text into an
// expression): the error says to use the variable itself.
func whenExpression(s string) (string, error) {
	rest := strings.TrimSpace(s)
	if !strings.Contains(rest, "{{") {
		return rest, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i:]
		if !strings.HasPrefix(rest, "{{=") {
			return "", fmt.Errorf("has a {{…}} tag that is not an expression tag: write {{= EXPR }} or the expression alone, naming the variables themselves (cronworkflow.name, not {{cronworkflow.name}})")
		}
		j := strings.Index(rest, "}}")
		if j < 0 {
			return "", fmt.Errorf("has a {{= tag that is not closed with }}")
		}
		b.WriteString("(" + rest[3:j] + ")")
		rest = rest[j+2:]
	}
	return strings.TrimSpace(b.String()), nil
}

// checkCronWhen validates spec.when (empty: every run goes ahead): an expression that compiles to
// a boolean and names only the cronworkflow variables.
func checkCronWhen(s string) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if len(s) > maxExprLen {
		return errdefs.Invalid(fieldWhen, clip(s, 80), fmt.Sprintf("is longer than %d characters", maxExprLen))
	}
	e, err := whenExpression(s)
	if err != nil {
		return errdefs.Invalid(fieldWhen, s, err.Error())
	}
	return checkCronExpr(fieldWhen, s, e, "cronworkflow.lastScheduledTime == nil || (now() - cronworkflow.lastScheduledTime).Hours() > 6")
}

// checkCronExpr checks e, the expression of field (written as text), as a boolean over the
// cronworkflow variables; example is a valid one, for the message.
func checkCronExpr(field, text, e, example string) error {
	env := cronEnv(&CronWorkflow{}, 0, 0, nil)
	if _, err := expr.Compile(e, stopOptions(env)...); err != nil {
		return errdefs.Invalid(field, text, "does not compile to a boolean: "+oneLine(err)+" (e.g. "+example+")")
	}
	// The variables' types are known only when it runs: one that gives a non-boolean over
	// zero counters (with and without a last scheduled time) is refused now (one that fails on
	// them may hold later, and is not).
	if prg, err := expr.Compile(e, expr.Env(env), expr.MaxNodes(maxExprNodes), expr.DisableBuiltin("repeat")); err == nil {
		last := time.Unix(0, 0).UTC()
		for _, env := range []map[string]any{env, cronEnv(&CronWorkflow{}, 0, 0, &last)} {
			machine := vm.VM{MemoryBudget: maxExprMemory}
			if out, err := machine.Run(prg, env); err == nil {
				if _, ok := out.(bool); !ok {
					return errdefs.Invalid(field, text, fmt.Sprintf("does not compile to a boolean: it gives %T", out))
				}
			}
		}
	}
	paths, _, err := exprPaths(e)
	if err != nil {
		return errdefs.Invalid(field, text, "does not parse: "+oneLine(err))
	}
	for _, p := range paths {
		rest, ok := strings.CutPrefix(p, "cronworkflow.")
		if !ok {
			continue // cronworkflow as a whole; other names did not compile
		}
		key, _, _ := strings.Cut(rest, ".")
		if !slices.Contains(cronVars, key) && !slices.Contains(cronVars, rest) {
			return errdefs.Invalid(field, text, fmt.Sprintf("names %s, which is not a variable here (cronworkflow.%s)",
				p, strings.Join(cronVars, ", cronworkflow.")))
		}
	}
	return nil
}

// whenHolds evaluates the CronWorkflow's spec.when with the counters and last scheduled time
// given (true when it has none).
func whenHolds(cw *CronWorkflow, succeeded, failed int64, last *time.Time) (bool, error) {
	if strings.TrimSpace(cw.Spec.When) == "" {
		return true, nil
	}
	e, err := whenExpression(cw.Spec.When)
	if err != nil {
		return false, errdefs.Invalid(fieldWhen, cw.Spec.When, err.Error())
	}
	env := cronEnv(cw, succeeded, failed, last)
	prg, err := expr.Compile(e, stopOptions(env)...)
	if err != nil {
		return false, errdefs.Invalid(fieldWhen, cw.Spec.When, "does not compile to a boolean: "+oneLine(err))
	}
	machine := vm.VM{MemoryBudget: maxExprMemory}
	out, err := machine.Run(prg, env)
	if err != nil {
		return false, errdefs.Invalid(fieldWhen, cw.Spec.When, "does not evaluate: "+oneLine(err))
	}
	b, ok := out.(bool)
	if !ok {
		return false, errdefs.Invalid(fieldWhen, cw.Spec.When, fmt.Sprintf("gives %T, not a boolean", out))
	}
	return b, nil
}
