package identity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// idpUser is a user the test identity provider logs in without asking, with optional changes
// to the ID token's claims (to make bad tokens the real provider signs).
type idpUser struct {
	mockoidc.MockUser
	tamper func(c *jwt.RegisteredClaims)
}

func (u *idpUser) Claims(scope []string, base *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	if u.tamper != nil {
		u.tamper(base.RegisteredClaims)
	}
	return u.MockUser.Claims(scope, base)
}

// startIdP starts a real OpenID provider (mockoidc: discovery, JWKS, authorization endpoint
// with PKCE, token endpoint signing RS256 ID tokens) on 127.0.0.1, behind middleware mws.
func startIdP(t testing.TB, mws ...func(http.Handler) http.Handler) *mockoidc.MockOIDC {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, mw := range mws {
		if err := m.AddMiddleware(mw); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return m
}

// ssoFrontend serves the two browser endpoints the REST API serves, over s, and returns the
// base URL: GET /login/{account} redirects to the provider, GET /callback finishes and sets
// the session cookie.
func ssoFrontend(t testing.TB, s *Service) string {
	t.Helper()
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/{account}", func(w http.ResponseWriter, r *http.Request) {
		u, err := s.BeginSSO(r.Context(), r.PathValue("account"), base+"/callback")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, u, http.StatusFound)
	})
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		res, err := s.FinishSSO(r.Context(), r.URL.Query().Get("state"), r.URL.Query().Get("code"), base+"/callback")
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "freshet_session", Value: res.Token, Path: "/"})
		fmt.Fprintf(w, "logged in %s", res.Principal.Email)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base = srv.URL
	return base
}

// browse follows the whole redirect chain like a browser with a cookie jar and returns the
// final status, body and session cookie.
func browse(t testing.TB, base, account string) (int, string, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	resp, err := c.Get(base + "/login/" + account)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	session := ""
	for _, ck := range resp.Cookies() {
		if ck.Name == "freshet_session" {
			session = ck.Value
		}
	}
	return resp.StatusCode, strings.TrimSpace(string(body)), session
}

