package security_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

const webhookSpec = "version: '1.0'\nsteps:\n  build:\n    commands: [\"true\"]\n"

// answer is what an HTTP endpoint said: the status and the body without its request id.
type answer struct {
	status int
	body   string
}

// post sends body to url with header pairs and returns the answer (request id removed, so that
// answers compare) and how long it took.
func post(t *testing.T, url string, body []byte, header ...string) (answer, time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if json.Unmarshal(raw, &v) == nil {
		if e, ok := v["error"].(map[string]any); ok {
			delete(e, "requestId")
		}
		raw, _ = json.Marshal(v)
	}
	return answer{resp.StatusCode, string(raw)}, took
}

func hubSignature(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// githubPushPayload is a push in GitHub's format; after names the pushed commit.
func githubPushPayload(after string) []byte {
	b, _ := json.Marshal(map[string]any{
		"ref": "refs/heads/main", "before": strings.Repeat("0", 40), "after": after, "created": false, "deleted": false,
		"repository": map[string]any{"full_name": "acme/app", "name": "app", "owner": map[string]any{"login": "acme"},
			"clone_url": "https://git.example/acme/app.git", "pushed_at": 1700000000},
		"sender": map[string]any{"login": "dev"}, "commits": []any{},
	})
	return b
}

// A correctly signed push, captured and sent again — with its delivery id, with new ones, with
// none — must start no build beyond the first; to the GitOps webhook it must notify once.
func TestWebhookReplay(t *testing.T) {
	ctx := context.Background()
	tn := startTenants(t, servertest.Config{})
	if _, err := tn.aAdmin.CreateProject(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.aAdmin.CreatePipeline(ctx, client.PipelineRequest{Project: "app", Name: "ci", Spec: webhookSpec}); err != nil {
		t.Fatal(err)
	}
	trg, err := tn.aAdmin.CreateTrigger(ctx, "app/ci", client.TriggerRequest{Type: "git", Provider: "github",
		Git: &client.GitTrigger{Repo: "acme/app", Events: []string{"push.heads"}}})
	if err != nil {
		t.Fatal(err)
	}
	body := githubPushPayload(strings.Repeat("a", 40))
	sig := hubSignature(trg.Secret, body)
	if a, _ := post(t, trg.WebhookURL, body, "X-GitHub-Event", "push", "X-GitHub-Delivery", "d-0", "X-Hub-Signature-256", sig); a.status != 201 {
		t.Fatalf("the genuine delivery: %+v", a)
	}
	tries := 0
	var worst time.Duration
	replay := func(delivery string) answer {
		tries++
		h := []string{"X-GitHub-Event", "push", "X-Hub-Signature-256", sig}
		if delivery != "-" {
			h = append(h, "X-GitHub-Delivery", delivery)
		}
		a, took := post(t, trg.WebhookURL, body, h...)
		worst = max(worst, took)
		return a
	}
	for i := range 3 {
		replay("d-0") // the provider's redelivery, or a replay with the captured id
		replay(fmt.Sprintf("replayed-%d", i))
		replay(fmt.Sprintf("%08x-cc78-11e3-81ab-4c9367dc0958", i)) // a plausible new GUID
		replay("")                                                 // empty
		replay("-")                                                // missing
	}
	builds, err := tn.aAdmin.ListBuilds(ctx, client.BuildFilter{})
	if err != nil {
		t.Fatal(err)
	}
	attack(t, "webhooks: replayed signed push (builds beyond the first)", tries, len(builds.Items)-1, worst)

	// The account's GitOps webhook: a replay is a duplicate and tells the runtimes nothing.
	key, err := tn.aAdmin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "hooks"})
	if err != nil {
		t.Fatal(err)
	}
	setup, _ := post(t, tn.s.URL+"/api/v1/gitops/webhook", []byte(`{"secret":"gitops-secret-0123456789"}`), "Authorization", "Bearer "+key.Token)
	if setup.status != 200 {
		t.Fatalf("set the GitOps webhook secret: %+v", setup)
	}
	me, err := tn.aAdmin.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gitops := tn.s.URL + "/api/v1/webhooks/gitops/github/" + me.Account.ID
	gsig := hubSignature("gitops-secret-0123456789", body)
	first, _ := post(t, gitops, body, "X-GitHub-Event", "push", "X-GitHub-Delivery", "g-0", "X-Hub-Signature-256", gsig)
	if first.status != 202 || !strings.Contains(first.body, "acme/app.git") {
		t.Fatalf("the genuine GitOps delivery: %+v", first)
	}
	tries, notified := 0, 0
	worst = 0
	for i := range 5 {
		for _, delivery := range []string{"g-0", fmt.Sprint("g-new-", i)} {
			tries++
			a, took := post(t, gitops, body, "X-GitHub-Event", "push", "X-GitHub-Delivery", delivery, "X-Hub-Signature-256", gsig)
			worst = max(worst, took)
			if a.status != 202 || !strings.Contains(a.body, `"duplicate":true`) || strings.Contains(a.body, "acme/app.git") {
				notified++
			}
		}
	}
	attack(t, "webhooks: replayed push to GitOps webhook (notified again)", tries, notified, worst)
}

