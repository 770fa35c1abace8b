package cli

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// `freshet notification …` against a real control plane: a channel is created with its
// subscription, a deployment queued by the control plane (through its outbox, the bus and the
// notification consumer) reaches a real HTTP receiver, `channel test` answers what happened,
// `deliveries` shows the log, secrets are never printed, and bad input names the field.
func TestNotificationCommands(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	var badSignatures int
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte("cli-signing-secret"))
		mac.Write(b)
		mu.Lock()
		bodies = append(bodies, string(b))
		if r.Header.Get("X-Freshet-Signature-256") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			badSignatures++
		}
		mu.Unlock()
	}))
	defer hook.Close()
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.Net.PrivateNetworks = []string{"loopback"} }})
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) { return runIn(t, s.URL, key.Token, "", args...) }
	// The secret comes on standard input, so it is in neither the shell history nor the process list.
	if code, out, errOut := runIn(t, s.URL, key.Token, "cli-signing-secret\n", "notification", "channel", "create", "ops", "--kind", "webhook", "--url", hook.URL+"/in?token=cli-url-secret",
		"--secret-stdin", "--events", "deployment,health-degraded"); code != 0 || !strings.Contains(out, "ops") {
		t.Fatalf("channel create: %d %s %s", code, out, errOut)
	}
	code, out, errOut := run("notification", "channel", "list")
	if code != 0 || !strings.Contains(out, "webhook") || strings.Contains(out, "cli-url-secret") || strings.Contains(out, "cli-signing-secret") {
		t.Fatalf("channel list: %d %s %s", code, out, errOut)
	}
	if code, out, _ := run("notification", "subscription", "list"); code != 0 || !strings.Contains(out, "deployment,health-degraded") {
		t.Fatalf("subscription list: %d %s", code, out)
	}

	// A finished sync as the runtimes service queues it: in the outbox, relayed to the bus.
	me, err := s.Admin.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acc := me.Account.ID
	now := time.Now().UTC()
	ev, _ := json.Marshal(runtimes.SyncFinished{AccountID: acc, RuntimeID: "rt_cli", Runtime: "prod", Application: "shop", SyncID: 7,
		Revision: "abcdef0123456789", Phase: "Succeeded", InitiatedBy: "automated", StartedAt: now.Add(-time.Minute), FinishedAt: now})
	if err := s.DB().InsertOutbox(ctx, store.OutboxMessage{AccountID: acc, Subject: "freshet." + acc + ".gitops.sync-finished",
		Key: "gitops-sync-finished/rt_cli/shop/7", Payload: string(ev), CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(got()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the deployment's notification never arrived")
		}
	}
	if b := got()[0]; !strings.Contains(b, `"event":"deployment"`) || !strings.Contains(b, "Deployment of shop (prod) succeeded") {
		t.Fatalf("webhook body: %s", b)
	}

	if code, out, errOut := run("notification", "channel", "test", "ops", "-o", "json"); code != 0 || !strings.Contains(out, `"status": "delivered"`) {
		t.Fatalf("channel test: %d %s %s", code, out, errOut)
	}
	var ds []client.NotificationDelivery
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, out, errOut = run("notification", "deliveries", "-o", "json")
		if code != 0 || json.Unmarshal([]byte(out), &ds) != nil {
			t.Fatalf("deliveries: %d %s %s", code, out, errOut)
		}
		if len(ds) == 2 && ds[1].Status == "delivered" || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	if badSignatures != 0 {
		t.Errorf("%d of %d bodies not signed with the secret given on standard input", badSignatures, len(bodies))
	}
	mu.Unlock()
	if len(ds) != 2 || ds[0].Event != "test" || ds[1].Event != "deployment" || ds[1].Status != "delivered" || len(ds[1].Attempts) != 1 || ds[1].Attempts[0].StatusCode != 200 {
		t.Fatalf("deliveries: %+v", ds)
	}

	// Bad input: a 400 naming the field and what is valid.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"notification", "channel", "create", "x", "--kind", "email", "--smtp-host", "smtp.example.com", "--from", "nobody", "--to", "a@b.example"}, "smtp.from"},
		{[]string{"notification", "channel", "create", "x", "--kind", "pager"}, "webhook, slack or email"},
		{[]string{"notification", "subscription", "create", "ops", "--events", "build-exploded"}, "events[0]"},
		{[]string{"notification", "deliveries", "--status", "lost"}, "pending, delivered or failed"},
		{[]string{"notification", "channel", "create", "x", "--kind", "webhook", "--url", hook.URL, "--secret-stdin"}, "--secret-stdin: standard input held no secret"},
		{[]string{"notification", "channel", "create", "x", "--kind", "webhook", "--url", hook.URL, "--secret-stdin", "--secret", "s"}, "give the secret one way"},
	} {
		if code, _, errOut := run(c.args...); code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %s, want an error naming %q", c.args, code, errOut, c.want)
		}
	}
	if code, _, errOut := run("notification", "channel", "delete", "ops"); code != 0 {
		t.Fatalf("channel delete: %d %s", code, errOut)
	}
	if code, out, _ := run("notification", "deliveries", "-o", "json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("deliveries after the channel was deleted: %s", out)
	}
}
