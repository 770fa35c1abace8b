package app_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Real Argo CD manifests decode; the golden file is the decoded object (and its warnings).
func TestDecodeGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var (
				obj      any
				warnings []string
			)
			if strings.Contains(string(data), "kind: AppProject") {
				p, err := app.DecodeAppProject(data)
				if err != nil {
					t.Fatal(err)
				}
				obj, warnings = p, p.Warnings
			} else {
				a, err := app.DecodeApplication(data)
				if err != nil {
					t.Fatal(err)
				}
				obj, warnings = a, a.Warnings
				// Encoding and decoding again gives the same object.
				enc, err := app.EncodeApplication(a)
				if err != nil {
					t.Fatal(err)
				}
				again, err := app.DecodeApplication(enc)
				if err != nil {
					t.Fatalf("re-decoding the encoded app: %v\n%s", err, enc)
				}
				if j1, j2 := mustJSON(t, a), mustJSON(t, again); !bytes.Equal(j1, j2) {
					t.Errorf("round trip changed the app:\n%s\n%s", j1, j2)
				}
			}
			got := mustJSON(t, map[string]any{"object": obj, "warnings": warnings})
			golden := strings.TrimSuffix(f, ".yaml") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("decoded %s differs from %s:\n%s", f, golden, got)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestDecodeGuestbookFields(t *testing.T) {
	data, _ := os.ReadFile("testdata/helm-guestbook.yaml")
	a, err := app.DecodeApplication(data)
	if err != nil {
		t.Fatal(err)
	}
	src := a.EffectiveSource()
	if src.ExplicitType() != app.SourceTypeHelm || src.Helm.Parameters[1].Value != "8080" || !src.Helm.Parameters[1].ForceString {
		t.Errorf("helm source = %+v", src.Helm)
	}
	if !a.Spec.SyncPolicy.IsAutomated() || !a.Spec.SyncPolicy.SyncOptions.Enabled("CreateNamespace") ||
		a.Spec.SyncPolicy.SyncOptions.Enabled("Replace") || *a.Spec.SyncPolicy.Retry.Backoff.Factor != 2 {
		t.Errorf("sync policy = %+v", a.Spec.SyncPolicy)
	}
	limits := a.Spec.Source.Helm.ValuesObject["resources"].(map[string]any)["limits"].(map[string]any)
	if limits["cpu"] != "200m" {
		t.Errorf("valuesObject = %v", a.Spec.Source.Helm.ValuesObject)
	}
	if d, err := app.ParseDuration(a.Spec.SyncPolicy.Retry.Backoff.MaxDuration); err != nil || d.Minutes() != 3 {
		t.Errorf("maxDuration = %v %v", d, err)
	}
	if d, err := app.ParseDuration("30"); err != nil || d.Seconds() != 30 {
		t.Errorf("ParseDuration(30) = %v %v", d, err)
	}
}

