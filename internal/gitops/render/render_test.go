package render_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/render"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// checkout commits files to a real repository served over HTTP and returns a read-only
// snapshot of it from the git cache, as the engine would render it.
func checkout(t *testing.T, files map[string]string) (dir string, srv *gitserver.Server, repo *gitserver.Repo) {
	t.Helper()
	srv = gitserver.New(t)
	repo = srv.NewRepo("apps")
	repo.Commit("main", files, "manifests")
	c, err := git.NewCache(t.TempDir(), git.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Checkout(t.Context(), git.Repo{URL: repo.URL()}, "main")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(snap.Release)
	return snap.Dir, srv, repo
}

func newRenderer(t *testing.T, opts render.Options) *render.Renderer {
	t.Helper()
	r, err := render.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Wait)
	return r
}

func renderOK(t *testing.T, r *render.Renderer, req render.Request) *render.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := r.Render(ctx, req)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return res
}

func renderErr(t *testing.T, r *render.Renderer, req render.Request) *render.Error {
	t.Helper()
	res, err := r.Render(t.Context(), req)
	if err == nil {
		t.Fatalf("render succeeded with %d objects, want an error", len(res.Objects))
	}
	var re *render.Error
	if !errors.As(err, &re) {
		t.Fatalf("err %T %v is not a *render.Error", err, err)
	}
	return re
}

// names lists "Kind/name@file:line" for every object.
func names(res *render.Result) []string {
	var out []string
	for _, o := range res.Objects {
		out = append(out, fmt.Sprintf("%s/%s@%s", o.Object.GetKind(), o.Object.GetName(), o.Source))
	}
	return out
}

func src(path string) app.Source {
	return app.Source{RepoURL: "https://example.com/apps.git", Path: path, TargetRevision: "main"}
}

const deployYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.27
`

func TestDirectory(t *testing.T) {
	root, _, _ := checkout(t, map[string]string{
		"guestbook/deploy.yaml": deployYAML,
		"guestbook/svc.yml": `# a comment first
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  replicas: "3"
  enabled: "true"
`,
		"guestbook/cm.json":            `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-json"}, "data": {"a": "b"}}`,
		"guestbook/list.yaml":          "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: ServiceAccount, metadata: {name: sa1}}\n  - {apiVersion: v1, kind: ServiceAccount, metadata: {name: sa2}}\n",
		"guestbook/README.md":          "# not a manifest\n",
		"guestbook/values.yaml":        "replicaCount: 2\nimage: nginx\n",
		"guestbook/package.json":       `{"name": "tooling", "version": "1.0.0"}`,
		"guestbook/sub/extra.yaml":     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: nested\n",
		"guestbook/sub/test/t.yaml":    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: test-pod\n",
		"guestbook/.github/ci.yaml":    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: hidden\n",
		"guestbook/empty.yaml":         "# nothing here\n",
		"guestbook/dashboard.jsonnet2": "not considered",
	})
	r := newRenderer(t, render.Options{})

	res := renderOK(t, r, render.Request{Root: root, Source: src("guestbook"), AppName: "guestbook"})
	want := []string{
		"ConfigMap/from-json@guestbook/cm.json:1",
		"Deployment/web@guestbook/deploy.yaml:1",
		"ServiceAccount/sa1@guestbook/list.yaml:1",
		"ServiceAccount/sa2@guestbook/list.yaml:1",
		"Service/web@guestbook/svc.yml:3",
		"ConfigMap/settings@guestbook/svc.yml:10",
	}
	if got := names(res); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("objects:\n got %q\nwant %q", got, want)
	}
	if res.Type != app.SourceTypeDirectory {
		t.Errorf("type = %s", res.Type)
	}
	// Values are JSON-typed as Kubernetes expects (int64, quoted strings stay strings).
	dep := res.Objects[1].Object
	if replicas, ok := dep.Object["spec"].(map[string]any)["replicas"].(int64); !ok || replicas != 2 {
		t.Errorf("replicas = %#v", dep.Object["spec"].(map[string]any)["replicas"])
	}
	if dep.DeepCopy().GetName() != "web" {
		t.Error("object does not deep-copy")
	}
	if v := res.Objects[5].Object.Object["data"].(map[string]any)["enabled"]; v != "true" {
		t.Errorf("quoted string became %#v", v)
	}

	// recurse, with include and exclude globs ("*" crosses directories, as in Argo CD).
	s := src("guestbook")
	s.Directory = &app.DirectorySource{Recurse: true, Include: "{*.yaml,*.yml}", Exclude: "{sub/test/*,list.yaml}"}
	res = renderOK(t, r, render.Request{Root: root, Source: s})
	want = []string{
		"Deployment/web@guestbook/deploy.yaml:1",
		"Secret/nested@guestbook/sub/extra.yaml:1",
		"Service/web@guestbook/svc.yml:3",
		"ConfigMap/settings@guestbook/svc.yml:10",
	}
	if got := names(res); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("recurse+include+exclude:\n got %q\nwant %q", got, want)
	}
}

