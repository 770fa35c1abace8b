package helmreleases

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

func TestMain(m *testing.M) { kube.Main(m) }

type getter struct {
	cfg *rest.Config
	ns  string
}

func (g getter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }
func (g getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	d, err := discovery.NewDiscoveryClientForConfig(g.cfg)
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(d), nil
}
func (g getter) ToRESTMapper() (meta.RESTMapper, error) {
	d, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(d), nil
}
func (g getter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.ns}})
}

// tinyChart is a chart of one ConfigMap, made here.
func tinyChart(version, appVersion string) *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "tiny", Version: version, AppVersion: appVersion, Type: "application"},
		Templates: []*chart.File{{Name: "templates/cm.yaml",
			Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ .Release.Name }}-cm'\ndata:\n  v: '{{ .Values.v }}'\n")}},
		Values: map[string]any{"v": "1"},
	}
}

// recorder collects what a Reporter sends.
type recorder struct {
	mu  sync.Mutex
	evs []runtimev1.AppEvent
}

func (r *recorder) send(ev runtimev1.AppEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recorder) take() []runtimev1.AppEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.evs
	r.evs = nil
	return out
}

// HelmReleasesFromTheCluster: a release installed and upgraded with the Helm SDK in the
// loopback cluster is reported with its two revisions; a malformed release Secret is skipped;
// the uninstalled release is reported deleted.
func TestHelmReleasesFromTheCluster(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	ctx := context.Background()
	cfg := c.RESTConfig()
	ac := new(action.Configuration)
	if err := ac.Init(getter{cfg: cfg, ns: ns}, ns, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(ac)
	in.ReleaseName, in.Namespace, in.Description = "tiny", ns, "first install"
	if _, err := in.RunWithContext(ctx, tinyChart("0.1.0", "1.0"), nil); err != nil {
		t.Fatal(err)
	}
	up := action.NewUpgrade(ac)
	up.Namespace, up.Description = ns, "second"
	if _, err := up.RunWithContext(ctx, "tiny", tinyChart("0.2.0", "2.0"), map[string]any{"v": "2"}); err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A malformed release Secret, as anyone able to write Secrets could leave.
	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.broken.v1", Namespace: ns,
		Labels: map[string]string{"owner": "helm", "name": "broken", "version": "1", "status": "deployed"}},
		Type: SecretType, Data: map[string][]byte{"release": []byte("H4sI-not-base64!")}}
	if _, err := kc.CoreV1().Secrets(ns).Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rec := &recorder{}
	var logs syncBuffer
	r := &Reporter{Cluster: "in-cluster", Client: kc, Send: rec.send, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); !strings.Contains(l, "skipping a Helm release Secret") || !strings.Contains(l, ns+"/sh.helm.release.v1.broken.v1") ||
		!strings.Contains(l, "not base64") {
		t.Fatalf("the malformed Secret's reason is not logged: %s", l)
	}
	var got *runtimev1.HelmReleaseRecord
	for _, ev := range rec.take() {
		if ev.Type == runtimev1.HelmReleasesListed {
			if !slices.Contains(ev.HelmReleases, ns+"/tiny") || slices.Contains(ev.HelmReleases, ns+"/broken") {
				t.Fatalf("listed %v", ev.HelmReleases)
			}
			continue
		}
		if ev.Type != runtimev1.HelmReleaseChanged {
			t.Fatalf("event %s, want only %s", ev.Type, runtimev1.HelmReleaseChanged)
		}
		if ev.HelmRelease.Namespace == ns {
			if ev.HelmRelease.Name != "tiny" || got != nil {
				t.Fatalf("unexpected release %+v", ev.HelmRelease)
			}
			got = ev.HelmRelease
		}
	}
	if got == nil {
		t.Fatal("release tiny not reported")
	}
	if got.Cluster != "in-cluster" || got.Chart != "tiny" || got.ChartVersion != "0.2.0" || got.AppVersion != "2.0" || got.Revision != 2 ||
		got.Status != "deployed" || got.Description != "second" || got.Updated.IsZero() || len(got.History) != 2 {
		t.Fatalf("release: %+v", got)
	}
	if h := got.History[1]; h.Revision != 1 || h.Status != "superseded" || h.ChartVersion != "0.1.0" || h.Description != "first install" {
		t.Fatalf("revision 1: %+v", h)
	}
	// Nothing changed: nothing sent.
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ev := range rec.take() {
		if ev.Type != runtimev1.HelmReleasesListed && ev.HelmRelease.Namespace == ns {
			t.Fatalf("sent again unchanged: %+v", ev)
		}
	}

	if _, err := action.NewUninstall(ac).Run("tiny"); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	var deleted bool
	for _, ev := range rec.take() {
		if ev.HelmRelease.Namespace == ns {
			deleted = ev.Type == runtimev1.HelmReleaseDeleted && ev.HelmRelease.Name == "tiny" && ev.HelmRelease.Cluster == "in-cluster"
		}
	}
	if !deleted {
		t.Fatal("uninstalled release not reported deleted")
	}
	// A full read (every tenth): the list sent again, without the uninstalled release.
	r.syncs = listEvery
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, ev := range rec.take() {
		if ev.Type == runtimev1.HelmReleasesListed {
			listed = ev.HelmRelease.Cluster == "in-cluster" && !slices.Contains(ev.HelmReleases, ns+"/tiny")
		} else if ev.HelmRelease.Namespace == ns {
			t.Fatalf("the full read sent %+v", ev)
		}
	}
	if !listed {
		t.Fatal("the full read sent no list of releases")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
