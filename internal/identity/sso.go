package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
)

// SSO defaults and bounds.
const (
	SSOLoginTTL      = 10 * time.Minute // how long a login may take at the identity provider
	ssoHTTPTimeout   = 15 * time.Second
	maxSSOList       = 32
	maxSSOFieldLen   = 512
	ssoPasswordHash  = "!sso" // no password: CheckPassword never matches it
	defaultEmailClm  = "email"
	defaultNameClm   = "name"
	defaultGroupsClm = "groups"
)

var (
	claimRE  = regexp.MustCompile(`^[A-Za-z0-9_:./-]{1,128}$`)
	scopeRE  = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]{1,128}$`) // RFC 6749 scope-token
	domainRE = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
)

// Keyring encrypts and decrypts secrets at rest; *secrets.Keyring is one.
type Keyring interface {
	Encrypt(plaintext, aad []byte) (string, error)
	Decrypt(s string, aad []byte) ([]byte, error)
}

// SSOConfig is an account's OpenID Connect single sign-on, as account admins see it (never
// the client secret).
type SSOConfig struct {
	Issuer          string
	ClientID        string
	ClientSecretSet bool
	Scopes          []string
	EmailClaim      string
	NameClaim       string
	GroupsClaim     string
	AllowedDomains  []string
	RequireSSO      bool
	BreakGlassEmail string // the admin who may still log in with a password when RequireSSO
	UpdatedAt       time.Time
}

// SSOConfigInput sets an account's single sign-on. An empty ClientSecret keeps the stored one;
// empty Scopes and claims take the defaults (openid email profile; email, name, groups).
type SSOConfigInput struct {
	Issuer         string
	ClientID       string
	ClientSecret   string
	Scopes         []string
	EmailClaim     string
	NameClaim      string
	GroupsClaim    string
	AllowedDomains []string
	RequireSSO     bool
	BreakGlass     string // email or user ID of an admin of the account; required with RequireSSO
}

func ssoConfigOf(c store.SSOConfig, breakGlassEmail string) SSOConfig {
	return SSOConfig{Issuer: c.Issuer, ClientID: c.ClientID, ClientSecretSet: c.ClientSecret != "", Scopes: strings.Fields(c.Scopes),
		EmailClaim: c.EmailClaim, NameClaim: c.NameClaim, GroupsClaim: c.GroupsClaim, AllowedDomains: strings.Fields(c.AllowedDomains),
		RequireSSO: c.RequireSSO, BreakGlassEmail: breakGlassEmail, UpdatedAt: c.UpdatedAt}
}

// GetSSO returns p's account's single sign-on configuration (account admins).
func (s *Service) GetSSO(ctx context.Context, p rbac.Principal) (SSOConfig, error) {
	if err := rbac.Allow(p, rbac.ManageUsers); err != nil {
		return SSOConfig{}, err
	}
	c, err := s.db.GetSSOConfig(ctx, p.AccountID)
	if err != nil {
		return SSOConfig{}, err
	}
	email := ""
	if c.BreakGlassUserID != "" {
		if u, err := s.db.GetUser(ctx, c.BreakGlassUserID); err == nil {
			email = u.Email
		}
	}
	return ssoConfigOf(c, email), nil
}

// checkIssuer checks an issuer URL: https, or http to a loopback address (a development
// identity provider on this machine), no credentials, query or fragment, and allowed by the
// operator's network policy.
func (s *Service) checkIssuer(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return errdefs.Invalid("issuer", raw, "is not an http(s) URL")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return errdefs.Invalid("issuer", raw, "must have no credentials, query or fragment (OpenID Connect Discovery §3)")
	}
	if u.Scheme == "http" {
		a, err := netip.ParseAddr(u.Hostname())
		if err != nil || !a.IsLoopback() {
			return errdefs.Invalid("issuer", raw, "must be https (http only to a loopback address such as 127.0.0.1)")
		}
	}
	if s.net != nil {
		return s.net.CheckServerURL("issuer", raw)
	}
	return nil
}

// SetSSO creates or replaces p's account's single sign-on (account admins). The client
// secret is encrypted with the server's keyring.
func (s *Service) SetSSO(ctx context.Context, p rbac.Principal, in SSOConfigInput) (out SSOConfig, err error) {
	e := audit.Start(ctx, p, "sso.set", "account", p.AccountID)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageUsers); err != nil {
		return SSOConfig{}, err
	}
	if s.keys == nil {
		return SSOConfig{}, fmt.Errorf("single sign-on needs the server's master key to encrypt the client secret: %w", errdefs.ErrUnavailable)
	}
	in.Issuer = strings.TrimSpace(in.Issuer)
	if in.Issuer == "" {
		return SSOConfig{}, errdefs.Invalid("issuer", "", "is required: the identity provider's issuer URL")
	}
	if len(in.Issuer) > maxSSOFieldLen {
		return SSOConfig{}, errdefs.Invalid("issuer", in.Issuer[:64]+"…", fmt.Sprintf("is longer than %d characters", maxSSOFieldLen))
	}
	if err := s.checkIssuer(in.Issuer); err != nil {
		return SSOConfig{}, err
	}
	if in.ClientID == "" || len(in.ClientID) > maxSSOFieldLen || strings.ContainsAny(in.ClientID, " \t\r\n") {
		return SSOConfig{}, errdefs.Invalid("clientId", in.ClientID, fmt.Sprintf("must be 1 to %d characters without spaces", maxSSOFieldLen))
	}
	if len(in.ClientSecret) > maxSSOFieldLen {
		return SSOConfig{}, errdefs.Invalid("clientSecret", "", fmt.Sprintf("is longer than %d characters", maxSSOFieldLen))
	}
	if len(in.Scopes) == 0 {
		in.Scopes = []string{oidc.ScopeOpenID, "email", "profile"}
	}
	if len(in.Scopes) > maxSSOList {
		return SSOConfig{}, errdefs.Invalid("scopes", strings.Join(in.Scopes[:3], " ")+" …", fmt.Sprintf("has more than %d scopes", maxSSOList))
	}
	for _, sc := range in.Scopes {
		if !scopeRE.MatchString(sc) {
			return SSOConfig{}, errdefs.Invalid("scopes", sc, "is not a scope: printable ASCII without spaces, quotes or backslashes")
		}
	}
	if !slices.Contains(in.Scopes, oidc.ScopeOpenID) {
		return SSOConfig{}, errdefs.Invalid("scopes", strings.Join(in.Scopes, " "), "must include openid")
	}
	for _, c := range []struct {
		field string
		v     *string
		def   string
	}{{"emailClaim", &in.EmailClaim, defaultEmailClm}, {"nameClaim", &in.NameClaim, defaultNameClm}, {"groupsClaim", &in.GroupsClaim, defaultGroupsClm}} {
		if *c.v == "" {
			*c.v = c.def
		}
		if !claimRE.MatchString(*c.v) {
			return SSOConfig{}, errdefs.Invalid(c.field, *c.v, "is not a claim name: 1 to 128 of A-Z a-z 0-9 _ : . / -")
		}
	}
	if len(in.AllowedDomains) == 0 {
		return SSOConfig{}, errdefs.Invalid("allowedDomains", "", "is required: the email domains the identity provider may log users in with (e.g. example.com)")
	}
	if len(in.AllowedDomains) > maxSSOList {
		return SSOConfig{}, errdefs.Invalid("allowedDomains", in.AllowedDomains[0]+" …", fmt.Sprintf("has more than %d domains", maxSSOList))
	}
	domains := make([]string, 0, len(in.AllowedDomains))
	for _, d := range in.AllowedDomains {
		d = strings.ToLower(strings.TrimSpace(d))
		if len(d) > 253 || !domainRE.MatchString(d) {
			return SSOConfig{}, errdefs.Invalid("allowedDomains", d, "is not a domain name such as example.com")
		}
		domains = append(domains, d)
	}
	row := store.SSOConfig{AccountID: p.AccountID, Issuer: in.Issuer, ClientID: in.ClientID, Scopes: strings.Join(in.Scopes, " "),
		EmailClaim: in.EmailClaim, NameClaim: in.NameClaim, GroupsClaim: in.GroupsClaim, AllowedDomains: strings.Join(domains, " "),
		RequireSSO: in.RequireSSO, UpdatedAt: s.now()}
	breakGlassEmail := ""
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if in.BreakGlass != "" {
			m, err := memberByRef(ctx, tx, p.AccountID, "breakGlass", in.BreakGlass)
			if err != nil {
				return err
			}
			if rbac.Role(m.Role) != rbac.Admin {
				return errdefs.Invalid("breakGlass", in.BreakGlass, "is not an admin of this account: the break-glass user must be an admin")
			}
			row.BreakGlassUserID, breakGlassEmail = m.ID, m.Email
		} else if in.RequireSSO {
			return errdefs.Invalid("breakGlass", "", "is required with requireSso: name an admin who may still log in with a password if the identity provider fails")
		}
		if in.ClientSecret != "" {
			ct, err := s.keys.Encrypt([]byte(in.ClientSecret), []byte(p.AccountID))
			if err != nil {
				return fmt.Errorf("encrypt client secret: %w", err)
			}
			row.ClientSecret = ct
		} else if old, err := tx.GetSSOConfig(ctx, p.AccountID); err == nil {
			row.ClientSecret = old.ClientSecret
		} else if !errors.Is(err, errdefs.ErrNotFound) {
			return err
		}
		if err := tx.PutSSOConfig(ctx, row); err != nil {
			return err
		}
		e.Detail("issuer %s, client %s, domains %s, require SSO %v", row.Issuer, row.ClientID, row.AllowedDomains, row.RequireSSO)
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return SSOConfig{}, err
	}
	return ssoConfigOf(row, breakGlassEmail), nil
}

// DeleteSSO removes p's account's single sign-on (account admins). Sessions opened through it
// stay until they expire or are revoked.
func (s *Service) DeleteSSO(ctx context.Context, p rbac.Principal) (err error) {
	e := audit.Start(ctx, p, "sso.delete", "account", p.AccountID)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageUsers); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteSSOConfig(ctx, p.AccountID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

// ssoRequired tells whether password logins into accountID are refused for userID.
func (s *Service) ssoRequired(ctx context.Context, accountID, userID string) (bool, error) {
	c, err := s.db.GetSSOConfig(ctx, accountID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return c.RequireSSO && c.BreakGlassUserID != userID, nil
}

// ssoClient returns the context go-oidc and oauth2 make their requests with: through the
// operator's network policy, with a timeout.
func (s *Service) ssoClient(ctx context.Context) context.Context {
	c := &http.Client{Timeout: ssoHTTPTimeout}
	if s.net != nil {
		c = s.net.HTTPClient(ssoHTTPTimeout)
	}
	return oidc.ClientContext(ctx, c)
}

// ssoSetup reads accountID's configuration and discovers its provider.
func (s *Service) ssoSetup(ctx context.Context, accountID, redirectURL string) (store.SSOConfig, *oidc.Provider, oauth2.Config, error) {
	c, err := s.db.GetSSOConfig(ctx, accountID)
	if err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return c, nil, oauth2.Config{}, errdefs.Invalid("account", accountID, "has no single sign-on configured: an admin sets it with PUT /api/v1/sso")
		}
		return c, nil, oauth2.Config{}, err
	}
	if s.keys == nil {
		return c, nil, oauth2.Config{}, fmt.Errorf("single sign-on needs the server's master key: %w", errdefs.ErrUnavailable)
	}
	secret := ""
	if c.ClientSecret != "" {
		b, err := s.keys.Decrypt(c.ClientSecret, []byte(accountID))
		if err != nil {
			return c, nil, oauth2.Config{}, fmt.Errorf("decrypt the sso client secret: %w", err)
		}
		secret = string(b)
	}
	prov, err := s.ssoProviders.get(ctx, c.Issuer, s.now(), func(ctx context.Context) (*oidc.Provider, error) {
		// Discovery checks that the document's issuer is the configured one. The provider
		// outlives this request: it keeps the policy's HTTP client, not the request's deadline.
		return oidc.NewProvider(s.ssoClient(context.WithoutCancel(ctx)), c.Issuer)
	})
	if err != nil {
		return c, nil, oauth2.Config{}, fmt.Errorf("identity provider %s: %v: %w", c.Issuer, err, errdefs.ErrUnavailable)
	}
	oc := oauth2.Config{ClientID: c.ClientID, ClientSecret: secret, Endpoint: prov.Endpoint(), RedirectURL: redirectURL, Scopes: strings.Fields(c.Scopes)}
	return c, prov, oc, nil
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// BeginSSO starts a login through account's (ID or name) identity provider and returns the
// URL to send the browser to. redirectURL is the server's callback (/auth/sso/callback) as
// registered at the provider. The state, nonce and PKCE verifier are kept server-side (state
// hashed) for SSOLoginTTL and work once.
func (s *Service) BeginSSO(ctx context.Context, account, redirectURL string) (string, error) {
	return s.beginSSO(ctx, account, redirectURL, 0, "", "")
}

// BeginCLISSO starts a login for the CLI (freshet login --sso): as BeginSSO, but the callback
// opens no session in the browser. It sends the browser to http://127.0.0.1:cliPort/callback
// with a one-time code that only the holder of the verifier whose challenge is cliChallenge
// (BASE64URL(SHA-256(verifier))) can exchange for a session (ExchangeSSOCode). cliPort is a
// decimal port 1024-65535: the host of the redirect is always 127.0.0.1.
func (s *Service) BeginCLISSO(ctx context.Context, account, redirectURL, cliPort, cliChallenge string) (string, error) {
	port, err := parseCLIPort(cliPort)
	if err != nil {
		return "", err
	}
	if !challengeRE.MatchString(cliChallenge) {
		return "", errdefs.Invalid("cli_challenge", cliChallenge, "must be 43 base64url characters: BASE64URL(SHA-256(verifier)) without padding")
	}
	return s.beginSSO(ctx, account, redirectURL, port, cliChallenge, "")
}

// SSOCLICodeTTL is how long the one-time code of a CLI login may wait for its exchange.
const SSOCLICodeTTL = 2 * time.Minute

var (
	challengeRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
	verifierRE  = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`) // RFC 7636 §4.1 code_verifier
)

