package runtimes

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/webhook"
)

// fakeTunnel answers Do with a function; it records what it was sent.
type fakeTunnel struct {
	mu   sync.Mutex
	seen []sent
	do   func(rt TunnelRuntime, req *http.Request) (*http.Response, error)
}

type sent struct {
	rt   TunnelRuntime
	p    rbac.Principal
	req  *http.Request
	body string
}

func (f *fakeTunnel) Do(ctx context.Context, rt TunnelRuntime, p rbac.Principal, req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	f.mu.Lock()
	f.seen = append(f.seen, sent{rt, p, req, string(b)})
	f.mu.Unlock()
	return f.do(rt, req)
}

func (f *fakeTunnel) sent() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func answer(status int, body string) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "application/json")
	rec.WriteHeader(status)
	io.WriteString(rec, body)
	return rec.Result(), nil
}

func viewer(accountID string) rbac.Principal {
	return rbac.Principal{AccountID: accountID, UserID: "usr_v", Email: "v@acme.test", Role: rbac.Viewer}
}

func TestTreeFromTheRuntime(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	s := newTestService(db)
	ctx := context.Background()
	rt, _ := seedRuntime(t, s, "acme", "edge")
	if _, err := s.Report(ctx, rt, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{app("web", "Healthy")}}); err != nil {
		t.Fatal(err)
	}
	p := viewer(rt.AccountID)
	web, err := s.GetApplication(ctx, p, "edge", "web")
	if err != nil {
		t.Fatal(err)
	}
	// No tunnel configured, then a runtime that is not connected.
	if _, err := s.Tree(ctx, p, web); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("without a tunnel: %v", err)
	}
	ft := &fakeTunnel{do: func(TunnelRuntime, *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("runtime edge is not connected: %w", ErrNotConnected)
	}}
	s.tunnel = ft
	if _, err := s.Tree(ctx, p, web); !errors.Is(err, ErrDisconnected) || !strings.Contains(err.Error(), "edge is disconnected") {
		t.Fatalf("disconnected: %v", err)
	}
	// Connected: the app-proxy's tree, asked as the caller.
	ft.do = func(_ TunnelRuntime, req *http.Request) (*http.Response, error) {
		return answer(200, `{"items":[{"kind":"Deployment","namespace":"web","name":"web","version":"v1","group":"apps","uid":"u1",
			"health":{"status":"Progressing","message":"1 of 2 updated"},"sync":"Synced","createdAt":"2026-01-02T03:04:05Z",
			"children":[{"kind":"ReplicaSet","name":"web-1","version":"v1","uid":"u2","health":{"status":"Healthy"},"createdAt":"2026-01-02T03:04:05Z",
			"children":[{"kind":"Pod","name":"web-1-x","version":"v1","uid":"u3","health":{"status":"Healthy"},"images":["nginx:1"],"createdAt":"2026-01-02T03:04:06Z"}]}]}]}`)
	}
	tree, err := s.Tree(ctx, p, web)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != 1 || tree[0].Group != "apps" || tree[0].Health.Message != "1 of 2 updated" || tree[0].Children[0].Children[0].Images[0] != "nginx:1" {
		t.Fatalf("tree = %+v", tree)
	}
	last := ft.sent()[len(ft.sent())-1]
	if last.req.Method != "GET" || last.req.URL.Path != "/app-proxy/api/v1/applications/web/tree" || last.p != p || last.rt.ID != rt.ID || last.rt.AccountID != rt.AccountID {
		t.Fatalf("sent %s %s as %+v to %+v", last.req.Method, last.req.URL, last.p, last.rt)
	}
	// The runtime's error is the error, of its kind.
	ft.do = func(TunnelRuntime, *http.Request) (*http.Response, error) {
		return answer(404, `{"error":{"code":"not_found","message":"application \"web\" not found"}}`)
	}
	if _, err := s.Tree(ctx, p, web); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), `application "web" not found`) {
		t.Fatalf("runtime's 404: %v", err)
	}
	ft.do = func(TunnelRuntime, *http.Request) (*http.Response, error) { return answer(200, `<html>`) }
	if _, err := s.Tree(ctx, p, web); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("garbage answer: %v", err)
	}
	// Another account's caller gets nothing, not even a request to the runtime.
	n := len(ft.sent())
	if _, err := s.Tree(ctx, viewer("acc_other"), web); err == nil || len(ft.sent()) != n {
		t.Fatalf("another account reads the tree: %v", err)
	}
}

