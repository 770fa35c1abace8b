package appset_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/appset"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

var update = flag.Bool("update", false, "rewrite golden files")

// world is a git server with Argo CD's example repository layout and a set of clusters.
type world struct {
	t     *testing.T
	repo  *gitserver.Repo
	cache *git.Cache
	src   appset.Sources
}

var testClusters = []appset.Cluster{
	{Name: "in-cluster", Server: "https://kubernetes.default.svc", InCluster: true},
	{Name: "staging", Server: "https://1.2.3.4", Labels: map[string]string{"staging": "true", "argocd.argoproj.io/secret-type": "cluster", "branch": "main"}},
	{Name: "prod", Server: "https://2.4.6.8", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster", "use-kafka": "false"}},
}

func newWorld(t *testing.T) *world {
	t.Helper()
	srv := gitserver.New(t)
	repo := srv.NewRepo("example-apps")
	repo.Commit("main", map[string]string{
		"cluster-addons/argo-workflows/kustomization.yaml":        "resources: []\n",
		"cluster-addons/prometheus-operator/Chart.yaml":           "name: p\n",
		"cluster-addons/exclude-helm-guestbook/Chart.yaml":        "name: x\n",
		"cluster-config/engineering/dev/config.json":              `{"aws_account": "123456", "asset_id": "11223344", "cluster": {"owner": "cluster-admin@company.com", "name": "engineering-dev", "address": "https://1.2.3.4"}}`,
		"cluster-config/engineering/prod/config.json":             `{"aws_account": "123456", "asset_id": "11223344", "cluster": {"owner": "cluster-admin@company.com", "name": "engineering-prod", "address": "https://2.4.6.8"}}`,
		"cluster-config/engineering/prod/not-a-config/README.md":  "x\n",
		"guestbook/engineering-dev/guestbook-ui-deployment.yaml":  "kind: x\n",
		"guestbook/engineering-prod/guestbook-ui-deployment.yaml": "kind: x\n",
	}, "example apps")
	cache, err := git.NewCache(t.TempDir(), git.Options{RefsTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, repo: repo, cache: cache}
	w.src = appset.Sources{
		Checkout: func(ctx context.Context, u, rev string) (*git.Snapshot, error) {
			return cache.Checkout(ctx, git.Repo{URL: u}, rev)
		},
		Clusters: func() []appset.Cluster { return testClusters },
	}
	return w
}

// decode reads a fixture with the repository's URL in place of REPO.
func (w *world) decode(text string) *appset.ApplicationSet {
	w.t.Helper()
	s, err := appset.Decode([]byte(strings.ReplaceAll(text, "REPO", w.repo.URL())))
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

func (w *world) fixture(name string) *appset.ApplicationSet {
	w.t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		w.t.Fatal(err)
	}
	return w.decode(string(data))
}

// TestArgoExamples renders fixtures that mirror the examples of Argo CD's generator
// documentation against a real git repository and compares every generated Application with
// a golden file.
func TestArgoExamples(t *testing.T) {
	w := newWorld(t)
	for _, name := range []string{"list", "cluster", "git-directory", "git-files", "matrix", "merge"} {
		t.Run(name, func(t *testing.T) {
			res, err := appset.Render(context.Background(), w.fixture(name), w.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(res.Apps, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = []byte(strings.ReplaceAll(string(got), w.repo.URL(), "REPO") + "\n")
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("render differs from %s (run with -update to accept):\n%s", golden, got)
			}
		})
	}
}

const badElement = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: bad
spec:
  goTemplate: true
  generators:
  - list:
      elements:
      - env: dev
      - env: qa
      - env: Prod_Env
  template:
    metadata:
      name: 'app-{{.env}}'
    spec:
      project: default
      source: {repoURL: REPO, path: x}
      destination: {server: https://kubernetes.default.svc, namespace: x}
`

// TestInvalidApplicationNamesElement: an element that renders an invalid Application fails
// the whole render, and the error names the element and the field.
func TestInvalidApplicationNamesElement(t *testing.T) {
	w := newWorld(t)
	_, err := appset.Render(context.Background(), w.decode(badElement), w.src)
	if err == nil {
		t.Fatal("rendered an invalid application")
	}
	for _, want := range []string{"generators[0].list.elements[2]", "metadata.name", "app-Prod_Env"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	w := newWorld(t)
	cases := []struct{ name, doc, want string }{
		{"duplicate names", strings.Replace(badElement, "'app-{{.env}}'", "'app'", 1), `generators[0].list.elements[1]: renders application "app", as generators[0].list.elements[0] does`},
		{"missing key", strings.Replace(strings.Replace(badElement, "goTemplate: true", "goTemplate: true\n  goTemplateOptions: [missingkey=error]", 1), "{{.env}}", "{{.region}}", 1),
			`generators[0].list.elements[0]: template.metadata.name`},
		{"env refused", strings.Replace(badElement, "{{.env}}", `{{env "HOME"}}`, 1), `function "env" not defined`},
		{"missing file", `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: m}
spec:
  generators:
  - git: {repoURL: REPO, revision: no-such-branch, files: [{path: x.json}]}
  template:
    metadata: {name: x}
    spec: {project: default, source: {repoURL: REPO, path: x}, destination: {server: https://kubernetes.default.svc, namespace: x}}
`, "generators[0].git.repoURL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := appset.Render(context.Background(), w.decode(tc.doc), w.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTemplatePatchAndGeneratorTemplate: templatePatch patches each application with Go
// template logic; a generator's template overrides the ApplicationSet's.
func TestTemplatePatchAndGeneratorTemplate(t *testing.T) {
	w := newWorld(t)
	s := w.decode(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: patched}
spec:
  goTemplate: true
  syncPolicy: {preserveResourcesOnDeletion: true}
  generators:
  - list:
      elements:
      - {name: a, autoSync: true, prune: true}
      - {name: b, autoSync: false}
  - list:
      elements: [{name: c}]
      template:
        metadata: {}
        spec:
          project: other
          source: {repoURL: REPO, path: special}
          destination: {}
  template:
    metadata:
      name: '{{.name}}'
    spec:
      project: default
      source: {repoURL: REPO, path: 'apps/{{.name}}'}
      destination: {server: https://kubernetes.default.svc, namespace: '{{.name}}'}
  templatePatch: |
    {{- if .autoSync }}
    spec:
      syncPolicy:
        automated:
          prune: {{ .prune }}
    {{- end }}
`)
	res, err := appset.Render(context.Background(), s, w.src)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Apps) != 3 {
		t.Fatalf("%d apps", len(res.Apps))
	}
	a, b, c := res.Apps[0].App, res.Apps[1].App, res.Apps[2].App
	if a.Spec.SyncPolicy == nil || a.Spec.SyncPolicy.Automated == nil || !a.Spec.SyncPolicy.Automated.Prune {
		t.Errorf("a: templatePatch not applied: %+v", a.Spec.SyncPolicy)
	}
	if b.Spec.SyncPolicy != nil {
		t.Errorf("b: patched although autoSync is false: %+v", b.Spec.SyncPolicy)
	}
	if c.Spec.Project != "other" || c.Spec.Source.Path != "special" || c.Spec.Destination.Namespace != "c" {
		t.Errorf("c: generator template not merged over the ApplicationSet's: %+v", c.Spec)
	}
	for _, g := range res.Apps {
		if len(g.App.Metadata.Finalizers) != 0 {
			t.Errorf("%s: finalizers %v with preserveResourcesOnDeletion", g.App.Metadata.Name, g.App.Metadata.Finalizers)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ doc, path string }{
		{"apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: x}\nspec:\n  generators: []\n  template: {metadata: {name: x}, spec: {project: default}}\n", "spec.generators"},
		{"apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: x}\nspec:\n  generators: [{lsit: {}}]\n  template: {metadata: {name: x}, spec: {project: default}}\n", "spec.generators[0].lsit"},
		{"apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: x}\nspec:\n  generators: [{scmProvider: {github: {}}}]\n  template: {metadata: {name: x}, spec: {project: default}}\n", "spec.generators[0].scmProvider"},
		{"apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: x}\nspec:\n  generators: [{list: {elements: []}}]\n  syncPolicy: {applicationsSync: create-all}\n  template: {metadata: {name: x}, spec: {project: default}}\n", "spec.syncPolicy.applicationsSync"},
		{"apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: x}\nspec:\n  generators: [{list: {elements: []}}]\n  strategy: {type: RollingSync, rollingSync: {steps: [{matchExpressions: [{key: env, operator: In, values: [dev]}], maxUpdate: 150%}]}}\n  template: {metadata: {name: x}, spec: {project: default}}\n", "spec.strategy.rollingSync.steps[0].maxUpdate"},
		{"apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: x}\nspec:\n  generators: [{matrix: {generators: [{list: {elements: []}}]}}]\n  template: {metadata: {name: x}, spec: {project: default}}\n", "spec.generators[0].matrix.generators"},
		{"apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: x}\nspec:\n  generators: [{list: {elements: []}}]\n  templatePatch: 'spec: {}'\n  template: {metadata: {name: x}, spec: {project: default}}\n", "spec.templatePatch"},
		{"apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: x}\nspec:\n  generators: [{list: {elements: []}}]\n  template: {metadata: {name: x}, spec: {project: default, sourcee: {}}}\n", "spec.template.spec.sourcee"},
	}
	for _, tc := range cases {
		_, err := appset.Decode([]byte(tc.doc))
		if err == nil {
			t.Errorf("decoded %q", tc.doc)
			continue
		}
		var fe *errdefs.FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("error %v does not name %s", err, tc.path)
		}
	}
}

// TestEmptyAutomatedKept: `automated: {}` (auto-sync with defaults) survives rendering.
func TestEmptyAutomatedKept(t *testing.T) {
	w := newWorld(t)
	res, err := appset.Render(context.Background(), w.decode(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: auto}
spec:
  generators: [{list: {elements: [{name: one}]}}]
  template:
    metadata: {name: '{{name}}'}
    spec:
      project: default
      source: {repoURL: REPO, path: x}
      destination: {server: https://kubernetes.default.svc, namespace: x}
      syncPolicy: {automated: {}}
`), w.src)
	if err != nil {
		t.Fatal(err)
	}
	if sp := res.Apps[0].App.Spec.SyncPolicy; sp == nil || sp.Automated == nil {
		t.Fatalf("automated: {} lost: %+v", sp)
	}
}
