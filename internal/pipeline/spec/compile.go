package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Parse compiles a pipeline. On failure the error joins (errors.Join) one *Error per problem,
// each naming the line, the field path, the value and what would be valid; it wraps
// errdefs.ErrInvalid. Warnings do not fail Parse; they are kept in Pipeline.Warnings.
func Parse(data []byte) (*Pipeline, error) { return parse(data, Options{}) }

func parse(data []byte, o Options) (*Pipeline, error) {
	if len(data) > MaxDocumentSize {
		return nil, fmt.Errorf("the pipeline is %d bytes: the limit is %d bytes (1 MiB): %w", len(data), MaxDocumentSize, errdefs.ErrTooLarge)
	}
	p, probs := compile(data, o)
	var errs []error
	var warnings []Issue
	for _, pr := range probs {
		if pr.Severity == SeverityError {
			errs = append(errs, &Error{Line: pr.Line, Column: pr.Column, FieldError: errdefs.FieldError{Field: pr.Field, Value: pr.value, Reason: pr.reason}})
		} else {
			warnings = append(warnings, pr.Issue)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p.Warnings = warnings
	return p, nil
}

// Lint returns every problem in a pipeline, errors and warnings, ordered by position. A nil
// result means the pipeline is clean.
func Lint(data []byte) []Issue { return lint(data, Options{}) }

func lint(data []byte, o Options) []Issue {
	_, probs := compile(data, o)
	out := make([]Issue, len(probs))
	for i, pr := range probs {
		out[i] = pr.Issue
	}
	return out
}

// problem is an Issue that remembers its value and reason separately, for *Error.
type problem struct {
	Issue
	value, reason string
}

type compiler struct {
	probs     []problem
	seen      map[Issue]bool
	truncated bool // more than maxIssues problems
	visits    int
	halted    bool

	opts     Options
	p        *Pipeline
	modeNode *yaml.Node
	stages   map[string]bool
	names    map[string]*Step // every step that can be referenced (not hook steps)
	nSteps   int
	deferred []func()
}

// issue records a problem at node n (which may be nil). A problem repeated at the same place
// (an alias used many times) is recorded once.
func (c *compiler) issue(n *yaml.Node, field, value, reason string, sev Severity) {
	if c.halted { // whatever follows a halt is an artefact of stopping
		return
	}
	value = shorten(value)
	is := Issue{Field: field, Message: message(value, reason), Severity: sev}
	if n != nil {
		is.Line, is.Column = n.Line, n.Column
	}
	if c.seen[is] {
		return
	}
	if len(c.probs) >= maxIssues {
		c.truncated, c.halted = true, true
		return
	}
	c.seen[is] = true
	c.probs = append(c.probs, problem{Issue: is, value: value, reason: reason})
}

func (c *compiler) errorf(n *yaml.Node, field, value, format string, args ...any) {
	c.issue(n, field, value, fmt.Sprintf(format, args...), SeverityError)
}

func (c *compiler) warnf(n *yaml.Node, field, value, format string, args ...any) {
	c.issue(n, field, value, fmt.Sprintf(format, args...), SeverityWarning)
}

func newCompiler(o Options) *compiler {
	return &compiler{
		opts:   o,
		p:      &Pipeline{Version: Version, Mode: Sequential, FailFast: true},
		seen:   map[Issue]bool{},
		stages: map[string]bool{},
		names:  map[string]*Step{},
	}
}

func compile(data []byte, o Options) (p *Pipeline, probs []problem) {
	c := newCompiler(o)
	defer func() {
		sort.SliceStable(c.probs, func(i, j int) bool {
			a, b := c.probs[i], c.probs[j]
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Column < b.Column
		})
		if c.truncated {
			msg := fmt.Sprintf("too many problems: only the first %d are shown", maxIssues)
			last := c.probs[len(c.probs)-1]
			c.probs = append(c.probs, problem{Issue: Issue{Line: last.Line, Column: last.Column, Message: msg, Severity: SeverityError}, reason: msg})
		}
		p, probs = c.p, c.probs
	}()
	if len(data) > MaxDocumentSize {
		c.errorf(nil, "", "", "the pipeline is %d bytes: the limit is %d bytes (1 MiB)", len(data), MaxDocumentSize)
		return
	}
	if line, col, msg := badText(data); msg != "" {
		c.probs = append(c.probs, problem{Issue: Issue{Line: line, Column: col, Message: msg, Severity: SeverityError}, reason: msg})
		return
	}
	root, ok := c.decode(data)
	if !ok {
		return
	}
	c.root(root)
	return
}

// badText finds what YAML forbids before the YAML parser does, so the message has a
// position: invalid UTF-8 and control characters.
func badText(data []byte) (line, col int, msg string) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return line, col, fmt.Sprintf("byte 0x%02x is not valid UTF-8: save the pipeline as UTF-8", data[i])
		case r == '\n':
			line, col = line+1, 0
		case r == '\t' || r == '\r' || r == 0xFEFF:
		case r < 0x20 || r == 0x7F || (r >= 0x80 && r < 0xA0 && r != 0x85) || r == 0xFFFE || r == 0xFFFF:
			return line, col, fmt.Sprintf("control character %U is not allowed in YAML: remove it or write it escaped in a double-quoted string", r)
		}
		i += size
		col++
	}
	return 0, 0, ""
}

// docStart positions problems that concern the whole document.
var docStart = &yaml.Node{Line: 1, Column: 1}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decode parses the single YAML document in data and returns its root node.
func (c *compiler) decode(data []byte) (root *yaml.Node, ok bool) {
	defer func() {
		if r := recover(); r != nil { // the YAML library must never take the server down
			c.errorf(docStart, "", "", "the YAML could not be parsed: %v", r)
			root, ok = nil, false
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			c.errorf(docStart, "", "", "the pipeline is empty: write version: '1.0' and steps")
			return nil, false
		}
		c.yamlError(err)
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		c.errorf(&next, "", "", "a pipeline is one YAML document: remove the second document (after ---)")
	case !errors.Is(err, io.EOF):
		c.yamlError(err)
	}
	if len(doc.Content) == 0 {
		c.errorf(docStart, "", "", "the pipeline is empty: write version: '1.0' and steps")
		return nil, false
	}
	return doc.Content[0], true
}

func (c *compiler) yamlError(err error) {
	text := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		text = te.Errors[0]
	}
	if m := yamlLine.FindStringSubmatch(text); m != nil {
		line, _ := strconv.Atoi(m[1])
		msg := "invalid YAML: " + m[2]
		c.probs = append(c.probs, problem{Issue: Issue{Line: line, Column: 1, Message: msg, Severity: SeverityError}, reason: msg})
		return
	}
	msg := "invalid YAML: " + strings.TrimPrefix(text, "yaml: ")
	c.probs = append(c.probs, problem{Issue: Issue{Line: 1, Column: 1, Message: msg, Severity: SeverityError}, reason: msg})
}

var rootFields = []string{"version", "mode", "stages", "fail_fast", "strict_fail_fast", "success_criteria", "hooks", "steps", "indicators"}

