package spec

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Services are service containers (Codefresh's `services`): a composition of containers started
// on a network of their own before the steps they serve, each reachable there by its name, with
// an optional readiness check that must pass before the steps start. On the pipeline's root
// they serve every step of the build; on a freestyle step, that step.
type Services struct {
	// Name is the root composition's name (optional); steps may list it in their services.
	Name        string     `json:"name,omitempty"`
	Composition []Service  `json:"composition,omitempty"`
	Readiness   *Readiness `json:"readiness,omitempty"`
	// Refs are the names of root compositions a step lists (services: [NAME]); they serve
	// every step anyway.
	Refs []string `json:"refs,omitempty"`
}

// Service is one service container of a composition.
type Service struct {
	Name       string   `json:"name"`
	Image      string   `json:"image"`
	Env        []EnvVar `json:"environment,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
	EntryPoint []string `json:"entryPoint,omitempty"`
	Ports      []int    `json:"ports,omitempty"`
	PullPolicy string   `json:"pullPolicy,omitempty"`
	WorkingDir string   `json:"workingDir,omitempty"` // compositions: working_dir
	// Volume (compositions) is where the build's workspace is mounted; empty: it is not.
	Volume string `json:"volume,omitempty"`
}

// Readiness is a check run in a container of its own on the services' network, every Period
// until it exits 0, for at most Timeout after InitialDelay.
type Readiness struct {
	Image        string   `json:"image"`
	Commands     []string `json:"commands"`
	Timeout      Duration `json:"timeout,omitzero"`
	Period       Duration `json:"period,omitzero"`
	InitialDelay Duration `json:"initialDelay,omitzero"`
}

// Pull policies of pull_policy.
var pullPolicies = []string{"Always", "IfNotPresent", "Never"}

var serviceName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

// compilePullPolicy reads pull_policy.
func (c *compiler) compilePullPolicy(v *yaml.Node, path string) string {
	s, ok := c.str(v, path)
	if !ok || s == "" {
		return ""
	}
	for _, p := range pullPolicies {
		if strings.EqualFold(s, p) {
			return p
		}
	}
	c.errorf(v, path, s, "is not a pull policy: use %s", choices(pullPolicies...))
	return ""
}

// compileServices reads services: a mapping (name, composition, readiness) or, on a step, a
// list of root composition names.
func (c *compiler) compileServices(v *yaml.Node, path string, root bool) *Services {
	v = c.deref(v)
	if v == nil || isNull(v) {
		return nil
	}
	s := &Services{}
	if v.Kind == yaml.SequenceNode && !root {
		s.Refs, _ = c.strList(v, path, false)
		return s
	}
	want := "a mapping with composition (and readiness)"
	if !root {
		want += ", or a list of the pipeline's service names"
	}
	if !c.mapping(v, path, want) {
		return nil
	}
	valid := []string{"composition", "readiness"}
	if root {
		valid = append([]string{"name"}, valid...)
	}
	for _, e := range c.entries(v, path) {
		fp := join(path, e.name)
		switch {
		case e.name == "name" && root:
			s.Name, _ = c.str(e.val, fp)
		case e.name == "composition":
			s.Composition = c.compileComposition(e.val, fp)
		case e.name == "readiness":
			s.Readiness = c.compileReadiness(e.val, fp)
		default:
			c.unknownField(e, path, "services", valid)
		}
	}
	if len(s.Composition) == 0 {
		c.errorf(v, join(path, "composition"), "", "is missing or empty: list the service containers under composition (NAME: {image: …})")
	}
	return s
}

var serviceFields = []string{"image", "environment", "ports", "command", "cmd", "entrypoint", "entry_point", "pull_policy"}

func (c *compiler) compileComposition(v *yaml.Node, path string) []Service {
	v = c.deref(v)
	if v == nil || !c.mapping(v, path, "a mapping of service names to services ({image, environment, ports})") {
		return nil
	}
	return c.serviceEntries(v, path, "a service", "a service: a mapping with image (and environment, ports)", func(svc *Service, f kv, fp, sp string) {
		switch f.name {
		case "command", "cmd":
			svc.Cmd, _ = c.strList(f.val, fp, true)
		case "entrypoint", "entry_point":
			svc.EntryPoint, _ = c.strList(f.val, fp, true)
		case "pull_policy":
			svc.PullPolicy = c.compilePullPolicy(f.val, fp)
		default:
			c.unknownField(f, sp, "a service", serviceFields)
		}
	})
}

// serviceEntries reads v, a mapping of names to service containers (what names one in
// messages; shape says what an entry must be): each name is a host name, each entry a mapping
// with a required image; image, environment and ports are read here, every other field by field.
func (c *compiler) serviceEntries(v *yaml.Node, path, what, shape string, field func(svc *Service, f kv, fp, sp string)) []Service {
	var out []Service
	for _, e := range c.entries(v, path) {
		sp := join(path, e.name)
		if !serviceName.MatchString(e.name) {
			c.errorf(e.key, sp, e.name, "is not a service name: use letters, digits, _ . and -, starting with a letter or digit (the name is its host name)")
			continue
		}
		val := c.deref(e.val)
		if val == nil || !c.mapping(val, sp, shape) {
			continue
		}
		svc := Service{Name: e.name}
		bad := false
		for _, f := range c.entries(val, sp) {
			fp := join(sp, f.name)
			switch f.name {
			case "image":
				var ok bool
				if svc.Image, ok = c.text(f.val, fp); !ok {
					bad = true
				}
			case "environment":
				svc.Env = c.compileEnv(f.val, fp)
			case "ports":
				svc.Ports = c.compilePorts(f.val, fp)
			default:
				field(&svc, f, fp, sp)
			}
		}
		if svc.Image == "" && !bad { // a wrong image is reported already
			c.errorf(e.key, join(sp, "image"), "", "is missing: %s needs the image it runs", what)
			continue
		}
		out = append(out, svc)
	}
	return out
}

func (c *compiler) compilePorts(v *yaml.Node, path string) []int {
	v = c.deref(v)
	if v == nil || v.Kind != yaml.SequenceNode {
		c.wrongKind(v, path, "a list of port numbers")
		return nil
	}
	var out []int
	for i, item := range v.Content {
		ip := index(path, i)
		item = c.deref(item)
		if item == nil {
			continue
		}
		text := strings.TrimSuffix(strings.TrimSuffix(item.Value, "/tcp"), "/udp")
		if _, after, ok := strings.Cut(text, ":"); ok { // HOST:CONTAINER: the container's port counts
			text = after
		}
		var p int
		if _, err := fmt.Sscanf(text, "%d", &p); err != nil || p < 1 || p > 65535 || fmt.Sprint(p) != text {
			c.errorf(item, ip, item.Value, "is not a port: use a number from 1 to 65535")
			continue
		}
		out = append(out, p)
	}
	return out
}

var readinessFields = []string{"image", "commands", "timeoutSeconds", "periodSeconds", "initialDelaySeconds"}

func (c *compiler) compileReadiness(v *yaml.Node, path string) *Readiness {
	v = c.deref(v)
	if v == nil || !c.mapping(v, path, "a readiness check: a mapping with image and commands") {
		return nil
	}
	r := &Readiness{}
	badImage := false
	seconds := func(f kv, fp string, min int) Duration {
		n, ok := c.integer(f.val, fp)
		if !ok {
			return Duration{}
		}
		if n < min || n > 3600 {
			c.errorf(f.val, fp, fmt.Sprint(n), "is out of range: use %d to 3600 seconds", min)
			return Duration{}
		}
		return Duration{time.Duration(n) * time.Second}
	}
	for _, f := range c.entries(v, path) {
		fp := join(path, f.name)
		switch f.name {
		case "image":
			var ok bool
			if r.Image, ok = c.text(f.val, fp); !ok {
				badImage = true
			}
		case "commands":
			r.Commands = c.compileCommands(f.val, fp)
		case "timeoutSeconds":
			r.Timeout = seconds(f, fp, 1)
		case "periodSeconds":
			r.Period = seconds(f, fp, 1)
		case "initialDelaySeconds":
			r.InitialDelay = seconds(f, fp, 0)
		default:
			c.unknownField(f, path, "readiness", readinessFields)
		}
	}
	if r.Image == "" && !badImage { // a wrong image is reported already
		c.errorf(v, join(path, "image"), "", "is missing: the readiness check runs its commands in this image")
	}
	if len(r.Commands) == 0 {
		c.errorf(v, join(path, "commands"), "", "is missing: the commands that exit 0 once the services are ready")
	}
	return r
}
