package pipeline

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/gitops/providers"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// A build's built-in variables are the ones Codefresh documents, computed by the same functions
// the spec compiler and the runner use.
func TestJobBuiltinVariables(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, store.SQLite)
	keys, err := secrets.GenerateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	acct := store.Account{ID: store.NewID(store.PrefixAccount), Name: "acme", CreatedAt: time.Now()}
	if err := db.CreateAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Keys: keys, Log: log})
	p := rbac.Principal{AccountID: acct.ID, Email: "admin@acme.test", Role: rbac.Admin}
	if _, err := s.CreateProject(ctx, p, "app"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePipeline(ctx, p, PipelineInput{Project: "app", Name: "ci", SpecYAML: "version: '1.0'\nsteps:\n  one:\n    commands: [\"true\"]\n"}); err != nil {
		t.Fatal(err)
	}
	b, err := s.Run(ctx, p, "app/ci", RunInput{Branch: "Feature/Login.v2", SHA: "0123456789abcdef0123456789abcdef01234567", Repo: "acme/app"})
	if err != nil {
		t.Fatal(err)
	}
	row, err := db.GetBuild(ctx, acct.ID, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	job, err := s.job(ctx, row)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"CF_BRANCH":                           "Feature/Login.v2",
		"CF_BRANCH_TAG_NORMALIZED":            "Feature_Login.v2",
		"CF_BRANCH_TAG_NORMALIZED_LOWER_CASE": "feature_login.v2",
		"CF_SHORT_REVISION":                   "0123456",
		"CF_REPO_OWNER":                       "acme",
		"CF_REPO_NAME":                        "app",
		"CF_PIPELINE_NAME":                    "app/ci",
	} {
		if got := job.Variables[name]; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// A job carries the registries its pipeline uses, in the pipeline's order, then the account's
// default registry (once, even when the pipeline lists it too), decrypted, with their passwords
// among the secrets to mask; registry contexts add no variables.
func TestJobCarriesRegistries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		keys, err := secrets.GenerateKeyFile(filepath.Join(t.TempDir(), "master.key"))
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.DiscardHandler)
		acct := store.Account{ID: store.NewID(store.PrefixAccount), Name: "acme", CreatedAt: time.Now()}
		if err := db.CreateAccount(ctx, acct); err != nil {
			t.Fatal(err)
		}
		s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Keys: keys, Log: log})
		p := rbac.Principal{AccountID: acct.ID, Email: "admin@acme.test", Role: rbac.Admin}
		put := func(name string, in ContextInput) {
			t.Helper()
			if _, err := s.PutContext(ctx, p, name, in, true); err != nil {
				t.Fatal(err)
			}
		}
		put("quay", ContextInput{Type: ContextRegistry, Registry: &Registry{URL: "quay.io/acme", Password: "quay-token"}})
		put("ghcr", ContextInput{Type: ContextRegistry, Registry: &Registry{URL: "ghcr.io/acme", Username: "bot", Password: "ghcr-password", CA: "", Default: false}})
		put("local", ContextInput{Type: ContextRegistry, Registry: &Registry{URL: "127.0.0.1:5000", Username: "ci", Password: "local-password", Default: true}})
		put("anon", ContextInput{Type: ContextRegistry, Registry: &Registry{URL: "registry.example"}})
		put("creds", ContextInput{Type: ContextSecret, Values: map[string]string{"TOKEN": "secret-token"}})
		put("gh", ContextInput{Type: ContextGit, Git: &GitProvider{Provider: providers.GitHub, Token: "ghp-git-token"}})
		put("ghe", ContextInput{Type: ContextGit, Git: &GitProvider{Provider: providers.GitHub, URL: "https://ghe.example/api/v3/", Username: "bot", Token: "ghe-token"}})
		if _, err := s.CreateProject(ctx, p, "app"); err != nil {
			t.Fatal(err)
		}
		job := func(contexts ...string) runnerv1.Job {
			t.Helper()
			name := "ci-" + strconv.Itoa(len(contexts)) + "-" + strings.Join(contexts, "-")
			if _, err := s.CreatePipeline(ctx, p, PipelineInput{Project: "app", Name: name, SpecYAML: "version: '1.0'\nsteps:\n  one:\n    commands: [\"true\"]\n",
				Config: Config{Contexts: contexts}}); err != nil {
				t.Fatal(err)
			}
			b, err := s.Run(ctx, p, "app/"+name, RunInput{Branch: "main"})
			if err != nil {
				t.Fatal(err)
			}
			row, err := db.GetBuild(ctx, acct.ID, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			j, err := s.job(ctx, row)
			if err != nil {
				t.Fatal(err)
			}
			return j
		}

		j := job("ghcr", "creds", "gh", "quay", "anon", "ghe")
		wantGit := []runnerv1.GitContext{
			{Name: "gh", Provider: providers.GitHub, CloneURL: "https://github.com", Username: "x-access-token", Token: "ghp-git-token"},
			{Name: "ghe", Provider: providers.GitHub, CloneURL: "https://ghe.example", Username: "bot", Token: "ghe-token"},
		}
		if !slices.Equal(j.GitContexts, wantGit) {
			t.Errorf("GitContexts = %+v\nwant %+v", j.GitContexts, wantGit)
		}
		want := []runnerv1.Registry{
			{Name: "ghcr", URL: "ghcr.io/acme", Username: "bot", Password: "ghcr-password"},
			{Name: "quay", URL: "quay.io/acme", Password: "quay-token"},
			{Name: "anon", URL: "registry.example"},
			{Name: "local", URL: "127.0.0.1:5000", Username: "ci", Password: "local-password", Default: true},
		}
		if !slices.Equal(j.Registries, want) {
			t.Errorf("Registries = %+v\nwant %+v", j.Registries, want)
		}
		for _, s := range []string{"ghcr-password", "quay-token", "local-password", "secret-token", "ghp-git-token", "ghe-token"} {
			if !slices.Contains(j.Secrets, s) {
				t.Errorf("Secrets %q lack %q", j.Secrets, s)
			}
		}
		if slices.Contains(j.Secrets, "") {
			t.Errorf("Secrets hold an empty value (the anonymous registry's password): %q", j.Secrets)
		}
		for k, v := range j.Variables {
			if v != "" && slices.ContainsFunc(want, func(r runnerv1.Registry) bool { return v == r.URL || v == r.Password || v == r.Username }) {
				t.Errorf("a registry context became variable %s=%q", k, v)
			}
		}
		if j.Variables["TOKEN"] != "secret-token" {
			t.Errorf("the secret context's TOKEN = %q", j.Variables["TOKEN"])
		}

		// The default listed by the pipeline comes once, in the pipeline's order, as the default.
		j = job("local", "quay")
		want = []runnerv1.Registry{
			{Name: "local", URL: "127.0.0.1:5000", Username: "ci", Password: "local-password", Default: true},
			{Name: "quay", URL: "quay.io/acme", Password: "quay-token"},
		}
		if !slices.Equal(j.Registries, want) {
			t.Errorf("Registries = %+v\nwant %+v", j.Registries, want)
		}
		// A pipeline with no registry still gets the default; with no default, none.
		if j = job(); len(j.Registries) != 1 || j.Registries[0].Name != "local" {
			t.Errorf("Registries of a pipeline without contexts = %+v, want the default", j.Registries)
		}
		if err := s.DeleteContext(ctx, p, "local"); err != nil {
			t.Fatal(err)
		}
		if j = job("creds"); len(j.Registries) != 0 {
			t.Errorf("Registries without a default = %+v", j.Registries)
		}
	})
}