// root compiles the top-level mapping. Keys are handled in a fixed order (mode and fail_fast
// before steps), whatever order they are written in.
func (c *compiler) root(n *yaml.Node) {
	n = c.deref(n)
	if n == nil || isNull(n) {
		c.errorf(docStart, "", "", "the pipeline is empty: write version: '1.0' and steps")
		return
	}
	if n.Kind != yaml.MappingNode {
		c.errorf(n, "", scalarText(n), "is not a pipeline: a pipeline is a mapping of root fields (%s)", strings.Join(rootFields, ", "))
		return
	}
	fields := map[string]kv{}
	for _, e := range c.entries(n, "") {
		switch {
		case slices.Contains(rootFields, e.name):
			fields[e.name] = e
		case e.name == "services":
			c.p.Services = c.compileServices(e.val, e.name, true)
		default:
			c.unknownField(e, "", "the pipeline's root", rootFields)
		}
	}
	if e, ok := fields["version"]; ok {
		if v, ok := c.str(e.val, "version"); ok && v != Version {
			c.errorf(e.val, "version", v, "is not a supported version: use '1.0'")
		}
	} else {
		c.errorf(n, "version", "", "is missing: write version: '1.0' at the top")
	}
	if e, ok := fields["mode"]; ok {
		if v, ok := c.str(e.val, "mode"); ok {
			switch Mode(v) {
			case Sequential, Parallel:
				c.p.Mode, c.modeNode = Mode(v), e.val
			default:
				c.errorf(e.val, "mode", v, "is not a mode: use sequential or parallel")
			}
		}
	}
	if e, ok := fields["fail_fast"]; ok {
		if v, ok := c.boolean(e.val, "fail_fast"); ok {
			c.p.FailFast = v
		}
	}
	if e, ok := fields["strict_fail_fast"]; ok {
		if v, ok := c.boolean(e.val, "strict_fail_fast"); ok {
			c.p.StrictFailFast = v
		}
	}
	if e, ok := fields["stages"]; ok {
		c.compileStages(e.val)
	}
	if e, ok := fields["steps"]; ok {
		if isNull(e.val) || (e.val.Kind == yaml.MappingNode && len(e.val.Content) == 0) {
			c.errorf(e.key, "steps", "", "is empty: a pipeline needs at least one step")
		} else {
			c.p.Steps = c.compileSteps(e.val, "steps", 0, nil)
		}
	} else {
		c.errorf(n, "steps", "", "is missing: a pipeline needs at least one step")
	}
	if e, ok := fields["hooks"]; ok {
		c.p.Hooks = c.compileHooks(e.val, "hooks")
	}
	if e, ok := fields["success_criteria"]; ok {
		c.p.SuccessCriteria = c.compileSuccessCriteria(e.val, "success_criteria", c.p.Steps)
	}
	if c.halted {
		return
	}
	for _, f := range c.deferred {
		f()
	}
	c.finishStages()
	if c.p.Mode == Parallel {
		c.checkParallelMode()
	}
}

func (c *compiler) compileStages(v *yaml.Node) {
	if isNull(v) {
		return
	}
	if v.Kind != yaml.SequenceNode {
		c.wrongKind(v, "stages", "a list of stage names")
		return
	}
	for i, item := range v.Content {
		item = c.deref(item)
		s, ok := c.str(item, index("stages", i))
		if !ok {
			continue
		}
		switch {
		case strings.TrimSpace(s) == "":
			c.errorf(item, index("stages", i), "", "is empty: a stage needs a name")
		case c.stages[s]:
			c.errorf(item, index("stages", i), s, "is declared twice")
		default:
			c.stages[s] = true
			c.p.Stages = append(c.p.Stages, s)
		}
	}
}

// finishStages puts steps with no stage in DefaultStage when stages are declared.
func (c *compiler) finishStages() {
	if len(c.p.Stages) == 0 {
		return
	}
	used := false
	for _, s := range c.p.Steps {
		if s.Stage == "" {
			s.Stage = DefaultStage
			for _, n := range s.Parallel {
				inheritStage(n, DefaultStage)
			}
			used = true
		}
	}
	if used && !c.stages[DefaultStage] {
		c.p.Stages = append([]string{DefaultStage}, c.p.Stages...)
	}
}

func inheritStage(s *Step, stage string) {
	if s.Stage == "" {
		s.Stage = stage
		for _, n := range s.Parallel {
			inheritStage(n, stage)
		}
	}
}

