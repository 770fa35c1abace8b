package engine_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

// An invalid manifest is a ComparisonError naming the file and line; a manifest the API
// server rejects (wrong type) is one naming the file too; the sync is refused.
func TestInvalidManifest(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"bad/cm.yaml":   configMap("ok", "1"),
		"bad/oops.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata:\n  key: [unclosed\n",
	}, "broken yaml")
	v.upsert(v.application("bad", "bad", ""))
	s := v.refresh("bad")
	c, ok := s.Condition(engine.ConditionComparisonError)
	if !ok || s.Sync != engine.Unknown || c.Source.File != "bad/oops.yaml" || !strings.Contains(c.Message, "bad/oops.yaml:") {
		t.Fatalf("sync %s conditions %+v", s.Sync, s.Conditions)
	}
	res := v.sync("bad", engine.SyncOptions{})
	if res.Phase != engine.PhaseError || !strings.Contains(res.Message, "bad/oops.yaml") {
		t.Errorf("sync %s: %s", res.Phase, res.Message)
	}

	// Valid YAML the server refuses: replicas is not a number.
	v.repo.Commit("main", map[string]string{
		"bad/oops.yaml": strings.Replace(deployment("web", 1, ""), "replicas: 1", `replicas: "many"`, 1),
	}, "bad type")
	s = v.refresh("bad")
	c, ok = s.Condition(engine.ConditionComparisonError)
	if !ok || c.Source.File != "bad/oops.yaml" || !strings.Contains(c.Message, "replicas") {
		t.Fatalf("conditions %+v", s.Conditions)
	}
	res = v.sync("bad", engine.SyncOptions{})
	if res.Phase != engine.PhaseFailed || !strings.Contains(res.Message, "bad/oops.yaml") || res.Temporary {
		t.Errorf("sync %s (temporary %v): %s", res.Phase, res.Temporary, res.Message)
	}
}

// flakyProxy serves 503 while down, else proxies to the git server, counting requests.
type flakyProxy struct {
	down     atomic.Bool
	mu       sync.Mutex
	attempts []time.Time
}

func (p *flakyProxy) handler(target string) http.Handler {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			if strings.HasSuffix(r.URL.Path, "/info/refs") {
				p.mu.Lock()
				p.attempts = append(p.attempts, time.Now())
				p.mu.Unlock()
			}
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	})
}

// An unreachable repository is a ComparisonError saying it will retry; the engine retries
// with growing delays (not at the poll interval) and recovers on its own.
func TestUnreachableRepo(t *testing.T) {
	v := newEnv(t, func(o *engine.Options) { o.PollInterval = time.Hour })
	v.repo.Commit("main", map[string]string{"u/cm.yaml": configMap("conf", "v1")}, "v1")
	p := &flakyProxy{}
	p.down.Store(true)
	proxy := httptest.NewServer(p.handler(v.srv.URL()))
	t.Cleanup(proxy.Close)
	a := v.application("flaky", "u", "")
	a.Spec.Source.RepoURL = proxy.URL + "/apps.git"
	v.upsert(a)
	v.run()
	v.eventually(15*time.Second, "four attempts", func() (bool, string) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.attempts) >= 4, ""
	})
	s, _ := v.e.Status("flaky")
	c, ok := s.Condition(engine.ConditionComparisonError)
	if !ok || !strings.Contains(c.Message, "retrying in") || !strings.Contains(c.Message, "503") && !strings.Contains(c.Message, "unreachable") {
		t.Errorf("conditions %+v", s.Conditions)
	}
	p.mu.Lock()
	gaps := []time.Duration{}
	for i := 1; i < len(p.attempts); i++ {
		gaps = append(gaps, p.attempts[i].Sub(p.attempts[i-1]))
	}
	p.mu.Unlock()
	if gaps[2] < gaps[0] || gaps[0] < 150*time.Millisecond {
		t.Errorf("retry gaps %v: want growing from 200ms", gaps)
	}
	p.down.Store(false)
	v.eventually(15*time.Second, "recovered", func() (bool, string) {
		s, _ := v.e.Status("flaky")
		_, bad := s.Condition(engine.ConditionComparisonError)
		return !bad && s.Sync == engine.OutOfSync, string(s.Sync)
	})
}

