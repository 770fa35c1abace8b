package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Composition step types: Codefresh's docker-compose-like compositions, run on the container
// engine with the machinery of service containers (see Services).
const (
	// TypeComposition starts the composition's services on a network of their own, runs the
	// candidates there one after the other, and removes everything; the step's result is the
	// candidates' (the first that fails fails the step, with its exit code).
	TypeComposition StepType = "composition"
	// TypeLaunchComposition starts the composition's services and leaves them running until the
	// build ends; the steps after it join their network and reach them by name.
	TypeLaunchComposition StepType = "launch-composition"
)

// Composition is what a composition or launch-composition step runs.
type Composition struct {
	// Services are the composition's services, in written order.
	Services []Service `json:"services"`
	// Candidates are the containers a composition step runs on the services' network.
	Candidates []Service `json:"candidates,omitempty"`
	// Variables are composition_variables: put into the composition where it writes ${NAME} or
	// $NAME, and set in every container's environment.
	Variables []EnvVar `json:"variables,omitempty"`
	// EnvironmentName (launch-composition) names the running composition; a later
	// launch-composition of the same build with the same name replaces it.
	EnvironmentName string `json:"environmentName,omitempty"`
	// EntryPoint (launch-composition) is the composition's main service.
	EntryPoint string `json:"entryPoint,omitempty"`
}

// composeVersions are the docker-compose file versions Codefresh understands.
var composeVersions = []string{"2", "3", "2.0", "3.0"}

var composeFields = []string{"version", "services"}

var composeServiceFields = []string{"image", "environment", "ports", "command", "entrypoint", "working_dir", "volumes", "depends_on", "links", "expose"}

// composeIgnored are compose service fields Freshet accepts and does not need.
var composeIgnored = map[string]string{
	"depends_on": "services start in the order written, each before the candidates",
	"links":      "every service reaches the others by name on the composition's network",
	"expose":     "every port of a service is reachable on the composition's network",
}

// compileCompositionField reads a step's composition: an inline composition ({version,
// services}). A name or a file path is refused: Freshet stores no compositions and reads no
// compose file at run time.
func (st *stepCompile) compileCompositionField(f kv, fp string) {
	c := st.c
	comp := st.composition()
	v := f.val
	if v != nil && v.Kind == yaml.ScalarNode && !isNull(v) {
		s, _ := c.text(v, fp)
		if strings.HasSuffix(s, ".yml") || strings.HasSuffix(s, ".yaml") || strings.Contains(s, "/") {
			c.errorf(v, fp, s, "is a path to a compose file, which Freshet does not read at run time: write the composition inline ({version: '2', services: {…}})")
		} else {
			c.errorf(v, fp, s, "names a composition stored in Codefresh; Freshet stores none: write the composition inline ({version: '2', services: {…}})")
		}
		st.compositionBad = true
		return
	}
	if !c.mapping(v, fp, "an inline composition: a mapping with version and services") {
		st.compositionBad = true
		return
	}
	for _, e := range c.entries(v, fp) {
		ep := join(fp, e.name)
		switch e.name {
		case "version":
			if s, ok := c.str(e.val, ep); ok && !slices.Contains(composeVersions, s) {
				c.errorf(e.val, ep, s, "is not a compose version Codefresh understands: use '2' or '3'")
			}
		case "services":
			comp.Services = st.compileComposeServices(e.val, ep, false)
			if len(comp.Services) == 0 && !isNull(e.val) && e.val.Kind == yaml.MappingNode && len(e.val.Content) == 0 {
				c.errorf(e.val, ep, "", "is empty: a composition needs at least one service")
			}
		case "volumes", "networks":
			c.errorf(e.key, ep, "", "is not supported: a composition's services share one network; add_flow_volume_to_composition mounts the build's workspace in them")
		default:
			c.unknownField(e, fp, "a composition", composeFields)
		}
	}
	if comp.Services == nil && !st.compositionBad {
		c.errorf(v, join(fp, "services"), "", "is missing: a composition needs services (NAME: {image: …})")
		st.compositionBad = true
	}
}