// parseCLIPort reads the port of the CLI's loopback listener: digits only, 1024-65535.
func parseCLIPort(raw string) (int, error) {
	bad := errdefs.Invalid("cli_port", raw, "must be the port of the CLI's listener on 127.0.0.1: a number from 1024 to 65535")
	if raw == "" || len(raw) > 5 || strings.Trim(raw, "0123456789") != "" {
		return 0, bad
	}
	port, err := strconv.Atoi(raw)
	if err != nil || port < 1024 || port > 65535 {
		return 0, bad
	}
	return port, nil
}

// cliRedirectURL is where a CLI login's callback sends the browser: the CLI's listener on
// 127.0.0.1:port, with the one-time code.
func cliRedirectURL(port int, code string) string {
	u := url.URL{Scheme: "http", Host: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)).String(),
		Path: "/callback", RawQuery: url.Values{"code": {code}}.Encode()}
	return u.String()
}

// beginSSO stores a login in flight into account: a browser's, the CLI's (cliPort) or one that
// approves a device request (deviceHash).
func (s *Service) beginSSO(ctx context.Context, account, redirectURL string, cliPort int, cliChallenge, deviceHash string) (string, error) {
	a, err := s.accountByRef(ctx, account)
	if err != nil {
		return "", err
	}
	_, _, oc, err := s.ssoSetup(ctx, a.ID, redirectURL)
	if err != nil {
		return "", err
	}
	state, nonce, verifier := randomString(), randomString(), oauth2.GenerateVerifier()
	now := s.now()
	if err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.DeleteExpiredSSOLogins(ctx, now); err != nil {
			return err
		}
		return tx.CreateSSOLogin(ctx, store.SSOLogin{StateHash: token.Hash(state), AccountID: a.ID, Nonce: nonce, Verifier: verifier,
			CreatedAt: now, ExpiresAt: now.Add(SSOLoginTTL), CLIPort: cliPort, CLIChallenge: cliChallenge, DeviceHash: deviceHash})
	}); err != nil {
		return "", err
	}
	return oc.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

