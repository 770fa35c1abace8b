package render_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

// The jsonnet-guestbook shape of argocd-example-apps: a .jsonnet taking top-level arguments,
// reading external variables, importing a .libsonnet next to it and one from a library path.
var jsonnetRepo = map[string]string{
	"vendor/k.libsonnet": `{
  labels(name, extra):: { app: name } + extra,
}
`,
	"guestbook/util.libsonnet": `local k = import 'k.libsonnet';
{
  deployment(name, replicas, port, image, extra):: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: name, labels: k.labels(name, extra) },
    spec: {
      replicas: replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: k.labels(name, extra) },
        spec: { containers: [{ name: name, image: image, ports: [{ containerPort: port }] }] },
      },
    },
  },
  service(name, port):: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: name },
    spec: { ports: [{ port: port, targetPort: port }], selector: { app: name } },
  },
}
`,
	"guestbook/guestbook-ui.jsonnet": `local util = import 'util.libsonnet';
function(name, replicas=1, containerPort=80)
  [
    util.deployment(name, replicas, containerPort, std.extVar('image'), std.extVar('labels')),
    util.service(name, containerPort),
  ]
`,
	"guestbook/config.jsonnet": `{
  apiVersion: 'v1',
  kind: 'List',
  items: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-' + i } } for i in ['a', 'b']],
}
`,
	"guestbook/skipped.jsonnet": `error 'excluded: never evaluated'`,
	"guestbook/README.md":       "not a manifest",

	"broken/ok.jsonnet": "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ok' } }\n",
	"broken/lib.libsonnet": `{
  f(x)::
    if x > 2 then error 'replicas must be at most 2, got ' + x
    else x,
}
`,
	"broken/main.jsonnet": "local lib = import 'lib.libsonnet';\n{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { n: lib.f(3) } }\n",
	"syntax/main.jsonnet": "{\n  apiVersion: 'v1',\n  kind: 'ConfigMap'\n  metadata: {},\n}\n",
	"deep/main.jsonnet":   "local f(n) = if n == 0 then 0 else 1 + f(n - 1);\n{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { n: f(100000) } }\n",
	"escape/main.jsonnet": "local x = importstr '../../../../../../../etc/hostname';\n{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { x: x } }\n",
	"abs/main.jsonnet":    "local x = importstr '/etc/hostname';\n{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { x: x } }\n",
	"scalar/main.jsonnet": "'just a string'\n",
	"mixed/main.jsonnet":  "[{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }, 3]\n",
}

func TestJsonnetGuestbook(t *testing.T) {
	root, _, _ := checkout(t, jsonnetRepo)
	r := newRenderer(t, render.Options{})
	s := src("guestbook")
	s.Directory = &app.DirectorySource{
		Exclude: "skipped.jsonnet",
		Jsonnet: &app.JsonnetSource{
			TLAs: []app.JsonnetVar{
				{Name: "name", Value: "$ARGOCD_APP_NAME"},
				{Name: "replicas", Value: "2 + 1", Code: true},
			},
			ExtVars: []app.JsonnetVar{
				{Name: "image", Value: "gcr.io/heptio-images/ks-guestbook-demo:0.$$1"},
				{Name: "labels", Value: "{ tier: 'frontend' }", Code: true},
			},
			Libs: []string{"vendor"},
		},
	}
	res := renderOK(t, r, render.Request{Root: root, Source: s, AppName: "gb"})
	want := []string{
		"ConfigMap/cm-a@guestbook/config.jsonnet",
		"ConfigMap/cm-b@guestbook/config.jsonnet",
		"Deployment/gb@guestbook/guestbook-ui.jsonnet",
		"Service/gb@guestbook/guestbook-ui.jsonnet",
	}
	if got := names(res); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("objects:\n got %q\nwant %q", got, want)
	}
	dep := res.Objects[2].Object
	if n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); n != 3 {
		t.Errorf("replicas = %v (%T), want int64 3 from the code TLA", dep.Object["spec"].(map[string]any)["replicas"], dep.Object["spec"].(map[string]any)["replicas"])
	}
	if l := dep.GetLabels(); l["app"] != "gb" || l["tier"] != "frontend" {
		t.Errorf("labels = %v, want app=gb (from $ARGOCD_APP_NAME) and tier=frontend (code extVar through vendor/k.libsonnet)", l)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 || containers[0].(map[string]any)["image"] != "gcr.io/heptio-images/ks-guestbook-demo:0.$1" {
		t.Errorf("containers = %v, want the extVar image with $$ as $", containers)
	}
	if port, _, _ := unstructured.NestedSlice(res.Objects[3].Object.Object, "spec", "ports"); len(port) != 1 || port[0].(map[string]any)["port"] != int64(80) {
		t.Errorf("service ports = %v, want the TLA default 80", port)
	}

	// Without the library path, k.libsonnet is not found; the error names the importing file.
	s.Directory.Jsonnet.Libs = nil
	re := renderErr(t, r, render.Request{Root: root, Source: s, AppName: "gb"})
	if !errors.Is(re, render.ErrTool) || re.At.File != "guestbook/util.libsonnet" || re.At.Line != 1 || !strings.Contains(re.Error(), "k.libsonnet") {
		t.Errorf("missing library: %v (at %+v)", re, re.At)
	}
}

