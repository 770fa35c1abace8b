package spec

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Result is the state of a step as `when` sees it (steps.NAME.result) and as a runner reports
// it.
type Result string

// Step results.
const (
	ResultPending    Result = "pending" // not started (also: not run yet in this build)
	ResultRunning    Result = "running"
	ResultSuccess    Result = "success"
	ResultFailure    Result = "failure"
	ResultSkipped    Result = "skipped"    // its when said no
	ResultApproved   Result = "approved"   // a pending-approval step that was approved
	ResultDenied     Result = "denied"     // a pending-approval step that was denied
	ResultTerminated Result = "terminated" // cancelled
)

// Workflow results (workflow.result in conditions).
const (
	WorkflowRunning         Result = "running"
	WorkflowSuccess         Result = "success"
	WorkflowFailure         Result = "failure"
	WorkflowTerminated      Result = "terminated"
	WorkflowPendingApproval Result = "pending-approval"
)

// On is a step event a `when.steps` dependency waits for.
type On string

// Step events.
const (
	OnSuccess  On = "success"  // the step succeeded (an approval step: was approved)
	OnFailure  On = "failure"  // the step failed (an approval step: was denied)
	OnSkipped  On = "skipped"  // the step was skipped by its own when
	OnFinished On = "finished" // any of the above, or terminated
	OnApproved On = "approved" // an approval step was approved
	OnDenied   On = "denied"   // an approval step was denied
)

var onValues = []string{string(OnSuccess), string(OnFailure), string(OnSkipped), string(OnFinished), string(OnApproved), string(OnDenied)}

// Matches reports whether a step with result r satisfies o.
func (o On) Matches(r Result) bool {
	switch o {
	case OnSuccess:
		return r == ResultSuccess || r == ResultApproved
	case OnFailure:
		return r == ResultFailure || r == ResultDenied
	case OnSkipped:
		return r == ResultSkipped
	case OnFinished:
		switch r {
		case ResultSuccess, ResultFailure, ResultSkipped, ResultApproved, ResultDenied, ResultTerminated:
			return true
		}
	case OnApproved:
		return r == ResultApproved
	case OnDenied:
		return r == ResultDenied
	}
	return false
}

// When decides whether a step runs. All three parts must hold; an empty part holds.
type When struct {
	Branch    BranchFilter `json:"branch,omitzero"`
	Condition Condition    `json:"condition,omitzero"`
	Steps     StepDeps     `json:"steps,omitzero"`
}

// IsZero reports whether w has no condition at all.
func (w When) IsZero() bool { return w.Branch.IsZero() && w.Condition.IsZero() && w.Steps.IsZero() }

// BranchFilter runs a step only on branches that match an Only pattern (when there are any)
// and no Ignore pattern.
type BranchFilter struct {
	Only   []Pattern `json:"only,omitempty"`
	Ignore []Pattern `json:"ignore,omitempty"`
}

// IsZero reports whether f filters nothing.
func (f BranchFilter) IsZero() bool { return len(f.Only) == 0 && len(f.Ignore) == 0 }

// Pattern is a branch pattern: an exact branch name, or a regular expression written /re/ or
// /re/flags (flags i, m, s). Regular expressions are RE2 (Go) syntax: no lookaround or
// backreferences. A regular expression matches anywhere in the name unless anchored.
type Pattern struct {
	text string
	re   *regexp.Regexp
}

var patternFlags = "ims"

// ParsePattern compiles a branch pattern.
func ParsePattern(s string) (Pattern, error) {
	if len(s) >= 2 && s[0] == '/' {
		end := strings.LastIndexByte(s, '/')
		if end > 0 {
			body, flags := s[1:end], s[end+1:]
			for _, f := range flags {
				if !strings.ContainsRune(patternFlags, f) {
					return Pattern{}, fmt.Errorf("has flag %q: use i (ignore case), m or s", f)
				}
			}
			prefix := ""
			if flags != "" {
				prefix = "(?" + uniqueFlags(flags) + ")"
			}
			re, err := regexp.Compile(prefix + body)
			if err != nil {
				return Pattern{}, fmt.Errorf("is not a valid regular expression (RE2 syntax: no lookaround or backreferences): %s", reErrText(err))
			}
			return Pattern{text: s, re: re}, nil
		}
	}
	if s == "" {
		return Pattern{}, fmt.Errorf("is empty: write a branch name or /regular expression/")
	}
	return Pattern{text: s}, nil
}

func uniqueFlags(flags string) string {
	var b strings.Builder
	for _, f := range patternFlags {
		if strings.ContainsRune(flags, f) {
			b.WriteRune(f)
		}
	}
	return b.String()
}

// reErrText is the part of a regexp error after its "error parsing regexp: " prefix.
func reErrText(err error) string {
	return shorten(strings.TrimPrefix(err.Error(), "error parsing regexp: "))
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.text }

// IsRegexp reports whether p is a regular expression.
func (p Pattern) IsRegexp() bool { return p.re != nil }

// Match reports whether branch matches p.
func (p Pattern) Match(branch string) bool {
	if p.re != nil {
		return p.re.MatchString(branch)
	}
	return p.text == branch
}

// MarshalJSON encodes p as the string written.
func (p Pattern) MarshalJSON() ([]byte, error) { return json.Marshal(p.text) }