// A render that exceeds the time limit is a ComparisonError that says so.
func TestRenderTimeout(t *testing.T) {
	r, err := render.New(render.Options{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Wait)
	v := newEnv(t, func(o *engine.Options) { o.Renderer = r })
	v.repo.Commit("main", map[string]string{
		"slow/Chart.yaml":        "apiVersion: v2\nname: slow\nversion: 0.1.0\n",
		"slow/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slow\ndata:\n  n: \"{{ $c := 0 }}{{ range until 700 }}{{ range until 700 }}{{ $c = add1 $c }}{{ end }}{{ end }}{{ $c }}\"\n",
	}, "slow chart")
	v.upsert(v.application("slow", "slow", ""))
	s := v.refresh("slow")
	c, ok := s.Condition(engine.ConditionComparisonError)
	if !ok || !strings.Contains(c.Message, "render timed out") || !strings.Contains(c.Message, "retrying") {
		t.Errorf("conditions %+v", s.Conditions)
	}
}

// No cluster configured: a clear condition, no panic, no sync.
func TestNoCluster(t *testing.T) {
	cache, err := git.NewCache(t.TempDir(), git.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := render.New(render.Options{})
	e, err := engine.New(engine.Options{Cache: cache, Renderer: r, Clusters: engine.NewClusters()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	a := &app.Application{APIVersion: app.APIVersion, Kind: app.KindApp, Metadata: app.ObjectMeta{Name: "x"},
		Spec: app.ApplicationSpec{Project: "default", Source: &app.Source{RepoURL: "https://example.invalid/r.git"},
			Destination: app.Destination{Server: engine.InClusterServer, Namespace: "default"}}}
	if err := e.Upsert(a, nil); err != nil {
		t.Fatal(err)
	}
	s, err := e.Refresh(t.Context(), "x", false)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := s.Condition(engine.ConditionNoCluster); !ok || !strings.Contains(c.Message, "no cluster configured") {
		t.Errorf("conditions %+v", s.Conditions)
	}
	res, err := e.Sync(t.Context(), "x", engine.SyncOptions{})
	if err != nil || res.Phase != engine.PhaseError {
		t.Errorf("sync: %v %+v", err, res)
	}
	if _, err := e.Refresh(t.Context(), "nope", false); err == nil {
		t.Error("refresh of an unknown app succeeded")
	}
}

// The app's project is enforced: a destination it does not allow is an InvalidSpecError; a
// kind it does not allow too, naming the file.
func TestProjectDenial(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"p/cm.yaml":     configMap("a", "1"),
		"p/deploy.yaml": deployment("web", 1, ""),
	}, "two")
	a := v.application("proj", "p", "")
	a.Spec.Project = "limited"
	limited, err := app.DecodeAppProject([]byte(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: limited}
spec:
  sourceRepos: ['*']
  destinations:
  - {server: https://kubernetes.default.svc, namespace: 'other-*'}
  namespaceResourceBlacklist:
  - {group: apps, kind: Deployment}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.e.Upsert(a, limited); err != nil {
		t.Fatal(err)
	}
	s := v.refresh("proj")
	if c, ok := s.Condition(engine.ConditionInvalidSpec); !ok || !strings.Contains(c.Message, "destination") {
		t.Fatalf("conditions %+v", s.Conditions)
	}
	limited.Spec.Destinations[0].Namespace = "*"
	if err := v.e.Upsert(a, limited); err != nil {
		t.Fatal(err)
	}
	s = v.refresh("proj")
	c, ok := s.Condition(engine.ConditionInvalidSpec)
	if !ok || c.Source.File != "p/deploy.yaml" || !strings.Contains(c.Message, "namespaceResourceBlacklist") {
		t.Fatalf("conditions %+v", s.Conditions)
	}
	res := v.sync("proj", engine.SyncOptions{})
	if res.Phase != engine.PhaseFailed || !strings.Contains(res.Message, "Deployment") {
		t.Errorf("sync %s: %s", res.Phase, res.Message)
	}
	if _, ok := v.get(gvrCM, "a"); ok {
		t.Error("a forbidden app applied resources")
	}
}