func TestJsonnetErrors(t *testing.T) {
	root, _, _ := checkout(t, jsonnetRepo)
	r := newRenderer(t, render.Options{})
	for _, tc := range []struct {
		path string
		kind error
		file string
		line int
		msg  string
	}{
		{"broken", render.ErrTool, "broken/lib.libsonnet", 3, "replicas must be at most 2, got 3"},
		{"syntax", render.ErrTool, "syntax/main.jsonnet", 4, "syntax/main.jsonnet:4"},
		{"deep", render.ErrTool, "deep/main.jsonnet", 1, "max stack frames exceeded"},
		{"escape", render.ErrNotFound, "escape/main.jsonnet", 1, "leads outside the repository"},
		{"abs", render.ErrNotFound, "abs/main.jsonnet", 1, "absolute import paths are not allowed"},
		{"scalar", render.ErrInvalidManifest, "scalar/main.jsonnet", 0, "evaluates to a string"},
		{"mixed", render.ErrInvalidManifest, "mixed/main.jsonnet", 0, "element 1 of the array the Jsonnet evaluates to is a number"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			re := renderErr(t, r, render.Request{Root: root, Source: src(tc.path)})
			if !errors.Is(re, tc.kind) || re.At.File != tc.file || re.At.Line != tc.line || !strings.Contains(re.Error(), tc.msg) {
				t.Errorf("err = %v (at %+v), want %v at %s:%d containing %q", re, re.At, tc.kind, tc.file, tc.line, tc.msg)
			}
			if !errors.Is(re, errdefs.ErrInvalid) && !errors.Is(re, errdefs.ErrNotFound) {
				t.Errorf("error does not map to an errdefs kind")
			}
			if strings.Contains(re.Error(), root) {
				t.Errorf("error %q shows the checkout's host path", re)
			}
		})
	}

	s := src("guestbook")
	s.Directory = &app.DirectorySource{Jsonnet: &app.JsonnetSource{Libs: []string{"../outside"}}}
	re := renderErr(t, r, render.Request{Root: root, Source: s})
	if !errors.Is(re, render.ErrInvalidManifest) || !strings.Contains(re.Error(), "spec.source.directory.jsonnet.libs[0]") {
		t.Errorf("escaping lib: %v", re)
	}
}

func TestJsonnetInputBudget(t *testing.T) {
	root, _, _ := checkout(t, jsonnetRepo)
	r := newRenderer(t, render.Options{MaxInputBytes: 600})
	s := src("guestbook")
	s.Directory = &app.DirectorySource{Exclude: "skipped.jsonnet", Jsonnet: &app.JsonnetSource{
		TLAs:    []app.JsonnetVar{{Name: "name", Value: "gb"}},
		ExtVars: []app.JsonnetVar{{Name: "image", Value: "x"}, {Name: "labels", Value: "{}", Code: true}},
		Libs:    []string{"vendor"},
	}}
	re := renderErr(t, r, render.Request{Root: root, Source: s})
	if !errors.Is(re, render.ErrTooLarge) {
		t.Errorf("reading past the input budget through imports: %v (at %+v)", re, re.At)
	}
}

// The git cache refuses symlinks out of a checkout; the importer does not rely on it.
func TestJsonnetImportSymlinkOutOfRoot(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.txt")
	root := t.TempDir()
	if err := os.WriteFile(outside, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	main := "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { x: importstr 'secret.txt' } }\n"
	if err := os.WriteFile(filepath.Join(root, "app", "main.jsonnet"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "app", "secret.txt")); err != nil {
		t.Fatal(err)
	}
	r := newRenderer(t, render.Options{})
	re := renderErr(t, r, render.Request{Root: root, Source: src("app")})
	if !errors.Is(re, render.ErrNotFound) || re.At != (render.Location{File: "app/main.jsonnet", Line: 1}) ||
		!strings.Contains(re.Error(), "leads outside the repository") || strings.Contains(re.Error(), "s3cret") {
		t.Errorf("symlink out of the root: %v (at %+v)", re, re.At)
	}
}
