package store

import (
	"context"
	"time"
)

// SSOConfig is an account's OpenID Connect configuration. ClientSecret is ciphertext.
type SSOConfig struct {
	AccountID        string
	Issuer           string
	ClientID         string
	ClientSecret     string // secrets.Keyring ciphertext
	Scopes           string // space-separated
	EmailClaim       string
	NameClaim        string
	GroupsClaim      string
	AllowedDomains   string // space-separated, lower case
	RequireSSO       bool
	BreakGlassUserID string
	UpdatedAt        time.Time
}

// SSOLogin is a login in flight: what the callback with its state needs.
type SSOLogin struct {
	StateHash string
	AccountID string
	Nonce     string
	Verifier  string
	CreatedAt time.Time
	ExpiresAt time.Time
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// PutSSOConfig creates or replaces c.AccountID's SSO configuration.
func (q *Queries) PutSSOConfig(ctx context.Context, c SSOConfig) error {
	if _, err := q.exec(ctx, `DELETE FROM sso_configs WHERE account_id = ?`, c.AccountID); err != nil {
		return err
	}
	_, err := q.exec(ctx, `INSERT INTO sso_configs (account_id, issuer, client_id, client_secret, scopes, email_claim, name_claim,
		groups_claim, allowed_domains, require_sso, break_glass_user_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.AccountID, c.Issuer, c.ClientID, c.ClientSecret, c.Scopes, c.EmailClaim, c.NameClaim, c.GroupsClaim, c.AllowedDomains,
		boolInt(c.RequireSSO), c.BreakGlassUserID, micros(c.UpdatedAt))
	return err
}

// GetSSOConfig returns accountID's SSO configuration, or ErrNotFound.
func (q *Queries) GetSSOConfig(ctx context.Context, accountID string) (SSOConfig, error) {
	var c SSOConfig
	var req, updated int64
	err := q.queryRow(ctx, `SELECT account_id, issuer, client_id, client_secret, scopes, email_claim, name_claim, groups_claim,
		allowed_domains, require_sso, break_glass_user_id, updated_at FROM sso_configs WHERE account_id = ?`, accountID).
		Scan(&c.AccountID, &c.Issuer, &c.ClientID, &c.ClientSecret, &c.Scopes, &c.EmailClaim, &c.NameClaim, &c.GroupsClaim,
			&c.AllowedDomains, &req, &c.BreakGlassUserID, &updated)
	if err != nil {
		return SSOConfig{}, notFound(err, "sso configuration of account", accountID)
	}
	c.RequireSSO, c.UpdatedAt = req != 0, fromMicros(updated)
	return c, nil
}

// DeleteSSOConfig removes accountID's SSO configuration (ErrNotFound when it has none).
func (q *Queries) DeleteSSOConfig(ctx context.Context, accountID string) error {
	res, err := q.exec(ctx, `DELETE FROM sso_configs WHERE account_id = ?`, accountID)
	if err != nil {
		return err
	}
	return affected(res, "sso configuration of account", accountID)
}

// CreateSSOLogin stores a login in flight.
func (q *Queries) CreateSSOLogin(ctx context.Context, l SSOLogin) error {
	_, err := q.exec(ctx, `INSERT INTO sso_logins (state_hash, account_id, nonce, verifier, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
		l.StateHash, l.AccountID, l.Nonce, l.Verifier, micros(l.CreatedAt), micros(l.ExpiresAt))
	return err
}

// TakeSSOLogin returns and deletes the login in flight whose state hashes to stateHash: a
// state is used once. Of two concurrent calls one gets ErrNotFound.
func (q *Queries) TakeSSOLogin(ctx context.Context, stateHash string) (SSOLogin, error) {
	var l SSOLogin
	var created, expires int64
	err := q.queryRow(ctx, `SELECT state_hash, account_id, nonce, verifier, created_at, expires_at FROM sso_logins WHERE state_hash = ?`, stateHash).
		Scan(&l.StateHash, &l.AccountID, &l.Nonce, &l.Verifier, &created, &expires)
	if err != nil {
		return SSOLogin{}, notFound(err, "sso login", "")
	}
	res, err := q.exec(ctx, `DELETE FROM sso_logins WHERE state_hash = ?`, stateHash)
	if err != nil {
		return SSOLogin{}, err
	}
	if err := affected(res, "sso login", ""); err != nil {
		return SSOLogin{}, err
	}
	l.CreatedAt, l.ExpiresAt = fromMicros(created), fromMicros(expires)
	return l, nil
}

// DeleteExpiredSSOLogins removes logins in flight that expired before t.
func (q *Queries) DeleteExpiredSSOLogins(ctx context.Context, t time.Time) (int64, error) {
	res, err := q.exec(ctx, `DELETE FROM sso_logins WHERE expires_at < ?`, micros(t))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// AccountByName returns the account named name.
func (q *Queries) AccountByName(ctx context.Context, name string) (Account, error) {
	var a Account
	var created int64
	err := q.queryRow(ctx, `SELECT id, name, created_at FROM accounts WHERE name = ?`, name).Scan(&a.ID, &a.Name, &created)
	if err != nil {
		return Account{}, notFound(err, "account", name)
	}
	a.CreatedAt = fromMicros(created)
	return a, nil
}