// Charts from OCI registries decode in both of Argo CD's forms: oci://host/path, and the bare
// host/path of its documentation's example.
func TestDecodeOCIChartSources(t *testing.T) {
	for _, repo := range []string{"oci://ghcr.io/org/charts", "registry-1.docker.io/bitnamicharts", "127.0.0.1:5000/charts/"} {
		doc := strings.Replace(base, "https://github.com/argoproj/argocd-example-apps.git\n    path: guestbook\n", repo+"\n    chart: nginx\n    targetRevision: 15.9.0\n", 1)
		a, err := app.DecodeApplication([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", repo, err)
		}
		if src := a.EffectiveSource(); !src.IsChartRepo() || src.RepoURL != repo || src.Chart != "nginx" {
			t.Errorf("%s: source %+v", repo, src)
		}
	}
}

// A chart from a chart repository in spec.sources reading a $values file of a git ref source
// decodes (Argo CD's "Helm value files from external Git repository" example).
func TestDecodeChartInSources(t *testing.T) {
	a, err := app.DecodeApplication([]byte(strings.Replace(base, "  source:\n    repoURL: https://github.com/argoproj/argocd-example-apps.git\n    path: guestbook\n",
		"  sources:\n    - repoURL: https://prometheus-community.github.io/helm-charts\n      chart: prometheus\n      targetRevision: 15.7.1\n"+
			"      helm: {valueFiles: [$values/charts/prometheus/values.yaml]}\n    - {repoURL: 'https://git.example.com/org/value-files.git', targetRevision: dev, ref: values}\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if src := a.EffectiveSource(); !src.IsChartRepo() || src.Chart != "prometheus" || len(a.Spec.Sources) != 2 {
		t.Errorf("sources %+v", a.Spec.Sources)
	}
}

const base = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
spec:
  project: default
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps.git
    path: guestbook
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
`

// Each bad document names the field path, the line, and what would be valid.
func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc   string
		path        string
		line        int
		contains    string
		unsupported bool
	}{
		{"unknown field", base + "  sourcee: {}\n", "spec.sourcee", 13, `did you mean "source"?`, false},
		{"unknown nested field", strings.Replace(base, "    path: guestbook\n", "    path: guestbook\n    helm:\n      valueFile: [a.yaml]\n", 1),
			"spec.source.helm.valueFile", 11, `did you mean "valueFiles"?`, false},
		{"wrong type bool", base + "  syncPolicy:\n    automated:\n      prune: yes please\n", "spec.syncPolicy.automated.prune", 15, "want true or false", false},
		{"wrong type list", strings.Replace(base, "    path: guestbook\n", "    path: guestbook\n    helm:\n      valueFiles: values.yaml\n", 1),
			"spec.source.helm.valueFiles", 11, "want a list", false},
		{"wrong type int", base + "  revisionHistoryLimit: ten\n", "spec.revisionHistoryLimit", 13, "want an integer", false},
		{"mapping for string", strings.Replace(base, "path: guestbook", "path: {a: b}", 1), "spec.source.path", 9, "want a string", false},
		{"missing project", strings.Replace(base, "  project: default\n", "", 1), "spec.project", 0, `use "default"`, false},
		{"missing name", strings.Replace(base, "  name: guestbook\n", "  labels: {a: b}\n", 1), "metadata.name", 0, "is required", false},
		{"bad name", strings.Replace(base, "name: guestbook", "name: Guest_Book", 1), "metadata.name", 4, "valid name", false},
		{"wrong kind", strings.Replace(base, "kind: Application", "kind: Deployment", 1), "kind", 2, "want Application", false},
		{"wrong apiVersion", strings.Replace(base, "v1alpha1", "v1", 1), "apiVersion", 1, "want argoproj.io/v1alpha1", false},
		{"no destination", strings.Replace(base, "    server: https://kubernetes.default.svc\n", "", 1), "spec.destination", 10, "needs server", false},
		{"server and name", strings.Replace(base, "    namespace: guestbook\n", "    name: in-cluster\n", 1), "spec.destination", 10, "both server and name", false},
		{"bad sync option", base + "  syncPolicy:\n    syncOptions:\n      - CreateNamespace=yes\n", "spec.syncPolicy.syncOptions[0]", 15, "CreateNamespace takes true or false", false},
		{"unknown sync option", base + "  syncPolicy:\n    syncOptions:\n      - Turbo=true\n", "spec.syncPolicy.syncOptions[0]", 15, "known: ApplyOutOfSyncOnly", false},
		{"bad backoff", base + "  syncPolicy:\n    retry:\n      backoff:\n        duration: soon\n", "spec.syncPolicy.retry.backoff.duration", 16, "positive duration", false},
		{"bad json pointer", base + "  ignoreDifferences:\n    - kind: Deployment\n      jsonPointers: [spec/replicas]\n", "spec.ignoreDifferences[0].jsonPointers[0]", 15, "JSON pointer", false},
		{"bad repo url", strings.Replace(base, "https://github.com/argoproj/argocd-example-apps.git", "not a url", 1), "spec.source.repoURL", 8, "git repository URL", false},
		{"path escapes", strings.Replace(base, "path: guestbook", "path: ../../etc", 1), "spec.source.path", 9, "inside the repository", false},
		{"two types", strings.Replace(base, "    path: guestbook\n", "    path: guestbook\n    helm: {}\n    kustomize: {}\n", 1), "spec.source", 7, "more than one", false},
		{"bad image", strings.Replace(base, "    path: guestbook\n", "    path: guestbook\n    kustomize:\n      images: ['nginx 1.2']\n", 1), "spec.source.kustomize.images[0]", 11, "name[=newName]", false},
		{"bad values", strings.Replace(base, "    path: guestbook\n", "    path: guestbook\n    helm:\n      values: |\n        a: b\n        c d\n", 1), "spec.source.helm.values", 0, "not valid YAML", false},
		{"duplicate key", base + "  project: other\n", "spec", 13, `key "project" is repeated`, false},
		{"yaml syntax", base + "  : : :\n\t- x\n", "", 0, "not valid YAML", false},
		{"jsonnet lib escapes", strings.Replace(base, "    path: guestbook\n", "    path: guestbook\n    directory:\n      jsonnet:\n        tlas: [{name: a, value: b}]\n        libs: [vendor, ../../etc]\n", 1), "spec.source.directory.jsonnet.libs[1]", 13, "inside the repository", false},
		{"jsonnet tla without name", strings.Replace(base, "    path: guestbook\n", "    path: guestbook\n    directory:\n      jsonnet:\n        tlas: [{name: a, value: b}, {value: c}]\n", 1), "spec.source.directory.jsonnet.tlas[1].name", 0, "is required", false},
		{"plugin", strings.Replace(base, "    path: guestbook\n", "    path: guestbook\n    plugin:\n      name: cdk8s\n", 1), "spec.source.plugin", 10, "plugins are not supported", true},
		{"oci chart with credentials", strings.Replace(base, "https://github.com/argoproj/argocd-example-apps.git\n    path: guestbook\n", "oci://u:p@ghcr.io/org/charts\n    chart: nginx\n", 1), "spec.source.repoURL", 8, "must not carry credentials", false},
		{"oci chart without host", strings.Replace(base, "https://github.com/argoproj/argocd-example-apps.git\n    path: guestbook\n", "oci:///charts\n    chart: nginx\n", 1), "spec.source.repoURL", 8, "not an OCI registry location", false},
		{"chart with a slash", strings.Replace(base, "https://github.com/argoproj/argocd-example-apps.git\n    path: guestbook\n", "https://charts.example.com\n    chart: a/nginx\n", 1), "spec.source.chart", 9, "no slashes", false},
		{"chart repo with credentials", strings.Replace(base, "https://github.com/argoproj/argocd-example-apps.git\n    path: guestbook\n", "https://u:p@charts.example.com\n    chart: nginx\n", 1), "spec.source.repoURL", 8, "must not carry credentials", false},
		{"ref in spec.source", strings.Replace(base, "    path: guestbook\n", "    path: guestbook\n    ref: values\n", 1), "spec.source.ref", 10, "only valid in an entry of spec.sources", false},
		{"unknown $ref", strings.Replace(base, "  source:\n    repoURL: https://github.com/argoproj/argocd-example-apps.git\n    path: guestbook\n",
			"  sources:\n    - repoURL: https://a.example/x\n      path: chart\n      helm: {valueFiles: [$valuez/prod.yaml]}\n    - repoURL: https://b.example/y\n      ref: values\n", 1),
			"spec.sources[0].helm.valueFiles[0]", 10, "$valuez must be the ref of an entry of spec.sources (refs here: $values)", false},
		{"ref on a chart", strings.Replace(base, "  source:\n    repoURL: https://github.com/argoproj/argocd-example-apps.git\n    path: guestbook\n",
			"  sources:\n    - {repoURL: https://charts.example.com, chart: nginx, ref: values}\n    - {repoURL: https://b.example/y, path: p}\n", 1), "spec.sources[0].ref", 8, "cannot be set on a chart from a chart repository", false},
		{"duplicate ref", strings.Replace(base, "  source:\n    repoURL: https://github.com/argoproj/argocd-example-apps.git\n    path: guestbook\n",
			"  sources:\n    - {repoURL: https://a.example/x, ref: v}\n    - {repoURL: https://b.example/y, ref: v}\n", 1), "spec.sources[1].ref", 9, "is also the ref of spec.sources[0]", false},
		{"remote values", strings.Replace(base, "    path: guestbook\n", "    path: guestbook\n    helm:\n      valueFiles: [https://example.com/v.yaml]\n", 1), "spec.source.helm.valueFiles[0]", 11, "remote values files", true},
		{"operation", base + "operation:\n  sync: {}\n", "operation", 13, "freshet app sync", true},
		{"two documents", base + "---\n" + base, "", 14, "exactly one", false},
		{"empty", "# nothing\n", "", 0, "is empty", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := app.DecodeApplication([]byte(tc.doc))
			if err == nil {
				t.Fatal("decoded without error")
			}
			var ae *app.Error
			if !errors.As(err, &ae) {
				t.Fatalf("err %T %v is not an *app.Error", err, err)
			}
			var found *app.Error
			for _, e := range err.(app.Errors) {
				if e.Path == tc.path {
					found = e
					break
				}
			}
			if found == nil {
				t.Fatalf("no error for path %q in: %v", tc.path, err)
			}
			if tc.line != 0 && found.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", found.Line, tc.line, found)
			}
			if !strings.Contains(found.Error(), tc.contains) {
				t.Errorf("error %q does not contain %q", found, tc.contains)
			}
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("error does not unwrap to errdefs.ErrInvalid")
			}
			if tc.path != "" && errdefs.Field(found) != tc.path {
				t.Errorf("errdefs.Field = %q", errdefs.Field(found))
			}
			if errors.Is(found, app.ErrUnsupported) != tc.unsupported {
				t.Errorf("unsupported = %v, want %v", errors.Is(found, app.ErrUnsupported), tc.unsupported)
			}
		})
	}
}

func TestDecodeCollectsAllErrors(t *testing.T) {
	doc := strings.Replace(base, "  project: default\n", "  projet: default\n", 1) + "  revisionHistoryLimit: -1\n"
	_, err := app.DecodeApplication([]byte(doc))
	var es app.Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Fatalf("err = %v, want 3 problems (unknown projet, missing project, negative limit)", err)
	}
}

func TestDecodeAliasBomb(t *testing.T) {
	doc := base + `  info:
    - name: a
      value: x
x0: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
x1: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
x2: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
x3: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
x4: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
x5: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
spec2: [*f,*f,*f,*f,*f,*f,*f,*f,*f]
`
	if _, err := app.DecodeApplication([]byte(doc)); err == nil {
		t.Fatal("accepted unknown top-level fields")
	}
	bomb := strings.Replace(base, "    path: guestbook\n", `    path: guestbook
    helm:
      valuesObject:
        x0: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
        x1: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
        x2: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
        x3: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
        x4: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
        x5: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
        x6: [*f,*f,*f,*f,*f,*f,*f,*f,*f]
`, 1)
	_, err := app.DecodeApplication([]byte(bomb))
	if err == nil || !strings.Contains(err.Error(), "alias") {
		t.Fatalf("alias bomb: err = %v, want an alias-expansion error", err)
	}
}

func TestDecodeAll(t *testing.T) {
	proj, _ := os.ReadFile("testdata/project.yaml")
	docs, err := app.DecodeAll([]byte(string(proj) + "---\n" + base))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].AppProject == nil || docs[1].Application == nil || docs[1].Line != strings.Count(string(proj), "\n")+2 {
		t.Fatalf("docs = %+v", docs)
	}
	_, err = app.DecodeAll([]byte(base + "---\napiVersion: v1\nkind: ConfigMap\n"))
	if err == nil || !strings.Contains(err.Error(), "want Application, AppProject or ApplicationSet") || !strings.Contains(err.Error(), "line 14") {
		t.Errorf("other kind: err = %v", err)
	}
}
