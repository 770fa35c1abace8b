package identity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
)

// PasswordResetTTL is how long a reset token works.
const PasswordResetTTL = 24 * time.Hour

// Session is one of a user's login sessions, as its user sees it (never its token).
type Session struct {
	ID        string
	Account   Account
	CreatedAt time.Time
	ExpiresAt time.Time
	Current   bool // the session the request came with
}

// PasswordReset is a reset token, shown once to the admin who issued it; when it went to the
// user by email, Token is empty and Emailed is set.
type PasswordReset struct {
	Token     string
	UserID    string
	Email     string
	ExpiresAt time.Time
	Emailed   bool
}

// ChangePassword sets p's user's password after checking the current one. Every other session
// of the user (in every account) ends; the caller's own session stays. API keys are separate
// credentials and stay.
func (s *Service) ChangePassword(ctx context.Context, p rbac.Principal, current, next string) (err error) {
	e := audit.Start(ctx, p, "user.passwd", "user", p.UserID)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return err
	}
	if p.KeyID != "" {
		return errdefs.Invalid("session", "", "is absent: change your password from a login session, not with an API key")
	}
	if p.SSOBound {
		return fmt.Errorf("session: was opened through an account's single sign-on, which vouches for you in that account only: change your password from a password login session: %w", errdefs.ErrForbidden)
	}
	if err := validatePassword("newPassword", next); err != nil {
		return err
	}
	u, err := s.db.GetUser(ctx, p.UserID)
	if err != nil {
		return err
	}
	// A wrong current password is a failed login for the email: whoever holds a stolen session
	// guesses no faster here than at the login.
	now := s.now()
	if ok, wait := s.byEmail.reserve(u.Email, now); !ok {
		return errdefs.RetryAfter(fmt.Errorf("too many failed password checks: try again in %s: %w", wait.Round(time.Second), errdefs.ErrRateLimited), wait)
	}
	ok, err := s.hasher.check(ctx, u.PasswordHash, current)
	if err != nil || ok {
		s.byEmail.release(u.Email, now)
	}
	if err != nil {
		return err
	}
	if !ok {
		return errdefs.Invalid("currentPassword", "", "is not your current password")
	}
	hash, err := s.hasher.hash(ctx, next)
	if err != nil {
		return err
	}
	return s.setPassword(ctx, u.ID, hash, p.SessionID, e)
}

// setPassword stores hash as userID's password and ends their sessions but keep, in one
// transaction with e; streams of the ended sessions end too.
func (s *Service) setPassword(ctx context.Context, userID, hash, keep string, e *audit.Entry) error {
	var ended int64
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.SetUserPassword(ctx, userID, hash); err != nil {
			return err
		}
		n, err := tx.DeleteSessionsOf(ctx, userID, keep)
		if err != nil {
			return err
		}
		ended = n
		e.Detail("%d other sessions ended", n)
		return e.Commit(ctx, tx)
	})
	if err == nil && ended > 0 {
		s.revokedEverywhere(ctx, userID)
	}
	return err
}

// revokedEverywhere tells OnRevoke about userID in each of their accounts.
func (s *Service) revokedEverywhere(ctx context.Context, userID string) {
	ms, err := s.db.MembershipsOf(ctx, userID)
	if err != nil {
		s.log.Warn("list memberships to end streams", "user", userID, "err", err)
		return
	}
	for _, m := range ms {
		s.revoked(nil, m.Account.ID, userID)
	}
}