func TestListApplicationsFilters(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	s := newTestService(db)
	ctx := context.Background()
	rt, _ := seedRuntime(t, s, "acme", "edge")
	web, api := app("web", "Healthy"), app("api", "Degraded")
	web.Labels = map[string]string{"team": "shop", "env": "prod"}
	if _, err := s.Report(ctx, rt, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{web, api}}); err != nil {
		t.Fatal(err)
	}
	p := viewer(rt.AccountID)
	got, err := s.ListApplications(ctx, p, AppFilter{Labels: []string{"team=shop", " env = prod"}}, paging.Page{})
	if err != nil || appNames(got) != "web:Healthy" {
		t.Fatalf("labels: %s, %v", appNames(got), err)
	}
	for _, bad := range [][]string{{"team"}, {"=x"}, {"a=1", "a=2"}} {
		if _, err := s.ListApplications(ctx, p, AppFilter{Labels: bad}, paging.Page{}); !errors.Is(err, errdefs.ErrInvalid) || !strings.HasPrefix(errdefs.Field(err), "filter.labels[") {
			t.Errorf("selector %q: %v", bad, err)
		}
	}
	if _, err := s.ListApplications(ctx, rbac.Principal{AccountID: rt.AccountID}, AppFilter{}, paging.Page{}); !errors.Is(err, errdefs.ErrForbidden) {
		t.Fatalf("no role: %v", err)
	}
}

