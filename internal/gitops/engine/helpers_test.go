package engine_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/render"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestMain stops the clusters, then the registry (OCI chart tests).
func TestMain(m *testing.M) {
	code := kube.Run(m)
	if err := containers.Teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "containers teardown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// env is one test's world: the shared loopback cluster, a namespace, a git server with a
// repository, and an engine.
type env struct {
	t      *testing.T
	c      *kube.Cluster
	ns     string
	srv    *gitserver.Server
	repo   *gitserver.Repo
	cache  *git.Cache
	e      *engine.Engine
	events *recorder
	opts   engine.Options
}

type envOption func(*engine.Options)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	c := kube.Shared(t)
	ns := c.Namespace(t)
	srv := gitserver.New(t)
	repo := srv.NewRepo("apps")
	cache, err := git.NewCache(t.TempDir(), git.Options{RefsTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.New(render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Wait)
	clusters := engine.NewClusters()
	clusters.SetInCluster(c.RESTConfig())
	ev := &recorder{}
	o := engine.Options{
		Cache: cache, Renderer: r, Clusters: clusters, Reporter: ev,
		InventoryNamespace: ns,
		PollStep:           100 * time.Millisecond,
		HealthTimeout:      40 * time.Second,
		HookTimeout:        40 * time.Second,
		EventDebounce:      50 * time.Millisecond,
		SelfHealBase:       300 * time.Millisecond,
		RetryBase:          200 * time.Millisecond,
		RetryMax:           2 * time.Second,
	}
	for _, f := range opts {
		f(&o)
	}
	e, err := engine.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return &env{t: t, c: c, ns: ns, srv: srv, repo: repo, cache: cache, e: e, events: ev, opts: o}
}

// restart replaces the engine with a new one (new git cache, same cluster and options), as a
// restarted runtime would start.
func (v *env) restart() { v.restartWith(git.Options{RefsTTL: -1}) }

// restartWith is restart with a git cache of these options.
func (v *env) restartWith(gopts git.Options) {
	v.t.Helper()
	v.e.Close()
	cache, err := git.NewCache(v.t.TempDir(), gopts)
	if err != nil {
		v.t.Fatal(err)
	}
	o := v.opts
	o.Cache = cache
	e, err := engine.New(o)
	if err != nil {
		v.t.Fatal(err)
	}
	v.t.Cleanup(e.Close)
	v.e, v.cache = e, cache
}

// run starts the engine's loops for the rest of the test.
func (v *env) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = v.e.Run(ctx)
	}()
	v.t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			v.t.Error("engine did not stop within 30s")
		}
	})
}

