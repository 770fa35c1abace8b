package spec

import (
	"encoding/json"
	"strings"
	"testing"
)

// whenOf compiles a one-step pipeline whose step has the given when block (YAML, indented
// for the step) and returns the step's When.
func whenOf(t *testing.T, when string, extraSteps string) *When {
	t.Helper()
	src := "version: '1.0'\nsteps:\n" + extraSteps + "  subject:\n    image: alpine\n    commands: [true]\n    when:\n" + indent(when, "      ")
	p, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse:\n%s\n%v", src, err)
	}
	return &p.Step("subject").When
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

const otherSteps = `  build:
    image: alpine
    commands: [true]
  approve:
    type: pending-approval
`

func TestWhenEvaluate(t *testing.T) {
	vars := map[string]string{
		"CF_BRANCH":              "main",
		"CF_COMMIT_MESSAGE":      "fix: it [skip ci]",
		"CF_PULL_REQUEST_NUMBER": "123",
		"CF_PULL_REQUEST_TARGET": "production",
		"QUOTED":                 `it's "quoted" ' || true || '`,
		"EMPTY":                  "",
		"FLAG":                   "true",
	}
	tests := []struct {
		name    string
		when    string
		ctx     EvalContext
		run     bool
		reason  string // substring of the reason
		wantErr string // substring of the error
	}{
		{name: "branch only exact", when: "branch:\n  only: [main]", ctx: EvalContext{Branch: "main"}, run: true},
		{name: "branch only exact miss", when: "branch:\n  only: [main]", ctx: EvalContext{Branch: "mainline"}, run: false, reason: `branch "mainline" matches none of when.branch.only (main)`},
		{name: "branch only regexp", when: "branch:\n  only: ['/^release\\/v\\d+$/']", ctx: EvalContext{Branch: "release/v2"}, run: true},
		{name: "branch regexp case", when: "branch:\n  only: [/^fb-/i]", ctx: EvalContext{Branch: "FB-login"}, run: true},
		{name: "branch regexp case sensitive", when: "branch:\n  only: [/^fb-/]", ctx: EvalContext{Branch: "FB-login"}, run: false},
		{name: "branch ignore", when: "branch:\n  ignore: [develop, /wip/]", ctx: EvalContext{Branch: "feature-wip"}, run: false, reason: "matches when.branch.ignore /wip/"},
		{name: "branch ignore miss", when: "branch:\n  ignore: [develop]", ctx: EvalContext{Branch: "main"}, run: true},
		{name: "branch from variables", when: "branch:\n  only: [main]", ctx: EvalContext{Variables: vars}, run: true},
		{name: "no branch at all", when: "branch:\n  only: [main]", ctx: EvalContext{}, run: false},

		{name: "condition quoted variable", when: "condition:\n  all:\n    isMain: \"'${{CF_BRANCH}}' == 'main'\"", ctx: EvalContext{Variables: vars}, run: true},
		{name: "condition double quoted", when: "condition:\n  all:\n    prod: '\"${{CF_PULL_REQUEST_TARGET}}\" == \"production\"'", ctx: EvalContext{Variables: vars}, run: true},
		{name: "condition false", when: "condition:\n  all:\n    isDev: \"'${{CF_BRANCH}}' == 'develop'\"", ctx: EvalContext{Variables: vars}, run: false, reason: "when.condition.all.isDev is false"},
		{name: "condition includes lower", when: "condition:\n  all:\n    noSkip: 'includes(lower(\"${{CF_COMMIT_MESSAGE}}\"), \"skip ci\") == false'", ctx: EvalContext{Variables: vars}, run: false},
		{name: "condition concatenation", when: "condition:\n  all:\n    c: \"'x-${{CF_BRANCH}}-y' == 'x-main-y'\"", ctx: EvalContext{Variables: vars}, run: true},
		{name: "raw number", when: "condition:\n  all:\n    big: '${{CF_PULL_REQUEST_NUMBER}} > 100'", ctx: EvalContext{Variables: vars}, run: true},
		{name: "raw boolean", when: "condition:\n  all:\n    f: '${{FLAG}}'", ctx: EvalContext{Variables: vars}, run: true},
		{name: "value cannot inject", when: "condition:\n  all:\n    q: \"'${{QUOTED}}' == 'nope'\"", ctx: EvalContext{Variables: vars}, run: false},
		{name: "value compared exactly", when: "condition:\n  all:\n    q: \"'${{QUOTED}}' == Variable('QUOTED')\"", ctx: EvalContext{Variables: vars}, run: true},
		{name: "unknown variable stays literal", when: "condition:\n  all:\n    missing: 'includes(\"${{MY_VAR}}\", \"{{MY_VAR}}\") == true'", ctx: EvalContext{Variables: vars}, run: true},
		{name: "known variable", when: "condition:\n  all:\n    present: 'includes(\"${{CF_BRANCH}}\", \"{{CF_BRANCH}}\") == false'", ctx: EvalContext{Variables: vars}, run: true},
		{name: "empty string is false", when: "condition:\n  all:\n    e: \"'${{EMPTY}}'\"", ctx: EvalContext{Variables: vars}, run: false},
		{name: "any one true", when: "condition:\n  any:\n    a: 'false'\n    b: '1 + 1 == 2'", ctx: EvalContext{}, run: true},
		{name: "any none true", when: "condition:\n  any:\n    a: 'false'\n    b: '0'", ctx: EvalContext{}, run: false, reason: "no when.condition.any expression is true"},
		{name: "all and any", when: "condition:\n  all:\n    a: 'true'\n  any:\n    b: \"''\"", ctx: EvalContext{}, run: false},
		{name: "step result", when: "condition:\n  all:\n    ok: steps.build.result == 'success'", ctx: EvalContext{Steps: map[string]Result{"build": ResultSuccess}}, run: true},
		{name: "step result pending", when: "condition:\n  all:\n    ok: steps.build.result == 'pending'", ctx: EvalContext{}, run: true},
		{name: "step result JS style", when: "condition:\n  all:\n    ok: \"${{steps.build.result}} === 'failure'\"", ctx: EvalContext{Steps: map[string]Result{"build": ResultFailure}}, run: true},
		{name: "step result !==", when: "condition:\n  all:\n    ok: \"steps.build.result !== 'failure'\"", ctx: EvalContext{Steps: map[string]Result{"build": ResultFailure}}, run: false},
		{name: "Member result", when: "condition:\n  all:\n    ok: \"Member('build', 'result') == 'success'\"", ctx: EvalContext{Steps: map[string]Result{"build": ResultSuccess}}, run: true},
		{name: "workflow derived failure", when: "condition:\n  all:\n    f: workflow.result == 'failure'", ctx: EvalContext{Steps: map[string]Result{"build": ResultFailure}}, run: true},
		{name: "workflow derived success", when: "condition:\n  all:\n    f: workflow.result == 'success'", ctx: EvalContext{Steps: map[string]Result{"build": ResultSuccess}}, run: true},
		{name: "workflow given", when: "condition:\n  all:\n    f: workflow.result == 'terminated'", ctx: EvalContext{Workflow: WorkflowTerminated}, run: true},
		{name: "functions", when: "condition:\n  all:\n" +
			"    a: \"String(40) == '40'\"\n" +
			"    b: \"Number('50') == 50\"\n" +
			"    c: \"Boolean('') == false && Boolean(583)\"\n" +
			"    d: 'round(1.95) == 2 && floor(1.95) == 1'\n" +
			"    e: \"upper('hello') == 'HELLO' && lower('BYE') == 'bye'\"\n" +
			"    f: 'trim(\" abc \") == \"abc\" && trimLeft(\"  abc \") == \"abc \" && trimRight(\" abc  \") == \" abc\"'\n" +
			"    g: \"replace('hello there', 'e', 'a') == 'hallo thara'\"\n" +
			"    h: 'substring(\"hello world\", 6, 11) == \"world\" && substring(\"hello\", 3, 1) == \"el\"'\n" +
			"    i: 'length(\"gump\") == 4 && indexOf(\"codefresh\", \"odef\") == 1'\n" +
			"    j: 'match(\"hello there you\", \"^HELL\", true) && !match(\"hello\", \"bye\", false)'\n",
			ctx: EvalContext{}, run: true},
		{name: "runtime error", when: "condition:\n  all:\n    bad: \"Number('hello') > 1\"", ctx: EvalContext{}, wantErr: `when.condition.all.bad: Number("hello") is invalid`},
		{name: "bad regexp at run time", when: "condition:\n  all:\n    bad: \"match('x', '(?=x)', false)\"", ctx: EvalContext{}, wantErr: "not a valid regular expression"},

		{name: "steps default success", when: "steps:\n  - name: build", ctx: EvalContext{Steps: map[string]Result{"build": ResultSuccess}}, run: true},
		{name: "steps pending", when: "steps:\n  - name: build", ctx: EvalContext{}, run: false, reason: "when.steps: build is pending, want success"},
		{name: "steps failure", when: "steps:\n  - name: build\n    on: [failure]", ctx: EvalContext{Steps: map[string]Result{"build": ResultFailure}}, run: true},
		{name: "steps finished skipped", when: "steps:\n  - name: build\n    on: [finished]", ctx: EvalContext{Steps: map[string]Result{"build": ResultSkipped}}, run: true},
		{name: "steps finished running", when: "steps:\n  - name: build\n    on: [finished]", ctx: EvalContext{Steps: map[string]Result{"build": ResultRunning}}, run: false},
		{name: "steps all", when: "steps:\n  all:\n    - name: build\n    - name: approve\n      on: [approved]", ctx: EvalContext{Steps: map[string]Result{"build": ResultSuccess, "approve": ResultDenied}}, run: false, reason: "approve is denied, want approved"},
		{name: "steps any", when: "steps:\n  any:\n    - name: build\n    - name: approve\n      on: [denied]", ctx: EvalContext{Steps: map[string]Result{"build": ResultFailure, "approve": ResultDenied}}, run: true},
		{name: "steps any none", when: "steps:\n  any:\n    - name: build\n    - name: approve", ctx: EvalContext{}, run: false, reason: "when.steps (any)"},
		{name: "approved counts as success", when: "steps:\n  - name: approve", ctx: EvalContext{Steps: map[string]Result{"approve": ResultApproved}}, run: true},
		{name: "denied counts as failure", when: "steps:\n  - name: approve\n    on: failure", ctx: EvalContext{Steps: map[string]Result{"approve": ResultDenied}}, run: true},

		{name: "branch checked before steps", when: "branch:\n  only: [main]\nsteps:\n  - name: build", ctx: EvalContext{Branch: "dev", Steps: map[string]Result{"build": ResultSuccess}}, run: false, reason: "branch"},
		{name: "everything met", when: "branch:\n  only: [main]\nsteps:\n  - name: build\ncondition:\n  all:\n    m: \"'${{CF_BRANCH}}' == 'main'\"", ctx: EvalContext{Branch: "main", Steps: map[string]Result{"build": ResultSuccess}}, run: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := whenOf(t, tt.when, otherSteps)
			check := func(w *When, via string) {
				run, reason, err := w.Evaluate(tt.ctx)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("%s: error %v, want one containing %q", via, err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("%s: %v", via, err)
				}
				if run != tt.run {
					t.Errorf("%s: run = %v (%s), want %v", via, run, reason, tt.run)
				}
				if tt.reason != "" && !strings.Contains(reason, tt.reason) {
					t.Errorf("%s: reason %q, want it to contain %q", via, reason, tt.reason)
				}
			}
			check(w, "parsed")
			// The same When decoded from the JSON plan, as a runner receives it.
			b, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			var back When
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			check(&back, "decoded")
		})
	}
}