var errSSOState = fmt.Errorf("single sign-on: the login is unknown, expired or already used: start again: %w", errdefs.ErrUnauthenticated)

// ssoRefused is a refusal of what the identity provider said.
func ssoRefused(format string, args ...any) error {
	return fmt.Errorf("single sign-on refused: "+format+": %w", append(args, errdefs.ErrUnauthenticated)...)
}

// SSOResult is the end of a login at the identity provider: a browser login's session, or for
// a login the CLI started, no session but where to send the browser (the CLI's listener on
// 127.0.0.1 with a one-time code).
type SSOResult struct {
	LoginResult        // a browser login's session; only the Principal (no session) for a CLI login
	CLIRedirect string // set for a CLI login
	// DeviceApproved: the login approved a device request (freshet login --sso --device); no
	// session in the browser, the CLI's next poll gets it.
	DeviceApproved bool
}

// FinishSSO completes a login: it takes the state (once), exchanges code with the PKCE
// verifier, verifies the ID token with go-oidc (signature, issuer, audience, expiry) and its
// nonce, checks email_verified and the allowed domains, then logs the user in — creating them
// as a member when their email is new — adds them to the account's teams named in the groups
// claim, and opens a session bound to the account. A known user who is not a member of the
// account is refused: the identity provider of one account does not add users of others. For a
// login the CLI started (BeginCLISSO) it opens no session: it stores a one-time code bound to the
// user and the CLI's challenge and returns the CLI's loopback URL with it.
func (s *Service) FinishSSO(ctx context.Context, state, code, redirectURL string) (res SSOResult, err error) {
	e := audit.Start(ctx, rbac.Principal{}, "auth.sso-login", "session", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if state == "" {
		return SSOResult{}, errdefs.Invalid("state", "", "is required")
	}
	l, err := takeOnce(ctx, s, state, (*store.Tx).TakeSSOLogin, func(l store.SSOLogin) time.Time { return l.ExpiresAt }, errSSOState)
	if err != nil {
		return SSOResult{}, err
	}
	now := s.now()
	e.Account(l.AccountID)
	if l.DeviceHash != "" {
		// A refusal of the login that was to approve a device request denies it, with the reason.
		defer func() {
			if err != nil && errors.Is(err, errdefs.ErrUnauthenticated) {
				s.denyDevice(ctx, l.DeviceHash, err.Error())
			}
		}()
	}
	if code == "" {
		return SSOResult{}, errdefs.Invalid("code", "", "is required")
	}
	c, prov, oc, err := s.ssoSetup(ctx, l.AccountID, redirectURL)
	if err != nil {
		return SSOResult{}, err
	}
	octx := s.ssoClient(ctx)
	tok, err := oc.Exchange(octx, code, oauth2.VerifierOption(l.Verifier))
	if err != nil {
		return SSOResult{}, ssoRefused("the identity provider did not exchange the code: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return SSOResult{}, ssoRefused("the identity provider returned no id_token")
	}
	// The provider's own key set: fetched once, again only for a key ID it does not know.
	idt, err := prov.Verifier(&oidc.Config{ClientID: c.ClientID, Now: s.now}).Verify(octx, raw)
	if err != nil {
		return SSOResult{}, ssoRefused("invalid ID token: %v", err)
	}
	if idt.Nonce != l.Nonce {
		return SSOResult{}, ssoRefused("invalid ID token: its nonce is not this login's")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return SSOResult{}, ssoRefused("invalid ID token claims: %v", err)
	}
	email, _ := claims[c.EmailClaim].(string)
	email = strings.ToLower(strings.TrimSpace(email))
	if err := validateEmail(c.EmailClaim, email); err != nil {
		return SSOResult{}, ssoRefused("claim %q: %v", c.EmailClaim, err)
	}
	if v, _ := claims["email_verified"].(bool); !v {
		return SSOResult{}, ssoRefused("the identity provider has not verified %s (email_verified is not true)", email)
	}
	domain := email[strings.LastIndexByte(email, '@')+1:]
	if !slices.Contains(strings.Fields(c.AllowedDomains), domain) {
		return SSOResult{}, ssoRefused("email domain %q is not allowed for this account: it allows %s", domain, strings.Join(strings.Fields(c.AllowedDomains), ", "))
	}
	name, _ := claims[c.NameClaim].(string)
	name = strings.TrimSpace(name)
	if name == "" || len(name) > maxDisplayNameLength {
		name = email[:strings.LastIndexByte(email, '@')]
	}
	var groups []string
	if gs, ok := claims[c.GroupsClaim].([]any); ok {
		for _, g := range gs {
			if g, ok := g.(string); ok && g != "" && len(groups) < 256 {
				groups = append(groups, g)
			}
		}
	}

	var cliCode string
	var p rbac.Principal
	var sess LoginResult
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		u, err := tx.UserByEmail(ctx, email)
		created := false
		switch {
		case errors.Is(err, errdefs.ErrNotFound):
			u = store.User{ID: store.NewID(store.PrefixUser), Email: email, Name: name, PasswordHash: ssoPasswordHash, CreatedAt: now}
			if err := s.admitMember(ctx, tx, l.AccountID); err != nil {
				return err
			}
			if err := tx.CreateUser(ctx, u); err != nil {
				return err
			}
			if err := tx.AddMember(ctx, l.AccountID, u.ID, string(rbac.Member), now); err != nil {
				return err
			}
			created = true
		case err != nil:
			return err
		}
		m, err := tx.GetMember(ctx, l.AccountID, u.ID)
		if errors.Is(err, errdefs.ErrNotFound) {
			return ssoRefused("%s has a Freshet login but is not a member of this account: an admin invites them first", email)
		}
		if err != nil {
			return err
		}
		var joined []string
		for _, g := range groups {
			t, err := tx.GetTeam(ctx, l.AccountID, g)
			if errors.Is(err, errdefs.ErrNotFound) {
				continue // groups without a team of their name are ignored
			}
			if err != nil {
				return err
			}
			tms, err := tx.TeamMembers(ctx, l.AccountID, t.ID)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(tms, func(tm store.TeamMember) bool { return tm.UserID == u.ID }) {
				continue
			}
			if err := tx.AddTeamMember(ctx, l.AccountID, t.ID, u.ID, now); err != nil {
				return err
			}
			joined = append(joined, t.Name)
		}
		if len(joined) > 0 {
			if err := tx.BumpPolicyVersion(ctx, l.AccountID); err != nil {
				return err
			}
		}
		if l.DeviceHash != "" {
			// A device request's approval: the session waits for the CLI's poll.
			if err := tx.ApproveSSODevice(ctx, l.DeviceHash, u.ID, c.Issuer, now); errors.Is(err, errdefs.ErrNotFound) {
				return ssoRefused("the device login is no longer pending: it expired, or was approved or denied already")
			} else if err != nil {
				return err
			}
			p = rbac.Principal{AccountID: l.AccountID, UserID: u.ID, Email: u.Email, Role: rbac.Role(m.Role), SSOBound: true}
			e = audit.Start(ctx, p, "auth.sso-device-approve", "user", u.ID)
			e.Detail("issuer %s, user created %v, teams joined %v; device login approved for the CLI", c.Issuer, created, joined)
			return e.Commit(ctx, tx)
		}
		if l.CLIPort != 0 {
			// The CLI's login: the session waits for the exchange with the CLI's verifier.
			cliCode = randomString()
			if _, err := tx.DeleteExpiredSSOCLICodes(ctx, now); err != nil {
				return err
			}
			if err := tx.CreateSSOCLICode(ctx, store.SSOCLICode{CodeHash: token.Hash(cliCode), AccountID: l.AccountID, UserID: u.ID,
				Challenge: l.CLIChallenge, Issuer: c.Issuer, CreatedAt: now, ExpiresAt: now.Add(SSOCLICodeTTL)}); err != nil {
				return err
			}
			p = rbac.Principal{AccountID: l.AccountID, UserID: u.ID, Email: u.Email, Role: rbac.Role(m.Role), SSOBound: true}
			e = audit.Start(ctx, p, "auth.sso-cli-code", "user", u.ID)
			e.Detail("issuer %s, user created %v, teams joined %v; one-time code for the CLI on 127.0.0.1:%d", c.Issuer, created, joined, l.CLIPort)
			return e.Commit(ctx, tx)
		}
		sess, e, err = s.openSSOSession(ctx, tx, l.AccountID, u, m.Role, now, fmt.Sprintf("issuer %s, user created %v, teams joined %v", c.Issuer, created, joined))
		return err
	})
	if err != nil {
		return SSOResult{}, err
	}
	if l.DeviceHash != "" {
		return SSOResult{LoginResult: LoginResult{Principal: p}, DeviceApproved: true}, nil
	}
	if l.CLIPort != 0 {
		return SSOResult{LoginResult: LoginResult{Principal: p}, CLIRedirect: cliRedirectURL(l.CLIPort, cliCode)}, nil
	}
	return SSOResult{LoginResult: sess}, nil
}

