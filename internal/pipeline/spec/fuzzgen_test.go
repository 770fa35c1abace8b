package spec

import (
	"fmt"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParseGenerated drives the compiler deeper than byte mutation does: the fuzz input is a
// stream of choices from which a pipeline is built out of the dialect's own vocabulary (root
// fields, step fields of every type, when/retry/hook shapes, plausible and implausible values),
// then checked with the same invariants as FuzzParse.
func FuzzParseGenerated(f *testing.F) {
	for _, s := range []string{"", "\x00", "\x01\x02\x03\x04\x05\x06\x07\x08\x09", "steps and more steps", "\xff\xfe\xfd\xfc\xfb\xfa"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{data: data}
		doc := g.pipeline()
		out, err := yaml.Marshal(doc)
		if err != nil {
			t.Skip()
		}
		checkInvariants(t, out)
	})
}

// gen makes choices from the fuzz input, cycling through it (and all zeros when it is empty).
type gen struct {
	data  []byte
	i     int
	names []string // step names so far
}

func (g *gen) next() int {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[g.i%len(g.data)]
	g.i++
	return int(b) + g.i/len(g.data) // vary on later passes
}

func (g *gen) pick(xs ...string) string { return xs[g.next()%len(xs)] }

func (g *gen) chance(pct int) bool { return g.next()%100 < pct }

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

func mapping(kvs ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Content: kvs} }

func list(items ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Content: items} }

var values = []string{"", "alpine", "true", "false", "0", "1", "3", "11", "-1", "0.5", "60", "100", "10m", "1h30m", "48h", "10",
	"main", "/^release\\//i", "/(?=x)/", "/x/g", "sh", "bash", "zsh", "sequential", "parallel", "success", "failure",
	"finished", "approved", "denied", "skipped", "hours", "minutes", "build", "test", "a", "b", "c", "main_clone",
	"${{CF_BRANCH}}", "${{ CF_BRANCH }}", "${{CF_BRNACH}}", "'${{CF_BRANCH}}' == 'main'", "steps.a.result == 'success'",
	"steps.nope.result", "${{steps.a.result}} === 'x'", "includes(\"${{X}}\", \"y\")", "match('a', '(', true)", "1 +",
	"workflow.result", "Variable('X')", "NAME=value", "1BAD=x", "echo a: b", "freestyle", "git-clone", "build", "push",
	"pending-approval", "deploy", "slack:1.0", "deplyo", "1.0", "2.0"}

var stepFieldNames = []string{"type", "title", "description", "stage", "fail_fast", "strict_fail_fast", "when", "retry", "timeout",
	"hooks", "image", "commands", "cmd", "entry_point", "shell", "environment", "working_directory", "repo", "revision", "git",
	"depth", "credentials", "arguments", "image_name", "tag", "tags", "dockerfile", "build_arguments", "target", "no_cache",
	"registry", "disable_push", "platform", "candidate", "steps", "success_criteria", "on_success", "metadata", "volumes",
	"matrix", "use_proxy", "imagee", "<<"}

func (g *gen) value(depth int) *yaml.Node {
	switch {
	case depth > 3 || g.chance(60):
		return scalar(g.pick(values...))
	case g.chance(50):
		n := g.next() % 4
		l := list()
		for range n {
			l.Content = append(l.Content, g.value(depth+1))
		}
		return l
	default:
		n := g.next() % 4
		m := mapping()
		for range n {
			m.Content = append(m.Content, scalar(g.pick(append(values, stepFieldNames...)...)), g.value(depth+1))
		}
		return m
	}
}

var goodExprs = []string{"'${{CF_BRANCH}}' == 'main'", "steps.s0.result == 'success'", "includes(\"${{X}}\", \"y\")",
	"workflow.result == 'failure'", "${{N}} > 3", "${{steps.s1.result}} === 'failure'", "match('${{CF_BRANCH}}', '^rel', true)",
	"Variable('X') == null", "length('${{CF_COMMIT_MESSAGE}}') > 0", "true", "''", "1"}

// good returns a valid value from xs most of the time, anything otherwise.
func (g *gen) good(xs ...string) *yaml.Node {
	if g.chance(90) {
		return scalar(g.pick(xs...))
	}
	return g.value(2)
}

func (g *gen) name() string {
	if len(g.names) > 0 && g.chance(40) {
		return g.names[g.next()%len(g.names)]
	}
	return g.pick("s0", "s1", "s2", "s3", "main_clone", "nope")
}

func (g *gen) when() *yaml.Node {
	w := mapping()
	if g.chance(40) {
		w.Content = append(w.Content, scalar("branch"), mapping(scalar(g.pick("only", "ignore", "only", "other")),
			list(g.good("main", "/^release\\//i", "/wip$/", "dev"), g.good("main", "/x/s"))))
	}
	if g.chance(40) {
		w.Content = append(w.Content, scalar("condition"), mapping(scalar(g.pick("all", "any", "all", "none")),
			mapping(scalar("c1"), g.good(goodExprs...), scalar("c2"), g.good(goodExprs...))))
	}
	if g.chance(40) {
		dep := mapping(scalar("name"), scalar(g.name()))
		if g.chance(70) {
			dep.Content = append(dep.Content, scalar("on"), list(g.good(onValues...)))
		}
		deps := list(dep)
		if g.chance(30) {
			w.Content = append(w.Content, scalar("steps"), mapping(scalar(g.pick("all", "any")), deps))
		} else {
			w.Content = append(w.Content, scalar("steps"), deps)
		}
	}
	if g.chance(5) {
		return g.value(2)
	}
	return w
}