func TestWhenEmpty(t *testing.T) {
	var w *When
	if run, _, err := w.Evaluate(EvalContext{}); !run || err != nil {
		t.Errorf("nil When: run=%v err=%v, want true, nil", run, err)
	}
	if run, _, err := (&When{}).Evaluate(EvalContext{}); !run || err != nil {
		t.Errorf("zero When: run=%v err=%v, want true, nil", run, err)
	}
}

func TestExprBuiltByHand(t *testing.T) {
	// An Expr built without CompileExpr is compiled on use.
	e := &Expr{Name: "x", Source: "'${{A}}' == 'b'"}
	ok, err := e.Eval(EvalContext{Variables: map[string]string{"A": "b"}})
	if err != nil || !ok {
		t.Fatalf("Eval = %v, %v; want true, nil", ok, err)
	}
}

func TestRewriteExpr(t *testing.T) {
	tests := []struct{ in, out string }{
		{`'${{A}}' == 'x'`, `(__cfvar("A")) == 'x'`},
		{`"pre-${{A}}-post"`, `("pre-" + __cfvar("A") + "-post")`},
		{`${{N}} > 3`, `__cfraw("N") > 3`},
		{`a === b && c !== d`, `a == b && c != d`},
		{`'a === b'`, `'a === b'`},
		{`'\${{A}}'`, `'\${{A}}'`},
		{"`${{A}}`", "(__cfvar(\"A\"))"},
		{`'${{ A }}'`, `'${{ A }}'`},
		{`'unterminated ${{A}}`, `'unterminated ${{A}}`},
		{`"esc\"${{A}}"`, `("esc\"" + __cfvar("A"))`},
	}
	for _, tt := range tests {
		got, _ := rewriteExpr(tt.in)
		if got != tt.out {
			t.Errorf("rewriteExpr(%s) = %s, want %s", tt.in, got, tt.out)
		}
	}
}

