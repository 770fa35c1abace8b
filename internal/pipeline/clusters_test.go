package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

const testKubeconfig = `apiVersion: v1
kind: Config
current-context: prod
contexts:
- name: prod
  context: {cluster: prod, user: deployer}
clusters:
- name: prod
  cluster: {server: "https://kube.example.com:6443"}
users:
- name: deployer
  user: {token: kubeconfig-inner-token}
`

func newClusterService(t *testing.T, db *store.DB, policy *netpolicy.Policy) (*Service, rbac.Principal) {
	t.Helper()
	keys, err := secrets.GenerateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	acct := store.Account{ID: store.NewID(store.PrefixAccount), Name: "acme", CreatedAt: time.Now()}
	if err := db.CreateAccount(context.Background(), acct); err != nil {
		t.Fatal(err)
	}
	return New(Deps{Store: db, Audit: audit.NewLog(db, log), Keys: keys, Log: log, Net: policy}),
		rbac.Principal{AccountID: acct.ID, Email: "admin@acme.test", Role: rbac.Admin}
}

// Kubernetes and helm-repository contexts keep their secrets encrypted and masked, and come to
// a build only as the job's clusters and repositories, never as variables.
func TestClusterAndHelmRepoContexts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s, p := newClusterService(t, db, nil)
		const token = "sa-bearer-token-42"
		c, err := s.PutContext(ctx, p, "prod", ContextInput{Type: ContextKubernetes, Values: map[string]string{"server": "https://kube.example.com:6443", "token": token}}, true)
		if err != nil {
			t.Fatal(err)
		}
		if c.Values["token"] != MaskedValue || c.Values["server"] != "https://kube.example.com:6443" {
			t.Fatalf("created %+v", c.Values)
		}
		row, err := db.GetContext(ctx, p.AccountID, "prod")
		if err != nil || strings.Contains(row.Data, token) {
			t.Fatalf("stored %q, %v: the token must be encrypted", row.Data, err)
		}
		member := rbac.Principal{AccountID: p.AccountID, Email: "m@acme.test", Role: rbac.Member}
		if got, err := s.GetContext(ctx, member, "prod", false); err != nil || got.Values["token"] != MaskedValue {
			t.Fatalf("member sees %+v, %v", got.Values, err)
		}
		if _, err := s.GetContext(ctx, member, "prod", true); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("member decrypts: %v", err)
		}
		if got, err := s.GetContext(ctx, p, "prod", true); err != nil || got.Values["token"] != token {
			t.Fatalf("admin decrypts %+v, %v", got.Values, err)
		}
		// The mask keeps the token only while the server stays the same.
		if _, err := s.PutContext(ctx, p, "prod", ContextInput{Values: map[string]string{"server": "https://kube.example.com:6443", "token": MaskedValue}}, false); err != nil {
			t.Fatalf("resend masked: %v", err)
		}
		if got, _ := s.GetContext(ctx, p, "prod", true); got.Values["token"] != token {
			t.Fatalf("token after masked update: %q", got.Values["token"])
		}
		_, err = s.PutContext(ctx, p, "prod", ContextInput{Values: map[string]string{"server": "https://evil.example.com", "token": MaskedValue}}, false)
		if errdefs.Field(err) != "values.token" {
			t.Fatalf("masked token to another server: %v", err)
		}
		if _, err := s.PutContext(ctx, p, "kc", ContextInput{Type: ContextKubernetes, Values: map[string]string{"kubeconfig": testKubeconfig}}, true); err != nil {
			t.Fatal(err)
		}
		const repoPW = "chart-repo-password"
		if _, err := s.PutContext(ctx, p, "charts", ContextInput{Type: ContextHelmRepo, Values: map[string]string{"url": "https://charts.example.com/stable", "username": "ci", "password": repoPW}}, true); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateProject(ctx, p, "app"); err != nil {
			t.Fatal(err)
		}
		const deploySpec = "version: '1.0'\nsteps:\n  ship:\n    type: deploy\n    kind: kubernetes\n    cluster: prod\n    service: web\n    candidate: {image: 'acme/web:1'}\n" +
			"  chart:\n    type: helm\n    arguments: {chart_name: web, chart_repo_url: 'https://charts.example.com/stable', release_name: web, kube_context: kc}\n"
		if _, err := s.CreatePipeline(ctx, p, PipelineInput{Project: "app", Name: "cd", SpecYAML: deploySpec, Config: Config{Contexts: []string{"prod", "kc", "charts"}}}); err != nil {
			t.Fatal(err)
		}
		b, err := s.Run(ctx, p, "app/cd", RunInput{Branch: "main"})
		if err != nil || b.Status != StatusQueued {
			t.Fatalf("run: %+v %v", b, err)
		}
		row2, err := db.GetBuild(ctx, p.AccountID, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		job, err := s.job(ctx, row2)
		if err != nil {
			t.Fatal(err)
		}
		if len(job.Clusters) != 2 || job.Clusters[0].Name != "prod" || job.Clusters[0].Token != token || job.Clusters[1].Kubeconfig != testKubeconfig {
			t.Fatalf("job clusters %+v", job.Clusters)
		}
		if len(job.HelmRepos) != 1 || job.HelmRepos[0].Password != repoPW || job.HelmRepos[0].URL != "https://charts.example.com/stable" {
			t.Fatalf("job helm repos %+v", job.HelmRepos)
		}
		for _, sec := range []string{token, repoPW, "kubeconfig-inner-token", testKubeconfig} {
			if !slices.Contains(job.Secrets, sec) {
				t.Errorf("job does not mask %q", sec)
			}
		}
		for k, v := range job.Variables {
			if strings.Contains(v, token) || strings.Contains(v, repoPW) || k == "token" || k == "password" {
				t.Errorf("a context secret became variable %s", k)
			}
		}
	})
}