func TestSSOLogin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log, Keys: secrets.Generate(), Net: netpolicy.Unrestricted()})
		var discoveries, keyFetches atomic.Int32
		idp := startIdP(t, func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration"):
					discoveries.Add(1)
				case strings.HasSuffix(r.URL.Path, "/jwks.json"):
					keyFetches.Add(1)
				}
				next.ServeHTTP(w, r)
			})
		})
		base := ssoFrontend(t, s)

		acme, err := s.Provision(ctx, "acme", "admin@acme.test", "admin-password")
		if err != nil {
			t.Fatal(err)
		}
		// The admin also administers another account: an SSO session must not reach it.
		if _, err := s.Provision(ctx, "other", "admin@acme.test", ""); err != nil {
			t.Fatal(err)
		}
		admin, err := s.Login(ctx, "admin@acme.test", "admin-password", "acme")
		if err != nil {
			t.Fatal(err)
		}
		ap := admin.Principal
		if _, err := s.CreateTeam(ctx, ap, "engineering"); err != nil {
			t.Fatal(err)
		}

		// Bad configuration is refused naming the field.
		for _, bad := range []struct {
			in    SSOConfigInput
			field string
		}{
			{SSOConfigInput{Issuer: "ftp://idp", ClientID: "c", AllowedDomains: []string{"acme.test"}}, "issuer"},
			{SSOConfigInput{Issuer: "http://idp.example.com", ClientID: "c", AllowedDomains: []string{"acme.test"}}, "issuer"},
			{SSOConfigInput{Issuer: idp.Issuer(), ClientID: "", AllowedDomains: []string{"acme.test"}}, "clientId"},
			{SSOConfigInput{Issuer: idp.Issuer(), ClientID: "c"}, "allowedDomains"},
			{SSOConfigInput{Issuer: idp.Issuer(), ClientID: "c", AllowedDomains: []string{"not a domain"}}, "allowedDomains"},
			{SSOConfigInput{Issuer: idp.Issuer(), ClientID: "c", AllowedDomains: []string{"acme.test"}, Scopes: []string{"email"}}, "scopes"},
			{SSOConfigInput{Issuer: idp.Issuer(), ClientID: "c", AllowedDomains: []string{"acme.test"}, EmailClaim: "e mail"}, "emailClaim"},
			{SSOConfigInput{Issuer: idp.Issuer(), ClientID: "c", AllowedDomains: []string{"acme.test"}, RequireSSO: true}, "breakGlass"},
		} {
			_, err := s.SetSSO(ctx, ap, bad.in)
			if errdefs.Field(err) != bad.field {
				t.Errorf("SetSSO(%+v) = %v, want invalid %s", bad.in, err, bad.field)
			}
		}
		cfg := SSOConfigInput{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret, AllowedDomains: []string{"acme.test"}}
		got, err := s.SetSSO(ctx, ap, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !got.ClientSecretSet || strings.Join(got.Scopes, " ") != "openid email profile" || got.EmailClaim != "email" || got.GroupsClaim != "groups" {
			t.Fatalf("config: %+v", got)
		}
		cfg.Scopes, cfg.ClientSecret = []string{"openid", "email", "profile", "groups"}, "" // the stored secret stays
		if got, err = s.SetSSO(ctx, ap, cfg); err != nil || !got.ClientSecretSet || len(got.Scopes) != 4 {
			t.Fatalf("config: %+v %v", got, err)
		}
		row, err := db.GetSSOConfig(ctx, acme.Account.ID)
		if err != nil || row.ClientSecret == "" || strings.Contains(row.ClientSecret, idp.ClientSecret) {
			t.Fatalf("client secret stored in clear or not at all: %v", err)
		}
		if _, err := s.GetSSO(ctx, rbac.Principal{AccountID: acme.Account.ID, Role: rbac.Member}); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("member read the SSO configuration: %v", err)
		}

		members := func() int {
			ms, err := s.ListUsers(ctx, ap, paging.Page{})
			if err != nil {
				t.Fatal(err)
			}
			return len(ms)
		}
		before := members()

		// Each bad ID token or identity is a clear refusal, and nothing is created.
		for _, c := range []struct {
			name string
			user *idpUser
			want string
		}{
			{"wrong audience", &idpUser{MockUser: mockUser("jane@acme.test", true), tamper: func(c *jwt.RegisteredClaims) { c.Audience = jwt.ClaimStrings{"someone-else"} }}, "expected audience"},
			{"expired", &idpUser{MockUser: mockUser("jane@acme.test", true), tamper: func(c *jwt.RegisteredClaims) {
				c.IssuedAt = jwt.NewNumericDate(time.Now().Add(-2 * time.Hour))
				c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour))
			}}, "token is expired"},
			{"another issuer", &idpUser{MockUser: mockUser("jane@acme.test", true), tamper: func(c *jwt.RegisteredClaims) { c.Issuer = "https://evil.example.com" }}, "issued by a different provider"},
			{"unverified email", &idpUser{MockUser: mockUser("jane@acme.test", false)}, "email_verified is not true"},
			{"domain outside the allow-list", &idpUser{MockUser: mockUser("jane@evil.test", true)}, `email domain "evil.test" is not allowed`},
		} {
			idp.QueueUser(c.user)
			code, body, session := browse(t, base, "acme")
			if code != http.StatusUnauthorized || !strings.Contains(body, "single sign-on refused") || !strings.Contains(body, c.want) || session != "" {
				t.Errorf("%s: %d %q (session %v), want 401 naming %q", c.name, code, body, session != "", c.want)
			}
			if _, err := db.UserByEmail(ctx, "jane@acme.test"); !errors.Is(err, errdefs.ErrNotFound) {
				t.Errorf("%s: user created: %v", c.name, err)
			}
			if n := members(); n != before {
				t.Errorf("%s: members %d, want %d", c.name, n, before)
			}
		}

		// The happy path: a new user is created as a member, joins the team named by a group,
		// and gets a session.
		jane := mockUser("jane@acme.test", true)
		jane.Groups = []string{"engineering", "no-such-team"}
		idp.QueueUser(&idpUser{MockUser: jane})
		code, body, session := browse(t, base, "acme")
		if code != http.StatusOK || body != "logged in jane@acme.test" || session == "" {
			t.Fatalf("login: %d %q", code, body)
		}
		jp, err := s.Authenticate(ctx, session)
		if err != nil || jp.AccountID != acme.Account.ID || jp.Role != rbac.Member || !jp.SSOBound {
			t.Fatalf("session: %+v %v", jp, err)
		}
		team, err := db.GetTeam(ctx, acme.Account.ID, "engineering")
		if err != nil {
			t.Fatal(err)
		}
		tms, err := db.TeamMembers(ctx, acme.Account.ID, team.ID)
		if err != nil || len(tms) != 1 || tms[0].Email != "jane@acme.test" {
			t.Fatalf("team members: %+v %v", tms, err)
		}
		if _, err := s.Login(ctx, "jane@acme.test", "", "acme"); err == nil {
			t.Fatal("a JIT user logged in with an empty password")
		}
		// A second login finds the same user.
		idp.QueueUser(&idpUser{MockUser: jane})
		if code, body, _ := browse(t, base, "acme"); code != http.StatusOK || members() != before+1 {
			t.Fatalf("second login: %d %q, members %d", code, body, members())
		}

		// A state works once: replaying a finished callback is refused.
		if _, err := s.FinishSSO(ctx, "replayed-or-made-up", "code", base+"/callback"); !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("unknown state: %v", err)
		}

		// A session the acme IdP vouched for stays in acme: no switching to the user's other
		// account, no password change, no answering invitations.
		idp.QueueUser(&idpUser{MockUser: mockUser("admin@acme.test", true)})
		code, body, session = browse(t, base, "acme")
		if code != http.StatusOK {
			t.Fatalf("admin sso login: %d %q", code, body)
		}
		sp, err := s.Authenticate(ctx, session)
		if err != nil || !sp.SSOBound || sp.Role != rbac.Admin {
			t.Fatalf("admin sso session: %+v %v", sp, err)
		}
		if _, err := s.SwitchAccount(ctx, sp, "other"); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("SSO session switched account: %v", err)
		}
		if err := s.ChangePassword(ctx, sp, "admin-password", "taken-over-1"); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("SSO session changed the password: %v", err)
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return tx.SetSessionAccount(ctx, sp.SessionID, "anything") }); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("store moved a bound session: %v", err)
		}
		otherSess, err := s.Login(ctx, "admin@acme.test", "admin-password", "other")
		if err != nil {
			t.Fatalf("password still works: %v", err)
		}
		seen, err := s.ListSessions(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range seen {
			if x.Account.ID != acme.Account.ID {
				t.Fatalf("SSO session lists a session in account %s", x.Account.Name)
			}
		}
		if err := s.RevokeSession(ctx, sp, otherSess.Principal.SessionID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("SSO session ended a session of another account: %v", err)
		}
		// A password session still switches.
		if _, err := s.SwitchAccount(ctx, ap, "other"); err != nil {
			t.Fatalf("password session switch: %v", err)
		}

		// A known user of another account is not added by acme's IdP.
		if _, err := s.Provision(ctx, "third", "carol@acme.test", "carol-password"); err != nil {
			t.Fatal(err)
		}
		idp.QueueUser(&idpUser{MockUser: mockUser("carol@acme.test", true)})
		if code, body, _ := browse(t, base, "acme"); code != http.StatusUnauthorized || !strings.Contains(body, "not a member of this account") {
			t.Fatalf("outsider: %d %q", code, body)
		}

		// Require SSO: password logins of acme's members are refused, but the break-glass
		// admin's.
		bob, err := s.CreateUser(ctx, ap, CreateUserInput{Email: "bob@acme.test", Role: "member", Password: "bob-password"})
		if err != nil {
			t.Fatal(err)
		}
		_ = bob
		cfg.RequireSSO, cfg.BreakGlass, cfg.ClientSecret = true, "admin@acme.test", ""
		got, err = s.SetSSO(ctx, ap, cfg)
		if err != nil || got.BreakGlassEmail != "admin@acme.test" || !got.ClientSecretSet {
			t.Fatalf("require sso: %+v %v", got, err)
		}
		if _, err := s.Login(ctx, "bob@acme.test", "bob-password", "acme"); !errors.Is(err, errdefs.ErrForbidden) || !strings.Contains(err.Error(), "requires single sign-on") {
			t.Fatalf("password login with SSO required: %v", err)
		}
		if _, err := s.Login(ctx, "admin@acme.test", "admin-password", "acme"); err != nil {
			t.Fatalf("break-glass admin refused: %v", err)
		}
		if _, err := s.SetSSO(ctx, ap, SSOConfigInput{Issuer: idp.Issuer(), ClientID: "c", AllowedDomains: []string{"acme.test"}, RequireSSO: true, BreakGlass: "bob@acme.test"}); err == nil {
			t.Fatal("a member became break-glass")
		}
		if err := s.DeleteSSO(ctx, ap); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Login(ctx, "bob@acme.test", "bob-password", "acme"); err != nil {
			t.Fatalf("password login after SSO removed: %v", err)
		}
		// Every login above reused one discovery and one key set.
		if d, k := discoveries.Load(), keyFetches.Load(); d != 1 || k != 1 {
			t.Errorf("discovery fetched %d times, JWKS %d times over all the logins; want once each", d, k)
		}
	})
}

