package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/local"
	"github.com/freshet-dev/freshet/internal/testenv/chartrepo"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// deployEnv is a real loopback cluster reached as a kubernetes context would reach it (server,
// a service account's bearer token, the CA), and a local executor's workspace.
type deployEnv struct {
	c       *kube.Cluster
	cluster runnerv1.Cluster
	exec    *local.Local
	ws      executor.Workspace
	regs    []runnerv1.Registry
}

func newDeployEnv(t *testing.T, c *kube.Cluster) *deployEnv {
	t.Helper()
	ctx := context.Background()
	ns := c.Namespace(t)
	sa, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-deployer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns}}}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.RESTConfig()
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	exec, err := local.New(local.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := exec.Prepare(ctx, executor.Build{ID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Cleanup(context.Background(), ws) })
	return &deployEnv{c: c, exec: exec, ws: ws,
		cluster: runnerv1.Cluster{Name: "loopback", Server: cfg.Host, Token: tr.Status.Token, CA: string(ca)}}
}

// run runs pipeline yaml with the cluster (and repos) in the job, returning status, reason, log.
func (d *deployEnv) run(t *testing.T, yaml string, repos ...runnerv1.HelmRepo) (string, string, string) {
	t.Helper()
	p, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	e := newEngine(runnerv1.Job{BuildID: "b1", Clusters: []runnerv1.Cluster{d.cluster}, HelmRepos: repos, Registries: d.regs}, p, d.exec, d.ws, &log, func(runnerv1.StepState) {}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	status, reason := e.run(ctx)
	return status, reason, log.String()
}

func (d *deployEnv) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(d.ws.Path, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDeployAndHelmStepsOnLoopbackCluster(t *testing.T) {
	c := kube.New(t)
	ctx := context.Background()

	t.Run("deploy file_path then service", func(t *testing.T) {
		d := newDeployEnv(t, c)
		ns := c.Namespace(t)
		d.write(t, "app.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "registry.example/web:1"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {greeting: hello}
`)
		yaml := "version: '1.0'\nsteps:\n  ship:\n    type: deploy\n    kind: kubernetes\n    cluster: loopback\n    namespace: " + ns +
			"\n    service: web\n    file_path: app.yaml\n    candidate: {image: 'registry.example/web:${{TAG}}'}\n    timeout: '90'\n"
		status, reason, log := d.run(t, strings.Replace(yaml, "${{TAG}}", "2", 1))
		if status != stSuccess {
			t.Fatalf("build %s: %s\n%s", status, reason, log)
		}
		dep, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || dep.Spec.Template.Spec.Containers[0].Image != "registry.example/web:2" {
			t.Fatalf("deployment %v: image %v", err, dep)
		}
		if cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{}); err != nil || cm.Data["greeting"] != "hello" {
			t.Fatalf("configmap %v %v", cm, err)
		}
		for _, want := range []string{"deployment " + ns + "/web created", "configmap " + ns + "/web-config created", "deployment " + ns + "/web rolled out"} {
			if !strings.Contains(log, want) {
				t.Errorf("log lacks %q:\n%s", want, log)
			}
		}
		if strings.Contains(log, d.cluster.Token) {
			t.Error("the log shows the cluster token")
		}
		// The service form rolls a new image out to the existing Deployment, pulled with the
		// candidate's registry context as a pull secret.
		d.regs = []runnerv1.Registry{{Name: "Acme_Reg", URL: "registry.example/acme", Username: "puller", Password: "pull-pass-9"}}
		status, reason, log = d.run(t, "version: '1.0'\nsteps:\n  ship:\n    type: deploy\n    kind: kubernetes\n    cluster: loopback\n    namespace: "+ns+
			"\n    service: web\n    candidate: {image: 'registry.example/web:3', registry: Acme_Reg}\n")
		if status != stSuccess {
			t.Fatalf("service form: %s: %s\n%s", status, reason, log)
		}
		dep, _ = c.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if dep.Spec.Template.Spec.Containers[0].Image != "registry.example/web:3" {
			t.Fatalf("image after the service form: %s", dep.Spec.Template.Spec.Containers[0].Image)
		}
		if ps := dep.Spec.Template.Spec.ImagePullSecrets; len(ps) != 1 || ps[0].Name != "freshet-registry-acme-reg" {
			t.Fatalf("imagePullSecrets %+v", ps)
		}
		sec, err := c.Client.CoreV1().Secrets(ns).Get(ctx, "freshet-registry-acme-reg", metav1.GetOptions{})
		if err != nil || sec.Type != corev1.SecretTypeDockerConfigJson || !strings.Contains(string(sec.Data[".dockerconfigjson"]), `"registry.example"`) ||
			!strings.Contains(string(sec.Data[".dockerconfigjson"]), "pull-pass-9") {
			t.Fatalf("pull secret %v: %v", err, sec)
		}
		if strings.Contains(log, "pull-pass-9") {
			t.Error("the log shows the registry password")
		}
		// A Deployment that does not exist fails the step naming it.
		status, reason, _ = d.run(t, "version: '1.0'\nsteps:\n  ship:\n    type: deploy\n    kind: kubernetes\n    cluster: loopback\n    namespace: "+ns+
			"\n    service: nope\n    candidate: {image: 'registry.example/web:3'}\n")
		if status != stFailed || !strings.Contains(reason, "deployment nope does not exist in namespace "+ns) {
			t.Fatalf("missing deployment: %s %q", status, reason)
		}
		// A Deployment whose pods cannot be scheduled never rolls out: the step fails at its
		// timeout, naming it and its status.
		d.write(t, "stuck.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck}
spec:
  replicas: 1
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      nodeSelector: {freshet.dev/no-such-node: "true"}
      containers: [{name: stuck, image: "registry.example/stuck:1"}]
`)
		status, reason, log = d.run(t, "version: '1.0'\nsteps:\n  ship:\n    type: deploy\n    kind: kubernetes\n    cluster: loopback\n    namespace: "+ns+
			"\n    file_path: stuck.yaml\n    timeout: '3'\n")
		if status != stFailed || !strings.Contains(reason, "deployment "+ns+"/stuck did not roll out within 3s") {
			t.Fatalf("stuck rollout: %s %q\n%s", status, reason, log)
		}
	})

	t.Run("helm install upgrade and missing version", func(t *testing.T) {
		d := newDeployEnv(t, c)
		ns := c.Namespace(t)
		repo := chartrepo.New(t, "demo", "1.0.0", "1.1.0")
		repo.SetAuth("ci", "repo-pass")
		ctxRepo := runnerv1.HelmRepo{Name: "charts", URL: repo.URL, Username: "ci", Password: "repo-pass"}
		step := func(version, msg string) string {
			return "version: '1.0'\nsteps:\n  release:\n    type: helm\n    arguments:\n      action: install\n      chart_name: demo\n" +
				"      helm_repository_context: charts\n      chart_version: '" + version + "'\n      release_name: demo\n      kube_context: loopback\n" +
				"      namespace: " + ns + "\n      custom_values: ['message=" + msg + "']\n"
		}
		status, reason, log := d.run(t, step("1.0.0", "first"), ctxRepo)
		if status != stSuccess {
			t.Fatalf("install: %s: %s\n%s", status, reason, log)
		}
		if !strings.Contains(log, "release demo revision 1 deployed; applied ConfigMap demo-cm") {
			t.Errorf("install log:\n%s", log)
		}
		status, reason, log = d.run(t, step("1.1.0", "second"), ctxRepo)
		if status != stSuccess {
			t.Fatalf("upgrade: %s: %s\n%s", status, reason, log)
		}
		cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "demo-cm", metav1.GetOptions{})
		if err != nil || cm.Data["version"] != "1.1.0" || cm.Data["message"] != "second" {
			t.Fatalf("configmap after upgrade: %v %v", cm.Data, err)
		}
		// Helm's release record: revision 2, deployed.
		if _, err := c.Client.CoreV1().Secrets(ns).Get(ctx, "sh.helm.release.v1.demo.v2", metav1.GetOptions{}); err != nil {
			t.Fatalf("release secret of revision 2: %v", err)
		}
		status, reason, _ = d.run(t, step("9.9.9", "x"), ctxRepo)
		for _, want := range []string{"chart demo version 9.9.9", repo.URL} {
			if status != stFailed || !strings.Contains(reason, want) {
				t.Errorf("missing version: %s %q lacks %q", status, reason, want)
			}
		}
		if strings.Contains(log, "repo-pass") {
			t.Error("the log shows the repository password")
		}
	})

	t.Run("helm install from an OCI registry", func(t *testing.T) {
		reg := containers.Registry(t) // TLS from its own CA, basic auth
		url := chartrepo.PushOCI(t, reg, "charts/runner", "demo", "1.0.0", "1.2.0")
		d := newDeployEnv(t, c)
		ns := c.Namespace(t)
		ctxRepo := runnerv1.HelmRepo{Name: "oci-charts", URL: url, Username: reg.Username, Password: reg.Password, CA: string(reg.CACert)}
		status, reason, log := d.run(t, "version: '1.0'\nsteps:\n  release:\n    type: helm\n    arguments:\n      chart_name: demo\n"+
			"      chart_repo_url: "+url+"\n      chart_version: '1.x'\n      release_name: demo\n      kube_context: loopback\n      namespace: "+ns+"\n", ctxRepo)
		if status != stSuccess || !strings.Contains(log, "demo 1.2.0 from "+url) {
			t.Fatalf("install from %s: %s: %s\n%s", url, status, reason, log)
		}
		cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "demo-cm", metav1.GetOptions{})
		if err != nil || cm.Data["version"] != "1.2.0" {
			t.Fatalf("configmap: %v %v", cm.Data, err)
		}
		if strings.Contains(log, reg.Password) {
			t.Error("the log shows the registry password")
		}
		// Pushing goes to ChartMuseum-style repositories only: an OCI one is refused by name.
		d.write(t, "Chart.yaml", "apiVersion: v2\nname: local\nversion: 0.1.0\n")
		status, reason, _ = d.run(t, "version: '1.0'\nsteps:\n  push:\n    type: helm\n    arguments:\n      action: push\n      chart_name: .\n"+
			"      chart_repo_url: "+url+"\n", ctxRepo)
		if status != stFailed || !strings.Contains(reason, "pushing to an OCI registry is not supported") {
			t.Errorf("push to OCI: %s %q", status, reason)
		}
	})
}

