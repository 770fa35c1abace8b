package health

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Rule assesses the health of a custom kind with CEL expressions, the way Flux's
// healthCheckExprs do, but with Argo CD's statuses. Each expression sees the object's top-level
// fields as variables (metadata, spec, status — an empty map when absent — and self for the
// whole object) and returns a bool. They are tried in the order Suspended, Degraded, Healthy,
// Progressing; the first that is true decides. When none is true the object is Progressing.
// Message, if set, is a CEL expression returning the string shown with the status.
//
//   - apiVersion: example.com/v1
//     kind: Database
//     healthy: "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"
//     degraded: "status.conditions.exists(c, c.type == 'Ready' && c.status == 'False' && c.reason == 'Failed')"
//     message: "has(status.message) ? status.message : ”"
//
// APIVersion may omit the version ("example.com") to match every version of the group; the
// core group is "v1". Rules take precedence over the built-in assessment.
type Rule struct {
	APIVersion  string `json:"apiVersion"`
	Kind        string `json:"kind"`
	Healthy     string `json:"healthy,omitempty"`
	Progressing string `json:"progressing,omitempty"`
	Degraded    string `json:"degraded,omitempty"`
	Suspended   string `json:"suspended,omitempty"`
	Message     string `json:"message,omitempty"`
}

type compiledRule struct {
	version string // "" matches every version
	checks  []check
	message cel.Program
}

type check struct {
	status Status
	prg    cel.Program
}

// NewChecker compiles rules. An expression that does not compile is an error naming the rule
// and the field.
func NewChecker(rules []Rule) (*Checker, error) {
	env, err := cel.NewEnv(
		cel.Variable("self", cel.DynType),
		cel.Variable("metadata", cel.DynType),
		cel.Variable("spec", cel.DynType),
		cel.Variable("status", cel.DynType),
	)
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	c := &Checker{rules: map[string][]*compiledRule{}}
	var errs []error
	for i, r := range rules {
		field := fmt.Sprintf("healthRules[%d]", i)
		if r.Kind == "" {
			errs = append(errs, errdefs.Invalid(field+".kind", "", "is required"))
			continue
		}
		gv := r.APIVersion
		var group, version string
		if gv == "v1" {
			version = "v1"
		} else if g, v, ok := strings.Cut(gv, "/"); ok {
			group, version = g, v
		} else {
			group = gv
		}
		if _, err := schema.ParseGroupVersion(gv); err != nil && gv != "" {
			errs = append(errs, errdefs.Invalid(field+".apiVersion", gv, "is not a group/version"))
			continue
		}
		cr := &compiledRule{version: version}
		compile := func(name, expr string, out *cel.Type) cel.Program {
			ast, iss := env.Compile(expr)
			if iss != nil && iss.Err() != nil {
				errs = append(errs, errdefs.Invalid(field+"."+name, expr, "does not compile: "+iss.Err().Error()))
				return nil
			}
			if out != nil && !ast.OutputType().IsExactType(out) && !ast.OutputType().IsExactType(cel.DynType) {
				errs = append(errs, errdefs.Invalid(field+"."+name, expr, fmt.Sprintf("returns %s, want %s", ast.OutputType(), out)))
				return nil
			}
			prg, err := env.Program(ast, cel.CostLimit(1_000_000))
			if err != nil {
				errs = append(errs, errdefs.Invalid(field+"."+name, expr, err.Error()))
				return nil
			}
			return prg
		}
		for _, ck := range []struct {
			name   string
			expr   string
			status Status
		}{{"suspended", r.Suspended, Suspended}, {"degraded", r.Degraded, Degraded}, {"healthy", r.Healthy, Healthy}, {"progressing", r.Progressing, Progressing}} {
			if ck.expr == "" {
				continue
			}
			if prg := compile(ck.name, ck.expr, cel.BoolType); prg != nil {
				cr.checks = append(cr.checks, check{ck.status, prg})
			}
		}
		if len(cr.checks) == 0 && r.Healthy == "" && r.Degraded == "" && r.Suspended == "" && r.Progressing == "" {
			errs = append(errs, errdefs.Invalid(field, r.Kind, "needs at least one of healthy, progressing, degraded, suspended"))
		}
		if r.Message != "" {
			cr.message = compile("message", r.Message, cel.StringType)
		}
		key := group + "/" + r.Kind
		c.rules[key] = append(c.rules[key], cr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func (r *compiledRule) matches(version string) bool { return r.version == "" || r.version == version }

func (r *compiledRule) assess(obj *unstructured.Unstructured) Result {
	vars := map[string]any{"self": obj.Object, "metadata": map[string]any{}, "spec": map[string]any{}, "status": map[string]any{}}
	for _, k := range []string{"metadata", "spec", "status"} {
		if v, ok := obj.Object[k]; ok && v != nil {
			vars[k] = v
		}
	}
	msg := ""
	if r.message != nil {
		if out, _, err := r.message.Eval(vars); err == nil {
			msg, _ = out.Value().(string)
		}
	}
	for _, ck := range r.checks {
		out, _, err := ck.prg.Eval(vars)
		if err != nil {
			return Result{Status: Unknown, Message: fmt.Sprintf("health rule for %s: %v", ck.status, err)}
		}
		if b, ok := out.Value().(bool); ok && b {
			return Result{Status: ck.status, Message: msg}
		}
	}
	if msg == "" {
		msg = "no health rule matched yet"
	}
	return Result{Status: Progressing, Message: msg}
}