// openSSOSession opens a session of u (role in accountID) bound to the account and commits its
// audit record, auth.sso-login with detail, on tx. It returns the session and the record.
func (s *Service) openSSOSession(ctx context.Context, tx *store.Tx, accountID string, u store.User, role string, now time.Time, detail string) (LoginResult, *audit.Entry, error) {
	tokStr, hash := token.NewSession()
	sess := store.Session{ID: store.NewID(store.PrefixSession), TokenHash: hash, UserID: u.ID, AccountID: accountID, CreatedAt: now,
		ExpiresAt: now.Add(SessionTTL), SSOBound: true}
	p := rbac.Principal{AccountID: accountID, UserID: u.ID, Email: u.Email, Role: rbac.Role(role), SessionID: sess.ID, SSOBound: true}
	e := audit.Start(ctx, p, "auth.sso-login", "session", sess.ID)
	if err := tx.CreateSession(ctx, sess); err != nil {
		return LoginResult{}, e, err
	}
	e.Detail("%s", detail)
	if err := e.Commit(ctx, tx); err != nil {
		return LoginResult{}, e, err
	}
	return LoginResult{Token: tokStr, CSRFToken: CSRFToken(tokStr), ExpiresAt: sess.ExpiresAt, Principal: p}, e, nil
}

