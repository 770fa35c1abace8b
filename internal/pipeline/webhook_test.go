package pipeline_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/webhook"
)

func pushBody(sha string) []byte {
	return []byte(`{"ref":"refs/heads/main","before":"` + strings.Repeat("0", 40) + `","after":"` + sha + `",
		"repository":{"full_name":"acme/app","clone_url":"https://git.example/acme/app.git"},"sender":{"login":"ann"},"commits":[]}`)
}

func githubHeaders(secret, delivery string, body []byte) http.Header {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	h := http.Header{"Content-Type": {"application/json"}, "X-Github-Event": {"push"}, "X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(m.Sum(nil))}}
	if delivery != "" {
		h.Set("X-GitHub-Delivery", delivery)
	}
	return h
}

// A correctly signed push starts one build however often it is sent: again with its delivery
// id, or with a new one (without one it is refused: every provider sends one). Pushes told to
// the GitOps hook are told once too.
func TestWebhookReplayStartsNoSecondBuild(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		pushed := 0
		f := newFixture(t, db, func(d *pipeline.Deps) { d.OnPush = func(context.Context, string, []webhook.Event) { pushed++ } })
		f.pipeline(t, "web", "ci", pipeline.Config{})
		trg, secret, err := f.svc.CreateTrigger(ctx, f.p, "web/ci", pipeline.TriggerInput{Type: pipeline.TriggerGit,
			Config: pipeline.TriggerConfig{Provider: "github", Git: &webhook.Trigger{Repo: "acme/app", Events: []string{"push.heads"}}}})
		if err != nil {
			t.Fatal(err)
		}
		body := pushBody(strings.Repeat("a", 40))
		first, err := f.svc.HandleWebhook(ctx, "github", trg.ID, githubHeaders(secret, "d-1", body), body)
		if err != nil || len(first.Builds) != 1 || first.Duplicate {
			t.Fatalf("first delivery: %+v, %v", first, err)
		}
		if _, err := f.svc.HandleWebhook(ctx, "github", trg.ID, githubHeaders(secret, "", body), body); errdefs.Field(err) != "X-GitHub-Delivery" {
			t.Fatalf("replay without a delivery id: %v; want a refusal naming X-GitHub-Delivery", err)
		}
		for _, delivery := range []string{"d-1", "d-2", "d-3"} {
			res, err := f.svc.HandleWebhook(ctx, "github", trg.ID, githubHeaders(secret, delivery, body), body)
			if err != nil || !res.Duplicate || len(res.Builds) != 1 || res.Builds[0].ID != first.Builds[0].ID {
				t.Fatalf("replay with delivery id %q: %+v, %v; want a duplicate of %s", delivery, res, err, first.Builds[0].ID)
			}
		}
		builds, err := f.svc.ListBuilds(ctx, f.p, pipeline.BuildFilter{}, paging.Page{})
		if err != nil || len(builds) != 1 {
			t.Fatalf("%d builds after the replays, want 1 (%v)", len(builds), err)
		}
		if pushed != 1 {
			t.Fatalf("the push hook was told %d times, want 1", pushed)
		}
		// Another push (another after-SHA) builds.
		other := pushBody(strings.Repeat("b", 40))
		res, err := f.svc.HandleWebhook(ctx, "github", trg.ID, githubHeaders(secret, "d-4", other), other)
		if err != nil || res.Duplicate || len(res.Builds) != 1 || res.Builds[0].ID == first.Builds[0].ID {
			t.Fatalf("a new push: %+v, %v", res, err)
		}
	})
}

// Every delivery not verified with a git trigger's secret gets the same error, whatever the
// trigger is or is not; one signed with the trigger's secret to another provider's URL learns
// which provider the trigger takes.
func TestWebhookUnverifiedDeliveriesAreAnsweredAlike(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		f.pipeline(t, "web", "ci", pipeline.Config{})
		trg, secret, err := f.svc.CreateTrigger(ctx, f.p, "web/ci", pipeline.TriggerInput{Type: pipeline.TriggerGit,
			Config: pipeline.TriggerConfig{Provider: "gitea", Git: &webhook.Trigger{Repo: "acme/app", Events: []string{"push.heads"}}}})
		if err != nil {
			t.Fatal(err)
		}
		cron, _, err := f.svc.CreateTrigger(ctx, f.p, "web/ci", pipeline.TriggerInput{Type: pipeline.TriggerCron, Config: pipeline.TriggerConfig{Expression: "@hourly"}})
		if err != nil {
			t.Fatal(err)
		}
		body := pushBody(strings.Repeat("c", 40))
		want := webhook.Unauthenticated(webhook.GitHub).Error()
		for name, c := range map[string]struct {
			trigger string
			h       http.Header
		}{
			"unknown trigger":               {"trg_nope", githubHeaders("some-secret-0123456789", "d", body)},
			"cron trigger":                  {cron.ID, githubHeaders("some-secret-0123456789", "d", body)},
			"gitea trigger, wrong secret":   {trg.ID, githubHeaders("some-secret-0123456789", "d", body)},
			"gitea trigger, no signature":   {trg.ID, http.Header{"X-Github-Event": {"push"}}},
			"gitea trigger, bad signature":  {trg.ID, http.Header{"X-Github-Event": {"push"}, "X-Hub-Signature-256": {"sha256=zz"}}},
			"unknown trigger, no signature": {"trg_nope", http.Header{"X-Github-Event": {"push"}}},
		} {
			_, err := f.svc.HandleWebhook(ctx, "github", c.trigger, c.h, body)
			if !errors.Is(err, webhook.ErrSignature) || err.Error() != want {
				t.Errorf("%s: %v; want %q", name, err, want)
			}
		}
		// Signed with the trigger's secret (GitHub and Gitea sign alike) but sent to the GitHub URL.
		_, err = f.svc.HandleWebhook(ctx, "github", trg.ID, githubHeaders(secret, "d", body), body)
		if !errors.Is(err, pipeline.ErrTriggerMismatch) || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "gitea") {
			t.Fatalf("a verified delivery to the wrong provider's URL: %v", err)
		}
	})
}