// stepName is what a step name may be: it appears in paths, URLs, file names and
// steps.NAME.result.
var stepName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$`)

// compileSteps compiles a mapping of named steps. depth counts enclosing parallel steps; hook
// is set for hook steps.
func (c *compiler) compileSteps(n *yaml.Node, path string, depth int, hook *hookCtx) []*Step {
	if !c.mapping(n, path, "a mapping of step names to steps (a list is not allowed: the order of the mapping is the order of the steps)") {
		return nil
	}
	var out []*Step
	for _, e := range c.entries(n, path) {
		if c.halted {
			break
		}
		sp := join(path, e.name)
		if !stepName.MatchString(e.name) {
			c.errorf(e.key, sp, e.name, "is not a valid step name: use letters, digits, _ and -, at most 128 characters")
			continue
		}
		if hook == nil {
			if prev, dup := c.names[e.name]; dup {
				c.errorf(e.key, sp, e.name, "is a duplicate step name (first at line %d): step names are unique in a pipeline, nested steps included", prev.Line)
				continue
			}
		}
		c.nSteps++
		if c.nSteps > MaxSteps {
			c.errorf(e.key, sp, "", "is one step too many: a pipeline has at most %d steps", MaxSteps)
			c.halted = true
			break
		}
		s := &Step{Name: e.name, Path: sp, Line: e.key.Line, FailFast: c.p.FailFast}
		if hook == nil {
			c.names[e.name] = s
		}
		if !c.compileStep(s, e, depth, hook) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// hookCtx says which hook a step belongs to.
type hookCtx struct {
	kind string // on_elected, on_success, on_fail, on_finish
}

var commonFields = []string{"type", "title", "description", "stage", "fail_fast", "strict_fail_fast", "when"}

var fieldsByType = map[StepType][]string{
	TypeFreestyle:       concat(commonFields, "retry", "timeout", "hooks", "image", "commands", "cmd", "entry_point", "shell", "environment", "working_directory", "pull_policy", "services"),
	TypeGitClone:        concat(commonFields, "retry", "timeout", "hooks", "repo", "revision", "git", "depth", "credentials", "working_directory", "arguments"),
	TypeBuild:           concat(commonFields, "retry", "timeout", "hooks", "image_name", "tag", "tags", "dockerfile", "working_directory", "build_arguments", "target", "no_cache", "registry", "disable_push", "platform", "arguments", "cache_from", "tag_policy", "buildx", "cache_to", "cosign", "provider"),
	TypePush:            concat(commonFields, "retry", "timeout", "hooks", "candidate", "tag", "tags", "image_name", "registry", "arguments"),
	TypeParallel:        concat(commonFields, "timeout", "steps", "success_criteria"),
	TypePendingApproval: concat(commonFields, "timeout"),
	TypeComposition: concat(commonFields, "retry", "timeout", "hooks", "working_directory", "composition", "composition_candidates",
		"composition_variables", "add_flow_volume_to_composition", "environment", "arguments"),
	TypeLaunchComposition: concat(commonFields, "retry", "timeout", "hooks", "working_directory", "composition", "composition_variables",
		"environment_name", "entry_point", "arguments"),
	TypeDeploy: deployFields,
	TypeHelm:   helmFields,
}

// hookStepFields are the fields of a step inside a hook: a freestyle step without stage,
// when, retry or hooks of its own.
var hookStepFields = []string{"type", "title", "description", "fail_fast", "timeout", "image", "commands", "cmd", "entry_point", "shell", "environment", "working_directory"}

func concat(a []string, b ...string) []string { return append(append([]string(nil), a...), b...) }

const pushCreds = "registry credentials come from the runner's registry configuration"

const builderDecides = "the image builder decides"

const postStepOps = "post-step operations (annotations, metadata, status reports) are not run by Freshet; use hooks to run steps after this one"

// ignoredFields are recognised fields that Freshet accepts but does not use, by step type.
var ignoredFields = map[StepType]map[string]string{
	TypeFreestyle: {"registry_context": "images are pulled with the executor's registry credentials"},
	TypeGitClone: {
		"use_proxy":     "the runner's HTTP_PROXY/HTTPS_PROXY settings always apply",
		"exclude_blobs": "the clone fetches blobs; use depth to make it smaller",
	},
	TypeBuild: {
		"no_cf_cache":       "there is no Codefresh layer cache",
		"registry_contexts": "the builder uses its own registry credentials",
		"buildkit":          builderDecides,
		"progress":          builderDecides,
		"ssh":               "build secrets are not passed",
		"secrets":           "build secrets are not passed",
	},
	TypePush: {
		"credentials":      pushCreds,
		"registry_context": pushCreds,
		"accessKeyId":      pushCreds,
		"secretAccessKey":  pushCreds,
		"roleArn":          pushCreds,
		"provider":         "the registry decides",
		"region":           "the registry decides",
	},
}

// checkIgnored checks the value of an accepted-but-ignored field as strictly as Codefresh's
// validator does, so that a file Freshet accepts is one Codefresh accepts too.
func (c *compiler) checkIgnored(t StepType, f kv, fp string) {
	v := f.val
	switch f.name {
	case "no_cf_cache", "buildkit", "use_proxy", "exclude_blobs":
		c.boolean(v, fp)
	case "registry_context", "accessKeyId", "secretAccessKey", "roleArn", "region", "ssh":
		c.text(v, fp)
	case "registry_contexts", "secrets":
		c.textList(v, fp, false)
	case "progress":
		if s, ok := c.text(v, fp); ok && s != "" && !slices.Contains(progressModes, s) {
			c.errorf(v, fp, s, "is not a progress mode: use %s", choices(progressModes...))
		}
	case "credentials":
		c.compileCredentials(v, fp)
	case "provider":
		if s, ok := c.text(v, fp); ok && s != "" && s != "ecr" {
			c.errorf(v, fp, s, "is not a push provider: the only one is ecr")
		}
	}
}

var progressModes = []string{"auto", "plain", "tty"}

var ignoredEverywhere = map[string]string{
	"on_success": postStepOps, "on_fail": postStepOps, "on_finish": postStepOps,
	"metadata":    "image metadata is not recorded",
	"annotations": "build annotations are not recorded",
}

var unsupportedFields = map[string]string{
	"volumes":  "is not supported: every step sees the shared workspace at ${{CF_VOLUME_PATH}}; use paths under it",
	"services": "is not supported here: service containers run beside freestyle steps (or, on the pipeline's root, beside every step)",
	"scale":    "is not supported: write a parallel step with one step per variant",
	"matrix":   "is not supported: write a parallel step with one step per combination",
}

// unsupportedTypes are Codefresh step types Freshet recognises and does not run.
var unsupportedTypes = map[string]string{
	"travis": "it ran a .travis.yml; write its install and script commands as freestyle steps (image and commands)",
}

func typeChoices() string {
	s := make([]string, len(stepTypes))
	for i, t := range stepTypes {
		s[i] = string(t)
	}
	return choices(s...)
}

// compileStep fills s from the entry e. It returns false when the step is not usable.
func (c *compiler) compileStep(s *Step, e kv, depth int, hook *hookCtx) bool {
	v := e.val
	if v == nil || isNull(v) {
		c.errorf(e.key, s.Path, "", "is an empty step: give it an image and commands, or a type")
		return false
	}
	if v.Kind != yaml.MappingNode {
		c.wrongKind(v, s.Path, "a mapping of step fields (type, title, image, commands, …)")
		return false
	}
	fields := c.entries(v, s.Path)
	// The step type decides which fields are valid.
	s.Type = TypeFreestyle
	for _, f := range fields {
		if f.name != "type" {
			continue
		}
		t, ok := c.str(f.val, join(s.Path, "type"))
		if !ok {
			return false
		}
		switch {
		case t == "":
		case slices.Contains(stepTypes, StepType(t)):
			s.Type = StepType(t)
		case t == typePushTag:
			s.Type = TypePush // Codefresh's old name of push
		case unsupportedTypes[t] != "":
			c.errorf(f.val, join(s.Path, "type"), t, "is a Codefresh step type that Freshet does not run (%s): use %s", unsupportedTypes[t], typeChoices())
			return false
		default:
			def := c.resolvePlugin(f.val, join(s.Path, "type"), t)
			if def == nil {
				return false
			}
			if hook != nil {
				c.errorf(f.val, join(s.Path, "type"), t, "cannot run in a hook: hook steps are freestyle steps (image and commands)")
				return false
			}
			s.Type = TypePlugin
			return c.compilePluginStep(s, e, fields, def, t, depth)
		}
	}
	valid := fieldsByType[s.Type]
	what := fmt.Sprintf("a %s step", s.Type)
	if hook != nil {
		valid, what = hookStepFields, "a hook step"
		if hook.kind == hookPlugin {
			valid, what = concat(hookStepFields, "name"), "a step of a step type"
		}
		if s.Type != TypeFreestyle {
			c.errorf(e.key, join(s.Path, "type"), string(s.Type), "cannot run in a hook: hook steps are freestyle steps (image and commands)")
			return false
		}
		s.FailFast = hook.kind == "on_elected"
	}
	// Fields under `arguments` count as the step's own (the Codefresh plugin form).
	if slices.Contains(valid, "arguments") {
		var flat []kv
		byName := map[string]*yaml.Node{}
		for _, f := range fields {
			if f.name != "arguments" {
				flat = append(flat, f)
				byName[f.name] = f.key
			}
		}
		for _, f := range fields {
			if f.name != "arguments" || !c.mapping(f.val, join(s.Path, "arguments"), "a mapping of step fields") {
				continue
			}
			for _, a := range c.entries(f.val, join(s.Path, "arguments")) {
				if first, dup := byName[a.name]; dup {
					c.errorf(a.key, join(s.Path, "arguments."+a.name), "", "is also given at line %d: give it once", first.Line)
					continue
				}
				if a.name == "arguments" || a.name == "type" {
					c.unknownField(a, join(s.Path, "arguments"), what, valid)
					continue
				}
				byName[a.name] = a.key
				flat = append(flat, a)
			}
		}
		fields = flat
	}
	st := &stepCompile{c: c, s: s, depth: depth, hook: hook}
	for _, f := range fields {
		if c.halted {
			return false
		}
		fp := join(s.Path, f.name)
		switch {
		case slices.Contains(valid, f.name):
			st.field(f, fp)
		case ignoredFields[s.Type][f.name] != "":
			c.warnf(f.key, fp, "", "is not used by Freshet: %s", ignoredFields[s.Type][f.name])
			c.checkIgnored(s.Type, f, fp)
		case ignoredEverywhere[f.name] != "" && s.Type != TypePendingApproval:
			c.warnf(f.key, fp, "", "is not used by Freshet: %s", ignoredEverywhere[f.name])
		case unsupportedFields[f.name] != "":
			c.errorf(f.key, fp, "", "%s", unsupportedFields[f.name])
		case f.name == "hooks" && s.Type == TypeParallel:
			c.errorf(f.key, fp, "", "is not supported on parallel steps: put hooks on the steps inside")
		case hook != nil && slices.Contains([]string{"stage", "when", "retry", "hooks", "strict_fail_fast"}, f.name):
			c.errorf(f.key, fp, "", "is not supported in a hook step: a hook step has %s", strings.Join(valid, ", "))
		default:
			c.unknownField(f, s.Path, what, valid)
		}
	}
	st.finish(e)
	return true
}

// unknownField reports a field that is not valid where it is written.
func (c *compiler) unknownField(f kv, path, what string, valid []string) {
	fp := join(path, f.name)
	for _, t := range stepTypes {
		if slices.Contains(fieldsByType[t], f.name) && !slices.Contains(commonFields, f.name) && strings.HasSuffix(what, " step") && what != "a hook step" {
			c.errorf(f.key, fp, "", "is not a field of %s (it belongs to %s steps: did you forget type: %s?); %s has: %s", what, t, t, what, strings.Join(valid, ", "))
			return
		}
	}
	hint := ""
	if s := closest(f.name, valid); s != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", s)
	}
	c.errorf(f.key, fp, "", "is not a field of %s%s: valid fields are %s", what, hint, strings.Join(valid, ", "))
}

// stepCompile holds the state of one step being compiled.
type stepCompile struct {
	c     *compiler
	s     *Step
	depth int
	hook  *hookCtx

	commands, cmd, entry bool
	image                bool
	approvalTimeout      bool
	build                *Build
	push                 *Push
	// composition and launch-composition
	compositionSet, compositionBad, candidatesSet, flowVolume bool
	stepsNode                                                 *yaml.Node
	successNode                                               *kv
}

func (st *stepCompile) field(f kv, fp string) {
	c, s := st.c, st.s
	if st.deployField(f, fp) {
		return
	}
	switch f.name {
	case "type":
		// handled first
	case "composition", "composition_candidates", "composition_variables", "add_flow_volume_to_composition", "environment_name":
		st.compositionField(f, fp)
	case "title", "name": // name: the title of a step type's step, as the marketplace writes it
		s.Title, _ = c.text(f.val, fp)
	case "description":
		s.Description, _ = c.text(f.val, fp)
	case "stage":
		v, ok := c.text(f.val, fp)
		if !ok || v == "" {
			return
		}
		if !c.stages[v] {
			if len(c.stages) == 0 {
				c.errorf(f.val, fp, v, "is not a declared stage: no stages are declared; list them under stages at the root")
			} else {
				c.errorf(f.val, fp, v, "is not a declared stage: use %s", choices(c.p.Stages...))
			}
			return
		}
		s.Stage = v
	case "fail_fast":
		v, ok := c.boolean(f.val, fp)
		if !ok {
			return
		}
		if st.hook != nil && st.hook.kind != "on_elected" && st.hook.kind != hookPlugin {
			c.warnf(f.key, fp, "", "has no effect: only on_elected hooks can fail a build; %s hooks never change its result", st.hook.kind)
			return
		}
		s.FailFast = v
	case "strict_fail_fast":
		if v, ok := c.boolean(f.val, fp); ok {
			s.StrictFailFast = &v
		}
	case "when":
		s.When = c.compileWhen(f.val, fp, s)
	case "retry":
		s.Retry = c.compileRetry(f.val, fp)
	case "timeout":
		if s.Type == TypePendingApproval {
			st.approvalTimeout = true
			s.Approval = c.compileApproval(f.val, fp)
			return
		}
		s.Timeout = c.compileTimeout(f.val, fp)
	case "hooks":
		s.Hooks = c.compileHooks(f.val, fp)
	case "image":
		s.Image, st.image = c.text(f.val, fp)
	case "commands":
		st.commands = true
		s.Commands = c.compileCommands(f.val, fp)
	case "cmd":
		st.cmd = true
		s.Cmd, _ = c.strList(f.val, fp, true)
	case "entry_point":
		if s.Type == TypeLaunchComposition {
			st.composition().EntryPoint, _ = c.text(f.val, fp)
			return
		}
		st.entry = true
		s.EntryPoint, _ = c.strList(f.val, fp, true)
	case "shell":
		v, ok := c.text(f.val, fp)
		if !ok {
			return
		}
		if v != "sh" && v != "bash" {
			c.errorf(f.val, fp, v, "is not a shell: use sh or bash")
			return
		}
		s.Shell = v
	case "environment":
		s.Env = c.compileEnv(f.val, fp)
	case "pull_policy":
		s.PullPolicy = c.compilePullPolicy(f.val, fp)
	case "services":
		s.Services = c.compileServices(f.val, fp, false)
	case "working_directory":
		s.WorkingDir, _ = c.text(f.val, fp)
	case "repo":
		s.Repo, _ = c.text(f.val, fp)
	case "revision":
		s.Revision, _ = c.text(f.val, fp)
	case "git":
		s.GitContext, _ = c.text(f.val, fp)
	case "depth":
		if d, ok := c.integer(f.val, fp); ok {
			if d < 0 {
				c.errorf(f.val, fp, strconv.Itoa(d), "is negative: use 0 for the full history or a positive number of commits")
				return
			}
			s.Depth = d
		}
	case "credentials":
		s.Credentials = c.compileCredentials(f.val, fp)
	case "image_name", "tag", "tags", "dockerfile", "build_arguments", "target", "no_cache", "registry", "disable_push", "platform", "candidate", "cache_from", "tag_policy":
		st.imageField(f, fp)
	case "buildx", "cache_to", "cosign", "provider":
		st.buildField(f, fp)
	case "steps":
		st.stepsNode = f.val
		if st.depth+1 > MaxNesting {
			c.errorf(f.key, fp, "", "is nested too deeply: parallel steps nest at most %d levels", MaxNesting)
			return
		}
		s.Parallel = c.compileSteps(f.val, fp, st.depth+1, nil)
	case "success_criteria":
		sc := f
		st.successNode = &sc
	}
}

// imageField compiles the fields of build and push steps.
func (st *stepCompile) imageField(f kv, fp string) {
	c, s := st.c, st.s
	if s.Type == TypeBuild && st.build == nil {
		st.build = &Build{}
		s.Build = st.build
	}
	if s.Type == TypePush && st.push == nil {
		st.push = &Push{}
		s.Push = st.push
	}
	b, p := st.build, st.push
	switch f.name {
	case "image_name":
		v, _ := c.text(f.val, fp)
		if b != nil {
			b.ImageName = v
		} else {
			p.ImageName = v
		}
	case "tag":
		if v, ok := c.text(f.val, fp); ok && v != "" {
			if b != nil {
				b.Tags = append([]string{v}, b.Tags...)
			} else {
				p.Tags = append([]string{v}, p.Tags...)
			}
		}
	case "tags":
		v, _ := c.textList(f.val, fp, false)
		if b != nil {
			b.Tags = append(b.Tags, v...)
		} else {
			p.Tags = append(p.Tags, v...)
		}
	case "registry":
		v, _ := c.text(f.val, fp)
		if b != nil {
			b.Registry = v
		} else {
			p.Registry = v
		}
	case "dockerfile":
		if f.val != nil && f.val.Kind == yaml.MappingNode {
			// Codefresh's inline form: dockerfile: {content: "FROM …"}.
			for _, e := range c.entries(f.val, fp) {
				switch e.name {
				case "content":
					b.DockerfileContent, _ = c.text(e.val, join(fp, "content"))
					if strings.TrimSpace(b.DockerfileContent) == "" {
						c.errorf(e.val, join(fp, "content"), "", "is empty: give the Dockerfile's text")
					}
				default:
					c.unknownField(e, fp, "an inline dockerfile", []string{"content"})
				}
			}
			if b.DockerfileContent == "" && len(f.val.Content) == 0 {
				c.errorf(f.val, fp, "", "is an empty mapping: give a path, or {content: <the Dockerfile's text>}")
			}
			return
		}
		b.Dockerfile, _ = c.text(f.val, fp)
	case "cache_from":
		b.CacheFrom, _ = c.textList(f.val, fp, false)
	case "tag_policy":
		v, ok := c.text(f.val, fp)
		switch {
		case !ok:
		case v == TagPolicyOriginal || v == TagPolicyLowercase:
			b.TagPolicy = v
		default:
			c.errorf(f.val, fp, v, "is not a tag policy: use %s (the default) or %s", TagPolicyOriginal, TagPolicyLowercase)
		}
	case "build_arguments":
		b.BuildArgs = c.compileEnv(f.val, fp)
	case "target":
		b.Target, _ = c.text(f.val, fp)
	case "no_cache":
		b.NoCache, _ = c.boolean(f.val, fp)
	case "disable_push":
		b.DisablePush, _ = c.boolean(f.val, fp)
	case "platform":
		if v, ok := c.text(f.val, fp); ok && v != "" {
			if bad := badPlatform(v); bad != "" {
				c.errorf(f.val, fp, v, "has %q, which is not a platform: write os/arch[/variant], several separated by commas (linux/amd64,linux/arm64)", bad)
				return
			}
			b.Platform = v
		}
	case "candidate":
		p.Candidate, _ = c.text(f.val, fp)
	}
}

// platformRE is one os/arch[/variant] of a build's platform.
var platformRE = regexp.MustCompile(`^[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?$`)

// badPlatform returns the first item of a comma-separated platform list that is not
// os/arch[/variant], or "". A value with a variable reference is checked at run time.
func badPlatform(v string) string {
	if strings.Contains(v, "${{") {
		return ""
	}
	for _, p := range strings.Split(v, ",") {
		if !platformRE.MatchString(strings.TrimSpace(p)) {
			return p
		}
	}
	return ""
}

// finish applies defaults and checks required fields once every field is read.
func (st *stepCompile) finish(e kv) {
	c, s := st.c, st.s
	switch s.Type {
	case TypeFreestyle:
		if len(s.Commands) > 0 && s.Shell == "" {
			s.Shell = "sh"
		}
		if s.Shell != "" && !st.commands {
			c.warnf(e.key, join(s.Path, "shell"), "", "has no effect without commands")
		}
		if st.commands && (st.cmd || st.entry) {
			c.warnf(e.key, s.Path, "", "has commands and cmd/entry_point: commands run in the shell and cmd/entry_point are ignored")
		}
		if !st.commands && !st.cmd && !st.entry && !st.image {
			c.errorf(e.key, s.Path, "", "has nothing to run: give it commands (and an image), or a type (%s)", typeChoices())
			return
		}
		if !st.image || s.Image == "" {
			c.warnf(e.key, join(s.Path, "image"), "", "is missing: the local executor runs the commands on the runner's host, but the kubernetes executor needs an image")
		}
		if !st.commands && !st.cmd && !st.entry {
			c.warnf(e.key, s.Path, "", "has no commands: it runs the image's own entry point and command")
		}
	case TypeGitClone:
		if s.Repo == "" {
			c.errorf(e.key, join(s.Path, "repo"), "", "is missing: a git-clone step needs repo (owner/name or a clone URL)")
		}
	case TypeBuild:
		if st.build == nil || st.build.ImageName == "" {
			c.errorf(e.key, join(s.Path, "image_name"), "", "is missing: a build step needs image_name")
		}
		st.finishBuild(e)
		c.warnf(e.key, s.Path, "", "is a build step: it runs only on a runner with an image builder; other runners fail it")
	case TypePush:
		if st.push == nil || st.push.Candidate == "" {
			c.errorf(e.key, join(s.Path, "candidate"), "", "is missing: a push step needs candidate (the image to push, often ${{BUILD_STEP_NAME}})")
		}
		c.warnf(e.key, s.Path, "", "is a push step: it runs only on a runner with an image builder; other runners fail it")
	case TypeParallel:
		if st.stepsNode == nil {
			c.errorf(e.key, join(s.Path, "steps"), "", "is missing: a parallel step needs steps to run in parallel")
		} else if len(s.Parallel) == 0 && !isNull(st.stepsNode) && st.stepsNode.Kind == yaml.MappingNode && len(st.stepsNode.Content) == 0 {
			c.errorf(st.stepsNode, join(s.Path, "steps"), "", "is empty: a parallel step needs steps to run in parallel")
		}
		for _, n := range s.Parallel {
			inheritStage(n, s.Stage)
		}
		if st.successNode != nil {
			s.SuccessCriteria = c.compileSuccessCriteria(st.successNode.val, join(s.Path, "success_criteria"), s.Parallel)
		}
	case TypeComposition, TypeLaunchComposition:
		st.finishComposition(e)
	case TypeDeploy, TypeHelm:
		st.finishDeploy(e)
	case TypePendingApproval:
		if !st.approvalTimeout {
			s.Approval = &Approval{Timeout: Duration{DefaultApprovalTimeout}, FinalState: ApprovalDenied}
		}
	}
}

// compileCommands reads commands: a list of shell lines.
func (c *compiler) compileCommands(v *yaml.Node, path string) []string {
	if v == nil || v.Kind != yaml.SequenceNode {
		c.wrongKind(v, path, "a list of commands, one shell line per item")
		return nil
	}
	var out []string
	for i, item := range v.Content {
		item = c.deref(item)
		if item == nil || c.halted {
			return out
		}
		ip := index(path, i)
		switch {
		case item.Kind == yaml.MappingNode:
			c.errorf(item, ip, "", "is a mapping, not a command: a \": \" in a command starts a mapping; quote the whole line (- \"echo a: b\") or use a block scalar (- |)")
		case item.Kind != yaml.ScalarNode:
			c.wrongKind(item, ip, "a command string")
		case isNull(item):
			c.errorf(item, ip, "", "is empty: remove it or write a command")
		default:
			s, _ := c.str(item, ip)
			out = append(out, s)
		}
	}
	return out
}

// compileEnv reads environment variables: a list of NAME=value or a mapping.
func (c *compiler) compileEnv(v *yaml.Node, path string) []EnvVar {
	if isNull(v) {
		return nil
	}
	var out []EnvVar
	seen := map[string]int{}
	add := func(n *yaml.Node, p, name, value string) {
		if !envName.MatchString(name) {
			c.errorf(n, p, name, "is not a valid variable name: use letters, digits and _, not starting with a digit")
			return
		}
		if i, dup := seen[name]; dup {
			c.warnf(n, p, name, "is set twice: the last value wins")
			out[i].Value = value
			return
		}
		seen[name] = len(out)
		out = append(out, EnvVar{Name: name, Value: value})
	}
	switch v.Kind {
	case yaml.SequenceNode:
		for i, item := range v.Content {
			item = c.deref(item)
			if item == nil || c.halted {
				return out
			}
			ip := index(path, i)
			if item.Kind == yaml.MappingNode {
				c.errorf(item, ip, "", "is a mapping: write NAME=value (quote it if the value has \": \")")
				continue
			}
			s, ok := c.str(item, ip)
			if !ok {
				continue
			}
			name, value, found := strings.Cut(s, "=")
			if !found {
				c.errorf(item, ip, s, "is not NAME=value: give the variable a value")
				continue
			}
			add(item, ip, name, value)
		}
	case yaml.MappingNode:
		for _, e := range c.entries(v, path) {
			ep := join(path, e.name)
			if e.val != nil && e.val.Kind != yaml.ScalarNode {
				c.wrongKind(e.val, ep, "a value")
				continue
			}
			val, _ := c.str(e.val, ep)
			add(e.key, ep, e.name, val)
		}
	default:
		c.wrongKind(v, path, "a list of NAME=value or a mapping of names to values")
	}
	return out
}

func (c *compiler) compileCredentials(v *yaml.Node, path string) *Credentials {
	if !c.mapping(v, path, "a mapping with username and password") {
		return nil
	}
	cr := &Credentials{}
	for _, e := range c.entries(v, path) {
		switch e.name {
		case "username":
			cr.Username, _ = c.str(e.val, join(path, e.name))
		case "password":
			cr.Password, _ = c.str(e.val, join(path, e.name))
		default:
			c.unknownField(e, path, "credentials", []string{"username", "password"})
		}
	}
	return cr
}

// MaxStepTimeout bounds a step's timeout.
const MaxStepTimeout = 24 * time.Hour

func (c *compiler) compileTimeout(v *yaml.Node, path string) Duration {
	s, ok := c.str(v, path)
	if !ok || s == "" {
		if ok {
			c.errorf(v, path, "", "is empty: write a duration such as 30s, 10m or 1h30m")
		}
		return Duration{}
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			c.errorf(v, path, s, "has no unit: write a duration such as %ss, 10m or 1h30m", s)
		} else {
			c.errorf(v, path, s, "is not a duration: write a number with a unit (s, m or h), such as 30s, 10m or 1h30m")
		}
		return Duration{}
	}
	if d <= 0 || d > MaxStepTimeout {
		c.errorf(v, path, s, "is out of range: a step timeout is more than 0 and at most %s", fmtDuration(MaxStepTimeout))
		return Duration{}
	}
	return Duration{d}
}

func fmtDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	s = strings.TrimSuffix(s, "0m")
	return s
}

func (c *compiler) compileRetry(v *yaml.Node, path string) Retry {
	if !c.mapping(v, path, "a mapping of maxAttempts, delay and exponentialFactor") {
		return Retry{}
	}
	r := Retry{MaxAttempts: DefaultRetryAttempts, Delay: Duration{DefaultRetryDelay}, ExponentialFactor: DefaultExponentialFactor}
	for _, e := range c.entries(v, path) {
		ep := join(path, e.name)
		switch e.name {
		case "maxAttempts":
			if n, ok := c.integer(e.val, ep); ok {
				if n < MinRetryAttempts || n > MaxRetryAttempts {
					c.errorf(e.val, ep, strconv.Itoa(n), "is out of range: maxAttempts (the number of retries) is %d to %d", MinRetryAttempts, MaxRetryAttempts)
					continue
				}
				r.MaxAttempts = n
			}
		case "delay":
			if f, ok := c.number(e.val, ep); ok {
				if f < 0 || f > MaxRetryDelaySetting.Seconds() {
					c.errorf(e.val, ep, e.val.Value, "is out of range: delay is 0 to %d seconds", int(MaxRetryDelaySetting.Seconds()))
					continue
				}
				r.Delay = Duration{time.Duration(f * float64(time.Second))}
			}
		case "exponentialFactor":
			if f, ok := c.number(e.val, ep); ok {
				if f < MinExponentialFactor || f > MaxExponentialFactor {
					c.errorf(e.val, ep, e.val.Value, "is out of range: exponentialFactor is %g to %g", MinExponentialFactor, MaxExponentialFactor)
					continue
				}
				r.ExponentialFactor = f
			}
		default:
			c.unknownField(e, path, "retry", []string{"maxAttempts", "delay", "exponentialFactor"})
		}
	}
	return r
}

func (c *compiler) compileApproval(v *yaml.Node, path string) *Approval {
	a := &Approval{Timeout: Duration{DefaultApprovalTimeout}, FinalState: ApprovalDenied}
	if !c.mapping(v, path, "a mapping of duration, timeUnit and finalState") {
		return a
	}
	duration, unit := 0.0, time.Hour
	var durNode *yaml.Node
	for _, e := range c.entries(v, path) {
		ep := join(path, e.name)
		switch e.name {
		case "duration":
			if f, ok := c.number(e.val, ep); ok {
				if f <= 0 {
					c.errorf(e.val, ep, e.val.Value, "is not positive: give the number of hours (or of timeUnit) to wait")
					continue
				}
				duration, durNode = f, e.val
			}
		case "timeUnit":
			if s, ok := c.str(e.val, ep); ok {
				switch s {
				case "hours":
					unit = time.Hour
				case "minutes":
					unit = time.Minute
				default:
					c.errorf(e.val, ep, s, "is not a time unit: use hours or minutes")
				}
			}
		case "finalState":
			if s, ok := c.str(e.val, ep); ok {
				switch s {
				case ApprovalApproved, ApprovalDenied, ApprovalTerminated:
					a.FinalState = s
				default:
					c.errorf(e.val, ep, s, "is not a final state: use approved, denied or terminated")
				}
			}
		default:
			c.unknownField(e, path, "an approval timeout", []string{"duration", "timeUnit", "finalState"})
		}
	}
	if durNode != nil {
		const maxApproval = 365 * 24 * time.Hour
		d := duration * float64(unit)
		if d > float64(maxApproval) {
			c.errorf(durNode, join(path, "duration"), durNode.Value, "is too long: an approval waits at most 365 days")
		} else {
			a.Timeout = Duration{time.Duration(d)}
		}
	}
	return a
}

var hookKinds = []string{"on_elected", "on_success", "on_fail", "on_finish"}

func (c *compiler) compileHooks(v *yaml.Node, path string) Hooks {
	var h Hooks
	if !c.mapping(v, path, "a mapping of on_elected, on_success, on_fail and on_finish") {
		return h
	}
	for _, e := range c.entries(v, path) {
		ep := join(path, e.name)
		var dst **Hook
		switch e.name {
		case "on_elected":
			dst = &h.OnElected
		case "on_success":
			dst = &h.OnSuccess
		case "on_fail":
			dst = &h.OnFail
		case "on_finish":
			dst = &h.OnFinish
		default:
			c.unknownField(e, path, "hooks", hookKinds)
			continue
		}
		*dst = c.compileHook(e, ep)
	}
	return h
}

var hookFields = []string{"exec", "steps", "mode", "annotations", "metadata"}

// compileHook reads one hook: {exec: step}, {steps: {name: step…}, mode}, a step written
// directly, or a list of commands.
func (c *compiler) compileHook(e kv, path string) *Hook {
	hc := &hookCtx{kind: e.name}
	h := &Hook{Mode: Sequential}
	v := e.val
	switch {
	case v != nil && v.Kind == yaml.SequenceNode:
		s := &Step{Name: e.name, Path: path, Type: TypeFreestyle, Line: e.key.Line, FailFast: e.name == "on_elected", Shell: "sh"}
		s.Commands = c.compileCommands(v, path)
		c.warnf(e.key, path, "", "has commands but no image: the local executor runs them on the runner's host, but the kubernetes executor needs an image (write exec: {image, commands})")
		h.Steps = []*Step{s}
		return h
	case v == nil || v.Kind != yaml.MappingNode:
		c.wrongKind(v, path, "a mapping with exec (one step) or steps (several), or a list of commands")
		return nil
	}
	entries := c.entries(v, path)
	isHookForm := false
	for _, f := range entries {
		if f.name == "exec" || f.name == "steps" {
			isHookForm = true
		}
	}
	if !isHookForm { // a step written directly: {image, commands}
		s := &Step{Name: e.name, Path: path, Line: e.key.Line}
		if !c.compileStep(s, kv{key: e.key, name: e.name, val: v}, 0, hc) {
			return nil
		}
		h.Steps = []*Step{s}
		return h
	}
	var exec, steps *kv
	for i := range entries {
		f := &entries[i]
		fp := join(path, f.name)
		switch f.name {
		case "exec":
			exec = f
		case "steps":
			steps = f
		case "mode":
			if m, ok := c.str(f.val, fp); ok {
				switch Mode(m) {
				case Sequential, Parallel:
					h.Mode = Mode(m)
				default:
					c.errorf(f.val, fp, m, "is not a mode: use sequential or parallel")
				}
			}
		case "annotations", "metadata":
			c.warnf(f.key, fp, "", "is not used by Freshet: %s", ignoredEverywhere[f.name])
		default:
			c.unknownField(*f, path, "a hook", hookFields)
		}
	}
	switch {
	case exec != nil && steps != nil:
		c.errorf(steps.key, join(path, "steps"), "", "is given with exec: use exec for one step or steps for several, not both")
	case exec != nil:
		s := &Step{Name: e.name, Path: join(path, "exec"), Line: exec.key.Line}
		if c.compileStep(s, *exec, 0, hc) {
			h.Steps = []*Step{s}
		}
	case steps != nil:
		h.Steps = c.compileSteps(steps.val, join(path, "steps"), 0, hc)
	}
	if len(h.Steps) == 0 {
		return nil
	}
	return h
}

var whenFields = []string{"branch", "condition", "steps"}

// compileWhen reads a step's when. Cross-step checks (names exist) run once every step is
// known.
func (c *compiler) compileWhen(v *yaml.Node, path string, s *Step) When {
	var w When
	if isNull(v) || !c.mapping(v, path, "a mapping of branch, condition and steps") {
		return w
	}
	for _, e := range c.entries(v, path) {
		ep := join(path, e.name)
		switch e.name {
		case "branch":
			w.Branch = c.compileBranch(e.val, ep)
		case "condition":
			w.Condition = c.compileCondition(e.val, ep)
		case "steps":
			w.Steps = c.compileStepDeps(e.val, ep, s)
		default:
			c.unknownField(e, path, "when", whenFields)
		}
	}
	c.checkConditionRefs(w.Condition, join(path, "condition"))
	return w
}

func (c *compiler) compileBranch(v *yaml.Node, path string) BranchFilter {
	var f BranchFilter
	if isNull(v) || !c.mapping(v, path, "a mapping of only and ignore, each a list of branch names or /regular expressions/") {
		return f
	}
	for _, e := range c.entries(v, path) {
		ep := join(path, e.name)
		var dst *[]Pattern
		switch e.name {
		case "only":
			dst = &f.Only
		case "ignore":
			dst = &f.Ignore
		default:
			c.unknownField(e, path, "when.branch", []string{"only", "ignore"})
			continue
		}
		isList := e.val != nil && e.val.Kind == yaml.SequenceNode
		items := []*yaml.Node{e.val}
		if isList {
			items = e.val.Content
		}
		for i, item := range items {
			item = c.deref(item)
			ip := ep
			if isList {
				ip = index(ep, i)
			}
			s, ok := c.str(item, ip)
			if !ok {
				continue
			}
			p, err := ParsePattern(s)
			if err != nil {
				c.errorf(item, ip, s, "%s", err.Error())
				continue
			}
			*dst = append(*dst, p)
		}
	}
	return f
}

func (c *compiler) compileCondition(v *yaml.Node, path string) Condition {
	var cond Condition
	if isNull(v) || !c.mapping(v, path, "a mapping of all and any, each a mapping of names to expressions") {
		return cond
	}
	for _, e := range c.entries(v, path) {
		ep := join(path, e.name)
		var dst *[]*Expr
		switch e.name {
		case "all":
			dst = &cond.All
		case "any":
			dst = &cond.Any
		default:
			c.unknownField(e, path, "a condition", []string{"all", "any"})
			continue
		}
		if !c.mapping(e.val, ep, "a mapping of names to expressions, e.g. isMain: '\"${{CF_BRANCH}}\" == \"main\"'") {
			continue
		}
		for _, x := range c.entries(e.val, ep) {
			xp := join(ep, x.name)
			src, ok := c.str(x.val, xp)
			if !ok {
				continue
			}
			if strings.TrimSpace(src) == "" {
				c.errorf(x.val, xp, "", "is empty: write an expression such as '${{CF_BRANCH}}' == 'main'")
				continue
			}
			ex, err := CompileExpr(x.name, src)
			if err != nil {
				c.errorf(x.val, xp, src, "%s", err.Error())
				continue
			}
			ex.line = x.val.Line
			ex.col = x.val.Column
			*dst = append(*dst, ex)
		}
	}
	return cond
}

// checkConditionRefs checks, once every step is known, that the steps an expression reads
// exist.
func (c *compiler) checkConditionRefs(cond Condition, path string) {
	c.deferred = append(c.deferred, func() {
		for _, group := range []struct {
			name  string
			exprs []*Expr
		}{{"all", cond.All}, {"any", cond.Any}} {
			for _, ex := range group.exprs {
				for _, name := range ex.steps {
					if _, ok := c.names[name]; !ok {
						n := &yaml.Node{Line: ex.line, Column: ex.col}
						c.errorf(n, join(join(path, group.name), ex.Name), name, "is not a step of this pipeline: steps.NAME must name a step (%s)", c.stepNamesHint(name))
					}
				}
			}
		}
	})
}

func (c *compiler) stepNamesHint(name string) string {
	names := make([]string, 0, len(c.names))
	for n := range c.names {
		names = append(names, n)
	}
	sort.Strings(names)
	if s := closest(name, names); s != "" {
		return "did you mean " + s + "?"
	}
	if len(names) > 10 {
		names = append(names[:10], "…")
	}
	return "steps: " + strings.Join(names, ", ")
}

func (c *compiler) compileStepDeps(v *yaml.Node, path string, s *Step) StepDeps {
	var d StepDeps
	if isNull(v) {
		return d
	}
	var list *yaml.Node
	listPath := path
	switch v.Kind {
	case yaml.SequenceNode:
		list = v
	case yaml.MappingNode:
		for _, e := range c.entries(v, path) {
			switch e.name {
			case "all", "any":
				if list != nil {
					c.errorf(e.key, join(path, e.name), "", "is given with %s: use all or any, not both", d.Match)
					continue
				}
				d.Match, list, listPath = e.name, e.val, join(path, e.name)
			default:
				c.unknownField(e, path, "when.steps", []string{"all", "any"})
			}
		}
		if list == nil {
			return d
		}
	default:
		c.wrongKind(v, path, "a list of {name, on} (or all: / any: with such a list)")
		return d
	}
	if list.Kind != yaml.SequenceNode {
		c.wrongKind(list, listPath, "a list of {name, on}")
		return d
	}
	if d.Match == "" {
		d.Match = "all"
	}
	for i, item := range list.Content {
		item = c.deref(item)
		ip := index(listPath, i)
		if !c.mapping(item, ip, "a mapping with name and on, e.g. {name: build, on: [success]}") {
			continue
		}
		dep := StepDep{}
		var nameNode *yaml.Node
		onSet := false
		for _, e := range c.entries(item, ip) {
			ep := join(ip, e.name)
			switch e.name {
			case "name":
				dep.Name, _ = c.str(e.val, ep)
				nameNode = e.val
			case "on":
				onSet = true
				vals, _ := c.strList(e.val, ep, true)
				for j, o := range vals {
					if !slices.Contains(onValues, o) {
						at := e.val
						if e.val.Kind == yaml.SequenceNode && j < len(e.val.Content) {
							at = c.deref(e.val.Content[j])
						}
						c.errorf(at, ep, o, "is not a step event: use %s", choices(onValues...))
						continue
					}
					if !slices.Contains(dep.On, On(o)) {
						dep.On = append(dep.On, On(o))
					}
				}
			default:
				c.unknownField(e, ip, "a step dependency", []string{"name", "on"})
			}
		}
		if dep.Name == "" {
			c.errorf(item, join(ip, "name"), "", "is missing: name the step this one waits for")
			continue
		}
		if !onSet {
			dep.On = []On{OnSuccess}
		}
		if len(dep.On) == 0 {
			continue
		}
		d.Deps = append(d.Deps, dep)
		c.checkDep(dep, join(ip, "name"), nameNode, s)
	}
	return d
}

// checkDep checks, once every step is known, a when.steps dependency of step s.
func (c *compiler) checkDep(dep StepDep, path string, at *yaml.Node, s *Step) {
	c.deferred = append(c.deferred, func() {
		target, ok := c.names[dep.Name]
		switch {
		case !ok:
			c.errorf(at, path, dep.Name, "is not a step of this pipeline (%s)", c.stepNamesHint(dep.Name))
			return
		case target == s:
			c.errorf(at, path, dep.Name, "is the step itself: a step cannot wait for itself")
			return
		}
		for _, o := range dep.On {
			if (o == OnApproved || o == OnDenied) && target.Type != TypePendingApproval {
				c.warnf(at, path, dep.Name, "is a %s step: on: %s only happens to pending-approval steps, so this never matches", target.Type, o)
			}
		}
		if c.p.Mode == Sequential {
			mine, okM := c.topIndex(s)
			theirs, okT := c.topIndex(target)
			if okM && okT && theirs > mine {
				c.warnf(at, path, dep.Name, "comes later in the pipeline: in sequential mode this step's when is evaluated once, before %s runs, so it is skipped", dep.Name)
			}
		}
	})
}

// topIndex is the position of the top-level step that is or contains s.
func (c *compiler) topIndex(s *Step) (int, bool) {
	for i, t := range c.p.Steps {
		if t == s || containsStep(t, s) {
			return i, true
		}
	}
	return 0, false
}

func containsStep(parent, s *Step) bool {
	for _, n := range parent.Parallel {
		if n == s || containsStep(n, s) {
			return true
		}
	}
	return false
}

func (c *compiler) compileSuccessCriteria(v *yaml.Node, path string, scope []*Step) *SuccessCriteria {
	if !c.mapping(v, path, "a mapping of steps (only/ignore) and condition (all/any)") {
		return nil
	}
	sc := &SuccessCriteria{}
	inScope := map[string]bool{}
	var mark func([]*Step)
	mark = func(steps []*Step) {
		for _, s := range steps {
			inScope[s.Name] = true
			mark(s.Parallel)
		}
	}
	mark(scope)
	for _, e := range c.entries(v, path) {
		ep := join(path, e.name)
		switch e.name {
		case "steps":
			if !c.mapping(e.val, ep, "a mapping of only and ignore, each a list of step names") {
				continue
			}
			for _, f := range c.entries(e.val, ep) {
				fp := join(ep, f.name)
				var dst *[]string
				switch f.name {
				case "only":
					dst = &sc.Only
				case "ignore":
					dst = &sc.Ignore
				default:
					c.unknownField(f, ep, "success_criteria.steps", []string{"only", "ignore"})
					continue
				}
				names, _ := c.strList(f.val, fp, true)
				for _, n := range names {
					if !inScope[n] {
						c.errorf(f.val, fp, n, "is not a step inside %s", strings.TrimSuffix(path, ".success_criteria"))
						continue
					}
					*dst = append(*dst, n)
				}
			}
		case "condition":
			sc.Condition = c.compileCondition(e.val, ep)
			c.checkConditionRefs(sc.Condition, ep)
		default:
			c.unknownField(e, path, "success_criteria", []string{"steps", "condition"})
		}
	}
	if len(sc.Only) > 0 && len(sc.Ignore) > 0 {
		c.errorf(v, join(path, "steps"), "", "has both only and ignore: use one")
	}
	return sc
}

// checkParallelMode checks the dependency graph of a parallel-mode pipeline.
func (c *compiler) checkParallelMode() {
	anyDeps := false
	c.p.Walk(func(s *Step) bool {
		if !s.When.Steps.IsZero() {
			anyDeps = true
		}
		return true
	})
	if !anyDeps && len(c.p.Steps) > 1 {
		c.warnf(c.modeNode, "mode", "parallel", "has no step with when.steps: every step starts at once")
	}
	// Cycle detection, depth first over when.steps edges.
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(name string) bool
	visit = func(name string) bool {
		color[name] = grey
		stack = append(stack, name)
		s := c.names[name]
		for _, d := range s.When.Steps.Deps {
			if _, ok := c.names[d.Name]; !ok || d.Name == name {
				continue
			}
			switch color[d.Name] {
			case grey:
				i := slices.Index(stack, d.Name)
				cycle := append(append([]string(nil), stack[i:]...), d.Name)
				c.errorf(&yaml.Node{Line: c.names[d.Name].Line, Column: 1}, join(c.names[d.Name].Path, "when.steps"), "", "forms a cycle: %s; no step of a cycle can ever start", strings.Join(cycle, " → "))
				return false
			case white:
				if !visit(d.Name) {
					return false
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[name] = black
		return true
	}
	names := make([]string, 0, len(c.names))
	for n := range c.names {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return c.names[names[i]].Line < c.names[names[j]].Line })
	for _, n := range names {
		if color[n] == white && !visit(n) {
			return
		}
	}
}