func TestDirectoryInvalidManifests(t *testing.T) {
	root, _, _ := checkout(t, map[string]string{
		"syntax/ok.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n",
		"syntax/bad.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  labels:\n\t  a: b\n",
		"nokind/a.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nmetadata:\n  name: b\n",
		"json/bad.json":     `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},}`,
		"jsonnet/a.jsonnet": "{a: 1}",
		"dup/a.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
	})
	r := newRenderer(t, render.Options{})
	for _, tc := range []struct {
		path string
		kind error
		file string
		line int
		msg  string
	}{
		{"syntax", render.ErrInvalidManifest, "syntax/bad.yaml", 6, "found character that cannot start any token"},
		{"nokind", render.ErrInvalidManifest, "nokind/a.yaml", 6, "kind is missing"},
		{"json", render.ErrInvalidManifest, "json/bad.json", 1, ""},
		{"jsonnet", render.ErrInvalidManifest, "jsonnet/a.jsonnet", 0, "apiVersion and kind are missing"},
		{"dup", render.ErrInvalidManifest, "dup/a.yaml", 5, `"name" is repeated`},
		{"missing", render.ErrNotFound, "missing", 0, "does not exist"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			re := renderErr(t, r, render.Request{Root: root, Source: src(tc.path)})
			if !errors.Is(re, tc.kind) || re.At.File != tc.file || (tc.line > 0 && re.At.Line != tc.line) || !strings.Contains(re.Error(), tc.msg) {
				t.Errorf("err = %v (at %+v), want %v at %s:%d containing %q", re, re.At, tc.kind, tc.file, tc.line, tc.msg)
			}
			if tc.line > 0 && !strings.Contains(re.Error(), fmt.Sprintf("%s:%d", tc.file, tc.line)) {
				t.Errorf("message %q does not name file:line", re)
			}
			if !errors.Is(re, errdefs.ErrInvalid) && !errors.Is(re, errdefs.ErrNotFound) {
				t.Errorf("error does not map to an errdefs kind")
			}
		})
	}
}

