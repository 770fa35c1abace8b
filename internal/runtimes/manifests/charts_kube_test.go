package manifests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/freshet-dev/freshet/charts"
	"github.com/freshet-dev/freshet/internal/helmchart"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// dryRunner server-side applies objects with dryRun=All: the real API server validates them
// (schemas, required fields, enums, RBAC rule shapes) and stores nothing.
type dryRunner struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newDryRunner(t *testing.T, c *kube.Cluster) *dryRunner {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &dryRunner{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// apply returns the API server's verdict on o; noKind is true when the cluster does not serve
// o's kind (a CRD that is not installed).
func (d *dryRunner) apply(ctx context.Context, o Object) (noKind bool, err error) {
	u := &unstructured.Unstructured{Object: o}
	gvk := u.GroupVersionKind()
	m, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return true, err
	}
	if err != nil {
		return false, err
	}
	var ri dynamic.ResourceInterface = d.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = d.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	data, err := json.Marshal(o)
	if err != nil {
		return false, err
	}
	force := true
	_, err = ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
		FieldManager: "freshet-chart-test", Force: &force, DryRun: []string{metav1.DryRunAll}})
	return false, err
}

// TestChartsAreValidOnARealAPIServer renders every chart for every golden case of
// internal/helmchart/testdata and has the loopback cluster's API server check each object with
// a server-side dry-run apply: a chart that renders an object Kubernetes refuses fails here.
// The ServiceMonitor (a CRD the test cluster does not have) is the only kind allowed to be
// unknown.
func TestChartsAreValidOnARealAPIServer(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	d := newDryRunner(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	files, err := filepath.Glob("../../helmchart/testdata/*.values.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	checked := map[string]int{}
	for _, f := range files {
		name, _, _ := strings.Cut(filepath.Base(f), "__")
		ch, err := helmchart.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := chartutil.ReadValues(data)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := helmchart.Render(ch, helmchart.Release{Name: "dry", Namespace: ns}, vals.AsMap())
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, o := range objs {
			kind := o["kind"].(string)
			noKind, err := d.apply(ctx, o)
			switch {
			case noKind && kind == "ServiceMonitor":
				t.Logf("%s: %s skipped: the test cluster has no ServiceMonitor CRD", filepath.Base(f), kind)
			case err != nil:
				t.Errorf("%s: the API server refuses %s %s: %v", filepath.Base(f), kind, (&unstructured.Unstructured{Object: o}).GetName(), err)
			default:
				checked[name+" "+kind]++
			}
		}
	}
	for _, want := range []string{"freshet Deployment", "freshet Service", "freshet Ingress", "freshet PodDisruptionBudget", "freshet HorizontalPodAutoscaler",
		"freshet StatefulSet", "freshet Secret", "freshet-runtime Deployment", "freshet-runtime ClusterRole", "freshet-runtime Ingress", "freshet-runtime PersistentVolumeClaim",
		"freshet-runner Role", "freshet-runner Deployment", "freshet-runner RoleBinding"} {
		if checked[want] == 0 {
			t.Errorf("no %s was checked: the golden cases should render one", want)
		}
	}

	// The check can fail: an object the schema lets through but Kubernetes refuses (a
	// toleration operator that does not exist) is caught.
	rn, err := helmchart.Load(charts.Runner)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Render(rn, helmchart.Release{Name: "dry", Namespace: ns}, map[string]any{
		"server": "https://x", "tolerations": []any{map[string]any{"key": "k", "operator": "Sometimes"}}})
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	for _, o := range objs {
		if o["kind"] == "Deployment" {
			_, err := d.apply(ctx, o)
			refused = err != nil && strings.Contains(err.Error(), "operator")
			t.Logf("bad toleration: %v", err)
		}
	}
	if !refused {
		t.Error("a Deployment with toleration operator Sometimes was not refused by the API server")
	}
}
