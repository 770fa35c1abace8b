package runtimes

import (
	"context"
	"path"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/gitops/helmreleases"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestMain stops the loopback cluster the kube tests start.
func TestMain(m *testing.M) { kube.Main(m) }

type helmGetter struct {
	cfg *rest.Config
	ns  string
}

func (g helmGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }
func (g helmGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	d, err := discovery.NewDiscoveryClientForConfig(g.cfg)
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(d), nil
}
func (g helmGetter) ToRESTMapper() (meta.RESTMapper, error) {
	d, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(d), nil
}
func (g helmGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.ns}})
}

// From the cluster to the control plane: a release installed and upgraded with the Helm SDK in
// the loopback cluster, read by the runtime's reporter and sent in reports, is kept with its two
// revisions and listed by namespace; uninstalled, it is forgotten.
func TestHelmReleasesFromTheClusterToTheStore(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	ctx := context.Background()
	ac := new(action.Configuration)
	if err := ac.Init(helmGetter{cfg: c.RESTConfig(), ns: ns}, ns, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	ch := func(v string) *chart.Chart {
		return &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "tiny", Version: v, AppVersion: "app-" + v},
			Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ .Release.Name }}'\n")}}}
	}
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := newTestService(db)
		name := "tiny-" + path.Base(t.Name()) // one release per store
		in := action.NewInstall(ac)
		in.ReleaseName, in.Namespace = name, ns
		if _, err := in.RunWithContext(ctx, ch("0.1.0"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := action.NewUpgrade(ac).RunWithContext(ctx, name, ch("0.2.0"), nil); err != nil {
			t.Fatal(err)
		}
		rt, _ := seedRuntime(t, s, "acme", "edge")
		var evs []runtimev1.AppEvent
		rep := &helmreleases.Reporter{Cluster: "in-cluster", Client: kc, Send: func(ev runtimev1.AppEvent) { evs = append(evs, ev) }}
		sync := func() {
			t.Helper()
			evs = nil
			if err := rep.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Report(ctx, rt, runtimev1.ReportRequest{Events: evs}); err != nil {
				t.Fatal(err)
			}
		}
		sync()
		l, err := s.ListHelmReleases(ctx, viewer(rt.AccountID), HelmReleaseFilter{Cluster: "in-cluster", Namespace: ns})
		if err != nil || len(l) != 1 || l[0].Name != name || l[0].Revision != 2 || l[0].ChartVersion != "0.2.0" || l[0].AppVersion != "app-0.2.0" || l[0].Status != "deployed" {
			t.Fatalf("listed: %+v, %v", l, err)
		}
		got, err := s.GetHelmRelease(ctx, viewer(rt.AccountID), ns, name, HelmReleaseFilter{})
		if err != nil || len(got.History) != 2 || got.History[0].Revision != 2 || got.History[1].Status != "superseded" || got.History[1].ChartVersion != "0.1.0" {
			t.Fatalf("get: %+v, %v", got, err)
		}
		if _, err := action.NewUninstall(ac).Run(name); err != nil {
			t.Fatal(err)
		}
		sync()
		if l, _ := s.ListHelmReleases(ctx, viewer(rt.AccountID), HelmReleaseFilter{Namespace: ns}); len(l) != 0 {
			t.Fatalf("after uninstall: %+v", l)
		}
	})
}
