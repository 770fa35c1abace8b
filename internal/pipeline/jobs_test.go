package pipeline

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
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
