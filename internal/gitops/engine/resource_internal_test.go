package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

func annotated(kind, name string, ann map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name}}}
	u.SetAnnotations(ann)
	return u
}

func TestHookInfo(t *testing.T) {
	tests := []struct {
		ann      map[string]string
		isHook   bool
		types    string
		policies string
		wave     int
	}{
		{nil, false, "", "BeforeHookCreation", 0},
		{map[string]string{AnnotationHook: "PreSync"}, true, "PreSync", "BeforeHookCreation", 0},
		{map[string]string{AnnotationHook: "PreSync,PostSync", AnnotationHookDeletePolicy: "HookSucceeded,HookFailed"}, true, "PreSync,PostSync", "HookSucceeded,HookFailed", 0},
		{map[string]string{AnnotationHook: "Skip"}, true, "Skip", "BeforeHookCreation", 0},
		{map[string]string{AnnotationHelmHook: "pre-install,pre-upgrade", AnnotationHelmHookWeight: "-5", AnnotationHelmDeletePolicy: "hook-succeeded"}, true, "PreSync", "HookSucceeded", -5},
		{map[string]string{AnnotationHelmHook: "post-install", AnnotationHelmDeletePolicy: "before-hook-creation,hook-failed"}, true, "PostSync", "BeforeHookCreation,HookFailed", 0},
		// Helm test hooks are hooks that a sync never runs.
		{map[string]string{AnnotationHelmHook: "test"}, true, "", "BeforeHookCreation", 0},
		// Argo's annotation wins over Helm's.
		{map[string]string{AnnotationHook: "Sync", AnnotationHelmHook: "pre-install", AnnotationSyncWave: "3"}, true, "Sync", "BeforeHookCreation", 3},
		// helm.sh/hook-weight orders a non-hook object into its wave too (gitops-engine's
		// syncwaves.Wave); sync-wave wins over it.
		{map[string]string{AnnotationHelmHookWeight: "-3"}, false, "", "BeforeHookCreation", -3},
		{map[string]string{AnnotationHelmHookWeight: "-3", AnnotationSyncWave: "2"}, false, "", "BeforeHookCreation", 2},
	}
	for _, tt := range tests {
		u := annotated("Job", "j", tt.ann)
		isHook, types := hookInfo(u)
		var ts []string
		for _, x := range types {
			ts = append(ts, string(x))
		}
		var ps []string
		for _, p := range deletePolicies(u) {
			ps = append(ps, string(p))
		}
		if isHook != tt.isHook || strings.Join(ts, ",") != tt.types || strings.Join(ps, ",") != tt.policies || syncWave(u) != tt.wave {
			t.Errorf("%v: hook=%v types=%v policies=%v wave=%d", tt.ann, isHook, ts, ps, syncWave(u))
		}
	}
}

func TestSortForApply(t *testing.T) {
	objs := []*unstructured.Unstructured{
		annotated("Deployment", "web", nil),
		annotated("Widget", "w", nil),
		annotated("ConfigMap", "late", map[string]string{AnnotationSyncWave: "1"}),
		annotated("Service", "web", nil),
		annotated("Namespace", "ns", nil),
		annotated("CustomResourceDefinition", "crd", nil),
		annotated("ServiceAccount", "sa", nil),
		annotated("Role", "r", nil),
		annotated("ConfigMap", "b", nil),
		annotated("Secret", "a", nil),
		annotated("ConfigMap", "early", map[string]string{AnnotationSyncWave: "-2"}),
	}
	sortForApply(objs, func(u *unstructured.Unstructured) *unstructured.Unstructured { return u })
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	want := "ConfigMap/early Namespace/ns ServiceAccount/sa Secret/a ConfigMap/b CustomResourceDefinition/crd Role/r Service/web Deployment/web Widget/w ConfigMap/late"
	if strings.Join(got, " ") != want {
		t.Errorf("order:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestInventoryEncoding(t *testing.T) {
	refs := []ObjRef{
		{ResourceKey: ResourceKey{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}, Version: "v1"},
		{ResourceKey: ResourceKey{Kind: "Namespace", Name: "ns"}, Version: "v1"},
	}
	got := decodeRefs(encodeRefs(refs))
	if len(got) != 2 || got[0].Kind != "Deployment" || got[0].Group != "apps" || got[1].Kind != "Namespace" || got[1].Namespace != "" {
		t.Errorf("round trip %+v", got)
	}
	long := strings.Repeat("a", 300)
	if n := inventoryName(long); len(n) > 253 || !strings.HasPrefix(n, inventoryPrefix) {
		t.Errorf("inventory name %q", n)
	}
	if v := appLabelValue(long); len(v) > 63 {
		t.Errorf("label value %q", v)
	}
	if v := appLabelValue("guestbook"); v != "guestbook" {
		t.Errorf("label value %q", v)
	}
}

// Self-heal backoff: immediate, then doubling, reset after a quiet period, paused after the
// per-window limit.
func TestHealGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &Engine{opts: Options{SelfHealBase: time.Second, SelfHealMax: 8 * time.Second, SelfHealWindow: time.Minute, SelfHealMaxPerWindow: 5}}
		st := &appState{}
		var healedAt []time.Duration
		start := time.Now()
		for time.Since(start) < 40*time.Second {
			if wait := e.healGate(st, time.Now()); wait > 0 {
				time.Sleep(wait)
				continue
			}
			healedAt = append(healedAt, time.Since(start))
		}
		want := []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second}
		if len(healedAt) != len(want) {
			t.Fatalf("heals at %v, want %v", healedAt, want)
		}
		for i := range want {
			if healedAt[i] != want[i] {
				t.Errorf("heals at %v, want %v", healedAt, want)
				break
			}
		}
		if !st.heal.pausedUntil.Equal(start.Add(time.Minute)) {
			t.Errorf("paused until %s, want a window after the first heal", st.heal.pausedUntil.Sub(start))
		}
		// After the pause and a quiet period, the backoff starts over.
		time.Sleep(2 * time.Minute)
		if wait := e.healGate(st, time.Now()); wait != 0 {
			t.Errorf("after a quiet period: wait %s", wait)
		}
		if time.Until(st.heal.nextAt) != time.Second {
			t.Errorf("backoff not reset: next in %s", time.Until(st.heal.nextAt))
		}
	})
}

