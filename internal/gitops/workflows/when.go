package workflows

import (
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// maxWhenLen bounds a when expression after substitution.
const maxWhenLen = 4096

// bareWords turns identifiers into strings, as Argo does with govaluate, so that
// `{{steps.flip.outputs.result}} == heads` compares two strings without quotes.
type bareWords struct{}

func (bareWords) Visit(node *ast.Node) {
	if id, ok := (*node).(*ast.IdentifierNode); ok {
		ast.Patch(node, &ast.StringNode{Value: id.Value})
	}
}

// evalWhen evaluates a when expression whose references were substituted: expr-lang with no
// variables and no functions reachable (identifiers are strings), which must give a boolean.
func evalWhen(s string) (bool, error) {
	if len(s) > maxWhenLen {
		return false, fmt.Errorf("is longer than %d characters", maxWhenLen)
	}
	prg, err := expr.Compile(s, expr.Env(map[string]any{}), expr.Patch(bareWords{}), expr.AsBool(), expr.DisableAllBuiltins())
	if err != nil {
		return false, fmt.Errorf("does not parse as a boolean expression (quote values with spaces): %v", err)
	}
	out, err := expr.Run(prg, map[string]any{})
	if err != nil {
		return false, fmt.Errorf("does not evaluate: %v", err)
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("is not a boolean")
	}
	return b, nil
}

// checkWhen checks that a when expression parses once its references are given values
// (each becomes the word "x"), as `argo lint` does.
func checkWhen(s string) error {
	filled := fillTags(s)
	if len(filled) > maxWhenLen {
		return fmt.Errorf("is longer than %d characters", maxWhenLen)
	}
	_, err := expr.Compile(filled, expr.Env(map[string]any{}), expr.Patch(bareWords{}), expr.DisableAllBuiltins())
	if err != nil {
		return fmt.Errorf("does not parse as a boolean expression (quote values with spaces): %v", err)
	}
	return nil
}

// fromExprEnv nests a scope's dotted names into maps (steps.a.outputs.result becomes
// steps → a → outputs → result) for a fromExpression; a name that is also a prefix of longer
// names is a map.
func fromExprEnv(sc scope) map[string]any {
	keys := make([]string, 0, len(sc))
	for k := range sc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := map[string]any{}
	for _, k := range keys {
		parts := strings.Split(k, ".")
		m := env
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		if _, isMap := m[parts[len(parts)-1]].(map[string]any); !isMap {
			m[parts[len(parts)-1]] = sc[k]
		}
	}
	return env
}

// evalFromExpression evaluates an artifact's fromExpression (expr-lang, as Argo's:
// `tasks['flip'].outputs.result == 'heads' ? tasks.heads.outputs.artifacts.out :
// tasks.tails.outputs.artifacts.out`) over the variables of its scope, no functions reachable.
// It returns the artifact it names as a from value, or ok false when it names nothing (a step
// that did not run).
func evalFromExpression(s string, sc scope) (string, bool, error) {
	if len(s) > maxWhenLen {
		return "", false, fmt.Errorf("is longer than %d characters", maxWhenLen)
	}
	env := fromExprEnv(sc)
	prg, err := expr.Compile(s, expr.Env(env), expr.AllowUndefinedVariables(), expr.DisableAllBuiltins())
	if err != nil {
		return "", false, fmt.Errorf("does not parse: %v", err)
	}
	out, err := expr.Run(prg, env)
	if err != nil {
		return "", false, fmt.Errorf("does not evaluate: %v", err)
	}
	switch v := out.(type) {
	case nil:
		return "", false, nil
	case string:
		return v, true, nil
	}
	return "", false, fmt.Errorf("gives %T, not an artifact", out)
}

// checkFromExpression checks that a fromExpression parses.
func checkFromExpression(s string) error {
	if len(s) > maxWhenLen {
		return fmt.Errorf("is longer than %d characters", maxWhenLen)
	}
	if _, err := expr.Compile(s, expr.Env(map[string]any{}), expr.AllowUndefinedVariables(), expr.DisableAllBuiltins()); err != nil {
		return fmt.Errorf("does not parse: %v", err)
	}
	return nil
}

// fillTags replaces each {{…}} tag of s by the word x, to check what it is part of.
func fillTags(s string) string {
	var b strings.Builder
	last := 0
	for _, t := range findTags(s) {
		b.WriteString(s[last:t.start])
		b.WriteString("x")
		last = t.end
	}
	b.WriteString(s[last:])
	return b.String()
}
