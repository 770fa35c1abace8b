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
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
	"golang.org/x/oauth2"

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
	mux.HandleFunc("GET /cli-login/{account}", func(w http.ResponseWriter, r *http.Request) {
		u, err := s.BeginCLISSO(r.Context(), r.PathValue("account"), base+"/callback", r.URL.Query().Get("cli_port"), r.URL.Query().Get("cli_challenge"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, u, http.StatusFound)
	})
	mux.HandleFunc("GET /device/approve", func(w http.ResponseWriter, r *http.Request) {
		u, err := s.ApproveDeviceSSO(r.Context(), r.URL.Query().Get("user_code"), base+"/callback")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, u, http.StatusFound)
	})
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if e := q.Get("error"); e != "" {
			http.Error(w, s.FailSSO(r.Context(), q.Get("state"), e, q.Get("error_description")).Error(), http.StatusUnauthorized)
			return
		}
		res, err := s.FinishSSO(r.Context(), q.Get("state"), q.Get("code"), base+"/callback")
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if res.DeviceApproved {
			fmt.Fprintf(w, "device approved for %s", res.Principal.Email)
			return
		}
		if res.CLIRedirect != "" {
			http.Redirect(w, r, res.CLIRedirect, http.StatusFound)
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

// TestSSOCLILogin runs the CLI's login (freshet login --sso) through a real OpenID provider:
// the callback hands a one-time code to a listener on 127.0.0.1 instead of a cookie, and only
// the verifier of the challenge the login started with exchanges it, once, for a session.
func TestSSOCLILogin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log, Keys: secrets.Generate(), Net: netpolicy.Unrestricted()})
		idp := startIdP(t)
		base := ssoFrontend(t, s)
		acme, err := s.Provision(ctx, "acme", "admin@acme.test", "admin-password")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Provision(ctx, "nosso", "admin@nosso.test", "admin-password"); err != nil {
			t.Fatal(err)
		}
		admin, err := s.Login(ctx, "admin@acme.test", "admin-password", "acme")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetSSO(ctx, admin.Principal, SSOConfigInput{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
			AllowedDomains: []string{"acme.test"}}); err != nil {
			t.Fatal(err)
		}

		// The CLI's listener: it records the codes the browser brings it.
		codes := make(chan string, 4)
		cli := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/callback" {
				http.NotFound(w, r)
				return
			}
			codes <- r.URL.Query().Get("code")
			fmt.Fprint(w, "cli got it")
		}))
		t.Cleanup(cli.Close)
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(cli.URL, "http://"))

		verifier := oauth2.GenerateVerifier()
		challenge := oauth2.S256ChallengeFromVerifier(verifier)
		// login runs the browser's part: it must end at the CLI's listener with a code and no
		// session cookie.
		login := func(email string) string {
			t.Helper()
			u := mockUser(email, true)
			idp.QueueUser(&u)
			jar, _ := cookiejar.New(nil)
			c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
			resp, err := c.Get(base + "/cli-login/acme?" + url.Values{"cli_port": {port}, "cli_challenge": {challenge}}.Encode())
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != "cli got it" || resp.Request.URL.Host != "127.0.0.1:"+port {
				t.Fatalf("browser ended at %s with %d %q, want the CLI's listener", resp.Request.URL, resp.StatusCode, body)
			}
			for _, ck := range resp.Cookies() {
				if ck.Name == "freshet_session" {
					t.Fatal("a CLI login set a session cookie in the browser")
				}
			}
			return <-codes
		}

		// Bad CLI parameters are refused naming the field, before anything is stored.
		for _, c := range []struct{ port, challenge, field string }{
			{"80@evil.example", challenge, "cli_port"},
			{"8080@evil.example", challenge, "cli_port"},
			{"evil.example:8080", challenge, "cli_port"},
			{"80", challenge, "cli_port"},
			{"65536", challenge, "cli_port"},
			{"-1", challenge, "cli_port"},
			{"", challenge, "cli_port"},
			{port, "", "cli_challenge"},
			{port, challenge[:42], "cli_challenge"},
			{port, challenge[:42] + "=", "cli_challenge"},
		} {
			if _, err := s.BeginCLISSO(ctx, "acme", base+"/callback", c.port, c.challenge); errdefs.Field(err) != c.field {
				t.Errorf("BeginCLISSO(port %q, challenge %q) = %v, want invalid %s", c.port, c.challenge, err, c.field)
			}
		}
		// An account without SSO is a clear refusal.
		if _, err := s.BeginCLISSO(ctx, "nosso", base+"/callback", port, challenge); errdefs.Field(err) != "account" || !strings.Contains(err.Error(), "no single sign-on") {
			t.Errorf("account without SSO: %v", err)
		}

		// The happy path: a new user, a session like the browser's (bound to the account).
		code := login("jane@acme.test")
		res, err := s.ExchangeSSOCode(ctx, code, verifier)
		if err != nil {
			t.Fatal(err)
		}
		jp, err := s.Authenticate(ctx, res.Token)
		if err != nil || jp.AccountID != acme.Account.ID || jp.Email != "jane@acme.test" || jp.Role != rbac.Member || !jp.SSOBound || jp.SessionID != res.Principal.SessionID {
			t.Fatalf("session: %+v %v", jp, err)
		}
		evs, err := db.ListAudit(ctx, acme.Account.ID, store.AuditFilter{}, paging.Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var loggedIn, coded bool
		for _, ev := range evs {
			loggedIn = loggedIn || (ev.Action == "auth.sso-login" && ev.ResourceID == jp.SessionID && ev.Result == audit.ResultSuccess)
			coded = coded || (ev.Action == "auth.sso-cli-code" && ev.ActorID == jp.UserID)
		}
		if !loggedIn || !coded {
			t.Errorf("audit: sso-login of the session %v, cli code %v", loggedIn, coded)
		}
		// A code works once.
		if _, err := s.ExchangeSSOCode(ctx, code, verifier); !errors.Is(err, errdefs.ErrUnauthenticated) || !strings.Contains(err.Error(), "unknown, expired or already used") {
			t.Fatalf("replayed code: %v", err)
		}
		// A wrong verifier is refused and uses the code up.
		code = login("jane@acme.test")
		if _, err := s.ExchangeSSOCode(ctx, code, oauth2.GenerateVerifier()); !errors.Is(err, errdefs.ErrUnauthenticated) || !strings.Contains(err.Error(), "does not answer the challenge") {
			t.Fatalf("wrong verifier: %v", err)
		}
		if _, err := s.ExchangeSSOCode(ctx, code, verifier); !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("the right verifier after a wrong one: %v", err)
		}
		// A code expires after SSOCLICodeTTL.
		code = login("jane@acme.test")
		s.now = func() time.Time { return time.Now().Add(SSOCLICodeTTL + time.Second) }
		_, err = s.ExchangeSSOCode(ctx, code, verifier)
		s.now = time.Now
		if !errors.Is(err, errdefs.ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("expired code: %v", err)
		}
		// Malformed exchanges name the field.
		for _, c := range []struct{ code, verifier, field string }{
			{"", verifier, "code"},
			{strings.Repeat("c", 129), verifier, "code"},
			{"some-code", "", "verifier"},
			{"some-code", verifier[:42], "verifier"},
			{"some-code", verifier + "!", "verifier"},
		} {
			if _, err := s.ExchangeSSOCode(ctx, c.code, c.verifier); errdefs.Field(err) != c.field {
				t.Errorf("ExchangeSSOCode(%q, %q) = %v, want invalid %s", c.code, c.verifier, err, c.field)
			}
		}
		// SSO removed between the callback and the exchange: refused.
		code = login("jane@acme.test")
		if err := s.DeleteSSO(ctx, admin.Principal); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ExchangeSSOCode(ctx, code, verifier); !errors.Is(err, errdefs.ErrUnauthenticated) || !strings.Contains(err.Error(), "no longer has single sign-on") {
			t.Fatalf("exchange after SSO removed: %v", err)
		}
		// A browser login still sets its cookie and sends nobody to a loopback port.
		if _, err := s.SetSSO(ctx, admin.Principal, SSOConfigInput{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
			AllowedDomains: []string{"acme.test"}}); err != nil {
			t.Fatal(err)
		}
		idp.QueueUser(&idpUser{MockUser: mockUser("jane@acme.test", true)})
		if code, body, session := browse(t, base, "acme"); code != http.StatusOK || body != "logged in jane@acme.test" || session == "" {
			t.Fatalf("browser login: %d %q", code, body)
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

// BenchmarkSSOCLILogin measures one whole CLI login (freshet login --sso) without the CLI
// process: the browser's redirects through the provider to a listener on 127.0.0.1 and the
// exchange of the one-time code with the verifier (SQLite). Compare with BenchmarkSSOLogin:
// go test -run '^$' -bench 'BenchmarkSSO' ./internal/identity/
func BenchmarkSSOCLILogin(b *testing.B) {
	db := storetest.Open(b, store.SQLite)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log, Keys: secrets.Generate(), Net: netpolicy.Unrestricted()})
	idp := startIdP(b)
	base := ssoFrontend(b, s)
	if _, err := s.Provision(ctx, "acme", "admin@acme.test", "admin-password"); err != nil {
		b.Fatal(err)
	}
	admin, err := s.Login(ctx, "admin@acme.test", "admin-password", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.SetSSO(ctx, admin.Principal, SSOConfigInput{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret, AllowedDomains: []string{"acme.test"}}); err != nil {
		b.Fatal(err)
	}
	codes := make(chan string, 1)
	cli := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { codes <- r.URL.Query().Get("code") }))
	b.Cleanup(cli.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(cli.URL, "http://"))
	for b.Loop() {
		verifier := oauth2.GenerateVerifier()
		u := mockUser("jane@acme.test", true)
		idp.QueueUser(&u)
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
		resp, err := c.Get(base + "/cli-login/acme?" + url.Values{"cli_port": {port}, "cli_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}}.Encode())
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.Request.URL.Host != "127.0.0.1:"+port {
			b.Fatalf("the browser ended at %s (%d), not the CLI's listener", resp.Request.URL, resp.StatusCode)
		}
		if _, err := s.ExchangeSSOCode(ctx, <-codes, verifier); err != nil {
			b.Fatal(err)
		}
	}
}