// IssuePasswordReset makes a one-time token with which a member of p's account (by ID or email)
// sets a new password without the old one. Users are global: when the token is shown to the
// admin, an admin may reset only a user who belongs to p's account alone, or the admin of one
// account could take over a login that other accounts trust. When a ResetMail sender is set the
// token goes to the user's email only (the answer carries none), so any member may be reset; the
// mail is sent before the token is stored, and a failed send stores none (the user's earlier one
// still works).
func (s *Service) IssuePasswordReset(ctx context.Context, p rbac.Principal, user string) (_ PasswordReset, err error) {
	e := audit.Start(ctx, p, "user.password-reset", "user", user)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageUsers); err != nil {
		return PasswordReset{}, err
	}
	m, err := memberByRef(ctx, s.db, p.AccountID, "user", user)
	if err != nil {
		return PasswordReset{}, err
	}
	e.Resource(m.ID)
	ms, err := s.db.MembershipsOf(ctx, m.ID)
	if err != nil {
		return PasswordReset{}, err
	}
	mail := s.resetMail != nil
	if len(ms) > 1 && !mail {
		return PasswordReset{}, errdefs.Invalid("user", user, "cannot be reset by this account: the login is not this account's alone; the user can change the password themselves ('freshet user passwd')")
	}
	var accountName string
	for _, x := range ms {
		if x.Account.ID == p.AccountID {
			accountName = x.Account.Name
		}
	}
	minted := token.PasswordReset.New()
	now := s.now()
	r := store.PasswordReset{ID: minted.ID, UserID: m.ID, AccountID: p.AccountID, SecretHash: minted.Hash, CreatedBy: p.Actor(),
		CreatedAt: now, ExpiresAt: now.Add(PasswordResetTTL)}
	if mail {
		e.Detail("emailed to %s, until %s", m.Email, r.ExpiresAt.UTC().Format(time.RFC3339))
	} else {
		e.Detail("for %s, until %s", m.Email, r.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if mail {
		// Sent before the token is stored, and outside any transaction (a slow mail server must
		// not hold SQLite's write lock): a failed send stores nothing, so no token is left valid
		// that nobody received and the user's earlier one still works. A mail whose commit then
		// fails holds a dead link.
		if err := s.resetMail(ctx, ResetMail{To: m.Email, Account: accountName, Token: minted.Token, ExpiresAt: storedTime(r.ExpiresAt)}); err != nil {
			return PasswordReset{}, fmt.Errorf("email the password reset to %s: %w: no reset was made, the user's earlier reset link (if any) still works: %w", m.Email, err, errdefs.ErrUnavailable)
		}
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreatePasswordReset(ctx, r); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return PasswordReset{}, err
	}
	out := PasswordReset{UserID: m.ID, Email: m.Email, ExpiresAt: storedTime(r.ExpiresAt), Emailed: mail}
	if !mail {
		out.Token = minted.Token
	}
	return out, nil
}

var errBadReset = fmt.Errorf("invalid, used or expired password reset token: %w", errdefs.ErrUnauthenticated)

// ResetPassword sets a new password with a reset token (no login needed). The token works once;
// every session of the user ends.
func (s *Service) ResetPassword(ctx context.Context, tok, next string) (err error) {
	if err := validatePassword("newPassword", next); err != nil {
		return err
	}
	id, secret, ok := token.PasswordReset.Parse(tok)
	if !ok {
		return errBadReset
	}
	r, err := s.db.PasswordResetByID(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return errBadReset
	} else if err != nil {
		return err
	}
	now := s.now()
	if !token.Verify(r.SecretHash, secret) || !r.UsedAt.IsZero() || now.After(r.ExpiresAt) {
		return errBadReset
	}
	e := audit.System(ctx, r.AccountID, "user.password-reset-used", "user", r.UserID)
	defer func() {
		if err != nil {
			s.audit.Finish(ctx, e, err)
		}
	}()
	hash, err := s.hasher.hash(ctx, next)
	if err != nil {
		return err
	}
	var ended int64
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.UsePasswordReset(ctx, r.ID, now); err != nil {
			if errors.Is(err, errdefs.ErrNotFound) {
				return errBadReset // used meanwhile
			}
			return err
		}
		if err := tx.SetUserPassword(ctx, r.UserID, hash); err != nil {
			return err
		}
		n, err := tx.DeleteSessionsOf(ctx, r.UserID, "")
		if err != nil {
			return err
		}
		ended = n
		e.Detail("token issued by %s; %d sessions ended", r.CreatedBy, n)
		return e.Commit(ctx, tx)
	})
	if err == nil && ended > 0 {
		s.revokedEverywhere(ctx, r.UserID)
	}
	return err
}

// ListSessions lists p's user's unexpired login sessions in every account.
func (s *Service) ListSessions(ctx context.Context, p rbac.Principal) ([]Session, error) {
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return nil, err
	}
	rows, err := s.db.SessionsOf(ctx, p.UserID, s.now())
	if err != nil {
		return nil, err
	}
	ms, err := s.db.MembershipsOf(ctx, p.UserID)
	if err != nil {
		return nil, err
	}
	accounts := map[string]Account{}
	for _, m := range ms {
		accounts[m.Account.ID] = accountOf(m.Account)
	}
	out := make([]Session, 0, len(rows))
	for _, r := range rows {
		acct, ok := accounts[r.AccountID]
		if !ok {
			continue // an account the user left; the session no longer authenticates
		}
		if p.SSOBound && r.AccountID != p.AccountID {
			continue // an SSO session sees nothing of the user's other accounts
		}
		out = append(out, Session{ID: r.ID, Account: acct, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Current: r.ID == p.SessionID})
	}
	return out, nil
}

// RevokeSession ends one of p's user's sessions (any of their accounts).
func (s *Service) RevokeSession(ctx context.Context, p rbac.Principal, id string) (err error) {
	e := audit.Start(ctx, p, "auth.revoke-session", "session", id)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return err
	}
	if p.SSOBound { // an SSO session ends only sessions in its own account
		rows, err := s.db.SessionsOf(ctx, p.UserID, s.now())
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(rows, func(r store.Session) bool { return r.ID == id && r.AccountID == p.AccountID }) {
			return fmt.Errorf("session %q: %w", id, errdefs.ErrNotFound)
		}
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteSessionOf(ctx, p.UserID, id); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err == nil {
		s.revokedEverywhere(ctx, p.UserID)
	}
	return err
}
