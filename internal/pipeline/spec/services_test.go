package spec

import (
	"strings"
	"testing"
	"time"
)

func TestServicesCompile(t *testing.T) {
	p, err := Parse([]byte(`version: '1.0'
services:
  name: db
  composition:
    postgres:
      image: postgres:16
      environment: [POSTGRES_PASSWORD=x]
      ports: [5432, "8080:80/tcp"]
steps:
  tests:
    image: busybox
    pull_policy: ifnotpresent
    commands: [nc -z web 8080]
    services:
      composition:
        web: {image: 'app:${{CF_SHORT_REVISION}}', command: [serve, --port, '8080']}
      readiness:
        image: busybox
        commands: [nc -z web 8080]
        timeoutSeconds: 30
        periodSeconds: 2
  more:
    image: busybox
    commands: [true]
    services: [db]
`))
	if err != nil {
		t.Fatal(err)
	}
	root := p.Services
	if root == nil || root.Name != "db" || len(root.Composition) != 1 || root.Composition[0].Image != "postgres:16" ||
		len(root.Composition[0].Ports) != 2 || root.Composition[0].Ports[1] != 80 || root.Composition[0].Env[0].Name != "POSTGRES_PASSWORD" {
		t.Errorf("root services = %+v", root)
	}
	st := p.Step("tests")
	if st.PullPolicy != "IfNotPresent" {
		t.Errorf("pull_policy = %q", st.PullPolicy)
	}
	s := st.Services
	if s == nil || len(s.Composition) != 1 || s.Composition[0].Name != "web" || strings.Join(s.Composition[0].Cmd, " ") != "serve --port 8080" ||
		s.Readiness == nil || s.Readiness.Timeout.Duration != 30*time.Second || s.Readiness.Period.Duration != 2*time.Second {
		t.Errorf("step services = %+v (readiness %+v)", s, s.Readiness)
	}
	if refs := p.Step("more").Services; refs == nil || len(refs.Refs) != 1 || refs.Refs[0] != "db" {
		t.Errorf("more services = %+v", refs)
	}
}

func TestServicesErrors(t *testing.T) {
	for yaml, want := range map[string]string{
		"    services: {composition: {web: {ports: [80]}}}\n":                     "steps.s.services.composition.web.image: is missing",
		"    services: {composition: {web: {image: x, ports: [99999]}}}\n":        `steps.s.services.composition.web.ports[0]: "99999" is not a port`,
		"    services: {composition: {web: {image: x, volumes: [a]}}}\n":          "steps.s.services.composition.web.volumes: is not a field of a service",
		"    services: {composition: {web: {image: x}}, readiness: {image: y}}\n": "steps.s.services.readiness.commands: is missing",
		"    services: {readiness: {image: y, commands: [true]}}\n":               "steps.s.services.composition: is missing",
		"    pull_policy: sometimes\n":                                            `steps.s.pull_policy: "sometimes" is not a pull policy: use Always, IfNotPresent or Never`,
	} {
		_, err := Parse([]byte("version: '1.0'\nsteps:\n  s:\n    image: busybox\n    commands: [true]\n" + yaml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", yaml, err, want)
		}
	}
}
