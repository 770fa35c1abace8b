package security_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/runtimes/install"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/testenv/fakedns"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// Issue #11, items 2 and 3: URLs from tenants. A tenant names a repository, a git provider's
// API or a cluster's API server, and the control plane (or a hosted runtime inside it)
// connects there. The attacks aim at what is only reachable from inside: the server's own disk
// (another tenant's hosted-runtime installation repository in the data dir), loopback services,
// cloud instance metadata, by address, by localhost, by a name that resolves inside, by a
// redirect. Each must be a 400 naming the field, reach nothing (the recording server counts
// every request), and echo nothing the inside would have answered.

const (
	insideBody   = "INSIDE-ONLY-ANSWER-93c1" // what the internal services answer
	tenantSecret = "A-PRIVATE-MARKER-5e7d"   // what A's installation repository holds
)

// inside is a service only the control plane's host can reach: it records every request and
// answers with insideBody.
type inside struct {
	url, url6 string // http://127.0.0.1:port, http://[::1]:port ("" without IPv6)
	port      string
	hits      atomic.Int32
}

func startInside(t *testing.T, ip string) *inside {
	t.Helper()
	in := &inside{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"message": %q}`, insideBody)
	})
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	in.url = srv.URL
	_, in.port, _ = net.SplitHostPort(ln.Addr().String())
	if ln6, err := net.Listen("tcp", "[::1]:"+in.port); err == nil {
		srv6 := &httptest.Server{Listener: ln6, Config: &http.Server{Handler: h}}
		srv6.Start()
		t.Cleanup(srv6.Close)
		in.url6 = srv6.URL
	}
	return in
}

// refused reports whether err is the 400 naming field that the attack must get, without the
// inside's answer or the other tenant's content in it.
func refused(err error, field string) bool {
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Field != field {
		return false
	}
	return !strings.Contains(ae.Message, insideBody) && !strings.Contains(ae.Message, tenantSecret)
}

// gitTo commits files to a bare repository with the git CLI, as its owner would.
func gitTo(t *testing.T, bare string, files map[string]string) {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=A", "-c", "user.email=a@first.test", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run(filepath.Dir(bare), "clone", bare, work)
	for name, content := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(work, "add", ".")
	run(work, "commit", "-m", "private")
	run(work, "push", "origin", "HEAD:main")
}

// aPrivateRepo gives account A a hosted runtime and puts A's secret in its installation
// repository, which lives in the control plane's data dir. It returns the repository's path.
func aPrivateRepo(t *testing.T, tn *tenants, dataDir string) string {
	t.Helper()
	rt, err := tn.aAdmin.CreateHostedRuntime(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	// The hosted-runtimes lease holder starts the runtime, and makes its repository, just after.
	repo := filepath.Join(dataDir, "hosted", rt.ID, "installation.git")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := os.Stat(filepath.Join(repo, "HEAD"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's hosted runtime has no installation repository at %s: %v", repo, err)
		}
	}
	gitTo(t, repo, map[string]string{
		"codefresh.yml":         "version: '1.0'\nsteps:\n  leak:\n    commands: ['echo " + tenantSecret + "']\n",
		"manifests/secret.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-secret\ndata:\n  token: " + tenantSecret + "\n",
	})
	return repo
}

// B's pipelines name local repositories: A's installation repository in the data dir (by
// file://localhost, by path, through a symlink placed outside), and the host's own files. On
// `freshet server` file:// is off; with the operator's opt-in (`--allow-file-repos /`, as
// `freshet up` defaults) the data dir stays out of reach, also when a path checked at creation
// is swapped for a symlink into it before a build reads it.
func TestSpecRepoReadsNoLocalRepository(t *testing.T) {
	const category = "ssrf: specRepo reads the host's repositories (file://)"
	for _, c := range []struct {
		name  string
		files []string // --allow-file-repos
	}{{"server defaults", nil}, {"file repos allowed", []string{"/"}}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			var dataDir string
			tn := startTenants(t, servertest.Config{Edit: func(o *server.Options) { dataDir = o.DataDir; o.Net.FileRepoDirs = c.files }})
			repo := aPrivateRepo(t, tn, dataDir)
			outside := t.TempDir()
			link := filepath.Join(outside, "link.git")
			if err := os.Symlink(repo, link); err != nil {
				t.Fatal(err)
			}
			if _, err := tn.bAdmin.CreateProject(ctx, "p"); err != nil {
				t.Fatal(err)
			}
			tries, got := 0, 0
			var worst time.Duration
			for i, u := range []string{
				"file://localhost" + repo, "file://LOCALHOST" + repo, "file://" + repo, repo, "file://" + dataDir + "/hosted/../hosted/" + filepath.Base(filepath.Dir(repo)) + "/installation.git",
				"file://" + link, link, "file:///etc", "file://localhost/etc", "/etc/passwd", "file://" + dataDir,
			} {
				tries++
				start := time.Now()
				_, err := tn.bAdmin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: fmt.Sprintf("steal-%d", i), SpecRepo: u, SpecPath: "codefresh.yml"})
				worst = max(worst, time.Since(start))
				if !refused(err, "specRepo") {
					got++
					t.Errorf("specRepo %s: %v", u, err)
				}
			}
			if c.files != nil {
				// A legitimate local repository outside the data dir is allowed...
				mine := filepath.Join(outside, "mine.git")
				if out, err := exec.Command("git", "init", "--bare", "-b", "main", mine).CombinedOutput(); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				gitTo(t, mine, map[string]string{"codefresh.yml": "version: '1.0'\nsteps:\n  a:\n    commands: ['echo mine']\n"})
				if _, err := tn.bAdmin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "mine", SpecRepo: "file://" + mine}); err != nil {
					t.Fatalf("a local repository outside the data dir: %v", err)
				}
				// ...and swapped for a symlink into the data dir before the build reads it.
				if err := os.RemoveAll(mine); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(repo, mine); err != nil {
					t.Fatal(err)
				}
				tries++
				start := time.Now()
				b, err := tn.bAdmin.RunPipeline(ctx, "p/mine", client.RunRequest{Branch: "main"})
				worst = max(worst, time.Since(start))
				if err != nil || b.Status != "failed" || strings.Contains(b.Reason, tenantSecret) || !strings.Contains(b.Reason, "data directory") {
					got++
					t.Errorf("build after the swap: %+v, %v", b, err)
				}
			}
			attack(t, category, tries, got, worst)
		})
	}
}

// B's pipelines name services inside the control plane's network: loopback by address, by
// localhost, by a name that resolves there, IPv6 and mapped forms, instance metadata, the git
// protocol and ssh, and a redirect from an address the operator allows to one it does not.
func TestSpecRepoReachesNoInternalAddress(t *testing.T) {
	const category = "ssrf: specRepo reaches internal addresses"
	ctx := context.Background()
	in := startInside(t, "127.0.0.1")
	dns := fakedns.Start(t, map[string][]string{"inside.attacker.test": {"127.0.0.1"}, "metadata.attacker.test": {"169.254.169.254"},
		"both.attacker.test": {"203.0.113.10", "127.0.0.1"}})
	// The operator allows one address (127.0.0.2): it redirects to the inside.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2: %v", err)
	}
	redirector := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, in.url+r.URL.RequestURI(), http.StatusFound)
	})}}
	redirector.Start()
	defer redirector.Close()
	tn := startTenants(t, servertest.Config{Edit: func(o *server.Options) {
		o.Net.Resolver = dns.Resolver()
		o.Net.PrivateNetworks = []string{"127.0.0.2/32"}
	}})
	if _, err := tn.bAdmin.CreateProject(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	urls := []string{
		in.url + "/x.git", "http://localhost:" + in.port + "/x.git", "http://LocalHost.:" + in.port + "/x.git", "http://inside.attacker.test:" + in.port + "/x.git",
		"http://both.attacker.test:" + in.port + "/x.git", "http://[::ffff:127.0.0.1]:" + in.port + "/x.git", "http://0.0.0.0:" + in.port + "/x.git",
		"http://169.254.169.254/latest/meta-data/x.git", "http://metadata.attacker.test/latest/x.git", "http://[fe80::1]/x.git",
		"git://127.0.0.1:" + in.port + "/x.git", "git://inside.attacker.test:" + in.port + "/x.git", "ssh://git@127.0.0.1:" + in.port + "/x.git",
		"git@127.0.0.1:x.git", "http://2130706433:" + in.port + "/x.git", redirector.URL + "/x.git",
	}
	if in.url6 != "" {
		urls = append(urls, in.url6+"/x.git")
	}
	tries, got := 0, 0
	var worst time.Duration
	for i, u := range urls {
		tries++
		before := in.hits.Load()
		start := time.Now()
		_, err := tn.bAdmin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: fmt.Sprintf("ssrf-%d", i), SpecRepo: u})
		worst = max(worst, time.Since(start))
		if !refused(err, "specRepo") || in.hits.Load() != before {
			got++
			t.Errorf("specRepo %s: %v (inside hits %d)", u, err, in.hits.Load()-before)
		}
	}
	attack(t, category, tries, got, worst)
}

// hostedRuntime gives B a hosted runtime and waits until its app-proxy answers.
func hostedRuntime(t *testing.T, c *client.Client) string {
	t.Helper()
	ctx := context.Background()
	rt, err := c.CreateHostedRuntime(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.ListClusters(ctx, rt.Name)
		if err == nil {
			return rt.Name
		}
		if time.Now().After(deadline) {
			t.Fatalf("hosted runtime %s: app-proxy not reachable: %v", rt.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// B's hosted runtime (inside the control plane's process) is asked to list repositories from
// internal "providers" with B's token, to add clusters whose API servers are internal, and to
// deploy applications and Git Sources from A's installation repository or an internal address.
func TestHostedRuntimeReachesNoInternalAddress(t *testing.T) {
	ctx := context.Background()
	in := startInside(t, "127.0.0.1")
	dns := fakedns.Start(t, map[string][]string{"inside.attacker.test": {"127.0.0.1"}, "metadata.attacker.test": {"169.254.169.254"}})
	var dataDir string
	tn := startTenants(t, servertest.Config{Edit: func(o *server.Options) {
		dataDir = o.DataDir
		o.Net.Resolver = dns.Resolver()
		// The operator lists a provider host; it still may not lead inside.
		o.Net.ProviderHosts = []string{"inside.attacker.test:" + in.port}
	}})
	aRepo := aPrivateRepo(t, tn, dataDir)
	rt := hostedRuntime(t, tn.bAdmin)

	inside := []string{in.url, "http://localhost:" + in.port, "http://inside.attacker.test:" + in.port, "http://169.254.169.254", "http://metadata.attacker.test",
		"http://[::ffff:127.0.0.1]:" + in.port}
	if in.url6 != "" {
		inside = append(inside, in.url6)
	}
	check := func(category, field string, tries int, try func(u string) error, urls []string) {
		t.Helper()
		got := 0
		var worst time.Duration
		for _, u := range urls {
			before := in.hits.Load()
			start := time.Now()
			err := try(u)
			worst = max(worst, time.Since(start))
			if !refused(err, field) || in.hits.Load() != before {
				got++
				t.Errorf("%s %s: %v (inside hits %d)", field, u, err, in.hits.Load()-before)
			}
		}
		attack(t, category, tries+len(urls), got, worst)
	}

	check("ssrf: git provider baseURL (hosted runtime)", "baseURL", 0, func(u string) error {
		_, err := tn.bAdmin.ListProviderRepos(ctx, rt, "gitea", u, "", "b-provider-token")
		return err
	}, append(append([]string{}, inside...), "https://evil.example"))
	check("ssrf: git provider baseURL (hosted runtime)", "baseURL", 0, func(u string) error {
		_, err := tn.bAdmin.ListProviderRepos(ctx, rt, "gitlab", u, "", "b-provider-token")
		return err
	}, []string{in.url, "http://inside.attacker.test:" + in.port})

	servers := []string{"https://127.0.0.1:" + in.port, "https://localhost:" + in.port, "https://inside.attacker.test:" + in.port, "https://169.254.169.254",
		"https://metadata.attacker.test", "https://[::1]:" + in.port, "https://[fe80::1]"}
	check("ssrf: cluster server added to a hosted runtime", "server", 0, func(u string) error {
		_, err := tn.bAdmin.AddCluster(ctx, rt, client.ClusterCredential{Name: "edge", Server: u, Token: "t"})
		return err
	}, servers)

	repos := []string{"file://" + aRepo, "file://localhost" + aRepo, aRepo, "file:///etc", in.url + "/x.git", "http://inside.attacker.test:" + in.port + "/x.git",
		"http://169.254.169.254/x.git"}
	check("ssrf: a hosted runtime's apps and Git Sources", "spec.source.repoURL", 0, func(u string) error {
		manifest := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: steal\nspec:\n  project: default\n  source:\n    repoURL: " + u +
			"\n    path: manifests\n    targetRevision: main\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: default\n"
		_, err := tn.bAdmin.CreateApplication(ctx, rt, []byte(manifest), false)
		return err
	}, repos)
	check("ssrf: a hosted runtime's apps and Git Sources", "spec.repoURL", 0, func(u string) error {
		_, err := tn.bAdmin.PutGitSource(ctx, rt, client.NewGitSource("steal", client.GitSourceSpec{RepoURL: u, Path: "apps"}), false)
		return err
	}, repos)
}

// An application that reaches the hosted runtime without the API's check — inside a Git
// Source's repository, which the operator allows — names A's installation repository and an
// internal address. With a cluster to deploy to, the engine compares it with git: its
// repository cache refuses both, and the application's status says so without A's content or
// the inside's answer.
func TestHostedEngineReadsNoOtherTenantRepository(t *testing.T) {
	const category = "ssrf: a hosted runtime's apps and Git Sources"
	ctx := context.Background()
	cluster := kube.Shared(t)
	ns := cluster.Namespace(t)
	in := startInside(t, "127.0.0.3")
	src := gitserver.New(t) // B's Git Source repository, on 127.0.0.1, which the operator allows
	var dataDir string
	tn := startTenants(t, servertest.Config{Edit: func(o *server.Options) {
		dataDir = o.DataDir
		o.Net.PrivateNetworks = []string{"127.0.0.1/32"} // the Git Source and the cluster; not 127.0.0.3
	}})
	aRepo := aPrivateRepo(t, tn, dataDir)
	rt := hostedRuntime(t, tn.bAdmin)
	mc, err := install.PrepareCluster(ctx, cluster.RESTConfig(), "edge", rt, install.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tn.bAdmin.AddCluster(ctx, rt, client.ClusterCredential{Name: mc.Name, Server: mc.Server, CAData: mc.CAData, Token: mc.Token}); err != nil {
		t.Fatalf("B's own cluster: %v", err)
	}
	app := func(name, repoURL string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\nspec:\n  project: default\n  source:\n    repoURL: " + repoURL +
			"\n    path: manifests\n    targetRevision: main\n  destination:\n    name: edge\n    namespace: " + ns + "\n"
	}
	targets := map[string]string{"steal-file": "file://" + aRepo, "steal-path": aRepo, "steal-inside": in.url + "/x.git"}
	files := map[string]string{"apps/control.yaml": app("control", src.URL()+"/b-apps.git")}
	for name, u := range targets {
		files["apps/"+name+".yaml"] = app(name, u)
	}
	files["manifests/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-config\ndata:\n  a: b\n"
	repo := src.NewRepo("b-apps")
	repo.Commit("main", files, "apps")
	if _, err := tn.bAdmin.PutGitSource(ctx, rt, client.NewGitSource("b-apps", client.GitSourceSpec{RepoURL: repo.URL(), Path: "apps", TargetRevision: "main"}), false); err != nil {
		t.Fatal(err)
	}
	compared := func(name string) (client.Application, error) {
		var a client.Application
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if a, err = tn.bAdmin.GetApplication(ctx, rt, name); err == nil && (a.Status.Revision != "" || len(a.Status.Conditions) > 0) {
				break
			}
		}
		return a, err
	}
	// The control application, from B's own repository, is compared: the engine does read git here.
	if a, err := compared("control"); err != nil || a.Status.Revision == "" {
		t.Fatalf("B's own application was not compared with git: %+v, %v", a.Status, err)
	}
	tries, got := 0, 0
	start := time.Now()
	for name, u := range targets {
		tries++
		a, err := compared(name)
		status := fmt.Sprintf("%+v", a.Status)
		if err != nil || !strings.Contains(status, "ComparisonError") || !strings.Contains(status, "--allow-") ||
			strings.Contains(status, tenantSecret) || strings.Contains(status, insideBody) || a.Status.Revision != "" {
			got++
			t.Errorf("app %s (%s): %v\n%s", name, u, err, status)
		}
	}
	if n := in.hits.Load(); n != 0 {
		got++
		t.Errorf("the inside got %d requests", n)
	}
	attack(t, category, tries, got, time.Since(start))
}
