package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	xmessage "golang.org/x/text/message"
	"gopkg.in/yaml.v3"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// TypePlugin is the type of a typed plugin step (`type: NAME` or `type: NAME:VERSION`, a step
// type of the operator's step catalogue) once resolved: its definition's steps run one after
// the other as freestyle steps, with the step's arguments in their environment.
const TypePlugin StepType = "plugin"

// PluginStep is a typed plugin step: the step type it names and its arguments.
type PluginStep struct {
	// Type is the type as written: NAME or NAME:VERSION.
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"` // the definition's metadata.version
	// Args are the validated arguments, with the schema's defaults for the ones not given, in
	// the order written (defaults after, by name). Values are text (non-strings as JSON) and
	// may hold ${{VAR}} references; they reach the steps as environment variables and as
	// ${{NAME}} variables, never as script text.
	Args []EnvVar `json:"arguments,omitempty"`
	// Steps are the definition's steps, freestyle, run in order.
	Steps []*Step `json:"steps"`
}

// StepTypeDef is one step type of a step catalogue: a step.yaml written as Codefresh's steps
// marketplace writes them (metadata, spec.arguments as a JSON Schema, spec.steps).
type StepTypeDef struct {
	Name        string
	Version     string
	Description string
	schema      *jsonschema.Schema
	props       []string       // the arguments the schema declares
	defaults    map[string]any // the declared arguments' defaults
	steps       []*Step
}

// StepTypes resolves typed plugin steps while a pipeline compiles.
type StepTypes interface {
	// StepType returns the definition of step type name at version ("" when the pipeline
	// names none). It returns an error wrapping ErrStepTypeNotFound when the catalogue has no
	// such step type (or version), and any other error when the catalogue cannot be read.
	StepType(name, version string) (*StepTypeDef, error)
}

// ErrStepTypeNotFound says a step catalogue has no step type of that name (or version).
var ErrStepTypeNotFound = errors.New("step type not found")

// Options change how a pipeline compiles.
type Options struct {
	// StepTypes resolves typed plugin steps; nil: the pipeline may have none.
	StepTypes StepTypes
}

// ParseWith is Parse with typed plugin steps resolved through o.StepTypes.
func ParseWith(data []byte, o Options) (*Pipeline, error) { return parse(data, o) }

// LintWith is Lint with typed plugin steps resolved through o.StepTypes.
func LintWith(data []byte, o Options) []Issue { return lint(data, o) }

// StepTypeSet is a set of step type definitions keyed by the type as a pipeline writes it
// (NAME or NAME:VERSION): what a control plane resolved, sent to the runner with the build.
type StepTypeSet map[string]*StepTypeDef

// StepType looks name (and version) up in the set.
func (s StepTypeSet) StepType(name, version string) (*StepTypeDef, error) {
	key := name
	if version != "" {
		key += ":" + version
	}
	if d, ok := s[key]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrStepTypeNotFound, key)
}

// ParseStepTypeSet parses the step.yaml texts a control plane resolved, keyed as StepTypeSet.
func ParseStepTypeSet(texts map[string]string) (StepTypeSet, error) {
	set := StepTypeSet{}
	for key, text := range texts {
		d, err := ParseStepType([]byte(text))
		if err != nil {
			return nil, fmt.Errorf("step type %s: %w", key, err)
		}
		set[key] = d
	}
	return set, nil
}

// PluginRefs lists the step types a pipeline names that are not built in (NAME or
// NAME:VERSION as written), each once, in written order: what a control plane resolves in its
// step catalogue before it compiles the pipeline with ParseWith.
func PluginRefs(data []byte) []string {
	r := &refRecorder{}
	compile(data, Options{StepTypes: r})
	return r.refs
}

type refRecorder struct{ refs []string }

func (r *refRecorder) StepType(name, version string) (*StepTypeDef, error) {
	key := name
	if version != "" {
		key += ":" + version
	}
	if !slices.Contains(r.refs, key) {
		r.refs = append(r.refs, key)
	}
	return nil, fmt.Errorf("%w: %s", ErrStepTypeNotFound, key)
}

