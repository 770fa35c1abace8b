package workflows

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzDecodeControllerConfig: workflow-controller-configmap's images and workflowDefaults
// (written by the runtime's operator, or anyone who may write ConfigMaps in its namespace) are
// refused with an error naming the key, or give images that parse as references with an
// entrypoint or a cmd, at most maxImageEntries, and defaults whose deadline is none or positive
// and that apply under a Workflow's spec.
func FuzzDecodeControllerConfig(f *testing.F) {
	for _, s := range [][2]string{
		{"docker/whalesay:latest:\n  cmd: [cowsay]\n", "spec:\n  activeDeadlineSeconds: 60\n"},
		{"alpine:3: {entrypoint: [/bin/sh], cmd: [-c, true]}", "metadata: {labels: {a: b}}\nspec: {}"},
		{"x: {command: [y]}", "spec: {parallelism: 2}"}, {"[]", "spec: {activeDeadlineSeconds: -1}"},
		{"'reg.example:5000/a/b@sha256:0000000000000000000000000000000000000000000000000000000000000000': {cmd: [a]}", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, images, defaults string) {
		got, d, err := DecodeControllerConfig(map[string]string{ControllerConfigMapImagesKey: images, ControllerConfigMapDefaultsKey: defaults}, "cm")
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("error %v does not name a field", err)
			}
			return
		}
		if len(got) > maxImageEntries {
			t.Fatalf("%d images", len(got))
		}
		for ref, ic := range got {
			if _, err := name.ParseReference(ref); err != nil || len(ic.Entrypoint)+len(ic.Cmd) == 0 {
				t.Fatalf("accepted %q: %+v (%v)", ref, ic, err)
			}
		}
		if d != nil {
			if d.Deadline != nil && *d.Deadline <= 0 {
				t.Fatalf("deadline %d", *d.Deadline)
			}
			// The defaults apply under any Workflow's spec and leave it a spec.
			if _, err := d.Apply(&WorkflowSpec{Entrypoint: "main", Templates: []Template{{Name: "main"}}}); err != nil {
				t.Fatalf("apply: %v", err)
			}
		}
	})
}

// FuzzDockerConfigAuth: a pull secret's .dockerconfigjson or .dockercfg (anyone who may write
// Secrets in the Workflow's namespace) gives credentials only for the registry asked about (a
// key naming that registry), or is refused as invalid.
func FuzzDockerConfigAuth(f *testing.F) {
	f.Add([]byte(`{"auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYXNz"}}}`), false, "index.docker.io")
	f.Add([]byte(`{"reg.example:5000": {"username": "u", "password": "p"}}`), true, "reg.example:5000")
	f.Add([]byte(`{"auths": {"reg.example": {"auth": "%%%"}}}`), false, "reg.example")
	f.Add([]byte(`{"auths": {"http://Reg.Example/path": {"identitytoken": "t"}}}`), false, "reg.example")
	f.Fuzz(func(t *testing.T, data []byte, legacy bool, registry string) {
		_, ok, err := DockerConfigAuth(data, legacy, registry)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || ok {
				t.Fatalf("error %v (ok %v)", err, ok)
			}
			return
		}
		if !ok {
			return
		}
		var auths map[string]json.RawMessage
		if legacy {
			_ = json.Unmarshal(data, &auths)
		} else {
			var cfg struct {
				Auths map[string]json.RawMessage `json:"auths"`
			}
			_ = json.Unmarshal(data, &cfg)
			auths = cfg.Auths
		}
		for k := range auths {
			if registryHost(k) == registryHost(registry) {
				return
			}
		}
		t.Fatalf("credentials for %q from keys %v", registry, auths)
	})
}