func sign(body []byte, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func githubPush(ref string) []byte {
	return []byte(`{"ref":"` + ref + `","before":"` + strings.Repeat("0", 40) + `","after":"` + strings.Repeat("a", 40) + `",
		"repository":{"full_name":"acme/deploy","name":"deploy","owner":{"login":"acme"},"clone_url":"https://github.com/acme/deploy.git",
		"ssh_url":"git@github.com:acme/deploy.git","html_url":"https://github.com/acme/deploy"},"sender":{"login":"ann"},"commits":[]}`)
}

func deliver(t *testing.T, s *Service, accountID, secret, event string, body []byte) (WebhookResult, error) {
	t.Helper()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", fmt.Sprint(time.Now().UnixNano()))
	h.Set("X-Hub-Signature-256", sign(body, secret))
	return s.HandleWebhook(context.Background(), "github", accountID, h, body)
}

func TestGitOpsWebhookNotifiesConnectedRuntimes(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	s := newTestService(db)
	ctx := context.Background()
	edge, _ := seedRuntime(t, s, "acme", "edge")
	hub, _ := seedRuntime(t, s, "acme", "hub")
	other, _ := seedRuntime(t, s, "globex", "edge")
	ft := &fakeTunnel{do: func(rt TunnelRuntime, req *http.Request) (*http.Response, error) {
		if rt.ID == hub.ID {
			return nil, fmt.Errorf("not connected: %w", ErrNotConnected)
		}
		return answer(200, `{"refreshed":1}`)
	}}
	s.tunnel = ft
	admin := rbac.Principal{AccountID: edge.AccountID, UserID: "usr_a", Email: "a@acme.test", Role: rbac.Admin}

	// Nothing is accepted before the account has a secret.
	if _, err := deliver(t, s, edge.AccountID, "whatever-secret-1", "push", githubPush("refs/heads/main")); !errors.Is(err, webhook.ErrSignature) {
		t.Fatalf("without a secret: %v", err)
	}
	if _, _, err := s.SetWebhookSecret(ctx, viewer(edge.AccountID), ""); !errors.Is(err, errdefs.ErrForbidden) {
		t.Fatalf("a viewer sets the secret: %v", err)
	}
	if _, _, err := s.SetWebhookSecret(ctx, admin, "short"); !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "secret" {
		t.Fatalf("short secret: %v", err)
	}
	secret, info, err := s.SetWebhookSecret(ctx, admin, "")
	if err != nil || len(secret) < 32 || !info.Configured {
		t.Fatalf("SetWebhookSecret = %q %+v, %v", secret, info, err)
	}
	if got, _ := s.WebhookInfo(ctx, viewer(edge.AccountID)); !got.Configured {
		t.Fatalf("WebhookInfo = %+v", got)
	}
	if got, _ := s.WebhookInfo(ctx, viewer(other.AccountID)); got.Configured {
		t.Fatal("another account sees a webhook")
	}

	// A signed push reaches every tunnel runtime of the account (not the other account's), as
	// the system with role member, for both clone URLs.
	res, err := deliver(t, s, edge.AccountID, secret, "push", githubPush("refs/heads/main"))
	if err != nil {
		t.Fatal(err)
	}
	<-res.Done
	want := []Notification{{RepoURL: "https://github.com/acme/deploy.git", Revision: "main"}, {RepoURL: "git@github.com:acme/deploy.git", Revision: "main"}}
	if !slices.Equal(res.Notifications, want) {
		t.Fatalf("notifications = %+v", res.Notifications)
	}
	var toEdge []Notification
	for _, x := range ft.sent() {
		if x.rt.AccountID != edge.AccountID || x.p != SystemPrincipal(edge.AccountID) || x.req.Method != "POST" || x.req.URL.Path != NotifyPath {
			t.Fatalf("sent %s %s as %+v to %+v", x.req.Method, x.req.URL, x.p, x.rt)
		}
		if x.rt.ID == edge.ID {
			var n Notification
			json.Unmarshal([]byte(x.body), &n)
			toEdge = append(toEdge, n)
		}
	}
	if !slices.Equal(toEdge, want) {
		t.Fatalf("edge was told %+v", toEdge)
	}
	// hub is not connected: one attempt, no more.
	tried := 0
	for _, x := range ft.sent() {
		if x.rt.ID == hub.ID {
			tried++
		}
	}
	if tried != 1 {
		t.Errorf("hub tried %d times", tried)
	}

	// Tags are their name; a ping or a pull request tells nothing.
	n := len(ft.sent())
	res, err = deliver(t, s, edge.AccountID, secret, "push", githubPush("refs/tags/v1.2.0"))
	if err != nil || len(res.Notifications) != 2 || res.Notifications[0].Revision != "v1.2.0" {
		t.Fatalf("tag push: %+v, %v", res, err)
	}
	<-res.Done
	res, err = deliver(t, s, edge.AccountID, secret, "ping", []byte(`{"zen":"hi","hook_id":1,"repository":{"full_name":"acme/deploy"}}`))
	if err != nil || len(res.Notifications) != 0 || res.Reason == "" {
		t.Fatalf("ping: %+v, %v", res, err)
	}
	<-res.Done
	if len(ft.sent()) != n+3 { // the tag's two URLs to edge, one attempt at hub
		t.Fatalf("%d requests after the tag push and the ping, want 3", len(ft.sent())-n)
	}

	// A wrong signature, another account's ID, an unknown account: all the same refusal.
	for _, acct := range []string{edge.AccountID, other.AccountID, "acc_nope"} {
		if _, err := deliver(t, s, acct, "not-the-secret-at-all", "push", githubPush("refs/heads/main")); !errors.Is(err, webhook.ErrSignature) {
			t.Errorf("account %s, wrong secret: %v", acct, err)
		}
	}
	if _, err := deliver(t, s, other.AccountID, secret, "push", githubPush("refs/heads/main")); !errors.Is(err, webhook.ErrSignature) {
		t.Errorf("A's secret for B's webhook: %v", err)
	}

}
