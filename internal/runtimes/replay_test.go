package runtimes

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/webhook"
)

// A signed push replayed to the GitOps webhook — with its delivery id or a new one — notifies
// the runtimes once; unverified deliveries get one answer whatever the account.
func TestGitOpsWebhookReplayNotifiesOnce(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	s := newTestService(db)
	ctx := context.Background()
	edge, _ := seedRuntime(t, s, "acme", "edge")
	bare, _ := seedRuntime(t, s, "globex", "edge") // an account without a GitOps webhook
	ft := &fakeTunnel{do: func(TunnelRuntime, *http.Request) (*http.Response, error) { return answer(200, `{"refreshed":1}`) }}
	s.tunnel = ft
	secret, _, err := s.SetWebhookSecret(ctx, rbac.Principal{AccountID: edge.AccountID, Email: "a@acme.test", Role: rbac.Admin}, "")
	if err != nil {
		t.Fatal(err)
	}
	body := githubPush("refs/heads/main")
	res, err := deliver(t, s, edge.AccountID, secret, "push", body) // a new delivery id each time
	if err != nil || res.Duplicate || len(res.Notifications) != 2 {
		t.Fatalf("first delivery: %+v, %v", res, err)
	}
	<-res.Done
	sent := len(ft.sent())
	for range 3 {
		res, err := deliver(t, s, edge.AccountID, secret, "push", body)
		if err != nil || !res.Duplicate || len(res.Notifications) != 0 || res.Reason == "" {
			t.Fatalf("replay: %+v, %v; want a duplicate that notifies nothing", res, err)
		}
		<-res.Done
	}
	if n := len(ft.sent()); n != sent {
		t.Fatalf("the replays sent %d more notifications", n-sent)
	}

	want := webhook.Unauthenticated(webhook.GitHub).Error()
	for name, acct := range map[string]string{"wrong secret": edge.AccountID, "no webhook": bare.AccountID, "no account": "acc_nope"} {
		_, err := deliver(t, s, acct, "not-the-secret-at-all", "push", body)
		if !errors.Is(err, webhook.ErrSignature) || err.Error() != want {
			t.Errorf("%s: %v; want %q", name, err, want)
		}
	}
}