// A deploy or helm step naming a cluster context its pipeline may not use refuses the build
// before any step runs, naming the step and the context.
func TestBuildRefusedForClusterNotAllowed(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	s, p := newClusterService(t, db, nil)
	put := func(name string, in ContextInput) {
		t.Helper()
		if _, err := s.PutContext(ctx, p, name, in, true); err != nil {
			t.Fatal(err)
		}
	}
	put("prod", ContextInput{Type: ContextKubernetes, Values: map[string]string{"server": "https://kube.example.com", "token": "t"}})
	put("staging", ContextInput{Type: ContextKubernetes, Values: map[string]string{"server": "https://staging.example.com", "token": "t2"}})
	put("cfg", ContextInput{Type: ContextConfig, Values: map[string]string{"A": "b"}})
	if _, err := s.CreateProject(ctx, p, "app"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, cluster string
		contexts      []string
		want          string
	}{
		{"not-listed", "prod", []string{"staging"}, `step ship (steps.ship) deploys to cluster context "prod", which this pipeline may not use`},
		{"missing", "nowhere", []string{"nowhere"}, ""}, // refused when the pipeline is saved: not a context
		{"not-a-cluster", "cfg", []string{"cfg"}, `names context "cfg", a config context, as its cluster`},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := "version: '1.0'\nsteps:\n  ship:\n    type: deploy\n    kind: kubernetes\n    cluster: " + c.cluster + "\n    file_path: k8s\n"
			_, err := s.CreatePipeline(ctx, p, PipelineInput{Project: "app", Name: c.name, SpecYAML: sp, Config: Config{Contexts: c.contexts}})
			if c.want == "" {
				if errdefs.Field(err) != "config.contexts[0]" {
					t.Fatalf("create: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.Run(ctx, p, "app/"+c.name, RunInput{Branch: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if b.Status != StatusFailed || !strings.Contains(b.Reason, c.want) {
				t.Fatalf("build %s: %q, want failed with %q", b.Status, b.Reason, c.want)
			}
			if len(b.Steps) != 0 {
				t.Fatalf("a refused build has steps: %+v", b.Steps)
			}
		})
	}
}

// Bad kubernetes and helm-repository contexts are refused naming the field.
func TestClusterContextValidation(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	pol, err := netpolicy.Options{}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	s, p := newClusterService(t, db, pol)
	execKC := strings.Replace(testKubeconfig, "user: {token: kubeconfig-inner-token}", "user: {exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1}}", 1)
	for _, c := range []struct {
		name, typ, field, mention string
		vals                      map[string]string
	}{
		{"no server", ContextKubernetes, "values.server", "is required", map[string]string{"token": "t"}},
		{"no token", ContextKubernetes, "values.token", "is required with server", map[string]string{"server": "https://kube.example.com"}},
		{"bad server", ContextKubernetes, "values.server", "Kubernetes API server URL", map[string]string{"server": "kube.example.com", "token": "t"}},
		{"loopback server", ContextKubernetes, "values.server", "127.0.0.1", map[string]string{"server": "https://127.0.0.1:6443", "token": "t"}},
		{"both forms", ContextKubernetes, "values.kubeconfig", "not both", map[string]string{"kubeconfig": testKubeconfig, "server": "https://kube.example.com"}},
		{"exec user", ContextKubernetes, "values.kubeconfig", "runs a program", map[string]string{"kubeconfig": execKC}},
		{"not a kubeconfig", ContextKubernetes, "values.kubeconfig", "is not a kubeconfig", map[string]string{"kubeconfig": "clusters: [1, 2"}},
		{"unknown key", ContextKubernetes, "values.namespace", "server, token", map[string]string{"namespace": "x", "server": "https://kube.example.com", "token": "t"}},
		{"masked new", ContextKubernetes, "values.token", "mask of a secret", map[string]string{"server": "https://kube.example.com", "token": MaskedValue}},
		{"bad CA", ContextKubernetes, "values.ca", "PEM", map[string]string{"server": "https://kube.example.com", "token": "t", "ca": "nope"}},
		{"cm repo", ContextHelmRepo, "values.url", "cm://", map[string]string{"url": "cm://h.cfcr.io/acme/default"}},
		{"creds in url", ContextHelmRepo, "values.url", "carries credentials", map[string]string{"url": "https://u:p@charts.example.com"}},
		{"user without password", ContextHelmRepo, "values.password", "give both", map[string]string{"url": "https://charts.example.com", "username": "u"}},
		{"private repo", ContextHelmRepo, "values.url", "10.0.0.1", map[string]string{"url": "http://10.0.0.1/charts"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.PutContext(ctx, p, "c", ContextInput{Type: c.typ, Values: c.vals}, true)
			if errdefs.Field(err) != c.field || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("err = %v (field %q), want field %s mentioning %q", err, errdefs.Field(err), c.field, c.mention)
			}
		})
	}
}
