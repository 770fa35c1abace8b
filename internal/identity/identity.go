// Package identity manages accounts (tenants), users and their memberships, invitations to
// further accounts, API keys and login sessions, and resolves every request's credentials to an
// rbac.Principal.
//
// Passwords are hashed with argon2id, a bounded number at once (hasher); API keys and session
// tokens are random secrets stored as SHA-256 hashes and shown once. Every change is audited in
// the transaction that makes it.
//
// The service returns the package's own types (Account, Member, APIKey, Invitation, Me), never
// store rows: password and token hashes stay inside it. It reads the database through Store.
package identity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
)

// Defaults.
const (
	SessionTTL           = 7 * 24 * time.Hour
	DefaultAPIKeyTTL     = 90 * 24 * time.Hour
	DefaultAccountName   = "default"
	DefaultAdminEmail    = "admin@freshet.local"
	touchInterval        = time.Minute // how often an API key's last-used time is written
	maxNameLen           = 64
	maxEmailLen          = 254
	maxDisplayNameLength = 100
)

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9 ._-]*$`)

// Service is the identity service.
type Service struct {
	db      Store
	audit   *audit.Log
	log     *slog.Logger
	now     func() time.Time
	byEmail *failureLimiter
	byIP    *failureLimiter
	// device logins (freshet login --sso --device): requests per source address and account,
	// wrong user codes per source address
	devicesByIP, devicesByAccount, userCodeMisses *failureLimiter
	hasher                                        *hasher
	// onRevoke is told of committed changes that may shrink a user's access (Deps.OnRevoke).
	onRevoke func(accountID, userID string)
	// onAccountDeleted is told of deleted accounts (Deps.OnAccountDeleted).
	onAccountDeleted func(accountID string)
	policies         policyCache
	// ssoProviders are the identity providers discovered for SSO logins, by issuer.
	ssoProviders providerCache
	describe     Describer
	keys         Keyring           // encrypts SSO client secrets; nil: SSO cannot be configured
	net          *netpolicy.Policy // checks identity provider URLs; nil: any
	limits       Limits            // the accounts' plans; nil: no limits
	resetMail    func(context.Context, ResetMail) error
}

// revoked tells OnRevoke, if any, once err (the change's outcome) is nil.
func (s *Service) revoked(err error, accountID, userID string) {
	if err == nil && s.onRevoke != nil {
		s.onRevoke(accountID, userID)
	}
}

// Deps is what a Service is built from.
type Deps struct {
	Store Store      // the *store.DB
	Audit *audit.Log // records every change
	Log   *slog.Logger
	// OnRevoke is called after every committed change that may shrink what a user can reach in
	// an account — an API key revoked, a session ended or moved to another account, a
	// membership removed or its role changed — with the account and the user, so that streams
	// opened with the old access end at once. It must not block.
	OnRevoke func(accountID, userID string)
	// OnAccountDeleted is called after an account was deleted (DeleteAccount), so what runs for
	// it outside the database (its hosted runtime) is removed at once. It must not block.
	OnAccountDeleted func(accountID string)
	// Describe reads a resource's attributes for Explain.
	Describe Describer
	// Keys encrypts the accounts' SSO client secrets (a *secrets.Keyring).
	Keys Keyring
	// Net is the operator's policy for URLs from tenants: identity provider issuers.
	Net *netpolicy.Policy
	// Limits admits members under the account's plan (a *billing.Service); nil: no limits.
	Limits Limits
	// ResetMail, when set, delivers a password reset token to the user by email (the operator's
	// SMTP server): the admin who issued it never sees it. It names the account that asked.
	ResetMail func(ctx context.Context, m ResetMail) error
}

// ResetMail is one password reset to deliver to its user.
type ResetMail struct {
	To        string // the user's email
	Account   string // the name of the account whose admin issued it
	Token     string
	ExpiresAt time.Time
}

// Limits is the account's plan as identity asks it: Admit refuses, in the transaction that
// adds a member (a user created, an invitation accepted, a single sign-on user provisioned),
// one more than the plan allows.
type Limits interface {
	Admit(ctx context.Context, tx *store.Tx, accountID string, r billing.Resource) error
}

// admitMember admits one more member of accountID under its plan.
func (s *Service) admitMember(ctx context.Context, tx *store.Tx, accountID string) error {
	if s.limits == nil {
		return nil
	}
	return s.limits.Admit(ctx, tx, accountID, billing.Users)
}

// New returns a Service built from d.
func New(d Deps) *Service {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: d.Store, audit: d.Audit, log: log, now: time.Now,
		byEmail: newFailureLimiter(maxFailuresPerEmail), byIP: newFailureLimiter(maxFailuresPerIP),
		devicesByIP: newFailureLimiter(maxDevicesPerIP), devicesByAccount: newFailureLimiter(maxDevicesPerAccount), userCodeMisses: newFailureLimiter(maxUserCodeMissesByIP),
		hasher: newHasher(maxConcurrentHashes, hashQueueWait), onRevoke: d.OnRevoke, onAccountDeleted: d.OnAccountDeleted,
		policies: policyCache{accounts: map[string]*accountPolicy{}}, describe: d.Describe, keys: d.Keys, net: d.Net, limits: d.Limits, resetMail: d.ResetMail}
}

// SweepInterval is how often the control plane runs SweepExpired.
const SweepInterval = 10 * time.Minute

// SweepExpired deletes expired sessions, invitations and device logins (every read ignores them
// already; this keeps the tables small) and reports how many sessions and invitations went.
func (s *Service) SweepExpired(ctx context.Context) (sessions, invitations int64, err error) {
	now := s.now()
	if sessions, err = s.db.DeleteExpiredSessions(ctx, now); err != nil {
		return 0, 0, fmt.Errorf("sweep expired sessions: %w", err)
	}
	if invitations, err = s.db.DeleteExpiredInvitations(ctx, now); err != nil {
		return sessions, 0, fmt.Errorf("sweep expired invitations: %w", err)
	}
	// Device logins nobody approved in time (freshet login --sso --device).
	if err = s.db.Tx(ctx, func(tx *store.Tx) error { _, err := tx.DeleteExpiredSSODevices(ctx, now); return err }); err != nil {
		return sessions, invitations, fmt.Errorf("sweep expired device logins: %w", err)
	}
	return sessions, invitations, nil
}

// BootstrapResult says what Bootstrap did.
type BootstrapResult struct {
	Created  bool // false: the database already had an account
	Account  Account
	Email    string
	Password string // the admin password, when Bootstrap generated it; shown once
}

// Bootstrap creates the first account and its admin user when the database has no account yet.
// password may be empty, in which case one is generated and returned.
func (s *Service) Bootstrap(ctx context.Context, accountName, email, password string) (BootstrapResult, error) {
	n, err := s.db.CountAccounts(ctx)
	if err != nil {
		return BootstrapResult{}, fmt.Errorf("bootstrap: %w", err)
	}
	if n > 0 {
		return BootstrapResult{}, nil
	}
	res, err := s.Provision(ctx, accountName, email, password)
	if errors.Is(err, errdefs.ErrConflict) {
		// Replicas that start together on an empty database all count no account; one
		// creates it and the others' inserts conflict. Bootstrapped by that one, not an error.
		if n, cerr := s.db.CountAccounts(ctx); cerr == nil && n > 0 {
			return BootstrapResult{}, nil
		}
	}
	return res, err
}

// Provision creates an account and its first admin as a platform action (first start, hosted
// sign-up, operators). password may be empty, in which case one is generated and returned.
func (s *Service) Provision(ctx context.Context, accountName, email, password string) (BootstrapResult, error) {
	if err := validateName("account", accountName); err != nil {
		return BootstrapResult{}, err
	}
	if err := validateEmail("admin-email", email); err != nil {
		return BootstrapResult{}, err
	}
	res := BootstrapResult{Created: true, Email: strings.ToLower(email)}
	if password == "" {
		password = GeneratePassword()
		res.Password = password
	} else if err := validatePassword("admin-password", password); err != nil {
		return BootstrapResult{}, err
	}
	hash, err := s.hasher.hash(ctx, password)
	if err != nil {
		return BootstrapResult{}, err
	}
	now := s.now()
	acct := store.Account{ID: store.NewID(store.PrefixAccount), Name: accountName, CreatedAt: now}
	res.Account = accountOf(acct)
	u := store.User{ID: store.NewID(store.PrefixUser), Email: res.Email, Name: "admin", PasswordHash: hash, CreatedAt: now}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateAccount(ctx, acct); err != nil {
			return err
		}
		if existing, err := tx.UserByEmail(ctx, u.Email); err == nil {
			u = existing // an existing login becomes the new account's admin; its password stays
			res.Password = ""
		} else if err := tx.CreateUser(ctx, u); err != nil {
			return err
		}
		if err := tx.AddMember(ctx, res.Account.ID, u.ID, string(rbac.Admin), now); err != nil {
			return err
		}
		e := audit.System(ctx, res.Account.ID, "account.create", "account", res.Account.ID)
		e.Detail("account %q with admin %s", accountName, res.Email)
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return BootstrapResult{}, fmt.Errorf("provision account %q: %w", accountName, err)
	}
	return res, nil
}

// LoginResult is a new session.
type LoginResult struct {
	Token     string // shown once
	CSRFToken string
	ExpiresAt time.Time
	Principal rbac.Principal
}

var errBadCredentials = fmt.Errorf("invalid email or password: %w", errdefs.ErrUnauthenticated)

// Login checks email and password and opens a session in account (an account ID or name the
// user belongs to; empty means the user's first account). Failures say nothing about which part
// was wrong, and take as long for an unknown email as for a known one. Repeated failures per
// email and per source address are refused for a while: each attempt counts as a failure from
// before its password is checked until it turns out right, so parallel attempts cannot get past
// the limit. Password checks are bounded (see hasher): when the server is checking too many at
// once, the attempt is refused with ErrRateLimited and counts for nothing.
func (s *Service) Login(ctx context.Context, email, password, account string) (res LoginResult, err error) {
	email = strings.ToLower(strings.TrimSpace(email))
	e := audit.Start(ctx, rbac.Principal{Email: email}, "auth.login", "session", "")
	defer func() { s.audit.Finish(ctx, e, err) }()

	now := s.now()
	ip := audit.MetaFrom(ctx).SourceIP
	type reservation struct {
		l   *failureLimiter
		key string
	}
	var held []reservation
	release := func() {
		for _, r := range held {
			r.l.release(r.key, now)
		}
		held = nil
	}
	for _, r := range []reservation{{s.byEmail, email}, {s.byIP, ip}} {
		if r.key == "" {
			continue
		}
		if ok, wait := r.l.reserve(r.key, now); !ok {
			release()
			return LoginResult{}, errdefs.RetryAfter(fmt.Errorf("too many failed logins: try again in %s: %w", wait.Round(time.Second), errdefs.ErrRateLimited), wait)
		}
		held = append(held, r)
	}
	// From here on, an attempt whose password was not found wrong gives its reservations back.
	wrong := false
	defer func() {
		if !wrong {
			release()
		}
	}()
	// An unknown email is looked up, and its (dummy) password checked, like a known one.
	u, err := s.db.UserByEmail(ctx, email)
	known := err == nil
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return LoginResult{}, err
	}
	ms, err := s.db.MembershipsOf(ctx, u.ID)
	if err != nil {
		return LoginResult{}, err
	}
	if len(ms) > 0 {
		e.Account(ms[0].Account.ID) // failures are recorded in the user's first account
	}
	hash := u.PasswordHash
	if !known {
		hash = dummyHash
	}
	ok, err := s.hasher.check(ctx, hash, password)
	if err != nil {
		return LoginResult{}, err
	}
	if !ok || !known {
		wrong = true
		return LoginResult{}, errBadCredentials
	}
	var m *store.Membership
	for i := range ms {
		if account == "" || ms[i].Account.ID == account || ms[i].Account.Name == account {
			m = &ms[i]
			break
		}
	}
	if m == nil {
		if account != "" {
			return LoginResult{}, errdefs.Invalid("account", account, "is not an account you belong to")
		}
		return LoginResult{}, fmt.Errorf("user belongs to no account: %w", errdefs.ErrForbidden)
	}
	s.byEmail.reset(email)
	e.Account(m.Account.ID)
	if req, err := s.ssoRequired(ctx, m.Account.ID, u.ID); err != nil {
		return LoginResult{}, err
	} else if req {
		return LoginResult{}, fmt.Errorf("account %q requires single sign-on: log in at /auth/sso/%s/login: %w", m.Account.Name, m.Account.ID, errdefs.ErrForbidden)
	}
	tok, hash := token.NewSession()
	sess := store.Session{ID: store.NewID(store.PrefixSession), TokenHash: hash, UserID: u.ID,
		AccountID: m.Account.ID, CreatedAt: now, ExpiresAt: now.Add(SessionTTL)}
	p := rbac.Principal{AccountID: m.Account.ID, UserID: u.ID, Email: u.Email, Role: rbac.Role(m.Role), SessionID: sess.ID}
	e = audit.Start(ctx, p, "auth.login", "session", sess.ID)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateSession(ctx, sess); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return LoginResult{}, err
	}
	return LoginResult{Token: tok, CSRFToken: CSRFToken(tok), ExpiresAt: sess.ExpiresAt, Principal: p}, nil
}

// Logout ends p's session. API-key callers have no session to end.
func (s *Service) Logout(ctx context.Context, p rbac.Principal) (err error) {
	e := audit.Start(ctx, p, "auth.logout", "session", p.SessionID)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if p.SessionID == "" {
		return errdefs.Invalid("session", "", "is absent: log out ends a session; API keys are revoked instead")
	}
	defer func() { s.revoked(err, p.AccountID, p.UserID) }()
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteSession(ctx, p.SessionID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

// Authenticate resolves a bearer token (an API key or a session token) to a Principal. It
// answers ErrUnauthenticated for any token that is unknown, malformed, expired or revoked,
// without saying which.
func (s *Service) Authenticate(ctx context.Context, tok string) (rbac.Principal, error) {
	unauth := fmt.Errorf("invalid or expired credentials: %w", errdefs.ErrUnauthenticated)
	now := s.now()
	switch {
	case token.APIKey.Is(tok):
		prefix, secret, ok := token.APIKey.Parse(tok)
		if !ok {
			return rbac.Principal{}, unauth
		}
		k, err := s.db.APIKeyByPrefix(ctx, prefix)
		if err != nil {
			if errors.Is(err, errdefs.ErrNotFound) {
				return rbac.Principal{}, unauth
			}
			return rbac.Principal{}, err
		}
		if !token.Verify(k.SecretHash, secret) || !k.RevokedAt.IsZero() || (!k.ExpiresAt.IsZero() && now.After(k.ExpiresAt)) {
			return rbac.Principal{}, unauth
		}
		m, err := s.db.GetMember(ctx, k.AccountID, k.UserID)
		if err != nil {
			if errors.Is(err, errdefs.ErrNotFound) {
				return rbac.Principal{}, unauth // the key's owner left the account
			}
			return rbac.Principal{}, err
		}
		if now.Sub(k.LastUsedAt) > touchInterval {
			if err := s.db.TouchAPIKey(ctx, k.ID, now); err != nil {
				s.log.Warn("record api key use", "key", k.ID, "err", err)
			}
		}
		rules, err := s.rulesFor(ctx, k.AccountID, k.UserID, m.PolicyVersion)
		if err != nil {
			return rbac.Principal{}, err
		}
		// A key never grants more than its owner currently holds: the lower of the two roles,
		// and the owner's rules.
		return rbac.Principal{AccountID: k.AccountID, UserID: k.UserID, Email: m.Email,
			Role: rbac.Role(k.Role).Min(rbac.Role(m.Role)), KeyID: k.ID, KeyName: k.Name, Rules: rules}, nil
	case strings.HasPrefix(tok, token.SessionPrefix):
		sess, err := s.db.SessionByHash(ctx, token.Hash(tok))
		if err != nil {
			if errors.Is(err, errdefs.ErrNotFound) {
				return rbac.Principal{}, unauth
			}
			return rbac.Principal{}, err
		}
		if now.After(sess.ExpiresAt) {
			return rbac.Principal{}, unauth
		}
		m, err := s.db.GetMember(ctx, sess.AccountID, sess.UserID)
		if err != nil {
			if errors.Is(err, errdefs.ErrNotFound) {
				return rbac.Principal{}, unauth
			}
			return rbac.Principal{}, err
		}
		rules, err := s.rulesFor(ctx, sess.AccountID, sess.UserID, m.PolicyVersion)
		if err != nil {
			return rbac.Principal{}, err
		}
		return rbac.Principal{AccountID: sess.AccountID, UserID: sess.UserID, Email: m.Email, Role: rbac.Role(m.Role), SessionID: sess.ID, SSOBound: sess.SSOBound, Rules: rules}, nil
	}
	return rbac.Principal{}, unauth
}

// SwitchAccount moves p's session to another account p's user belongs to.
func (s *Service) SwitchAccount(ctx context.Context, p rbac.Principal, account string) (np rbac.Principal, err error) {
	e := audit.Start(ctx, p, "auth.switch-account", "account", account)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if p.SessionID == "" {
		return rbac.Principal{}, errdefs.Invalid("session", "", "is absent: API keys belong to one account; switch accounts with a login session")
	}
	if p.SSOBound {
		return rbac.Principal{}, fmt.Errorf("session: was opened through this account's single sign-on and stays in it: log in to another account separately: %w", errdefs.ErrForbidden)
	}
	ms, err := s.db.MembershipsOf(ctx, p.UserID)
	if err != nil {
		return rbac.Principal{}, err
	}
	for _, m := range ms {
		if m.Account.ID == account || m.Account.Name == account {
			np = p
			np.AccountID, np.Role = m.Account.ID, rbac.Role(m.Role)
			e = audit.Start(ctx, np, "auth.switch-account", "account", m.Account.ID)
			err := s.db.Tx(ctx, func(tx *store.Tx) error {
				if err := tx.SetSessionAccount(ctx, p.SessionID, m.Account.ID); err != nil {
					return err
				}
				return e.Commit(ctx, tx)
			})
			s.revoked(err, p.AccountID, p.UserID) // the session left p's account
			return np, err
		}
	}
	return rbac.Principal{}, errdefs.Invalid("account", account, "is not an account you belong to")
}

// Me returns the calling user, their role and accounts.
func (s *Service) Me(ctx context.Context, p rbac.Principal) (Me, error) {
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return Me{}, err
	}
	u, err := s.db.GetUser(ctx, p.UserID)
	if err != nil {
		return Me{}, err
	}
	a, err := s.db.GetAccount(ctx, p.AccountID)
	if err != nil {
		return Me{}, err
	}
	ms, err := s.db.MembershipsOf(ctx, p.UserID)
	if err != nil {
		return Me{}, err
	}
	return Me{User: userOf(u), Role: p.Role, Account: accountOf(a), Memberships: membershipsOf(ms)}, nil
}

// Account returns p's account.
func (s *Service) Account(ctx context.Context, p rbac.Principal) (Account, error) {
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return Account{}, err
	}
	a, err := s.db.GetAccount(ctx, p.AccountID)
	if err != nil {
		return Account{}, err
	}
	return accountOf(a), nil
}

// CountMembers returns how many members p's account has with each role. Pending invitations
// are not counted: before serving this to an account's users, count them too (ListUsers shows
// them as users), or the difference tells invited logins from new ones.
func (s *Service) CountMembers(ctx context.Context, p rbac.Principal) (map[rbac.Role]int, error) {
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return nil, err
	}
	out := map[rbac.Role]int{}
	for _, r := range rbac.Roles {
		n, err := s.db.CountMembersWithRole(ctx, p.AccountID, string(r))
		if err != nil {
			return nil, err
		}
		out[r] = n
	}
	return out, nil
}

func validateName(field, v string) error {
	if v == "" || len(v) > maxNameLen || !nameRE.MatchString(v) {
		return errdefs.Invalid(field, v, fmt.Sprintf("is not a valid name: use 1-%d letters, digits, spaces, '.', '_' or '-', starting with a letter or digit", maxNameLen))
	}
	return nil
}

func validateEmail(field, v string) error {
	a, err := mail.ParseAddress(v)
	if v == "" || len(v) > maxEmailLen || err != nil || a.Address != v || a.Name != "" {
		return errdefs.Invalid(field, v, "is not a valid email address (like name@example.com)")
	}
	return nil
}

func validatePassword(field, v string) error {
	if len(v) < MinPasswordLen || len(v) > MaxPasswordLen {
		return errdefs.Invalid(field, "", fmt.Sprintf("must be %d to %d characters long", MinPasswordLen, MaxPasswordLen))
	}
	return nil
}

// CreateAccount creates a new account with p's user as its admin. Any admin may create accounts;
// the new account shares nothing with p's current one.
func (s *Service) CreateAccount(ctx context.Context, p rbac.Principal, name string) (_ Account, err error) {
	e := audit.Start(ctx, p, "account.create", "account", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.CreateAccounts); err != nil {
		return Account{}, err
	}
	if err := validateName("name", name); err != nil {
		return Account{}, err
	}
	now := s.now()
	a := store.Account{ID: store.NewID(store.PrefixAccount), Name: name, CreatedAt: now}
	// The record belongs to the new account: that is where its admins will look for it.
	e = audit.Start(ctx, rbac.Principal{AccountID: a.ID, UserID: p.UserID, Email: p.Email, KeyID: p.KeyID, KeyName: p.KeyName}, "account.create", "account", a.ID)
	e.Detail("%q", name)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateAccount(ctx, a); err != nil {
			if errors.Is(err, errdefs.ErrConflict) {
				return fmt.Errorf("name: account %q already exists: %w", name, errdefs.ErrConflict)
			}
			return err
		}
		if err := tx.AddMember(ctx, a.ID, p.UserID, string(rbac.Admin), now); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Account{}, err
	}
	return accountOf(a), nil
}

// DeleteAccount deletes p's account and everything in it, for good: its members' memberships,
// API keys and sessions (p's own included: they stop authenticating), and every resource
// (store.Queries.DeleteAccount). The users stay, as they may belong to other accounts. Only the
// account's admins may, and confirm must be the account's name, as typed by someone who means it.
// The audit record stays, under the deleted account's ID, for the platform's operators.
func (s *Service) DeleteAccount(ctx context.Context, p rbac.Principal, confirm string) (err error) {
	e := audit.Start(ctx, p, "account.delete", "account", p.AccountID)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.DeleteAccount); err != nil {
		return err
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		a, err := tx.GetAccount(ctx, p.AccountID)
		if err != nil {
			return err
		}
		if confirm != a.Name {
			return errdefs.Invalid("confirm", confirm, fmt.Sprintf("is not this account's name: to delete the account and everything in it, confirm with its name, %q", a.Name))
		}
		e.Detail("%q", a.Name)
		if err := tx.DeleteAccount(ctx, a.ID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return err
	}
	s.policies.mu.Lock()
	delete(s.policies.accounts, p.AccountID)
	s.policies.mu.Unlock()
	s.revoked(nil, p.AccountID, "") // every stream opened in the account ends
	if s.onAccountDeleted != nil {
		s.onAccountDeleted(p.AccountID)
	}
	return nil
}
