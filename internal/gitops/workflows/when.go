package workflows

import (
	"fmt"

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
	filled := varRe.ReplaceAllString(s, "x")
	if len(filled) > maxWhenLen {
		return fmt.Errorf("is longer than %d characters", maxWhenLen)
	}
	_, err := expr.Compile(filled, expr.Env(map[string]any{}), expr.Patch(bareWords{}), expr.DisableAllBuiltins())
	if err != nil {
		return fmt.Errorf("does not parse as a boolean expression (quote values with spaces): %v", err)
	}
	return nil
}