var errSSOCode = fmt.Errorf("single sign-on: the CLI's code is unknown, expired or already used: run freshet login --sso again: %w", errdefs.ErrUnauthenticated)

// ExchangeSSOCode ends a CLI login: it takes code (once: a wrong verifier uses it up too),
// checks that it has not expired and that SHA-256 of verifier is the challenge the CLI started
// the login with, and opens the session a browser login opens (bound to the account, audited as
// auth.sso-login). The account must still have single sign-on and the user still be a member.
func (s *Service) ExchangeSSOCode(ctx context.Context, code, verifier string) (res LoginResult, err error) {
	e := audit.Start(ctx, rbac.Principal{}, "auth.sso-login", "session", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if code == "" || len(code) > 128 {
		return LoginResult{}, errdefs.Invalid("code", "", "is required: the one-time code the server sent the CLI's listener (at most 128 characters)")
	}
	if !verifierRE.MatchString(verifier) {
		return LoginResult{}, errdefs.Invalid("verifier", "", "must be 43 to 128 of A-Z a-z 0-9 - . _ ~ (an RFC 7636 code verifier)")
	}
	c, err := takeOnce(ctx, s, code, (*store.Tx).TakeSSOCLICode, func(c store.SSOCLICode) time.Time { return c.ExpiresAt }, errSSOCode)
	if err != nil {
		return LoginResult{}, err
	}
	now := s.now()
	e.Account(c.AccountID)
	sum := sha256.Sum256([]byte(verifier))
	if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(c.Challenge)) != 1 {
		return LoginResult{}, ssoRefused("the verifier does not answer the challenge this login started with; the code is used up: run freshet login --sso again")
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.GetSSOConfig(ctx, c.AccountID); errors.Is(err, errdefs.ErrNotFound) {
			return ssoRefused("the account no longer has single sign-on")
		} else if err != nil {
			return err
		}
		u, err := tx.GetUser(ctx, c.UserID)
		if err != nil {
			return err
		}
		m, err := tx.GetMember(ctx, c.AccountID, c.UserID)
		if errors.Is(err, errdefs.ErrNotFound) {
			return ssoRefused("%s is no longer a member of this account", u.Email)
		}
		if err != nil {
			return err
		}
		res, e, err = s.openSSOSession(ctx, tx, c.AccountID, u, m.Role, now, fmt.Sprintf("issuer %s, through the CLI (loopback redirect)", c.Issuer))
		return err
	})
	if err != nil {
		return LoginResult{}, err
	}
	return res, nil
}

