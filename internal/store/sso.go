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
	// DeviceHash names the device request (SSODevice.DeviceHash) this login approves; "" for
	// any other login.
	DeviceHash string
}

// Device request states.
const (
	DevicePending  = "pending"
	DeviceApproved = "approved"
	DeviceDenied   = "denied"
)

// SSODevice is a device-flow login request (freshet login --sso --device): only the hashes of
// its device code and user code are stored.
type SSODevice struct {
	DeviceHash   string
	UserCodeHash string
	AccountID    string
	ClientIP     string // where the request came from, shown on the verification page
	ClientAgent  string // its User-Agent, shortened
	CreatedAt    time.Time
	ExpiresAt    time.Time
	Interval     int       // seconds the CLI waits between polls
	LastPollAt   time.Time // zero: never polled
	Status       string    // DevicePending, DeviceApproved or DeviceDenied
	UserID       string    // approved: who
	Issuer       string    // approved: the identity provider that vouched for them
	Reason       string    // denied: why
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
	_, err := q.exec(ctx, `INSERT INTO sso_logins (state_hash, account_id, nonce, verifier, created_at, expires_at, cli_port, cli_challenge, device_hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		l.StateHash, l.AccountID, l.Nonce, l.Verifier, micros(l.CreatedAt), micros(l.ExpiresAt), l.CLIPort, l.CLIChallenge, l.DeviceHash)
	return err
}

// TakeSSOLogin returns and deletes the login in flight whose state hashes to stateHash: a
// state is used once. Of two concurrent calls one gets ErrNotFound.
func (q *Queries) TakeSSOLogin(ctx context.Context, stateHash string) (SSOLogin, error) {
	var l SSOLogin
	var created, expires, port int64
	err := q.queryRow(ctx, `SELECT state_hash, account_id, nonce, verifier, created_at, expires_at, cli_port, cli_challenge, device_hash
		FROM sso_logins WHERE state_hash = ?`, stateHash).
		Scan(&l.StateHash, &l.AccountID, &l.Nonce, &l.Verifier, &created, &expires, &port, &l.CLIChallenge, &l.DeviceHash)
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

const ssoDeviceCols = `device_hash, user_code_hash, account_id, client_ip, client_agent, created_at, expires_at, interval_secs,
	last_poll_at, status, user_id, issuer, reason`

// CreateSSODevice stores a new device request (status pending). A user code hash that is taken
// already is ErrConflict.
func (q *Queries) CreateSSODevice(ctx context.Context, d SSODevice) error {
	_, err := q.exec(ctx, `INSERT INTO sso_device_requests (`+ssoDeviceCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.DeviceHash, d.UserCodeHash, d.AccountID, d.ClientIP, d.ClientAgent, micros(d.CreatedAt), micros(d.ExpiresAt), d.Interval,
		micros(d.LastPollAt), DevicePending, "", "", "")
	return err
}

func (q *Queries) ssoDevice(ctx context.Context, where, arg string) (SSODevice, error) {
	var d SSODevice
	var created, expires, polled int64
	err := q.queryRow(ctx, `SELECT `+ssoDeviceCols+` FROM sso_device_requests WHERE `+where+` = ?`, arg).
		Scan(&d.DeviceHash, &d.UserCodeHash, &d.AccountID, &d.ClientIP, &d.ClientAgent, &created, &expires, &d.Interval,
			&polled, &d.Status, &d.UserID, &d.Issuer, &d.Reason)
	if err != nil {
		return SSODevice{}, notFound(err, "sso device request", "")
	}
	d.CreatedAt, d.ExpiresAt, d.LastPollAt = fromMicros(created), fromMicros(expires), fromMicros(polled)
	return d, nil
}

// GetSSODevice returns the device request whose device code hashes to deviceHash.
func (q *Queries) GetSSODevice(ctx context.Context, deviceHash string) (SSODevice, error) {
	return q.ssoDevice(ctx, "device_hash", deviceHash)
}

// SSODeviceByUserCode returns the device request whose user code hashes to userCodeHash.
func (q *Queries) SSODeviceByUserCode(ctx context.Context, userCodeHash string) (SSODevice, error) {
	return q.ssoDevice(ctx, "user_code_hash", userCodeHash)
}

// PollSSODevice records a poll of a pending request at t with the interval the next poll must
// wait (ErrNotFound when it is no longer pending).
func (q *Queries) PollSSODevice(ctx context.Context, deviceHash string, t time.Time, interval int) error {
	res, err := q.exec(ctx, `UPDATE sso_device_requests SET last_poll_at = ?, interval_secs = ? WHERE device_hash = ? AND status = ?`,
		micros(t), interval, deviceHash, DevicePending)
	if err != nil {
		return err
	}
	return affected(res, "pending sso device request", "")
}

// ApproveSSODevice marks a pending request that has not expired at t approved for userID by
// issuer. ErrNotFound: it is not pending any more (approved, denied) or expired.
func (q *Queries) ApproveSSODevice(ctx context.Context, deviceHash, userID, issuer string, t time.Time) error {
	res, err := q.exec(ctx, `UPDATE sso_device_requests SET status = ?, user_id = ?, issuer = ? WHERE device_hash = ? AND status = ? AND expires_at >= ?`,
		DeviceApproved, userID, issuer, deviceHash, DevicePending, micros(t))
	if err != nil {
		return err
	}
	return affected(res, "pending sso device request", "")
}

// DenySSODevice marks a pending request denied with reason. ErrNotFound: it is not pending.
func (q *Queries) DenySSODevice(ctx context.Context, deviceHash, reason string) error {
	res, err := q.exec(ctx, `UPDATE sso_device_requests SET status = ?, reason = ? WHERE device_hash = ? AND status = ?`,
		DeviceDenied, reason, deviceHash, DevicePending)
	if err != nil {
		return err
	}
	return affected(res, "pending sso device request", "")
}

// DeleteSSODevice deletes the request deviceHash names if it is in status: a request ends
// once. Of two concurrent calls one gets ErrNotFound.
func (q *Queries) DeleteSSODevice(ctx context.Context, deviceHash, status string) error {
	res, err := q.exec(ctx, `DELETE FROM sso_device_requests WHERE device_hash = ? AND status = ?`, deviceHash, status)
	if err != nil {
		return err
	}
	return affected(res, "sso device request", "")
}

// DeleteExpiredSSODevices removes device requests that expired before t.
func (q *Queries) DeleteExpiredSSODevices(ctx context.Context, t time.Time) (int64, error) {
	res, err := q.exec(ctx, `DELETE FROM sso_device_requests WHERE expires_at < ?`, micros(t))
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