// An unauthenticated prober must not tell "this trigger (account) exists, but my signature is
// wrong" from "there is no such trigger (account)", nor a trigger of another kind, provider or
// account, or of a deleted pipeline: every such delivery gets the same status and body, in about
// the same time.
func TestWebhookOracle(t *testing.T) {
	ctx := context.Background()
	tn := startTenants(t, servertest.Config{})
	for _, c := range []*client.Client{tn.aAdmin, tn.bAdmin} {
		if _, err := c.CreateProject(ctx, "app"); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"ci", "gone"} {
			if _, err := c.CreatePipeline(ctx, client.PipelineRequest{Project: "app", Name: name, Spec: webhookSpec}); err != nil {
				t.Fatal(err)
			}
		}
	}
	gitTrigger := func(c *client.Client, pipeline, provider string) client.CreatedTrigger {
		t.Helper()
		trg, err := c.CreateTrigger(ctx, pipeline, client.TriggerRequest{Type: "git", Provider: provider,
			Git: &client.GitTrigger{Repo: "acme/app", Events: []string{"push.heads"}}})
		if err != nil {
			t.Fatal(err)
		}
		return trg
	}
	genuine := gitTrigger(tn.aAdmin, "app/ci", "github")
	gitlab := gitTrigger(tn.aAdmin, "app/ci", "gitlab")
	other := gitTrigger(tn.bAdmin, "app/ci", "github")
	gone := gitTrigger(tn.aAdmin, "app/gone", "github")
	if err := tn.aAdmin.DeletePipeline(ctx, "app/gone"); err != nil {
		t.Fatal(err)
	}
	cron, err := tn.aAdmin.CreateTrigger(ctx, "app/ci", client.TriggerRequest{Type: "cron", Expression: "@hourly"})
	if err != nil {
		t.Fatal(err)
	}
	hooks := tn.s.URL + "/api/v1/webhooks/github/"
	targets := map[string]string{
		"unknown trigger":          hooks + "trg_01jzzzzzzzzzzzzzzzzzzzzzzz",
		"malformed trigger id":     hooks + "..%2F..%2Fetc",
		"cron trigger":             hooks + cron.ID,
		"gitlab trigger at github": hooks + gitlab.ID,
		"deleted pipeline trigger": hooks + gone.ID,
		"another account trigger":  hooks + other.ID,
		"real trigger":             hooks + genuine.ID,
	}
	body := githubPushPayload(strings.Repeat("b", 40))
	// Each variant is what a prober can send without the secret. Its answer must not depend on
	// the target.
	variants := map[string][]string{
		"signed with a guessed secret": {"X-GitHub-Event", "push", "X-GitHub-Delivery", "p-1", "X-Hub-Signature-256", hubSignature("guessed-secret-0123456789", body)},
		"signed with another's secret": {"X-GitHub-Event", "push", "X-GitHub-Delivery", "p-1", "X-Hub-Signature-256", hubSignature(other.Secret, body)},
		"no signature":                 {"X-GitHub-Event", "push", "X-GitHub-Delivery", "p-1"},
		"malformed signature":          {"X-GitHub-Event", "push", "X-GitHub-Delivery", "p-1", "X-Hub-Signature-256", "sha256=not-hex"},
		"no event header":              {"X-GitHub-Delivery", "p-1", "X-Hub-Signature-256", hubSignature("guessed-secret-0123456789", body)},
	}
	tries, leaks := 0, 0
	var worst time.Duration
	var want *answer
	for vname, h := range variants {
		for tname, url := range targets {
			if vname == "signed with another's secret" && tname == "another account trigger" {
				continue // that one is genuine
			}
			tries++
			a, took := post(t, url, body, h...)
			worst = max(worst, took)
			if want == nil {
				want = &a
			}
			if a != *want || a.status != 401 {
				leaks++
				t.Errorf("%s to the %s: %+v; every unauthenticated delivery gets %+v", vname, tname, a, *want)
			}
		}
	}
	attack(t, "webhooks: trigger oracle (answers that differ)", tries, leaks, worst)

	// Timing: the medians of a wrong signature to a real trigger and to an unknown one stay
	// close (both look up a trigger and compute an HMAC of the body). Loose: shared CI machines
	// are noisy, and a difference that matters would be the cost of a missing HMAC or decryption,
	// not of a scheduler's hiccup.
	const rounds = 40
	timing := map[string][]time.Duration{}
	h := variants["signed with a guessed secret"]
	for range rounds {
		for _, tname := range []string{"real trigger", "unknown trigger", "cron trigger", "deleted pipeline trigger"} {
			_, took := post(t, targets[tname], body, h...)
			timing[tname] = append(timing[tname], took)
		}
	}
	medians := map[string]time.Duration{}
	lo, hi := time.Hour, time.Duration(0)
	for tname, ds := range timing {
		slices.Sort(ds)
		medians[tname] = ds[len(ds)/2]
		lo, hi = min(lo, medians[tname]), max(hi, medians[tname])
	}
	t.Logf("median answer to a wrong signature: %v", medians)
	skew := 0
	if hi > 2*lo && hi-lo > 2*time.Millisecond {
		skew = 1
		t.Errorf("timing tells targets apart: medians %v", medians)
	}
	attack(t, "webhooks: trigger timing oracle (median skew > 2x and 2ms)", 1, skew, hi)

	// The GitOps webhook: an account with a secret and a wrong signature, an account without one,
	// no such account.
	key, err := tn.aAdmin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "hooks"})
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := post(t, tn.s.URL+"/api/v1/gitops/webhook", []byte(`{}`), "Authorization", "Bearer "+key.Token); a.status != 200 {
		t.Fatalf("set the GitOps webhook secret: %+v", a)
	}
	aMe, err := tn.aAdmin.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bMe, err := tn.bAdmin.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gitops := tn.s.URL + "/api/v1/webhooks/gitops/github/"
	accounts := map[string]string{"with a secret": aMe.Account.ID, "without one": bMe.Account.ID, "unknown": "acc_01jzzzzzzzzzzzzzzzzzzzzzzz"}
	tries, leaks, worst, want = 0, 0, 0, nil
	for vname, h := range variants {
		if vname == "signed with another's secret" {
			continue
		}
		for aname, acct := range accounts {
			tries++
			a, took := post(t, gitops+acct, body, h...)
			worst = max(worst, took)
			if want == nil {
				want = &a
			}
			if a != *want || a.status != 401 {
				leaks++
				t.Errorf("%s to the account %s: %+v; every unauthenticated delivery gets %+v", vname, aname, a, *want)
			}
		}
	}
	attack(t, "webhooks: GitOps account oracle (answers that differ)", tries, leaks, worst)
}
