package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
)

// Account is a tenant.
type Account struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// User is a person who can log in. Users are global; what they may see is set per account by
// their Membership.
type User struct {
	ID           string
	Email        string
	Name         string
	PasswordHash string
	CreatedAt    time.Time
}

// Member is a user as seen from one account.
type Member struct {
	User
	AccountID string
	Role      string
	JoinedAt  time.Time
	// PolicyVersion is the account's policy version when GetMember read it (see
	// BumpPolicyVersion); other reads leave it zero.
	PolicyVersion int64
}

// Membership is one account a user belongs to.
type Membership struct {
	Account Account
	Role    string
}

// APIKey is a stored API key. The secret itself is never stored, only its hash.
type APIKey struct {
	ID         string
	AccountID  string
	UserID     string
	Name       string
	Prefix     string
	SecretHash string
	Role       string
	CreatedAt  time.Time
	ExpiresAt  time.Time // zero: never
	RevokedAt  time.Time // zero: active
	LastUsedAt time.Time
}

// Session is a logged-in UI or CLI session. Only the token's hash is stored.
type Session struct {
	ID        string
	TokenHash string
	UserID    string
	AccountID string
	CreatedAt time.Time
	ExpiresAt time.Time
	// SSOBound: opened through AccountID's single sign-on; it stays in that account.
	SSOBound bool
}

// CreateAccount inserts a new account.
func (q *Queries) CreateAccount(ctx context.Context, a Account) error {
	_, err := q.exec(ctx, `INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)`, a.ID, a.Name, micros(a.CreatedAt))
	if err != nil {
		return fmt.Errorf("create account %q: %w", a.Name, err)
	}
	return nil
}