// SSOProviderError is the refusal of a callback that carries the identity provider's error
// instead of a code (the user declined, or the provider refused the request). The provider's
// text is shown as data, shortened.
func SSOProviderError(code, description string) error {
	if len(code) > 64 {
		code = code[:64]
	}
	if len(description) > 200 {
		description = description[:200]
	}
	return ssoRefused("the identity provider answered %q (%q)", code, description)
}

// ssoProviderTTL is how long a discovered identity provider (its endpoints and key set) is
// reused before discovery runs again.
const ssoProviderTTL = 10 * time.Minute

// providerCache keeps discovered identity providers by issuer, so a login does not fetch the
// discovery document and the JWKS again: the key set refetches by itself when a token names a
// key it does not have (key rotation).
type providerCache struct {
	mu sync.Mutex
	m  map[string]cachedProvider
}

type cachedProvider struct {
	p  *oidc.Provider
	at time.Time
}

// get returns issuer's provider, discovering it with discover when it is not cached or older
// than ssoProviderTTL. A failed discovery is not cached.
func (c *providerCache) get(ctx context.Context, issuer string, now time.Time, discover func(context.Context) (*oidc.Provider, error)) (*oidc.Provider, error) {
	c.mu.Lock()
	e, ok := c.m[issuer]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < ssoProviderTTL && now.Sub(e.at) >= 0 {
		return e.p, nil
	}
	p, err := discover(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedProvider{}
	}
	for k, v := range c.m { // bounded by the accounts' issuers; drop the stale ones
		if now.Sub(v.at) >= ssoProviderTTL {
			delete(c.m, k)
		}
	}
	c.m[issuer] = cachedProvider{p: p, at: now}
	return p, nil
}

// takeOnce takes, in a transaction, the single-use row that secret (hashed) names — an SSO
// login's state, a CLI login's code — and returns gone when there is none or it has expired.
func takeOnce[T any](ctx context.Context, s *Service, secret string, take func(*store.Tx, context.Context, string) (T, error), expires func(T) time.Time, gone error) (T, error) {
	var row T
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		row, err = take(tx, ctx, token.Hash(secret))
		return err
	})
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		return row, gone
	case err != nil:
		return row, err
	case s.now().After(expires(row)):
		return row, gone
	}
	return row, nil
}