func (st *stepCompile) composition() *Composition {
	if st.s.Composition == nil {
		st.s.Composition = &Composition{}
	}
	return st.s.Composition
}

// compileComposeServices reads a mapping of compose services (or of composition candidates).
func (st *stepCompile) compileComposeServices(v *yaml.Node, path string, candidates bool) []Service {
	c := st.c
	what := "a service"
	if candidates {
		what = "a candidate"
	}
	if !c.mapping(v, path, "a mapping of names to "+what+"s ({image, command, environment})") {
		return nil
	}
	out := c.serviceEntries(v, path, what, what+": a mapping with image (and command, environment)", func(svc *Service, f kv, fp, sp string) {
		switch f.name {
		case "command":
			svc.Cmd = c.composeCommand(f.val, fp)
		case "entrypoint":
			svc.EntryPoint = c.composeCommand(f.val, fp)
		case "working_dir":
			svc.WorkingDir, _ = c.text(f.val, fp)
		case "volumes":
			svc.Volume = c.composeVolumes(f.val, fp)
		case "build":
			c.errorf(f.key, fp, "", "is not supported: build the image in a build step and give it as image (image: ${{BUILD_STEP_NAME}})")
		default:
			if why := composeIgnored[f.name]; why != "" {
				c.warnf(f.key, fp, "", "is not used by Freshet: %s", why)
				return
			}
			c.unknownField(f, sp, what, composeServiceFields)
		}
	})
	if out == nil {
		out = []Service{}
	}
	return out
}

// composeCommand reads a compose command or entrypoint: a list of arguments, or a string split
// into arguments as a shell splits words (quotes and backslashes; nothing is expanded).
func (c *compiler) composeCommand(v *yaml.Node, path string) []string {
	if v != nil && v.Kind == yaml.ScalarNode && !isNull(v) {
		s, ok := c.str(v, path)
		if !ok {
			return nil
		}
		words, err := splitWords(s)
		if err != nil {
			c.errorf(v, path, s, "%s", err.Error())
			return nil
		}
		return words
	}
	out, _ := c.strList(v, path, false)
	return out
}

// splitWords splits s into words as a POSIX shell does, without expanding anything.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("has an unterminated ' quote: close it")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case ch == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
					cur.WriteByte(s[i])
					continue
				}
				if s[i] == '"' {
					closed = true
					break
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, fmt.Errorf("has an unterminated \" quote: close it")
			}
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// flowVolumeRef is the one volume a composition may mount: the build's workspace.
var flowVolumeRef = regexp.MustCompile(`^\$\{\{CF_VOLUME_NAME\}\}:(/[^:]*)$`)

// composeVolumes reads a service's volumes: only ${{CF_VOLUME_NAME}}:PATH (the build's
// workspace at PATH) can be mounted.
func (c *compiler) composeVolumes(v *yaml.Node, path string) string {
	items, _ := c.textList(v, path, false)
	mount := ""
	for i, it := range items {
		m := flowVolumeRef.FindStringSubmatch(it)
		if m == nil {
			c.errorf(v, index(path, i), it, "is not a volume Freshet mounts: only the build's workspace can be, as ${{CF_VOLUME_NAME}}:/ABSOLUTE/PATH (or set add_flow_volume_to_composition: true)")
			continue
		}
		mount = m[1]
	}
	return mount
}

// composeVar matches $NAME and ${NAME} in a composition (compose's variable substitution).
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// substitute puts composition_variables into s where it writes ${NAME} or $NAME; other
// references stay as written.
func substitute(s string, vars []EnvVar) string {
	if len(vars) == 0 || !strings.Contains(s, "$") {
		return s
	}
	return composeVar.ReplaceAllStringFunc(s, func(ref string) string {
		if strings.HasPrefix(ref, "${{") {
			return ref
		}
		name := strings.Trim(ref, "${}")
		for i := len(vars) - 1; i >= 0; i-- {
			if vars[i].Name == name {
				return vars[i].Value
			}
		}
		return ref
	})
}