// DeleteAccount deletes account id and, by the schema's cascades, every row that belongs to it:
// memberships, API keys and sessions (so they stop authenticating), teams and rules, projects,
// pipelines and builds, contexts, runners, runtimes with their hosted credentials, applications,
// notifications, billing records. Its outbox messages, which have no foreign key, go too. The
// users stay (users are global: they may belong to other accounts), and so do the audit records.
func (q *Queries) DeleteAccount(ctx context.Context, id string) error {
	if _, err := q.exec(ctx, `DELETE FROM outbox WHERE account_id = ?`, id); err != nil {
		return err
	}
	res, err := q.exec(ctx, `DELETE FROM accounts WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete account %s: %w", id, err)
	}
	return affected(res, "account", id)
}

// GetAccount returns the account with id.
func (q *Queries) GetAccount(ctx context.Context, id string) (Account, error) {
	var a Account
	var created int64
	err := q.queryRow(ctx, `SELECT id, name, created_at FROM accounts WHERE id = ?`, id).Scan(&a.ID, &a.Name, &created)
	if err != nil {
		return Account{}, notFound(err, "account", id)
	}
	a.CreatedAt = fromMicros(created)
	return a, nil
}

// CountAccounts returns how many accounts exist (zero means first start).
func (q *Queries) CountAccounts(ctx context.Context) (int, error) {
	var n int
	err := q.queryRow(ctx, `SELECT COUNT(*) FROM accounts`).Scan(&n)
	return n, err
}

// CreateUser inserts a new user. Emails are stored lowercased and are unique.
func (q *Queries) CreateUser(ctx context.Context, u User) error {
	_, err := q.exec(ctx, `INSERT INTO users (id, email, name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)`,
		u.ID, strings.ToLower(u.Email), u.Name, u.PasswordHash, micros(u.CreatedAt))
	if err != nil {
		return fmt.Errorf("create user %q: %w", u.Email, err)
	}
	return nil
}

const userCols = `u.id, u.email, u.name, u.password_hash, u.created_at`

func scanUser(s interface{ Scan(...any) error }, extra ...any) (User, error) {
	var u User
	var created int64
	err := s.Scan(append([]any{&u.ID, &u.Email, &u.Name, &u.PasswordHash, &created}, extra...)...)
	u.CreatedAt = fromMicros(created)
	return u, err
}

// UserByEmail looks a user up by email, for login.
func (q *Queries) UserByEmail(ctx context.Context, email string) (User, error) {
	u, err := scanUser(q.queryRow(ctx, `SELECT `+userCols+` FROM users u WHERE u.email = ?`, strings.ToLower(email)))
	if err != nil {
		return User{}, notFound(err, "user", email)
	}
	return u, nil
}

// GetUser returns the user with id, regardless of account. Use GetMember for tenant reads.
func (q *Queries) GetUser(ctx context.Context, id string) (User, error) {
	u, err := scanUser(q.queryRow(ctx, `SELECT `+userCols+` FROM users u WHERE u.id = ?`, id))
	if err != nil {
		return User{}, notFound(err, "user", id)
	}
	return u, nil
}

// AddMember gives user a role in account.
func (q *Queries) AddMember(ctx context.Context, accountID, userID, role string, at time.Time) error {
	_, err := q.exec(ctx, `INSERT INTO memberships (account_id, user_id, role, created_at) VALUES (?, ?, ?, ?)`,
		accountID, userID, role, micros(at))
	if err != nil {
		return fmt.Errorf("add member %s: %w", userID, err)
	}
	return nil
}

// SetMemberRole changes a member's role in account.
func (q *Queries) SetMemberRole(ctx context.Context, accountID, userID, role string) error {
	res, err := q.exec(ctx, `UPDATE memberships SET role = ? WHERE account_id = ? AND user_id = ?`, role, accountID, userID)
	if err != nil {
		return err
	}
	return affected(res, "user", userID)
}

// GetMember returns the user with id if it belongs to account.
func (q *Queries) GetMember(ctx context.Context, accountID, userID string) (Member, error) {
	var m Member
	var joined int64
	u, err := scanUser(q.queryRow(ctx, `SELECT `+userCols+`, m.role, m.created_at, a.policy_version FROM memberships m
		JOIN users u ON u.id = m.user_id JOIN accounts a ON a.id = m.account_id WHERE m.account_id = ? AND m.user_id = ?`, accountID, userID),
		&m.Role, &joined, &m.PolicyVersion)
	if err != nil {
		return Member{}, notFound(err, "user", userID)
	}
	m.User, m.AccountID, m.JoinedAt = u, accountID, fromMicros(joined)
	return m, nil
}

// ListMembers returns one page of account's users ordered by ID.
func (q *Queries) ListMembers(ctx context.Context, accountID string, p paging.Page) ([]Member, error) {
	rows, err := q.query(ctx, `SELECT `+userCols+`, m.role, m.created_at FROM memberships m
		JOIN users u ON u.id = m.user_id WHERE m.account_id = ? AND u.id > ? ORDER BY u.id LIMIT ?`,
		accountID, p.After, p.Size())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Member
	for rows.Next() {
		m := Member{AccountID: accountID}
		var joined int64
		u, err := scanUser(rows, &m.Role, &joined)
		if err != nil {
			return nil, err
		}
		m.User, m.JoinedAt = u, fromMicros(joined)
		out = append(out, m)
	}
	return out, rows.Err()
}

// CountMembersWithRole counts account's members that have role.
func (q *Queries) CountMembersWithRole(ctx context.Context, accountID, role string) (int, error) {
	var n int
	err := q.queryRow(ctx, `SELECT COUNT(*) FROM memberships WHERE account_id = ? AND role = ?`, accountID, role).Scan(&n)
	return n, err
}

// RemoveMember removes user from account, with the API keys and sessions the user held there.
// A user left without any account is deleted.
func (q *Queries) RemoveMember(ctx context.Context, accountID, userID string) error {
	res, err := q.exec(ctx, `DELETE FROM memberships WHERE account_id = ? AND user_id = ?`, accountID, userID)
	if err != nil {
		return err
	}
	if err := affected(res, "user", userID); err != nil {
		return err
	}
	// Their team memberships and rules went with the membership.
	if err := q.BumpPolicyVersion(ctx, accountID); err != nil {
		return err
	}
	if _, err := q.exec(ctx, `DELETE FROM api_keys WHERE account_id = ? AND user_id = ?`, accountID, userID); err != nil {
		return err
	}
	if _, err := q.exec(ctx, `DELETE FROM sessions WHERE account_id = ? AND user_id = ?`, accountID, userID); err != nil {
		return err
	}
	_, err = q.exec(ctx, `DELETE FROM users WHERE id = ? AND NOT EXISTS (SELECT 1 FROM memberships WHERE user_id = ?)`, userID, userID)
	return err
}

// MembershipsOf lists the accounts user belongs to, oldest account first.
func (q *Queries) MembershipsOf(ctx context.Context, userID string) ([]Membership, error) {
	rows, err := q.query(ctx, `SELECT a.id, a.name, a.created_at, m.role FROM memberships m
		JOIN accounts a ON a.id = m.account_id WHERE m.user_id = ? ORDER BY a.id`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Membership
	for rows.Next() {
		var m Membership
		var created int64
		if err := rows.Scan(&m.Account.ID, &m.Account.Name, &created, &m.Role); err != nil {
			return nil, err
		}
		m.Account.CreatedAt = fromMicros(created)
		out = append(out, m)
	}
	return out, rows.Err()
}

// CreateAPIKey stores a new API key.
func (q *Queries) CreateAPIKey(ctx context.Context, k APIKey) error {
	_, err := q.exec(ctx, `INSERT INTO api_keys (id, account_id, user_id, name, prefix, secret_hash, role, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.AccountID, k.UserID, k.Name, k.Prefix, k.SecretHash, k.Role, micros(k.CreatedAt), nullMicros(k.ExpiresAt))
	if err != nil {
		return fmt.Errorf("create api key %q: %w", k.Name, err)
	}
	return nil
}

const apiKeyCols = `id, account_id, user_id, name, prefix, secret_hash, role, created_at, expires_at, revoked_at, last_used_at`

func scanAPIKey(s interface{ Scan(...any) error }) (APIKey, error) {
	var k APIKey
	var created int64
	var expires, revoked, used sql.NullInt64
	err := s.Scan(&k.ID, &k.AccountID, &k.UserID, &k.Name, &k.Prefix, &k.SecretHash, &k.Role, &created, &expires, &revoked, &used)
	k.CreatedAt, k.ExpiresAt, k.RevokedAt, k.LastUsedAt = fromMicros(created), fromNullMicros(expires), fromNullMicros(revoked), fromNullMicros(used)
	return k, err
}

// APIKeyByPrefix finds a key by its public prefix, for authentication. The caller must verify the secret.
func (q *Queries) APIKeyByPrefix(ctx context.Context, prefix string) (APIKey, error) {
	k, err := scanAPIKey(q.queryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE prefix = ?`, prefix))
	if err != nil {
		return APIKey{}, notFound(err, "api key", prefix)
	}
	return k, nil
}

// GetAPIKey returns account's key with id.
func (q *Queries) GetAPIKey(ctx context.Context, accountID, id string) (APIKey, error) {
	k, err := scanAPIKey(q.queryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return APIKey{}, notFound(err, "api key", id)
	}
	return k, nil
}

// ListAPIKeys returns one page of account's keys; userID, when set, keeps only that user's keys.
func (q *Queries) ListAPIKeys(ctx context.Context, accountID, userID string, p paging.Page) ([]APIKey, error) {
	rows, err := q.query(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE account_id = ? AND (? = '' OR user_id = ?) AND id > ?
		ORDER BY id LIMIT ?`, accountID, userID, userID, p.After, p.Size())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []APIKey
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeAPIKey marks account's key id revoked at t. Revoking twice keeps the first time.
func (q *Queries) RevokeAPIKey(ctx context.Context, accountID, id string, t time.Time) error {
	res, err := q.exec(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE account_id = ? AND id = ?`, micros(t), accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "api key", id)
}

// TouchAPIKey records that key id was used at t.
func (q *Queries) TouchAPIKey(ctx context.Context, id string, t time.Time) error {
	_, err := q.exec(ctx, `UPDATE api_keys SET last_used_at = ? WHERE id = ?`, micros(t), id)
	return err
}

// CreateSession stores a new session.
func (q *Queries) CreateSession(ctx context.Context, s Session) error {
	_, err := q.exec(ctx, `INSERT INTO sessions (id, token_hash, user_id, account_id, created_at, expires_at, sso_bound) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.TokenHash, s.UserID, s.AccountID, micros(s.CreatedAt), micros(s.ExpiresAt), boolInt(s.SSOBound))
	return err
}

// SessionByHash finds a session by the hash of its token.
func (q *Queries) SessionByHash(ctx context.Context, hash string) (Session, error) {
	var s Session
	var created, expires, bound int64
	err := q.queryRow(ctx, `SELECT id, token_hash, user_id, account_id, created_at, expires_at, sso_bound FROM sessions WHERE token_hash = ?`, hash).
		Scan(&s.ID, &s.TokenHash, &s.UserID, &s.AccountID, &created, &expires, &bound)
	if err != nil {
		return Session{}, notFound(err, "session", "")
	}
	s.CreatedAt, s.ExpiresAt, s.SSOBound = fromMicros(created), fromMicros(expires), bound != 0
	return s, nil
}

// SetSessionAccount moves session id to another account the user belongs to. A session bound
// to its account by SSO is not moved (ErrNotFound).
func (q *Queries) SetSessionAccount(ctx context.Context, id, accountID string) error {
	res, err := q.exec(ctx, `UPDATE sessions SET account_id = ? WHERE id = ? AND sso_bound = 0`, accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "session", id)
}

// DeleteSession ends session id.
func (q *Queries) DeleteSession(ctx context.Context, id string) error {
	_, err := q.exec(ctx, `DELETE FROM sessions WHERE id = ?`, id)
	return err
}

// DeleteExpiredSessions removes sessions that expired before t and reports how many.
func (q *Queries) DeleteExpiredSessions(ctx context.Context, t time.Time) (int64, error) {
	res, err := q.exec(ctx, `DELETE FROM sessions WHERE expires_at < ?`, micros(t))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func affected(res sql.Result, what, id string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound(sql.ErrNoRows, what, id)
	}
	return nil
}

// FirstAccount returns the oldest account (the one `freshet up` created on first start).
func (q *Queries) FirstAccount(ctx context.Context) (Account, error) {
	var a Account
	var created int64
	err := q.queryRow(ctx, `SELECT id, name, created_at FROM accounts ORDER BY id LIMIT 1`).Scan(&a.ID, &a.Name, &created)
	if err != nil {
		return Account{}, notFound(err, "account", "first")
	}
	a.CreatedAt = fromMicros(created)
	return a, nil
}
