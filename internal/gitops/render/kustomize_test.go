package render_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/render"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// The kustomize-guestbook layout: a base and a production overlay.
var kustomizeRepo = map[string]string{
	"kustomize-guestbook/base/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deployment.yaml
  - service.yaml
configMapGenerator:
  - name: settings
    literals: [color=blue]
`,
	"kustomize-guestbook/base/deployment.yaml": deployYAML,
	"kustomize-guestbook/base/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80}]
`,
	"kustomize-guestbook/overlays/prod/kustomization.yaml": `resources:
  - ../../base
  - pdb.yaml
namePrefix: prod-
commonLabels:
  env: prod
patches:
  - target: {kind: Deployment, name: web}
    patch: |-
      - op: replace
        path: /spec/replicas
        value: 5
`,
	"kustomize-guestbook/overlays/prod/pdb.yaml": `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
`,
}

func TestKustomize(t *testing.T) {
	root, _, _ := checkout(t, kustomizeRepo)
	r := newRenderer(t, render.Options{})

	res := renderOK(t, r, render.Request{Root: root, Source: src("kustomize-guestbook/overlays/prod"), AppName: "guestbook"})
	if res.Type != app.SourceTypeKustomize {
		t.Errorf("detected %s", res.Type)
	}
	got := map[string]string{}
	for _, o := range res.Objects {
		got[o.Object.GetKind()+"/"+o.Object.GetName()] = o.Source.File
		if _, ok := o.Object.GetAnnotations()["config.kubernetes.io/origin"]; ok {
			t.Errorf("%s keeps the origin annotation Freshet added", o.Object.GetName())
		}
		if o.Object.GetLabels()["env"] != "prod" {
			t.Errorf("%s lacks the overlay's label", o.Object.GetName())
		}
	}
	cmName := ""
	for k := range got {
		if strings.HasPrefix(k, "ConfigMap/prod-settings-") {
			cmName = k
		}
	}
	for k, file := range map[string]string{
		"Deployment/prod-web":          "kustomize-guestbook/base/deployment.yaml",
		"Service/prod-web":             "kustomize-guestbook/base/service.yaml",
		"PodDisruptionBudget/prod-web": "kustomize-guestbook/overlays/prod/pdb.yaml",
		cmName:                         "kustomize-guestbook/base/kustomization.yaml",
	} {
		if got[k] != file {
			t.Errorf("%s from %q, want %q (all: %v)", k, got[k], file, got)
		}
	}
	for _, o := range res.Objects {
		if o.Object.GetKind() == "Deployment" {
			if n, _, _ := unstructuredInt(o.Object.Object, "spec", "replicas"); n != 5 {
				t.Errorf("patched replicas = %d", n)
			}
		}
	}
}

func unstructuredInt(obj map[string]any, fields ...string) (int64, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		cur = m[f]
	}
	n, ok := cur.(int64)
	return n, ok, nil
}

