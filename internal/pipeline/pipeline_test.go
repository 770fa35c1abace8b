package pipeline_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/cron"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

const spec = "version: '1.0'\nsteps:\n  one:\n    commands: [\"echo one\"]\n  two:\n    commands: [\"echo two\"]\n"

type fixture struct {
	db   *store.DB
	keys *secrets.Keyring
	svc  *pipeline.Service
	p    rbac.Principal
}

func newFixture(t *testing.T, db *store.DB, edit ...func(*pipeline.Deps)) fixture {
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
	deps := pipeline.Deps{Store: db, Audit: audit.NewLog(db, log), Keys: keys, Log: log}
	for _, e := range edit {
		e(&deps)
	}
	return fixture{db: db, keys: keys, svc: pipeline.New(deps),
		p: rbac.Principal{AccountID: acct.ID, Email: "admin@acme.test", Role: rbac.Admin}}
}

func (f fixture) pipeline(t *testing.T, project, name string, cfg pipeline.Config) pipeline.Pipeline {
	t.Helper()
	ctx := context.Background()
	if _, err := f.svc.GetProject(ctx, f.p, project); err != nil {
		if _, err := f.svc.CreateProject(ctx, f.p, project); err != nil {
			t.Fatal(err)
		}
	}
	pl, err := f.svc.CreatePipeline(ctx, f.p, pipeline.PipelineInput{Project: project, Name: name, SpecYAML: spec, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// What the service hands out is decoded and ready to show: a pipeline with its project's name
// and its config, encrypted values masked; a build with its pipeline's name and its steps.
func TestServiceReturnsDecodedMaskedNamedTypes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		const secret = "s3cret-value-1234"
		cfg := pipeline.Config{Variables: []pipeline.Variable{{Key: "PLAIN", Value: "visible"}, {Key: "TOKEN", Value: secret, Encrypted: true}},
			RunnerLabels: map[string]string{"os": "linux"}, Concurrency: 2}
		pl := f.pipeline(t, "web", "ci", cfg)
		f.pipeline(t, "api", "deploy", pipeline.Config{})

		check := func(what string, got pipeline.Pipeline) {
			t.Helper()
			vars := got.Config.Variables
			if got.Project != "web" || got.FullName() != "web/ci" || got.Config.Concurrency != 2 || got.Config.RunnerLabels["os"] != "linux" ||
				len(vars) < 2 || vars[0].Value != "visible" || vars[1].Value != pipeline.MaskedValue || !vars[1].Encrypted {
				t.Fatalf("%s = %+v", what, got)
			}
		}
		check("CreatePipeline", pl)
		got, err := f.svc.ResolvePipeline(ctx, f.p, "web/ci")
		if err != nil {
			t.Fatal(err)
		}
		check("ResolvePipeline", got)
		list, err := f.svc.ListPipelines(ctx, f.p, "", paging.Page{})
		if err != nil || len(list) != 2 {
			t.Fatalf("ListPipelines = %+v, %v", list, err)
		}
		check("ListPipelines[0]", list[0])
		if list[1].FullName() != "api/deploy" {
			t.Fatalf("ListPipelines[1] = %s, want api/deploy", list[1].FullName())
		}

		// Sending the masked value back keeps the stored secret.
		in := pipeline.PipelineInput{SpecYAML: spec, Config: got.Config}
		in.Config.Variables = append(in.Config.Variables, pipeline.Variable{Key: "MORE", Value: "x"})
		updated, err := f.svc.UpdatePipeline(ctx, f.p, pl.ID, in)
		if err != nil {
			t.Fatal(err)
		}
		check("UpdatePipeline", updated)
		row, err := db.GetPipeline(ctx, f.p.AccountID, pl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(row.Config, secret) || strings.Contains(row.Config, pipeline.MaskedValue) {
			t.Fatalf("stored config holds the secret or its mask: %s", row.Config)
		}

		b, err := f.svc.Run(ctx, f.p, "web/ci", pipeline.RunInput{Branch: "main", Variables: map[string]string{"X": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		if b.Pipeline != "web/ci" || b.Variables["X"] != "1" || b.RunnerLabels["os"] != "linux" || b.Status != pipeline.StatusQueued {
			t.Fatalf("Run = %+v", b)
		}
		full, err := f.svc.GetBuild(ctx, f.p, b.ID)
		if err != nil || full.Pipeline != "web/ci" || len(full.Steps) != 2 || full.Steps[0].Name != "one" || full.Steps[1].Status != "pending" {
			t.Fatalf("GetBuild = %+v, %v", full, err)
		}
		builds, err := f.svc.ListBuilds(ctx, f.p, pipeline.BuildFilter{Pipeline: "web/ci", Branch: "main"}, paging.Page{})
		if err != nil || len(builds) != 1 || builds[0].ID != b.ID || builds[0].Pipeline != "web/ci" || builds[0].Steps != nil {
			t.Fatalf("ListBuilds = %+v, %v", builds, err)
		}
		if builds, err := f.svc.ListBuilds(ctx, f.p, pipeline.BuildFilter{Pipeline: "api/deploy"}, paging.Page{}); err != nil || len(builds) != 0 {
			t.Fatalf("ListBuilds(api/deploy) = %+v, %v", builds, err)
		}

		c, err := f.svc.PutContext(ctx, f.p, "creds", pipeline.ContextInput{Type: pipeline.ContextSecret, Values: map[string]string{"KEY": secret}}, true)
		if err != nil || c.Values["KEY"] != pipeline.MaskedValue || c.Type != pipeline.ContextSecret {
			t.Fatalf("PutContext = %+v, %v", c, err)
		}
		updatedCtx, err := f.svc.PutContext(ctx, f.p, "creds", pipeline.ContextInput{Values: map[string]string{"KEY": secret + "2"}}, false)
		if err != nil || updatedCtx.ID != c.ID || !updatedCtx.CreatedAt.Equal(c.CreatedAt) || updatedCtx.Values["KEY"] != pipeline.MaskedValue {
			t.Fatalf("PutContext(update) = %+v, %v; created %+v", updatedCtx, err, c)
		}
		clear, err := f.svc.GetContext(ctx, f.p, "creds", true)
		if err != nil || clear.Values["KEY"] != secret+"2" {
			t.Fatalf("GetContext(decrypt) = %+v, %v", clear, err)
		}

		r, tok, err := f.svc.RegisterRunner(ctx, f.p, "box", map[string]string{"os": "linux"})
		if err != nil || tok == "" || r.Labels["os"] != "linux" || r.Info == nil {
			t.Fatalf("RegisterRunner = %+v, %q, %v", r, tok, err)
		}
		if got, err := f.svc.AuthenticateRunner(ctx, tok); err != nil || got.ID != r.ID || got.AccountID != f.p.AccountID {
			t.Fatalf("AuthenticateRunner = %+v, %v", got, err)
		}
	})
}

// Stored JSON that cannot be decoded is an error, not an empty value: a corrupt config must not
// read as "no variables, no limits".
func TestUndecodableStoredJSONIsAnError(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		pl := f.pipeline(t, "web", "ci", pipeline.Config{})
		if _, _, err := f.svc.CreateTrigger(ctx, f.p, pl.ID, pipeline.TriggerInput{Type: pipeline.TriggerCron,
			Config: pipeline.TriggerConfig{Expression: "0 * * * *"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.PutContext(ctx, f.p, "creds", pipeline.ContextInput{Type: pipeline.ContextConfig, Values: map[string]string{"A": "b"}}, true); err != nil {
			t.Fatal(err)
		}
		err := db.Tx(ctx, func(tx *store.Tx) error {
			row, err := tx.GetPipeline(ctx, f.p.AccountID, pl.ID)
			if err != nil {
				return err
			}
			row.Config = `{"variables": "not a list"}`
			return tx.UpdatePipeline(ctx, row)
		})
		if err != nil {
			t.Fatal(err)
		}
		bad := store.Trigger{ID: store.NewID(store.PrefixTrigger), AccountID: f.p.AccountID, PipelineID: pl.ID, Type: pipeline.TriggerCron,
			Config: "{", CreatedAt: time.Now()}
		if err := db.CreateTrigger(ctx, bad); err != nil {
			t.Fatal(err)
		}
		if err := db.PutContext(ctx, store.ConfigContext{AccountID: f.p.AccountID, Name: "creds", Data: "[1]", UpdatedAt: time.Now()}, false); err != nil {
			t.Fatal(err)
		}

		wantErr := func(what string, err error, mention string) {
			t.Helper()
			if err == nil || !strings.Contains(err.Error(), mention) {
				t.Errorf("%s: err = %v, want a decode error naming %s", what, err, mention)
			}
		}
		_, err = f.svc.ResolvePipeline(ctx, f.p, "web/ci")
		wantErr("ResolvePipeline", err, pl.ID)
		_, err = f.svc.ListPipelines(ctx, f.p, "", paging.Page{})
		wantErr("ListPipelines", err, pl.ID)
		_, err = f.svc.Run(ctx, f.p, "web/ci", pipeline.RunInput{})
		wantErr("Run", err, pl.ID)
		_, err = f.svc.ListTriggers(ctx, f.p, pl.ID)
		wantErr("ListTriggers", err, bad.ID)
		// The cron executor loads every account's schedules at once: one unreadable trigger is
		// left out (and logged), not a failure of all of them.
		if scheds, err := f.svc.CronTriggers(ctx); err != nil || slices.ContainsFunc(scheds, func(sc cron.Schedule) bool { return sc.ID == bad.ID }) {
			t.Errorf("CronTriggers = %+v, %v: want the unreadable trigger %s left out, no error", scheds, err, bad.ID)
		}
		_, err = f.svc.ListContexts(ctx, f.p)
		wantErr("ListContexts", err, "creds")
		_, err = f.svc.GetContext(ctx, f.p, "creds", false)
		wantErr("GetContext", err, "creds")
		err = db.Tx(ctx, func(tx *store.Tx) error {
			_, err := pipeline.ReencryptSecrets(ctx, tx, f.keys)
			return err
		})
		wantErr("ReencryptSecrets", err, pl.ID)
	})
}
