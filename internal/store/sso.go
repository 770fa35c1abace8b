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
	// CLIPort and CLIChallenge are set for a login the CLI started: the port of its listener on
	// 127.0.0.1 and BASE64URL(SHA-256(verifier)) of its verifier. CLIPort 0: a browser login.
	CLIPort      int
	CLIChallenge string
}

// SSOCLICode is a one-time code the callback of a CLI login hands the CLI: only its hash.
type SSOCLICode struct {
	CodeHash  string
	AccountID string
	UserID    string
	Challenge string // what SHA-256 of the CLI's verifier must be, base64url
	Issuer    string // the identity provider that vouched for the user, for the audit record
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
	_, err := q.exec(ctx, `INSERT INTO sso_logins (state_hash, account_id, nonce, verifier, created_at, expires_at, cli_port, cli_challenge)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		l.StateHash, l.AccountID, l.Nonce, l.Verifier, micros(l.CreatedAt), micros(l.ExpiresAt), l.CLIPort, l.CLIChallenge)
	return err
}

// TakeSSOLogin returns and deletes the login in flight whose state hashes to stateHash: a
// state is used once. Of two concurrent calls one gets ErrNotFound.
func (q *Queries) TakeSSOLogin(ctx context.Context, stateHash string) (SSOLogin, error) {
	var l SSOLogin
	var created, expires, port int64
	err := q.queryRow(ctx, `SELECT state_hash, account_id, nonce, verifier, created_at, expires_at, cli_port, cli_challenge FROM sso_logins
		WHERE state_hash = ?`, stateHash).
		Scan(&l.StateHash, &l.AccountID, &l.Nonce, &l.Verifier, &created, &expires, &port, &l.CLIChallenge)
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
	l.CreatedAt, l.ExpiresAt, l.CLIPort = fromMicros(created), fromMicros(expires), int(port)
	return l, nil
}

// CreateSSOCLICode stores a one-time code of a CLI login.
func (q *Queries) CreateSSOCLICode(ctx context.Context, c SSOCLICode) error {
	_, err := q.exec(ctx, `INSERT INTO sso_cli_codes (code_hash, account_id, user_id, challenge, issuer, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, c.CodeHash, c.AccountID, c.UserID, c.Challenge, c.Issuer, micros(c.CreatedAt), micros(c.ExpiresAt))
	return err
}

// TakeSSOCLICode returns and deletes the code that hashes to codeHash: a code is used once. Of
// two concurrent calls one gets ErrNotFound.
func (q *Queries) TakeSSOCLICode(ctx context.Context, codeHash string) (SSOCLICode, error) {
	var c SSOCLICode
	var created, expires int64
	err := q.queryRow(ctx, `SELECT code_hash, account_id, user_id, challenge, issuer, created_at, expires_at FROM sso_cli_codes
		WHERE code_hash = ?`, codeHash).Scan(&c.CodeHash, &c.AccountID, &c.UserID, &c.Challenge, &c.Issuer, &created, &expires)
	if err != nil {
		return SSOCLICode{}, notFound(err, "sso cli code", "")
	}
	res, err := q.exec(ctx, `DELETE FROM sso_cli_codes WHERE code_hash = ?`, codeHash)
	if err != nil {
		return SSOCLICode{}, err
	}
	if err := affected(res, "sso cli code", ""); err != nil {
		return SSOCLICode{}, err
	}
	c.CreatedAt, c.ExpiresAt = fromMicros(created), fromMicros(expires)
	return c, nil
}

// DeleteExpiredSSOCLICodes removes CLI codes that expired before t.
func (q *Queries) DeleteExpiredSSOCLICodes(ctx context.Context, t time.Time) (int64, error) {
	res, err := q.exec(ctx, `DELETE FROM sso_cli_codes WHERE expires_at < ?`, micros(t))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
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