// application decodes an Application the way users write it.
func (v *env) application(name, path string, extra string) *app.Application {
	v.t.Helper()
	doc := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
spec:
  project: default
  source:
    repoURL: %s
    path: %s
    targetRevision: main
  destination:
    server: https://kubernetes.default.svc
    namespace: %s
%s`, name, v.repo.URL(), path, v.ns, extra)
	a, err := app.DecodeApplication([]byte(doc))
	if err != nil {
		v.t.Fatalf("decode application: %v\n%s", err, doc)
	}
	return a
}

func (v *env) upsert(a *app.Application) {
	v.t.Helper()
	if err := v.e.Upsert(a, nil); err != nil {
		v.t.Fatal(err)
	}
}

func (v *env) ctx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	v.t.Cleanup(cancel)
	return ctx
}

func (v *env) refresh(name string) engine.AppStatus {
	v.t.Helper()
	s, err := v.e.Refresh(v.ctx(30*time.Second), name, false)
	if err != nil {
		v.t.Fatal(err)
	}
	return s
}

func (v *env) sync(name string, opts engine.SyncOptions) *engine.SyncResult {
	v.t.Helper()
	res, err := v.e.Sync(v.ctx(55*time.Second), name, opts)
	if err != nil {
		v.t.Fatal(err)
	}
	return res
}

func (v *env) mustSucceed(res *engine.SyncResult) {
	v.t.Helper()
	if res.Phase != engine.PhaseSucceeded {
		v.t.Fatalf("sync phase %s: %s\nresources: %+v\nhooks: %+v", res.Phase, res.Message, res.Resources, res.Hooks)
	}
}

// eventually polls cond every 100ms until it holds or d passes.
func (v *env) eventually(d time.Duration, what string, cond func() (bool, string)) {
	v.t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		if time.Now().After(deadline) {
			v.t.Fatalf("%s: not true within %s (last: %s)", what, d, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitStatus waits until the app's status satisfies cond, refreshing it each time.
func (v *env) waitStatus(name string, d time.Duration, what string, cond func(engine.AppStatus) bool) engine.AppStatus {
	v.t.Helper()
	var s engine.AppStatus
	v.eventually(d, what, func() (bool, string) {
		s = v.refresh(name)
		return cond(s), fmt.Sprintf("sync=%s health=%s (%s) conditions=%v", s.Sync, s.Health.Status, s.Health.Message, s.Conditions)
	})
	return s
}

var (
	gvrDeploy = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrCM     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrSvc    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	gvrJob    = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

func (v *env) get(gvr schema.GroupVersionResource, name string) (*unstructured.Unstructured, bool) {
	v.t.Helper()
	obj, err := v.c.Dynamic.Resource(gvr).Namespace(v.ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		v.t.Fatal(err)
	}
	return obj, true
}

func (v *env) mustGet(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	v.t.Helper()
	obj, ok := v.get(gvr, name)
	if !ok {
		v.t.Fatalf("%s %s/%s does not exist", gvr.Resource, v.ns, name)
	}
	return obj
}

func resourceStatus(s engine.AppStatus, kind, name string) (engine.ResourceStatus, bool) {
	for _, r := range s.Resources {
		if r.Kind == kind && r.Name == name {
			return r, true
		}
	}
	return engine.ResourceStatus{}, false
}

func result(res *engine.SyncResult, kind, name string) engine.ResultCode {
	for _, r := range res.Resources {
		if r.Kind == kind && r.Name == name {
			return r.Result
		}
	}
	return ""
}

// recorder collects reported events.
type recorder struct {
	mu     sync.Mutex
	events []engine.Event
}

func (r *recorder) Report(_ context.Context, ev engine.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) count(typ engine.EventType, f func(engine.Event) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.Type == typ && (f == nil || f(ev)) {
			n++
		}
	}
	return n
}

func deployment(name string, replicas int, extraAnn string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  annotations:
    note: test%s
spec:
  replicas: %d
  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: %s}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
`, name, extraAnn, replicas, name, name)
}

func configMap(name, value string, annotations ...string) string {
	ann := ""
	if len(annotations) > 0 {
		ann = "\n  annotations:\n" + "    " + strings.Join(annotations, "\n    ")
	}
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s%s
data:
  value: %q
`, name, ann, value)
}

func service(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %s
spec:
  selector: {app: %s}
  ports:
  - port: 80
    targetPort: 80
`, name, name)
}

// job is a Job; exitCode "" completes, "1" fails; runFor keeps its pod running first.
func job(name string, annotations []string, exitCode, runFor string) string {
	ann := ""
	if len(annotations) > 0 {
		ann = "\n  annotations:\n    " + strings.Join(annotations, "\n    ")
	}
	podAnn := ""
	if exitCode != "" {
		podAnn += fmt.Sprintf("\n        %s: %q", kube.AnnotationExitCode, exitCode)
	}
	if runFor != "" {
		podAnn += fmt.Sprintf("\n        %s: %q", kube.AnnotationRunDuration, runFor)
	}
	if podAnn != "" {
		podAnn = "\n      annotations:" + podAnn
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s%s
spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {job: %s}%s
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["true"]
`, name, ann, name, podAnn)
}

func healthy(s engine.AppStatus) bool {
	return s.Sync == engine.Synced && s.Health.Status == health.Healthy
}