// A helm step whose chart version does not exist fails naming chart, repository and version;
// lint reads a chart from the repository and needs no cluster. (No cluster is reached: the
// chart is resolved first.)
func TestHelmChartFromRepository(t *testing.T) {
	exec, err := local.New(local.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := exec.Prepare(context.Background(), executor.Build{ID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	d := &deployEnv{exec: exec, ws: ws, cluster: runnerv1.Cluster{Name: "loopback", Server: "https://127.0.0.1:1", Token: "unused"}}
	repo := chartrepo.New(t, "demo", "1.0.0")
	status, reason, log := d.run(t, "version: '1.0'\nsteps:\n  lint:\n    type: helm\n    arguments:\n      action: lint\n      chart_name: demo\n      chart_repo_url: "+repo.URL+"\n")
	if status != stSuccess || !strings.Contains(log, "helm lint demo 1.0.0 from "+repo.URL) {
		t.Fatalf("lint: %s %s\n%s", status, reason, log)
	}
	status, reason, _ = d.run(t, "version: '1.0'\nsteps:\n  up:\n    type: helm\n    arguments:\n      chart_name: demo\n      chart_repo_url: "+repo.URL+
		"\n      chart_version: 2.0.0\n      release_name: demo\n      kube_context: loopback\n")
	for _, want := range []string{"chart demo version 2.0.0", "repository " + repo.URL} {
		if status != stFailed || !strings.Contains(reason, want) {
			t.Errorf("missing version: %s %q lacks %q", status, reason, want)
		}
	}
	// A cluster context that did not come with the job is named.
	d.cluster.Name = "other"
	status, reason, _ = d.run(t, "version: '1.0'\nsteps:\n  up:\n    type: helm\n    arguments:\n      chart_name: demo\n      chart_repo_url: "+repo.URL+
		"\n      release_name: demo\n      kube_context: loopback\n")
	if status != stFailed || !strings.Contains(reason, `cluster context "loopback" did not come with the build`) {
		t.Errorf("unknown cluster: %s %q", status, reason)
	}
}

// TestBenchHelmUpgrade measures a helm step's upgrade round trip against the loopback cluster
// (chart resolved from a served repository, release read, upgraded, recorded): median and p99
// of FRESHET_HELM_BENCH upgrades (default 30), beside the same upgrade done by the Helm SDK
// alone with the chart already loaded (another release, alternating, a fresh client each time as
// the helm CLI has), as the baseline.
// make bench-helm runs it.
func TestBenchHelmUpgrade(t *testing.T) {
	if os.Getenv("FRESHET_HELM_BENCH") == "" {
		t.Skip("set FRESHET_HELM_BENCH=N (make bench-helm)")
	}
	n := 30
	if v, err := strconv.Atoi(os.Getenv("FRESHET_HELM_BENCH")); err == nil && v > 1 {
		n = v
	}
	c := kube.New(t)
	d := newDeployEnv(t, c)
	ns := c.Namespace(t)
	repo := chartrepo.New(t, "demo", "1.0.0")
	yaml := "version: '1.0'\nsteps:\n  release:\n    type: helm\n    arguments:\n      chart_name: demo\n      chart_repo_url: " + repo.URL +
		"\n      release_name: bench\n      kube_context: loopback\n      namespace: " + ns + "\n      custom_values: ['message=${{N}}']\n"
	p, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	// Baseline: the SDK's upgrade alone, chart loaded once, same cluster, its own release, keeping
	// as many revisions as the step does; the two alternate so that neither sees a busier cluster.
	cfg, cc, err := (&engine{job: runnerv1.Job{Clusters: []runnerv1.Cluster{d.cluster}}}).clusterConfig("loopback", ns)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh client per upgrade, as each helm CLI run (and each step) has: one reused client
	// would share client-go's rate limiter across the runs and measure its throttling.
	newConfig := func() *action.Configuration {
		ac := new(action.Configuration)
		if err := ac.Init(restGetter{cfg: cfg, cc: cc}, ns, "secret", func(string, ...any) {}); err != nil {
			t.Fatal(err)
		}
		return ac
	}
	cache, err := helmrepo.New(helmrepo.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cache.Resolve(context.Background(), repo.URL, "demo", "1.0.0", helmrepo.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.Load(filepath.Join(got.Dir, got.Name))
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(newConfig())
	in.ReleaseName, in.Namespace = "sdk", ns
	if _, err := in.RunWithContext(context.Background(), ch, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	var step, sdk []time.Duration
	for i := 0; i <= n; i++ {
		var log bytes.Buffer
		e := newEngine(runnerv1.Job{BuildID: "b1", Clusters: []runnerv1.Cluster{d.cluster}, Variables: map[string]string{"N": strconv.Itoa(i)}}, p, d.exec, d.ws, &log, func(runnerv1.StepState) {}, nil)
		start := time.Now()
		res, _, _, msg := e.helm(context.Background(), p.Steps[0])
		if res != spec.ResultSuccess {
			t.Fatalf("upgrade %d: %s\n%s", i, msg, log.String())
		}
		if i == 0 { // the install
			continue
		}
		step = append(step, time.Since(start))
		up := action.NewUpgrade(newConfig())
		up.Namespace, up.Timeout, up.MaxHistory = ns, time.Minute, spec.DefaultHelmHistoryMax
		start = time.Now()
		if _, err := up.RunWithContext(context.Background(), "sdk", ch, map[string]any{"message": "sdk-" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		sdk = append(sdk, time.Since(start))
	}
	q := func(ds []time.Duration, p float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(float64(len(s))*p))]
	}
	fmt.Printf("BENCH helm step upgrade round trip (n=%d): median %s p99 %s\n", len(step), q(step, 0.5).Round(time.Millisecond), q(step, 0.99).Round(time.Millisecond))
	fmt.Printf("BENCH baseline: Helm SDK upgrade alone, chart loaded (n=%d): median %s p99 %s\n", len(sdk), q(sdk, 0.5).Round(time.Millisecond), q(sdk, 0.99).Round(time.Millisecond))
}

// The push action packages a chart of the workspace and uploads it to a repository that takes
// ChartMuseum's upload API (the test repository does), where it can then be resolved.
func TestHelmPush(t *testing.T) {
	exec, err := local.New(local.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := exec.Prepare(context.Background(), executor.Build{ID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	d := &deployEnv{exec: exec, ws: ws}
	if err := os.MkdirAll(filepath.Join(ws.Path, "charts", "app", "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	d.write(t, "charts/app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\n")
	d.write(t, "charts/app/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\n")
	repo := chartrepo.New(t, "demo", "1.0.0")
	repo.SetAuth("ci", "push-pass")
	ctxRepo := runnerv1.HelmRepo{Name: "charts", URL: repo.URL, Username: "ci", Password: "push-pass"}
	yaml := "version: '1.0'\nsteps:\n  push:\n    type: helm\n    arguments:\n      action: push\n      chart_name: charts/app\n" +
		"      chart_version: 0.2.${{N}}\n      app_version: abc1234\n      helm_repository_context: charts\n"
	run := func(repo runnerv1.HelmRepo) (string, string, string) {
		t.Helper()
		p, err := spec.Parse([]byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		e := newEngine(runnerv1.Job{BuildID: "b1", Variables: map[string]string{"N": "7"}, HelmRepos: []runnerv1.HelmRepo{repo}}, p, exec, ws, &log, func(runnerv1.StepState) {}, nil)
		status, reason := e.run(context.Background())
		return status, reason, log.String()
	}
	status, reason, log := run(ctxRepo)
	if status != stSuccess || !strings.Contains(log, "chart app 0.2.7 pushed to "+repo.URL) {
		t.Fatalf("push: %s %s\n%s", status, reason, log)
	}
	cache, err := helmrepo.New(helmrepo.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cache.Resolve(context.Background(), repo.URL, "app", "0.2.7", helmrepo.Credentials{Username: "ci", Password: "push-pass"})
	if err != nil {
		t.Fatalf("the pushed chart is not in the repository: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(got.Dir, "app", "Chart.yaml")); err != nil || !strings.Contains(string(data), "appVersion: abc1234") {
		t.Fatalf("pushed Chart.yaml %s %v", data, err)
	}
	if status, reason, _ = run(ctxRepo); status != stFailed || !strings.Contains(reason, "chart app version 0.2.7 is already in repository "+repo.URL) {
		t.Fatalf("second push: %s %q", status, reason)
	}
	bad := ctxRepo
	bad.Password = "wrong"
	if status, reason, _ = run(bad); status != stFailed || !strings.Contains(reason, "refused the credentials") {
		t.Fatalf("wrong password: %s %q", status, reason)
	}
}