// The app's kustomize overrides are applied as Argo CD's `kustomize edit` calls would.
func TestKustomizeOverrides(t *testing.T) {
	root, _, _ := checkout(t, kustomizeRepo)
	r := newRenderer(t, render.Options{})
	s := src("kustomize-guestbook/overlays/prod")
	s.Kustomize = &app.KustomizeSource{
		NamePrefix:                "staging-",
		NameSuffix:                "-v2",
		Namespace:                 "web-staging",
		Images:                    []string{"nginx=registry.example.com/nginx:1.28"},
		CommonLabels:              map[string]string{"team": "web"},
		CommonAnnotations:         map[string]string{"deployed-by": "${ARGOCD_APP_NAME}@${ARGOCD_APP_REVISION_SHORT}"},
		CommonAnnotationsEnvsubst: true,
		Replicas:                  []app.KustomizeReplica{{Name: "web", Count: "7"}},
	}
	res := renderOK(t, r, render.Request{Root: root, Source: s, AppName: "guestbook", Revision: "0123456789abcdef"})
	var dep map[string]any
	for _, o := range res.Objects {
		u := o.Object
		if !strings.HasPrefix(u.GetName(), "staging-") || !strings.Contains(u.GetName(), "-v2") {
			t.Errorf("name %s lacks the override prefix/suffix", u.GetName())
		}
		if u.GetNamespace() != "web-staging" {
			t.Errorf("%s namespace = %q", u.GetName(), u.GetNamespace())
		}
		if u.GetLabels()["team"] != "web" || u.GetLabels()["env"] != "prod" {
			t.Errorf("%s labels = %v", u.GetName(), u.GetLabels())
		}
		if u.GetAnnotations()["deployed-by"] != "guestbook@0123456" {
			t.Errorf("%s annotations = %v", u.GetName(), u.GetAnnotations())
		}
		if u.GetKind() == "Deployment" {
			dep = u.Object
		}
	}
	containers := dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	if img := containers[0].(map[string]any)["image"]; img != "registry.example.com/nginx:1.28" {
		t.Errorf("image = %v", img)
	}
	if n, _, _ := unstructuredInt(dep, "spec", "replicas"); n != 7 {
		t.Errorf("replicas override = %d", n)
	}

	// A label the kustomization already sets needs forceCommonLabels, as in Argo CD.
	s.Kustomize = &app.KustomizeSource{CommonLabels: map[string]string{"env": "staging"}}
	re := renderErr(t, r, render.Request{Root: root, Source: s})
	if !strings.Contains(re.Error(), "forceCommonLabels") || re.At.File != "kustomize-guestbook/overlays/prod/kustomization.yaml" {
		t.Errorf("label conflict: %v", re)
	}
	s.Kustomize.ForceCommonLabels = true
	res = renderOK(t, r, render.Request{Root: root, Source: s})
	if res.Objects[0].Object.GetLabels()["env"] != "staging" {
		t.Errorf("forced label = %v", res.Objects[0].Object.GetLabels())
	}
}

// Remote bases are refused before kustomize could clone them: the server sees no request.
func TestKustomizeRemoteBaseIsNotFetched(t *testing.T) {
	remote := gitserver.New(t)
	base := remote.NewRepo("base")
	base.Commit("main", map[string]string{"kustomization.yaml": "resources: [cm.yaml]\n", "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}, "base")
	root, _, _ := checkout(t, map[string]string{
		"remote/kustomization.yaml":           "resources:\n  - " + base.URL() + "//?ref=main\n",
		"remotefile/kustomization.yaml":       "resources:\n  - local\n",
		"remotefile/local/kustomization.yaml": "resources:\n  - " + remote.URL() + "/base.git/cm.yaml\n",
		"github/kustomization.yaml":           "resources:\n  - github.com/argoproj/argocd-example-apps//kustomize-guestbook?ref=master\n",
		"escape/kustomization.yaml":           "resources:\n  - ../../../../etc\n",
	})
	r := newRenderer(t, render.Options{})
	for _, p := range []string{"remote", "remotefile", "github"} {
		re := renderErr(t, r, render.Request{Root: root, Source: src(p)})
		if !errors.Is(re, render.ErrRemoteDependency) || !strings.HasSuffix(re.At.File, "kustomization.yaml") || !strings.Contains(re.Error(), "vendor it") {
			t.Errorf("%s: err = %v, want ErrRemoteDependency naming the kustomization", p, re)
		}
	}
	if st := base.Stats(); st != (gitserver.Stats{}) {
		t.Errorf("the remote base was contacted: %+v", st)
	}
	re := renderErr(t, r, render.Request{Root: root, Source: src("escape")})
	if !errors.Is(re, render.ErrTool) || strings.Contains(re.Error(), root) {
		t.Errorf("base outside the repository: %v (must fail, without naming the checkout dir)", re)
	}
}
