package workflows

import (
	"strings"
	"testing"
)

// exprScope is a scope as a step of a steps template sees it.
func exprScope() scope {
	return scope{
		"inputs.parameters.my-param":       "7",
		"inputs.parameters.name":           "  Freshet ",
		"inputs.parameters.doc":            `{"a":{"b":[1,2,3]},"items":[{"name":"x"},{"name":"y"}]}`,
		"inputs.parameters":                `[{"name":"my-param","value":"7"}]`,
		"steps.flip-coin.outputs.result":   "heads",
		"steps.gen.outputs.parameters.out": `["a","b"]`,
		"tasks.A.outputs.parameters.n":     "2.5",
		"workflow.name":                    "wf-1",
		"workflow.parameters.env":          "prod",
		"item":                             `{"k":"v"}`,
		"item.k":                           "v",
		"evil":                             `{{=workflow.name}}" + "x`,
	}
}

func TestExpressionTags(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"{{=inputs.parameters['my-param']}}", "7"},
		{"{{=asInt(inputs.parameters['my-param']) + 1}}", "8"},
		{"{{=asFloat(tasks.A.outputs.parameters.n) * 2}}", "5"},
		{"{{=string(1)}}", "1"},
		{"{{=steps['flip-coin'].outputs.result == 'heads' ? 'H' : 'T'}}", "H"},
		{"x-{{=sprig.trim(inputs.parameters.name)}}-{{workflow.name}}", "x-Freshet-wf-1"},
		{"{{=sprig.upper(workflow.parameters.env)}}", "PROD"},
		{"{{=jsonpath(inputs.parameters.doc, '$.a.b[1]')}}", "2"},
		{"{{=jsonpath(inputs.parameters.doc, '$.items[*].name')}}", `["x","y"]`},
		{"{{=toJson(filter([1, 2, 3], {# > 1}))}}", "[2,3]"},
		{"{{=map([1, 2], {# * 2})}}", "[2,4]"},
		{"{{=[1, 2]}}", "[1,2]"},
		{"{{=item.k}}", "v"},
		{"{{=fromJSON(steps.gen.outputs.parameters.out)[1]}}", "b"},
		{"{{=len(sprig.splitList(',', 'a,b,c'))}}", "3"},
		{"{{=1 + 2}}{{=' a' + 'b'}}", "3 ab"},
		{"{{=true}}", "true"},
		// A value is data: evaluating it gives its text, never an expression inside it.
		{"{{=evil}}", `{{=workflow.name}}" + "x`},
		{"{{=evil + '!'}}", `{{=workflow.name}}" + "x!`},
		// A tag not closed, and braces that are not a tag, stay as they are.
		{"{{=1 + 1", "{{=1 + 1"},
		{"{ {=1}}", "{ {=1}}"},
	} {
		got, err := exprScope().expand("f", c.in, leafStrict)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestExpressionTagErrors(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"{{=inputs.parameters.nope}}", "inputs.parameters.nope is not defined here"},
		{"{{=steps.x.outputs.result}}", "steps.x.outputs.result is not defined here"},
		{"{{=1 +}}", "does not parse"},
		{"{{=asInt('x')}}", "does not evaluate"},
		{"{{=nil}}", "evaluates to nil"},
		{"{{=sprig.env('HOME')}}", "not a function Freshet provides"},
		{"{{=sprig.repeat(100, 'x')}}", "not a function Freshet provides"},
		{"{{=repeat('x', 100)}}", "does not compile"},
		{"{{=reduce(1..40, #acc + #acc, 'xx')}}", "grows beyond"},
		{"{{=replace(sprig.trunc(60000, toJson(1..20000)), '', 'yyyyy')}}", "longer than"},
		{"{{=map(1..1000000, #)}}", "memory budget"},
		{"{{=" + strings.Repeat("1+", 3000) + "1}}", "longer than"},
	} {
		_, err := exprScope().expand("f", c.in, leafStrict)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: error %v, want one containing %q", c.in, err, c.want)
		}
	}
}

// TestExpressionTagKeptForLater: at a steps template's own substitution (strict: inputs and
// workflow only) a tag naming a step is kept, to be evaluated when the step runs.
func TestExpressionTagKeptForLater(t *testing.T) {
	sc := scope{"inputs.parameters.x": "1"}
	in := "{{=steps.a.outputs.result + inputs.parameters.x}} {{=inputs.parameters.x}}"
	got, err := sc.expand("f", in, []string{"inputs", "workflow"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{{=steps.a.outputs.result + inputs.parameters.x}} 1"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := sc.expand("f", "{{=inputs.parameters.y}}", []string{"inputs", "workflow"}); err == nil {
		t.Fatal("a missing input was not an error")
	}
	// ?? guards an absent value.
	got, err = sc.expand("f", "{{=inputs.parameters?.y ?? 'fb'}}", leafStrict)
	if err != nil || got != "fb" {
		t.Fatalf("?? fallback: %q, %v", got, err)
	}
}

func TestRetryExpression(t *testing.T) {
	for _, c := range []struct {
		expr string
		vars scope
		want bool
	}{
		{"asInt(lastRetry.exitCode) > 1", scope{"retries": "1", "lastRetry.exitCode": "2"}, true},
		{"asInt(lastRetry.exitCode) > 1", scope{"retries": "1", "lastRetry.exitCode": "1"}, false},
		{"{{=lastRetry.status != 'Error'}}", scope{"retries": "1", "lastRetry.status": "Failed"}, true},
		{"lastRetry.message matches 'imminent node shutdown|pod deleted'", scope{"retries": "1", "lastRetry.message": "pod deleted"}, true},
		{"asInt(retries) < 1", scope{"retries": "1"}, true}, // retries is the attempts less one
	} {
		got, err := evalRetryExpression(c.expr, c.vars)
		if err != nil || got != c.want {
			t.Errorf("%s over %v = %v, %v; want %v", c.expr, c.vars, got, err, c.want)
		}
	}
	if _, err := evalRetryExpression("'x'", scope{"retries": "1"}); err == nil {
		t.Error("a string result was not an error")
	}
}

func TestFindTags(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"a {{b}} {{=c + {d: 1}.d}} {{ e }}", []string{"b", "=c + {d: 1}.d", "e"}},
		{"{{{x}}}", []string{"x"}},
		{"{{=a}", nil},
		{"{{ =a }}", []string{"=a"}},
	} {
		var got []string
		for _, tg := range findTags(c.in) {
			got = append(got, tg.name)
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("findTags(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