func TestRetryDelays(t *testing.T) {
	factor := int64(3)
	p := &app.SyncPolicy{Retry: &app.RetryStrategy{Limit: 5, Backoff: &app.Backoff{Duration: "2s", Factor: &factor, MaxDuration: "30"}}}
	var got []time.Duration
	for i := 1; i <= 5; i++ {
		got = append(got, syncRetryDelay(p, i))
	}
	want := []time.Duration{2 * time.Second, 6 * time.Second, 18 * time.Second, 30 * time.Second, 30 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	if d := syncRetryDelay(nil, 2); d != 10*time.Second {
		t.Errorf("default second delay %s", d)
	}
	e := &Engine{opts: Options{RetryBase: time.Second, RetryMax: 5 * time.Second}}
	if e.retryDelay(1) != time.Second || e.retryDelay(3) != 4*time.Second || e.retryDelay(10) != 5*time.Second {
		t.Errorf("refresh retry delays %s %s %s", e.retryDelay(1), e.retryDelay(3), e.retryDelay(10))
	}
}

func TestClusters(t *testing.T) {
	c := NewClusters()
	if _, err := c.Cluster(context.Background(), app.Destination{Name: InClusterName}); !errors.Is(err, ErrNoCluster) {
		t.Errorf("empty registry: %v", err)
	}
	c.SetInCluster(&rest.Config{Host: "https://127.0.0.1:6443"})
	c.Add("prod", "https://prod.example.com/", &rest.Config{Host: "https://prod.example.com"})
	for _, d := range []app.Destination{{Name: "in-cluster"}, {Server: "https://kubernetes.default.svc"}, {Server: "https://127.0.0.1:6443"}} {
		cfg, err := c.Cluster(context.Background(), d)
		if err != nil || cfg.Host != "https://127.0.0.1:6443" {
			t.Errorf("%+v: %v %v", d, cfg, err)
		}
	}
	if cfg, err := c.Cluster(context.Background(), app.Destination{Server: "https://prod.example.com"}); err != nil || cfg.Host != "https://prod.example.com" {
		t.Errorf("prod by server: %v", err)
	}
	_, err := c.Cluster(context.Background(), app.Destination{Name: "staging"})
	if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "in-cluster, prod") {
		t.Errorf("unknown: %v", err)
	}
}

func TestIsTemporary(t *testing.T) {
	if isTemporary(errdefs.Invalid("x", "", "bad")) || !isTemporary(context.DeadlineExceeded) || isTemporary(nil) {
		t.Error("classification")
	}
}

// Automation acts only on a comparison made after the last sync started or ended: one begun
// while the first automated sync ran (a watch event mid-sync) saw what the sync had not
// applied yet, and used to start a self-heal of the same revision right after it.
func TestAutomateIgnoresComparisonOlderThanSync(t *testing.T) {
	a, err := app.DecodeApplication([]byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: x}
spec:
  project: default
  source: {repoURL: 'https://example.com/r.git', path: p}
  destination: {server: 'https://kubernetes.default.svc', namespace: x}
  syncPolicy: {automated: {selfHeal: true}}
`))
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{opts: Options{SelfHealBase: time.Second, SelfHealMax: time.Minute, SelfHealWindow: time.Minute, SelfHealMaxPerWindow: 5, Now: time.Now}}
	outOfSync := func(gen uint64) *comparison {
		d := &desiredObj{}
		return &comparison{sync: OutOfSync, syncGen: gen, desired: &desiredSet{sha: "abc", resources: []*desiredObj{d}},
			results: []*resResult{{d: d, status: DiffOutOfSync}}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); e.bg.Wait() }()
	// The first automated sync of abc has just succeeded (generation 2: started, ended).
	st := &appState{name: "x", app: a, syncGen: 2, last: lastSync{revision: "abc", phase: PhaseSucceeded}}
	e.automate(ctx, st, outOfSync(1))
	if st.opCancel != nil {
		t.Fatal("a comparison begun during the sync started a self-heal")
	}
	// A comparison made after the sync that still finds drift heals.
	e.automate(ctx, st, outOfSync(2))
	if st.opCancel == nil {
		t.Fatal("real drift after the sync was not healed")
	}
}