// UnmarshalJSON decodes and compiles a pattern.
func (p *Pattern) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParsePattern(s)
	if err != nil {
		return errdefs.Invalid("pattern", s, err.Error())
	}
	*p = v
	return nil
}

// Condition holds named expressions: the step runs when every All expression is true and, if
// there are Any expressions, at least one of them is. See CompileExpr for the language.
type Condition struct {
	All []*Expr `json:"all,omitempty"`
	Any []*Expr `json:"any,omitempty"`
}

// IsZero reports whether c has no expression.
func (c Condition) IsZero() bool { return len(c.All) == 0 && len(c.Any) == 0 }

// StepDeps makes a step wait for other steps' results.
type StepDeps struct {
	// Match is "all" (every dependency must be met; the default) or "any".
	Match string    `json:"match,omitempty"`
	Deps  []StepDep `json:"deps,omitempty"`
}

// IsZero reports whether d has no dependency.
func (d StepDeps) IsZero() bool { return len(d.Deps) == 0 }

// StepDep is one dependency: the step Name has a result matching any of On.
type StepDep struct {
	Name string `json:"name"`
	On   []On   `json:"on"`
}

// Met reports whether a step with result r satisfies d.
func (d StepDep) Met(r Result) bool {
	for _, o := range d.On {
		if o.Matches(r) {
			return true
		}
	}
	return false
}

// EvalContext is what `when` is evaluated against.
type EvalContext struct {
	// Branch is the build's branch (CF_BRANCH); when empty, Variables["CF_BRANCH"] is used.
	Branch string
	// Variables are the build's variables (built-ins, pipeline and trigger variables, and
	// cf_export values so far), used for ${{NAME}}, Variable() and Member().
	Variables map[string]string
	// Steps are the results so far, by step name; a missing step is pending.
	Steps map[string]Result
	// Workflow is workflow.result. When empty it is derived: failure if any step failed or
	// was denied, else success.
	Workflow Result
}

func (c EvalContext) branch() string {
	if c.Branch != "" {
		return c.Branch
	}
	return c.Variables["CF_BRANCH"]
}

func (c EvalContext) stepResult(name string) Result {
	if r, ok := c.Steps[name]; ok && r != "" {
		return r
	}
	return ResultPending
}

func (c EvalContext) workflow() Result {
	if c.Workflow != "" {
		return c.Workflow
	}
	for _, r := range c.Steps {
		if r == ResultFailure || r == ResultDenied {
			return WorkflowFailure
		}
	}
	return WorkflowSuccess
}

// Evaluate decides whether the step runs now. reason says why not (or, when run is true,
// what was checked), in words a build log can show. err reports an expression that failed to
// evaluate (say, comparing a string with a number); the runner should fail the step with it.
//
// In sequential mode a runner evaluates a step once, just before it would run, and skips it
// when run is false. In parallel mode it re-evaluates the steps not started yet each time a
// step finishes, and skips whatever is left when nothing is running and nothing can start.
func (w *When) Evaluate(ctx EvalContext) (run bool, reason string, err error) {
	if w == nil || w.IsZero() {
		return true, "no conditions", nil
	}
	if !w.Branch.IsZero() {
		b := ctx.branch()
		if len(w.Branch.Only) > 0 {
			ok := false
			for _, p := range w.Branch.Only {
				if p.Match(b) {
					ok = true
					break
				}
			}
			if !ok {
				return false, fmt.Sprintf("branch %q matches none of when.branch.only (%s)", b, patternList(w.Branch.Only)), nil
			}
		}
		for _, p := range w.Branch.Ignore {
			if p.Match(b) {
				return false, fmt.Sprintf("branch %q matches when.branch.ignore %s", b, p.text), nil
			}
		}
	}
	if !w.Steps.IsZero() {
		anyMode := w.Steps.Match == "any"
		met := 0
		var unmet []string
		for _, d := range w.Steps.Deps {
			r := ctx.stepResult(d.Name)
			if d.Met(r) {
				met++
				continue
			}
			unmet = append(unmet, fmt.Sprintf("%s is %s, want %s", d.Name, r, onList(d.On)))
		}
		if anyMode && met == 0 {
			return false, "when.steps (any): " + strings.Join(unmet, "; "), nil
		}
		if !anyMode && len(unmet) > 0 {
			return false, "when.steps: " + strings.Join(unmet, "; "), nil
		}
	}
	if !w.Condition.IsZero() {
		for _, e := range w.Condition.All {
			ok, err := e.Eval(ctx)
			if err != nil {
				return false, "", fmt.Errorf("when.condition.all.%s: %w", e.Name, err)
			}
			if !ok {
				return false, fmt.Sprintf("when.condition.all.%s is false", e.Name), nil
			}
		}
		if len(w.Condition.Any) > 0 {
			found := false
			for _, e := range w.Condition.Any {
				ok, err := e.Eval(ctx)
				if err != nil {
					return false, "", fmt.Errorf("when.condition.any.%s: %w", e.Name, err)
				}
				if ok {
					found = true
					break
				}
			}
			if !found {
				return false, "no when.condition.any expression is true", nil
			}
		}
	}
	return true, "when conditions met", nil
}

func patternList(ps []Pattern) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.text
	}
	return strings.Join(s, ", ")
}

func onList(os []On) string {
	s := make([]string, len(os))
	for i, o := range os {
		s[i] = string(o)
	}
	return strings.Join(s, " or ")
}