func TestLimits(t *testing.T) {
	big := strings.Repeat("# padding\n", 2000) + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n"
	var many strings.Builder
	for i := range 50 {
		fmt.Fprintf(&many, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  x: %q\n", i, strings.Repeat("y", 200))
	}
	root, _, _ := checkout(t, map[string]string{
		"big/a.yaml":  big,
		"many/a.yaml": many.String(),
	})
	re := renderErr(t, newRenderer(t, render.Options{MaxFileBytes: 4096}), render.Request{Root: root, Source: src("big")})
	if !errors.Is(re, render.ErrTooLarge) || !errors.Is(re, errdefs.ErrTooLarge) || re.At.File != "big/a.yaml" {
		t.Errorf("file over the limit: %v", re)
	}
	re = renderErr(t, newRenderer(t, render.Options{MaxInputBytes: 4096}), render.Request{Root: root, Source: src("big")})
	if !errors.Is(re, render.ErrTooLarge) || !strings.Contains(re.Error(), "more than 4096 bytes of input") {
		t.Errorf("input over the limit: %v", re)
	}
	re = renderErr(t, newRenderer(t, render.Options{MaxOutputBytes: 5000}), render.Request{Root: root, Source: src("many")})
	if !errors.Is(re, render.ErrTooLarge) || !strings.Contains(re.Error(), "exceed 5000 bytes") {
		t.Errorf("output over the limit: %v", re)
	}
	re = renderErr(t, newRenderer(t, render.Options{MaxObjects: 10}), render.Request{Root: root, Source: src("many")})
	if !errors.Is(re, render.ErrTooLarge) || !strings.Contains(re.Error(), "more than 10 objects") {
		t.Errorf("objects over the limit: %v", re)
	}
	if res := renderOK(t, newRenderer(t, render.Options{}), render.Request{Root: root, Source: src("many")}); len(res.Objects) != 50 {
		t.Errorf("within limits: %d objects", len(res.Objects))
	}
	if _, err := render.New(render.Options{MaxObjects: -1}); errdefs.Field(err) != "maxObjects" {
		t.Errorf("negative limit: %v", err)
	}
}

// A render waiting for a slot gives up with its caller's context.
func TestConcurrencyLimit(t *testing.T) {
	root, _, _ := checkout(t, map[string]string{"slow/Chart.yaml": slowChart, "slow/templates/cm.yaml": slowTemplate(400)})
	r := newRenderer(t, render.Options{Concurrency: 1, Timeout: 30 * time.Second})
	first := make(chan error, 1)
	go func() {
		_, err := r.Render(context.Background(), render.Request{Root: root, Source: src("slow"), AppName: "slow"})
		first <- err
	}()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	_, err := r.Render(ctx, render.Request{Root: root, Source: src("slow"), AppName: "slow"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second render with the only slot taken: err = %v, want the caller's deadline", err)
	}
	if err := <-first; err != nil {
		t.Errorf("first render: %v", err)
	}
}

const slowChart = "apiVersion: v2\nname: slow\nversion: 0.1.0\n"

// slowTemplate loops n*n times in the template engine.
func slowTemplate(n int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: slow
data:
  n: "{{ $c := 0 }}{{ range until %d }}{{ range until %d }}{{ $c = add1 $c }}{{ end }}{{ end }}{{ $c }}"
`, n, n)
}

func TestRenderTimeout(t *testing.T) {
	root, _, _ := checkout(t, map[string]string{"slow/Chart.yaml": slowChart, "slow/templates/cm.yaml": slowTemplate(600)})
	r := newRenderer(t, render.Options{Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := r.Render(t.Context(), render.Request{Root: root, Source: src("slow"), AppName: "slow"})
	if !errors.Is(err, render.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the caller waited %s for a 50ms timeout", d)
	}
}

// Renders of all three types run concurrently without interfering (run with -race).
func TestConcurrentRenders(t *testing.T) {
	files := map[string]string{"dir/deploy.yaml": deployYAML}
	for k, v := range kustomizeRepo {
		files[k] = v
	}
	for k, v := range helmRepo {
		files[k] = v
	}
	root, _, _ := checkout(t, files)
	r := newRenderer(t, render.Options{Concurrency: 3})
	paths := []string{"dir", "kustomize-guestbook/overlays/prod", "helm-guestbook"}
	errs := make(chan error, 12)
	counts := make(chan int, 12)
	for i := range 12 {
		go func() {
			res, err := r.Render(t.Context(), render.Request{Root: root, Source: src(paths[i%3]), AppName: fmt.Sprintf("app%d", i)})
			if err != nil {
				errs <- err
				return
			}
			counts <- len(res.Objects)
		}()
	}
	for range 12 {
		select {
		case err := <-errs:
			t.Error(err)
		case n := <-counts:
			if n == 0 {
				t.Error("a render produced nothing")
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("renders did not finish")
		}
	}
}