// finishComposition checks a composition step once every field is read and applies
// composition_variables and add_flow_volume_to_composition.
func (st *stepCompile) finishComposition(e kv) {
	c, s := st.c, st.s
	if !st.compositionSet {
		c.errorf(e.key, join(s.Path, "composition"), "", "is missing: a %s step needs composition (an inline {version: '2', services: {…}})", s.Type)
		return
	}
	comp := s.Composition
	if comp == nil || st.compositionBad {
		return
	}
	if s.Type == TypeComposition && len(comp.Candidates) == 0 && !st.candidatesSet {
		c.errorf(e.key, join(s.Path, "composition_candidates"), "", "is missing: a composition step needs a candidate (NAME: {image, command}); its exit code is the step's result")
	}
	names := map[string]bool{}
	for _, svc := range slices.Concat(comp.Services, comp.Candidates) {
		if names[svc.Name] {
			c.errorf(e.key, join(s.Path, "composition_candidates."+svc.Name), svc.Name, "is also a service of the composition: give the candidate another name")
		}
		names[svc.Name] = true
	}
	if comp.EntryPoint != "" && !slices.ContainsFunc(comp.Services, func(v Service) bool { return v.Name == comp.EntryPoint }) {
		svcNames := make([]string, len(comp.Services))
		for i, v := range comp.Services {
			svcNames[i] = v.Name
		}
		c.errorf(e.key, join(s.Path, "entry_point"), comp.EntryPoint, "is not a service of the composition: use %s", choices(svcNames...))
	}
	apply := func(list []Service, candidates bool) {
		for i := range list {
			v := &list[i]
			v.Image = substitute(v.Image, comp.Variables)
			v.WorkingDir = substitute(v.WorkingDir, comp.Variables)
			for j := range v.Cmd {
				v.Cmd[j] = substitute(v.Cmd[j], comp.Variables)
			}
			for j := range v.EntryPoint {
				v.EntryPoint[j] = substitute(v.EntryPoint[j], comp.Variables)
			}
			for j := range v.Env {
				v.Env[j].Value = substitute(v.Env[j].Value, comp.Variables)
			}
			env := slices.Clone(comp.Variables)
			if candidates {
				env = append(env, s.Env...) // the step's environment is its candidates'
			}
			v.Env = append(env, v.Env...)
			if st.flowVolume && v.Volume == "" && !candidates {
				v.Volume = CFVolumePath
			}
		}
	}
	apply(comp.Services, false)
	apply(comp.Candidates, true)
	s.Env = nil
}

// CFVolumePath is where Codefresh mounts the build's workspace (CF_VOLUME_PATH).
const CFVolumePath = "/codefresh/volume"

// compositionField compiles the fields of composition and launch-composition steps.
func (st *stepCompile) compositionField(f kv, fp string) {
	c := st.c
	switch f.name {
	case "composition":
		st.compositionSet = true
		st.compileCompositionField(f, fp)
	case "composition_candidates":
		st.candidatesSet = true
		cands := st.compileComposeServices(f.val, fp, true)
		st.composition().Candidates = cands
		if cands != nil && len(cands) == 0 && f.val.Kind == yaml.MappingNode {
			c.errorf(f.val, fp, "", "is empty: a composition step needs a candidate (NAME: {image, command})")
		}
	case "composition_variables":
		st.composition().Variables = c.compileEnv(f.val, fp)
	case "add_flow_volume_to_composition":
		st.flowVolume, _ = c.boolean(f.val, fp)
	case "environment_name":
		st.composition().EnvironmentName, _ = c.text(f.val, fp)
	}
}

// typePushTag is Codefresh's old name of the push step type; it compiles as TypePush.
const typePushTag = "push-tag"