func mockUser(email string, verified bool) mockoidc.MockUser {
	return mockoidc.MockUser{Subject: "sub-" + email, Email: email, EmailVerified: verified, PreferredUsername: email}
}

// BenchmarkSSOLogin measures one whole browser login: the redirect to the provider, its
// authorization and the callback with code exchange, discovery, token verification and the
// session (SQLite). go test -run '^$' -bench BenchmarkSSOLogin ./internal/identity/
func BenchmarkSSOLogin(b *testing.B) {
	db := storetest.Open(b, store.SQLite)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log, Keys: secrets.Generate(), Net: netpolicy.Unrestricted()})
	idp := startIdP(b)
	base := ssoFrontend(b, s)
	res, err := s.Provision(ctx, "acme", "admin@acme.test", "admin-password")
	if err != nil {
		b.Fatal(err)
	}
	admin, err := s.Login(ctx, "admin@acme.test", "admin-password", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.SetSSO(ctx, admin.Principal, SSOConfigInput{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret, AllowedDomains: []string{"acme.test"}}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		u := mockUser("jane@acme.test", true)
		idp.QueueUser(&u)
		if code, body, _ := browse(b, base, res.Account.ID); code != http.StatusOK {
			b.Fatalf("%d %s", code, body)
		}
	}
}
