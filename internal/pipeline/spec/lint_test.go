package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func TestLint(t *testing.T) {
	src := `version: '1.0'
steps:
  clone:
    type: git-clone
    repo: acme/api
    use_proxy: true
  build:
    commands: [make]
    retry:
      maxAttempts: 0
  deploy:
      type: deplyo
`
	got := Lint([]byte(src))
	want := []Issue{
		{Line: 6, Column: 5, Field: "steps.clone.use_proxy", Severity: SeverityWarning, Message: "is not used by Freshet: the runner's HTTP_PROXY/HTTPS_PROXY settings always apply"},
		{Line: 7, Column: 3, Field: "steps.build.image", Severity: SeverityWarning, Message: "is missing: the local executor runs the commands on the runner's host, but the kubernetes executor needs an image"},
		{Line: 10, Column: 20, Field: "steps.build.retry.maxAttempts", Severity: SeverityError, Message: `"0" is out of range: maxAttempts (the number of retries) is 1 to 10`},
		{Line: 12, Column: 13, Field: "steps.deploy.type", Severity: SeverityError, Message: `"deplyo" is not a step type: use freestyle, git-clone, build, push, parallel, pending-approval, composition, launch-composition, deploy or helm`},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Lint:\n%s\nwant:\n%s", issuesText(got), issuesText(want))
	}

	_, err := Parse([]byte(src))
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	if got, want := err.Error(), "line 10: steps.build.retry.maxAttempts: \"0\" is out of range: maxAttempts (the number of retries) is 1 to 10\n"+
		"line 12: steps.deploy.type: \"deplyo\" is not a step type: use freestyle, git-clone, build, push, parallel, pending-approval, composition, launch-composition, deploy or helm"; got != want {
		t.Errorf("Parse error:\n%s\nwant:\n%s", got, want)
	}
	if f := errdefs.Field(err); f != "steps.build.retry.maxAttempts" {
		t.Errorf("errdefs.Field = %q", f)
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Line != 10 || pe.Column != 20 || pe.Value != "0" {
		t.Errorf("errors.As *Error = %+v", pe)
	}
}

func TestLintClean(t *testing.T) {
	src := "version: '1.0'\nsteps:\n  a:\n    image: alpine\n    commands: [true]\n"
	if is := Lint([]byte(src)); len(is) != 0 {
		t.Errorf("Lint = %v, want nothing", is)
	}
	p, err := Parse([]byte(src))
	if err != nil || len(p.Warnings) != 0 {
		t.Errorf("Parse = %v, %v", p.Warnings, err)
	}
}

func TestWarningsKeptByParse(t *testing.T) {
	p, err := Parse([]byte("version: '1.0'\nsteps:\n  a:\n    commands: [true]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 1 || p.Warnings[0].Field != "steps.a.image" || p.Warnings[0].Severity != SeverityWarning {
		t.Errorf("warnings = %v", p.Warnings)
	}
	if s := p.Warnings[0].String(); !strings.HasPrefix(s, "line 3: steps.a.image: warning: is missing") {
		t.Errorf("String() = %q", s)
	}
}

func TestRootOrderDoesNotMatter(t *testing.T) {
	// steps before fail_fast and mode: the root fields still apply to every step.
	p, err := Parse([]byte(`steps:
  a:
    image: x
    commands: [x]
  b:
    image: x
    commands: [x]
    when:
      steps: [{name: a}]
fail_fast: false
mode: parallel
version: '1.0'
`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != Parallel || p.Step("a").FailFast {
		t.Errorf("mode %s, a.FailFast %v; want parallel, false", p.Mode, p.Step("a").FailFast)
	}
}

func TestWalk(t *testing.T) {
	p, err := Parse([]byte(`version: '1.0'
hooks:
  on_finish:
    exec: {image: x, commands: [x]}
steps:
  a:
    type: parallel
    steps:
      b: {image: x, commands: [x], hooks: {on_fail: {exec: {image: x, commands: [x]}}}}
      c: {image: x, commands: [x]}
  d: {image: x, commands: [x]}
`))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	p.Walk(func(s *Step) bool { paths = append(paths, s.Path); return true })
	want := []string{"steps.a", "steps.a.steps.b", "steps.a.steps.b.hooks.on_fail.exec", "steps.a.steps.c", "steps.d", "hooks.on_finish.exec"}
	if !slices.Equal(paths, want) {
		t.Errorf("Walk = %v, want %v", paths, want)
	}
	n := 0
	p.Walk(func(*Step) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("Walk did not stop: %d calls", n)
	}
	if p.Step("c") == nil || p.Step("on_finish") != nil || p.Step("nope") != nil {
		t.Error("Step lookup")
	}
}

func issuesText(is []Issue) string {
	var b strings.Builder
	for _, i := range is {
		fmt.Fprintf(&b, "%s (column %d)\n", i, i.Column)
	}
	return b.String()
}

func TestAliasKeys(t *testing.T) {
	p, err := Parse([]byte(`version: '1.0'
indicators:
  - &img image
  - &cmds commands
steps:
  a:
    *img : alpine
    *cmds : [true]
`))
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Step("a"); s.Image != "alpine" || len(s.Commands) != 1 {
		t.Errorf("step = %+v", s)
	}
}

func TestLintParallelModeWithoutDependencies(t *testing.T) {
	got := Lint([]byte("version: '1.0'\nmode: parallel\nsteps:\n  a: {image: x, commands: [x]}\n  b: {image: x, commands: [x]}\n"))
	want := []Issue{{Line: 2, Column: 7, Field: "mode", Severity: SeverityWarning, Message: `"parallel" has no step with when.steps: every step starts at once`}}
	if !slices.Equal(got, want) {
		t.Errorf("Lint = %v, want %v", got, want)
	}
}

// TestBuildStepInFull covers the build fields Codefresh documents beyond the basics: an inline
// Dockerfile, cache_from and tag_policy, and their invalid forms.
func TestBuildStepInFull(t *testing.T) {
	p, err := Parse([]byte(`version: '1.0'
steps:
  image:
    type: build
    image_name: acme/api
    tag: Feature-X
    tag_policy: lowercase
    cache_from: [reg.example/acme/api:cache, reg.example/acme/base]
    dockerfile:
      content: |
        FROM busybox
        RUN echo inline
`))
	if err != nil {
		t.Fatal(err)
	}
	b := p.Steps[0].Build
	if b.DockerfileContent != "FROM busybox\nRUN echo inline\n" || b.TagPolicy != TagPolicyLowercase ||
		!slices.Equal(b.CacheFrom, []string{"reg.example/acme/api:cache", "reg.example/acme/base"}) {
		t.Errorf("build = %+v", b)
	}
	for _, c := range []struct{ field, want string }{
		{"tag_policy: upper", `steps.image.tag_policy: "upper" is not a tag policy: use original (the default) or lowercase`},
		{"cache_from: {a: b}", "steps.image.cache_from: is a mapping: it must be a list of strings"},
		{"dockerfile: {contents: x}", "steps.image.dockerfile.contents: is not a field of an inline dockerfile (did you mean content?): valid fields are content"},
		{"dockerfile: {content: ''}", "steps.image.dockerfile.content: is empty: give the Dockerfile's text"},
		{"dockerfile: {}", "steps.image.dockerfile: is an empty mapping: give a path, or {content: <the Dockerfile's text>}"},
	} {
		src := "version: '1.0'\nsteps:\n  image:\n    type: build\n    image_name: acme/api\n    " + c.field + "\n"
		_, err := Parse([]byte(src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse error %v, want %q", c.field, err, c.want)
		}
	}
}
