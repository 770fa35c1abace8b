package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// TestSSOBrowserLogin logs in through the REST endpoints and a real OpenID provider on
// 127.0.0.1, following every redirect like a browser, and checks that the session cookie it
// gets acts in the account and cannot leave it.
func TestSSOBrowserLogin(t *testing.T) {
	idp, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := idp.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idp.Shutdown() })
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.Net.PrivateNetworks = []string{"loopback"} }})
	ctx := context.Background()
	me, err := s.Admin.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateAccount(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	cfg, err := s.Admin.SetSSO(ctx, client.SSOConfigRequest{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
		AllowedDomains: []string{"first.test"}})
	if err != nil || !cfg.ClientSecretSet {
		t.Fatalf("set sso: %+v %v", cfg, err)
	}

	idp.QueueUser(&mockoidc.MockUser{Subject: "admin", Email: s.AdminEmail, EmailVerified: true})
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	resp, err := browser.Get(s.URL + "/auth/sso/" + me.Account.ID + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(s.URL)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" || resp.Request.URL.Host != u.Host {
		t.Fatalf("ended at %s with %d, want the UI", resp.Request.URL, resp.StatusCode)
	}
	var session string
	for _, c := range jar.Cookies(u) {
		if c.Name == "freshet_session" {
			session = c.Value
		}
	}
	if session == "" {
		t.Fatal("no session cookie")
	}
	c := s.Client(session)
	got, err := c.Me(ctx)
	if err != nil || got.Account.ID != me.Account.ID || got.User.Email != s.AdminEmail {
		t.Fatalf("me: %+v %v", got, err)
	}
	var ce *client.Error
	if _, err := c.SwitchAccount(ctx, "second"); !errors.As(err, &ce) || ce.Status != http.StatusForbidden {
		t.Fatalf("SSO session switched account: %v", err)
	}
	if err := c.ChangePassword(ctx, client.ChangePasswordRequest{CurrentPassword: servertest.AdminPassword, NewPassword: "taken-over-123"}); !errors.As(err, &ce) || ce.Status != http.StatusForbidden {
		t.Fatalf("SSO session changed the password: %v", err)
	}
	if _, err := s.Admin.SwitchAccount(ctx, "second"); err != nil {
		t.Fatalf("password session cannot switch: %v", err)
	}
}