// stepTypeName is what a catalogue's step type may be called: one or two segments (an owner
// and a name), each of lower-case letters, digits, '.', '_' and '-'.
var stepTypeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}(/[a-z0-9][a-z0-9._-]{0,62})?$`)

// stepTypeVersion is what a step type's version may be.
var stepTypeVersion = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)

// SplitStepType splits NAME[:VERSION] and checks both parts; the error says what is wrong.
func SplitStepType(t string) (name, version string, err error) {
	name, version, _ = strings.Cut(t, ":")
	if !stepTypeName.MatchString(name) {
		return "", "", fmt.Errorf("is not a step type name: use lower-case letters, digits, '.', '_' and '-', as NAME or OWNER/NAME, optionally with :VERSION")
	}
	if strings.Contains(t, ":") && !stepTypeVersion.MatchString(version) {
		return "", "", fmt.Errorf("has a version that is not one: write NAME:VERSION with a version of letters, digits, '.', '_', '+' and '-' (such as 1.2.0)")
	}
	return name, version, nil
}

// CatalogPaths are the files of a step catalogue (a git repository) where step type name at
// version may be defined, in the order to try: NAME/VERSION/step.yaml, then NAME/step.yaml
// (whose metadata.version must then be VERSION). Without a version: NAME/step.yaml.
func CatalogPaths(name, version string) []string {
	if version == "" {
		return []string{name + "/step.yaml"}
	}
	return []string{name + "/" + version + "/step.yaml", name + "/step.yaml"}
}

// hookPlugin marks the steps of a step type: compiled as hook steps are (freestyle, no stage,
// when, retry or hooks of their own).
const hookPlugin = "plugin"

// pluginFields are the fields of a typed plugin step.
var pluginFields = concat(commonFields, "retry", "timeout", "hooks", "arguments")

// resolvePlugin resolves a type that is not built in. It reports the problem and returns nil
// when it cannot.
func (c *compiler) resolvePlugin(v *yaml.Node, path, t string) *StepTypeDef {
	if c.opts.StepTypes == nil {
		if strings.ContainsAny(t, ":/") {
			c.errorf(v, path, t, "is a typed plugin step, and this server has no step catalogue (the operator sets --step-catalog-url): use %s", typeChoices())
		} else {
			c.errorf(v, path, t, "is not a step type: use %s", typeChoices())
		}
		return nil
	}
	name, version, err := SplitStepType(t)
	if err != nil {
		c.errorf(v, path, t, "%s", err.Error())
		return nil
	}
	def, err := c.opts.StepTypes.StepType(name, version)
	switch {
	case errors.Is(err, ErrStepTypeNotFound):
		c.errorf(v, path, t, "is not a step type: use %s, or a step type of the step catalogue", typeChoices())
		return nil
	case err != nil:
		c.errorf(v, path, t, "could not be resolved in the step catalogue: %v", err)
		return nil
	}
	return def
}

// compilePluginStep compiles a typed plugin step: its common fields and its arguments,
// validated against the step type's schema.
func (c *compiler) compilePluginStep(s *Step, e kv, fields []kv, def *StepTypeDef, written string, depth int) bool {
	what := fmt.Sprintf("a %s step", written)
	st := &stepCompile{c: c, s: s, depth: depth}
	var args *kv
	for i, f := range fields {
		if c.halted {
			return false
		}
		fp := join(s.Path, f.name)
		switch {
		case f.name == "arguments":
			args = &fields[i]
		case slices.Contains(pluginFields, f.name):
			st.field(f, fp)
		case ignoredEverywhere[f.name] != "":
			c.warnf(f.key, fp, "", "is not used by Freshet: %s", ignoredEverywhere[f.name])
		case f.name == "hooks":
		default:
			if slices.Contains(def.props, f.name) {
				c.errorf(f.key, fp, "", "is an argument of step type %s: write it under arguments", def.Name)
				continue
			}
			c.unknownField(f, s.Path, what, pluginFields)
		}
	}
	ps := &PluginStep{Type: written, Name: def.Name, Version: def.Version}
	ps.Args = c.pluginArgs(def, args, s.Path, e.key)
	for _, in := range def.steps {
		cp := *in
		cp.Path = join(join(s.Path, "steps"), in.Name)
		cp.Env = slices.Clone(in.Env)
		ps.Steps = append(ps.Steps, &cp)
	}
	s.Plugin = ps
	return true
}

// pluginArgs validates a plugin step's arguments against its step type's schema.
func (c *compiler) pluginArgs(def *StepTypeDef, args *kv, stepPath string, stepKey *yaml.Node) []EnvVar {
	path := join(stepPath, "arguments")
	given := map[string]any{}
	keys := map[string]*yaml.Node{}
	var order []string
	at := stepKey
	if args != nil {
		at = args.key
		if !isNull(args.val) && c.mapping(args.val, path, "a mapping of the step type's arguments") {
			for _, a := range c.entries(args.val, path) {
				ap := join(path, a.name)
				var v any
				if err := a.val.Decode(&v); err != nil {
					c.errorf(a.key, ap, "", "cannot be read: %v", err)
					continue
				}
				b, err := json.Marshal(v)
				if err != nil {
					c.errorf(a.key, ap, "", "is not a JSON value (a mapping's keys must be strings): %v", err)
					continue
				}
				jv, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
				if err != nil {
					c.errorf(a.key, ap, "", "is not a JSON value: %v", err)
					continue
				}
				given[a.name], keys[a.name] = jv, a.key
				order = append(order, a.name)
			}
		}
	}
	if def.schema != nil {
		err := def.schema.Validate(map[string]any(given))
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			c.schemaErrors(def, ve, path, at, keys)
		} else if err != nil {
			c.errorf(at, path, "", "cannot be validated: %v", err)
		}
	} else if len(given) > 0 {
		c.errorf(at, path, "", "are given, and step type %s takes none", def.Name)
	}
	var out []EnvVar
	add := func(name string, v any) {
		if !envName.MatchString(name) {
			c.errorf(keys[name], join(path, name), name, "is not an argument name Freshet can pass: arguments reach the steps as environment variables (letters, digits and _, not starting with a digit)")
			return
		}
		out = append(out, EnvVar{Name: name, Value: argText(v)})
	}
	for _, name := range order {
		add(name, given[name])
	}
	var defs []string
	for name := range def.defaults {
		if _, ok := given[name]; !ok {
			defs = append(defs, name)
		}
	}
	sort.Strings(defs)
	for _, name := range defs {
		add(name, def.defaults[name])
	}
	return out
}

// argText is an argument's value as an environment variable holds it: a string as it is,
// anything else as JSON.
func argText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

var schemaPrinter = xmessage.NewPrinter(language.English)

// schemaErrors reports a schema validation failure, one problem per failed keyword, each on
// the argument it concerns.
func (c *compiler) schemaErrors(def *StepTypeDef, ve *jsonschema.ValidationError, path string, at *yaml.Node, keys map[string]*yaml.Node) {
	var leaves []*jsonschema.ValidationError
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, ce := range e.Causes {
			walk(ce)
		}
	}
	walk(ve)
	args := strings.Join(def.props, ", ")
	if args == "" {
		args = "none"
	}
	for _, l := range leaves {
		node, field := at, path
		if len(l.InstanceLocation) > 0 {
			field = join(path, strings.Join(l.InstanceLocation, "."))
			if k := keys[l.InstanceLocation[0]]; k != nil {
				node = k
			}
		}
		switch k := l.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				c.errorf(node, join(field, m), "", "is missing: step type %s requires it (its arguments: %s)", def.Name, args)
			}
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				n := node
				if kn := keys[p]; kn != nil && len(l.InstanceLocation) == 0 {
					n = kn
				}
				c.errorf(n, join(field, p), "", "is not an argument of step type %s: its arguments are %s", def.Name, args)
			}
		default:
			c.errorf(node, field, "", "%s (the schema of step type %s)", l.ErrorKind.LocalizedString(schemaPrinter), def.Name)
		}
	}
}

// Step type documents.
const (
	stepTypeKind = "step-type"
	// maxStepTypeSize bounds a step.yaml.
	maxStepTypeSize = 256 << 10
)

var stepTypeRootFields = []string{"version", "kind", "metadata", "spec"}
var stepTypeSpecFields = []string{"arguments", "steps", "returns", "delimiters", "stepsTemplate"}

// metadataFields are the metadata a step.yaml may carry; only name, version and description
// are read.
var metadataFields = []string{"name", "version", "title", "description", "isPublic", "official", "tags", "icon", "maintainers",
	"categories", "examples", "latest", "stage", "sources", "created_at", "updated_at", "accountId", "id"}

// ParseStepType parses a step catalogue's step.yaml. On failure the error joins one *Error per
// problem, naming the line and the field path; it wraps errdefs.ErrInvalid.
func ParseStepType(data []byte) (*StepTypeDef, error) {
	if len(data) > maxStepTypeSize {
		return nil, fmt.Errorf("the step type is %d bytes: the limit is %d: %w", len(data), maxStepTypeSize, errdefs.ErrTooLarge)
	}
	c := newCompiler(Options{})
	def := c.stepType(data)
	var errs []error
	for _, pr := range c.probs {
		if pr.Severity == SeverityError {
			errs = append(errs, &Error{Line: pr.Line, Column: pr.Column, FieldError: errdefs.FieldError{Field: pr.Field, Value: pr.value, Reason: pr.reason}})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return def, nil
}

func (c *compiler) stepType(data []byte) *StepTypeDef {
	if line, col, msg := badText(data); msg != "" {
		c.probs = append(c.probs, problem{Issue: Issue{Line: line, Column: col, Message: msg, Severity: SeverityError}, reason: msg})
		return nil
	}
	root, ok := c.decode(data)
	if !ok {
		return nil
	}
	root = c.deref(root)
	if !c.mapping(root, "", "a step type: a mapping of version, kind, metadata and spec") {
		return nil
	}
	def := &StepTypeDef{}
	var spec *kv
	fields := c.entries(root, "")
	for i, e := range fields {
		switch e.name {
		case "version":
			c.str(e.val, "version")
		case "kind":
			if k, ok := c.str(e.val, "kind"); ok && k != stepTypeKind {
				c.errorf(e.val, "kind", k, "is not a step type's kind: write kind: %s", stepTypeKind)
			}
		case "metadata":
			c.stepTypeMetadata(e.val, def)
		case "spec":
			spec = &fields[i]
		default:
			c.unknownField(e, "", "a step type", stepTypeRootFields)
		}
	}
	if def.Name == "" {
		c.errorf(root, "metadata.name", "", "is missing: a step type needs a name")
	}
	if spec == nil {
		c.errorf(root, "spec", "", "is missing: a step type needs spec.steps")
		return def
	}
	c.stepTypeSpec(spec.val, def)
	return def
}

func (c *compiler) stepTypeMetadata(v *yaml.Node, def *StepTypeDef) {
	if !c.mapping(v, "metadata", "a mapping with name, version and description") {
		return
	}
	for _, e := range c.entries(v, "metadata") {
		ep := join("metadata", e.name)
		switch e.name {
		case "name":
			if s, ok := c.str(e.val, ep); ok {
				if !stepTypeName.MatchString(s) {
					c.errorf(e.val, ep, s, "is not a step type name: use lower-case letters, digits, '.', '_' and '-', as NAME or OWNER/NAME")
					continue
				}
				def.Name = s
			}
		case "version":
			if s, ok := c.str(e.val, ep); ok {
				if !stepTypeVersion.MatchString(s) {
					c.errorf(e.val, ep, s, "is not a version: use letters, digits, '.', '_', '+' and '-' (such as 1.2.0)")
					continue
				}
				def.Version = s
			}
		case "description":
			def.Description, _ = c.str(e.val, ep)
		default:
			if !slices.Contains(metadataFields, e.name) {
				c.unknownField(e, "metadata", "a step type's metadata", metadataFields)
			}
		}
	}
}

func (c *compiler) stepTypeSpec(v *yaml.Node, def *StepTypeDef) {
	if !c.mapping(v, "spec", "a mapping with arguments and steps") {
		return
	}
	var stepsSet bool
	for _, e := range c.entries(v, "spec") {
		ep := join("spec", e.name)
		switch e.name {
		case "arguments":
			c.stepTypeSchema(e.val, ep, def)
		case "steps":
			stepsSet = true
			if !c.mapping(e.val, ep, "a mapping of step names to freestyle steps") || len(e.val.Content) == 0 {
				if e.val != nil && e.val.Kind == yaml.MappingNode {
					c.errorf(e.key, ep, "", "is empty: a step type runs at least one step")
				}
				continue
			}
			def.steps = c.compileSteps(e.val, ep, 0, &hookCtx{kind: hookPlugin})
			for _, s := range def.steps {
				s.FailFast = true
			}
		case "stepsTemplate":
			stepsSet = true
			c.errorf(e.key, ep, "", "is not run by Freshet: a template puts argument values into the steps' text, where a value could become commands; write spec.steps and read the arguments as environment variables ($NAME) or ${{NAME}}")
		case "returns", "delimiters":
			// returns documents what the steps export (cf_export works as in any step);
			// delimiters only matter to stepsTemplate.
		default:
			c.unknownField(e, "spec", "a step type's spec", stepTypeSpecFields)
		}
	}
	if !stepsSet {
		c.errorf(v, "spec.steps", "", "is missing: a step type needs steps (freestyle steps: image and commands)")
	}
}

// noLoader refuses the $refs of a step type's schema to other documents: a schema is read from
// the catalogue and nothing else, no file and no URL.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: a step type's schema cannot refer to other documents", url)
}

// stepTypeSchema reads spec.arguments: a JSON Schema, as a JSON string (the marketplace's
// form) or as YAML.
func (c *compiler) stepTypeSchema(v *yaml.Node, path string, def *StepTypeDef) {
	var raw []byte
	switch {
	case isNull(v):
		return
	case v.Kind == yaml.ScalarNode:
		s, _ := c.str(v, path)
		raw = []byte(s)
	case v.Kind == yaml.MappingNode:
		var m any
		if err := v.Decode(&m); err != nil {
			c.errorf(v, path, "", "cannot be read: %v", err)
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			c.errorf(v, path, "", "is not a JSON Schema (a mapping's keys must be strings): %v", err)
			return
		}
		raw = b
	default:
		c.wrongKind(v, path, "a JSON Schema (a JSON string or a mapping)")
		return
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		c.errorf(v, path, "", "is not valid JSON: %v", err)
		return
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		c.errorf(v, path, "", "is not a JSON Schema object")
		return
	}
	jc := jsonschema.NewCompiler()
	jc.DefaultDraft(jsonschema.Draft7)
	jc.UseLoader(noLoader{})
	const loc = "freshet:step-type.json"
	if err := jc.AddResource(loc, doc); err != nil {
		c.errorf(v, path, "", "is not a JSON Schema: %v", err)
		return
	}
	sch, err := jc.Compile(loc)
	if err != nil {
		c.errorf(v, path, "", "is not a JSON Schema: %v", err)
		return
	}
	def.schema = sch
	def.defaults = map[string]any{}
	if props, ok := obj["properties"].(map[string]any); ok {
		for name, p := range props {
			def.props = append(def.props, name)
			if pm, ok := p.(map[string]any); ok {
				if d, ok := pm["default"]; ok {
					def.defaults[name] = d
				}
			}
		}
	}
	sort.Strings(def.props)
}

// ReadStepType finds step type name at version in a step catalogue through read, which
// returns a file of the catalogue (found false when there is none): the first of
// CatalogPaths that exists, parsed, whose metadata names name (and version, when one is
// asked). It returns the definition and its text. A catalogue without it is an error wrapping
// ErrStepTypeNotFound; a step.yaml that does not parse is an error naming the file.
func ReadStepType(name, version string, read func(path string) (data []byte, found bool, err error)) (*StepTypeDef, []byte, error) {
	for _, p := range CatalogPaths(name, version) {
		data, found, err := read(p)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			continue
		}
		def, err := ParseStepType(data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		if def.Name != name {
			return nil, nil, fmt.Errorf("%s: metadata.name is %q, not %q: %w", p, def.Name, name, errdefs.ErrInvalid)
		}
		if version != "" && def.Version != version {
			return nil, nil, fmt.Errorf("%w: %s:%s (the catalogue's %s is version %q)", ErrStepTypeNotFound, name, version, p, def.Version)
		}
		return def, data, nil
	}
	key := name
	if version != "" {
		key += ":" + version
	}
	return nil, nil, fmt.Errorf("%w: %s", ErrStepTypeNotFound, key)
}