func (g *gen) fieldValue(field string, typ string, depth int) *yaml.Node {
	switch field {
	case "title", "description", "image", "git", "revision", "image_name", "tag", "target", "registry", "platform", "dockerfile":
		return g.good("x", "alpine", "${{CF_BRANCH}}", "v1")
	case "stage":
		return g.good("build", "test")
	case "fail_fast", "strict_fail_fast", "no_cache", "disable_push":
		return g.good("true", "false")
	case "when":
		return g.when()
	case "retry":
		return mapping(scalar(g.pick("maxAttempts", "delay", "exponentialFactor", "maxAttempts")), g.good("1", "2", "5", "0.5", "10"))
	case "timeout":
		if typ == "pending-approval" {
			return mapping(scalar(g.pick("duration", "timeUnit", "finalState")), g.good("2", "minutes", "hours", "approved", "denied"))
		}
		return g.good("10m", "1h", "90s")
	case "hooks":
		return mapping(scalar(g.pick("on_elected", "on_success", "on_fail", "on_finish")), g.hook(depth))
	case "commands", "tags", "cmd", "entry_point":
		return list(g.good("echo hi", "${{CF_BRANCH}}", "make"), g.good("go test"))
	case "shell":
		return g.good("sh", "bash")
	case "environment", "build_arguments":
		if g.chance(50) {
			return mapping(scalar("A"), g.good("1", "x"), scalar("B_2"), g.good("${{CF_BRANCH}}"))
		}
		return list(g.good("A=1", "B=${{X}}"), g.good("C="))
	case "working_directory":
		return g.good("${{main_clone}}", "/tmp", "IMAGE_WORK_DIR")
	case "repo", "candidate":
		return g.good("acme/api", "${{s0}}")
	case "depth":
		return g.good("0", "1", "50")
	case "credentials":
		return mapping(scalar("username"), g.good("u"), scalar("password"), g.good("${{TOKEN}}"))
	case "steps":
		if depth < 6 {
			return g.steps(depth + 1)
		}
	case "success_criteria":
		return mapping(scalar("steps"), mapping(scalar(g.pick("only", "ignore")), list(scalar(g.name()))))
	case "arguments":
		return mapping(scalar(g.pick("repo", "candidate", "image_name", "revision")), g.good("acme/api"))
	}
	return g.value(1)
}

var required = map[string][]string{
	"freestyle":        {"image", "commands"},
	"git-clone":        {"repo"},
	"build":            {"image_name"},
	"push":             {"candidate"},
	"parallel":         {"steps"},
	"pending-approval": {},
}

func (g *gen) step(depth int) *yaml.Node {
	typ := g.pick("freestyle", "freestyle", "freestyle", "git-clone", "build", "push", "parallel", "pending-approval", "deploy", "x:1", "bad")
	s := mapping()
	if typ != "freestyle" || g.chance(30) {
		s.Content = append(s.Content, scalar("type"), scalar(typ))
	}
	fields := fieldsByType[StepType(typ)]
	seen := map[string]bool{}
	for _, f := range required[typ] {
		if g.chance(95) {
			seen[f] = true
			s.Content = append(s.Content, scalar(f), g.fieldValue(f, typ, depth))
		}
	}
	n := g.next() % 4
	for range n {
		var field string
		if len(fields) > 0 && g.chance(90) {
			field = fields[g.next()%len(fields)]
		} else {
			field = g.pick(stepFieldNames...)
		}
		if seen[field] || field == "type" {
			continue
		}
		seen[field] = true
		s.Content = append(s.Content, scalar(field), g.fieldValue(field, typ, depth))
	}
	return s
}

func (g *gen) hook(depth int) *yaml.Node {
	switch g.next() % 5 {
	case 0:
		return mapping(scalar("exec"), g.step(depth+1))
	case 1:
		return mapping(scalar("steps"), g.steps(depth+1), scalar("mode"), g.good("parallel", "sequential"))
	case 2:
		return list(scalar("echo hi"))
	case 3:
		return mapping(scalar("image"), scalar("alpine"), scalar("commands"), list(scalar("true")))
	default:
		return g.step(depth + 1)
	}
}

func (g *gen) steps(depth int) *yaml.Node {
	m := mapping()
	n := 1 + g.next()%3
	for range n {
		name := fmt.Sprintf("s%d", len(g.names))
		if g.chance(5) {
			name = g.name()
		}
		g.names = append(g.names, name)
		m.Content = append(m.Content, scalar(name), g.step(depth))
	}
	return m
}

func (g *gen) pipeline() *yaml.Node {
	root := mapping()
	if !g.chance(5) {
		root.Content = append(root.Content, scalar("version"), scalar(g.pick("1.0", "1.0", "1.0", "2.0")))
	}
	for _, k := range []string{"stages", "mode", "fail_fast", "strict_fail_fast", "hooks", "success_criteria", "services", "unknown"} {
		if !g.chance(25) || ((k == "services" || k == "unknown") && g.chance(80)) {
			continue
		}
		var v *yaml.Node
		switch k {
		case "stages":
			v = list(g.good("build"), g.good("test"))
		case "hooks":
			v = mapping(scalar(g.pick("on_elected", "on_success", "on_fail", "on_finish")), g.hook(0))
		case "success_criteria":
			v = mapping(scalar("steps"), mapping(scalar(g.pick("only", "ignore")), list(scalar(g.name()))))
		case "mode":
			v = g.good("parallel", "sequential")
		case "fail_fast", "strict_fail_fast":
			v = g.good("true", "false")
		default:
			v = scalar(g.pick(values...))
		}
		root.Content = append(root.Content, scalar(k), v)
	}
	if !g.chance(5) {
		root.Content = append(root.Content, scalar("steps"), g.steps(0))
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
}