func TestPattern(t *testing.T) {
	tests := []struct {
		pat, branch string
		match       bool
	}{
		{"main", "main", true},
		{"main", "main2", false},
		{"/main/", "not-main-branch", true},
		{"/^main$/", "not-main", false},
		{"/^FB-/i", "fb-x", true},
		{"/a.b/s", "a\nb", true},
		{"/", "/", true}, // a lone slash is a name
		{"/x", "/x", true},
	}
	for _, tt := range tests {
		p, err := ParsePattern(tt.pat)
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", tt.pat, err)
		}
		if got := p.Match(tt.branch); got != tt.match {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.pat, tt.branch, got, tt.match)
		}
	}
	for _, bad := range []string{"", "/(/", "/x/g", "/(?<=a)b/"} {
		if _, err := ParsePattern(bad); err == nil {
			t.Errorf("ParsePattern(%q) succeeded, want an error", bad)
		}
	}
}

func TestPlanJSONErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"branch":{"only":["/(/"]}}`, "not a valid regular expression"},
		{`{"condition":{"all":[{"name":"x","expression":"1 +"}]}}`, "condition.x"},
		{`{"branch":{"only":[""]}}`, "is empty"},
	} {
		var w When
		if err := json.Unmarshal([]byte(tt.in), &w); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Unmarshal(%s) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
	var d Duration
	for _, bad := range []string{`"ten minutes"`, `600`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Duration.UnmarshalJSON(%s) succeeded", bad)
		}
	}
}

func TestExprSteps(t *testing.T) {
	e, err := CompileExpr("x", `steps.a.result == 'success' && steps["b-c"].result != "failure" && '${{steps.d.result}}' == '' && ${{steps.a.result}}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.Steps(), ","); got != "a,b-c,d" {
		t.Errorf("Steps() = %s, want a,b-c,d", got)
	}
}

func TestTruthy(t *testing.T) {
	for v, want := range map[any]bool{nil: false, true: true, false: false, "": false, "x": true, 0: false, 1: true, 0.0: false, -2.5: true, int64(3): true} {
		if got := truthy(v); got != want {
			t.Errorf("truthy(%#v) = %v, want %v", v, got, want)
		}
	}
	if !truthy([]any{1}) || truthy([]any{}) || !truthy(struct{}{}) {
		t.Error("truthy of collections")
	}
}
