package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/chartrepo"
)

// chartApp decodes an Application whose source is a chart from a chart repository, in the
// shape of Argo CD's documented helm-repository example.
func (v *env) chartApp(name, repoURL, chart, revision, helm string) *app.Application {
	v.t.Helper()
	doc := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
spec:
  project: default
  source:
    repoURL: %s
    chart: %s
    targetRevision: %q
%s  destination:
    server: https://kubernetes.default.svc
    namespace: %s
`, name, repoURL, chart, revision, helm, v.ns)
	a, err := app.DecodeApplication([]byte(doc))
	if err != nil {
		v.t.Fatalf("decode application: %v\n%s", err, doc)
	}
	return a
}

func withCharts(t *testing.T, creds func(string) git.Credentials) envOption {
	c, err := helmrepo.New(helmrepo.Options{Dir: t.TempDir(), Policy: netpolicy.Unrestricted()})
	if err != nil {
		t.Fatal(err)
	}
	return func(o *engine.Options) { o.Charts, o.Credentials = c, creds }
}

// Apps from a chart repository sync to the cluster: a semver range picks the newest match,
// values, parameters, a value file inside the chart and the release name apply; the revision
// is the chart version; ten apps of one version download it once.
func TestChartRepositorySync(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0", "1.2.0", "1.2.5", "2.0.0")
	repo.SetAuth("ci", "pw")
	v := newEnv(t, withCharts(t, func(string) git.Credentials { return git.Credentials{Username: "ci", Token: "pw"} }))
	v.upsert(v.chartApp("web", repo.URL, "demo", "1.2.*", `    helm:
      releaseName: rel
      valueFiles: [values-prod.yaml]
      parameters: [{name: replicas, value: "3"}]
`))
	res := v.sync("web", engine.SyncOptions{})
	v.mustSucceed(res)
	if res.Revision != "1.2.5" {
		t.Errorf("revision %q, want the chart version 1.2.5", res.Revision)
	}
	data := v.mustGet(gvrCM, "rel-cm").Object["data"].(map[string]any)
	if data["version"] != "1.2.5" || data["message"] != "from-prod" || data["replicas"] != "3" {
		t.Errorf("configmap data %v", data)
	}
	s := v.refresh("web")
	if s.Sync != engine.Synced || s.Revision != "1.2.5" || s.SourceType != app.SourceTypeHelm {
		t.Errorf("after sync: %s at %q (%s), conditions %+v", s.Sync, s.Revision, s.SourceType, s.Conditions)
	}

	// A version published: a hard refresh reads the index again and sees it.
	repo.Add(t, "demo", "1.2.9")
	s, err := v.e.Refresh(v.ctx(30*time.Second), "web", true)
	if err != nil || s.Sync != engine.OutOfSync || s.Revision != "1.2.9" {
		t.Errorf("after 1.2.9 was published, hard refresh: %v %s at %q %+v", err, s.Sync, s.Revision, s.Conditions)
	}

	// Ten apps of the same version at once: one download.
	var wg sync.WaitGroup
	for i := range 10 {
		a := v.chartApp(fmt.Sprintf("many-%d", i), repo.URL, "demo", "2.0.0", "")
		v.upsert(a)
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.mustSucceed(v.sync(a.Metadata.Name, engine.SyncOptions{}))
		}()
	}
	wg.Wait()
	if n := repo.Hits("/charts/demo-2.0.0.tgz"); n != 1 {
		t.Errorf("ten apps downloaded the chart %d times", n)
	}
	v.mustGet(gvrCM, "many-7-cm")
}

// A version that does not exist and a repository that refuses the credentials are
// conditions naming the repository (and the versions there are); nothing is applied.
func TestChartRepositoryBadInput(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0", "1.1.0")
	repo.SetAuth("ci", "pw")
	v := newEnv(t, withCharts(t, func(string) git.Credentials { return git.Credentials{Username: "ci", Password: "wrong"} }))
	v.upsert(v.chartApp("refused", repo.URL, "demo", "1.0.0", ""))
	s := v.refresh("refused")
	c, ok := s.Condition(engine.ConditionComparisonError)
	if !ok || !strings.Contains(c.Message, repo.URL) || !strings.Contains(c.Message, "refused the credentials") || strings.Contains(c.Message, "wrong") {
		t.Errorf("refused credentials: %s %+v", s.Sync, s.Conditions)
	}
	res, err := v.e.Sync(v.ctx(30*time.Second), "refused", engine.SyncOptions{})
	if err == nil && res.Phase == engine.PhaseSucceeded {
		t.Error("a sync of an app whose chart cannot be fetched succeeded")
	}
	if _, found := v.get(gvrCM, "refused-cm"); found {
		t.Error("something was applied")
	}

	repo.SetAuth("", "")
	v.upsert(v.chartApp("missing", repo.URL, "demo", "1.5.0", ""))
	s = v.refresh("missing")
	c, ok = s.Condition(engine.ConditionComparisonError)
	if !ok || !strings.Contains(c.Message, repo.URL) || !strings.Contains(c.Message, "demo") || !strings.Contains(c.Message, "1.1.0, 1.0.0") {
		t.Errorf("missing version: %+v", s.Conditions)
	}
	if _, found := v.get(gvrCM, "missing-cm"); found {
		t.Error("something was applied")
	}
}

// Helm's lookup as Argo CD provides it: Argo CD renders with `helm template`, where lookup
// finds nothing, so a chart guarding `if (lookup ...)` renders its fallback even when the
// object exists in the destination; .Capabilities.KubeVersion and .Capabilities.APIVersions
// are the destination cluster's (a CRD's group installed there is listed).
func TestChartLookupAndCapabilities(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0")
	repo.AddTemplates(t, "probe", "0.1.0", map[string]string{"cm.yaml": `{{- $existing := lookup "v1" "ConfigMap" .Release.Namespace "pre-existing" }}
{{- $all := lookup "v1" "ConfigMap" .Release.Namespace "" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-probe
data:
  found: {{ if $existing }}"yes: {{ $existing.data.secret }}"{{ else }}"no"{{ end }}
  listed: {{ len $all | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  has-apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
  has-crd: {{ .Capabilities.APIVersions.Has (printf "%s/v1" .Values.group) | quote }}
`})
	v := newEnv(t, withCharts(t, nil))
	ctx := v.ctx(60 * time.Second)
	// The object lookup would find, were the render given the cluster.
	if _, err := v.c.Client.CoreV1().ConfigMaps(v.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pre-existing"},
		Data: map[string]string{"secret": "live"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A CRD of a group unique to this test, installed before the engine first looks at the
	// cluster's API versions.
	group := v.ns + ".probe.freshet.dev"
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "probes." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "probes", "singular": "probe", "kind": "Probe", "listKind": "ProbeList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
	if _, err := v.c.Dynamic.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = v.c.Dynamic.Resource(crdGVR).Delete(context.Background(), "probes."+group, metav1.DeleteOptions{})
	})
	v.eventually(30*time.Second, "the CRD's group in discovery", func() (bool, string) {
		groups, err := v.c.Client.Discovery().ServerGroups()
		if err != nil {
			return false, err.Error()
		}
		for _, g := range groups.Groups {
			if g.Name == group {
				return true, ""
			}
		}
		return false, "not listed"
	})
	server, err := v.c.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}

	v.upsert(v.chartApp("lk", repo.URL, "probe", "0.1.0", fmt.Sprintf("    helm:\n      valuesObject: {group: %s}\n", group)))
	v.mustSucceed(v.sync("lk", engine.SyncOptions{}))
	data := v.mustGet(gvrCM, "lk-probe").Object["data"].(map[string]any)
	if data["found"] != "no" || data["listed"] != "0" {
		t.Errorf("lookup: found %v, listed %v; want the fallback (helm template's empty lookup)", data["found"], data["listed"])
	}
	if data["kube"] != server.GitVersion {
		t.Errorf(".Capabilities.KubeVersion %v, want the destination's %s", data["kube"], server.GitVersion)
	}
	if data["has-apps"] != "true" || data["has-crd"] != "true" {
		t.Errorf(".Capabilities.APIVersions: apps/v1 %v, %s/v1 %v; want the destination's groups", data["has-apps"], group, data["has-crd"])
	}
}
