package identity

import (
	"time"

	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// Account is a tenant.
type Account struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// User is a person who can log in. Users are global; what they may do is set per account by
// their membership.
type User struct {
	ID        string
	Email     string
	Name      string
	CreatedAt time.Time
}

// Member is a user as seen from one account.
type Member struct {
	User
	Role     rbac.Role
	JoinedAt time.Time
}

// Membership is one account a user belongs to, with their role there.
type Membership struct {
	Account Account
	Role    rbac.Role
}

// APIKeyStatus says whether an API key still authenticates.
type APIKeyStatus string

// API key statuses. A revoked key is revoked even after it would have expired.
const (
	APIKeyActive  APIKeyStatus = "active"
	APIKeyExpired APIKeyStatus = "expired"
	APIKeyRevoked APIKeyStatus = "revoked"
)

// APIKey is an API key as its owner and the account's admins see it: never its secret.
type APIKey struct {
	ID         string
	UserID     string // the owner
	Name       string
	Prefix     string // the public part of the token
	Role       rbac.Role
	Status     APIKeyStatus // at the time the key was read
	CreatedAt  time.Time
	ExpiresAt  time.Time // zero: never
	RevokedAt  time.Time // zero: not revoked
	LastUsedAt time.Time // zero: never used
}

// Invitation asks a user to join another account, as the invited user sees it.
type Invitation struct {
	ID        string
	Account   Account
	Role      rbac.Role
	InvitedBy string // who invited: an email, or an email and API key name
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Me describes the calling user.
type Me struct {
	User        User
	Role        rbac.Role
	Account     Account
	Memberships []Membership
}

func accountOf(a store.Account) Account {
	return Account{ID: a.ID, Name: a.Name, CreatedAt: a.CreatedAt}
}

func userOf(u store.User) User {
	return User{ID: u.ID, Email: u.Email, Name: u.Name, CreatedAt: u.CreatedAt}
}

func memberOf(m store.Member) Member {
	return Member{User: userOf(m.User), Role: rbac.Role(m.Role), JoinedAt: m.JoinedAt}
}

func membersOf(rows []store.Member) []Member {
	out := make([]Member, len(rows))
	for i, m := range rows {
		out[i] = memberOf(m)
	}
	return out
}

func membershipsOf(rows []store.Membership) []Membership {
	out := make([]Membership, len(rows))
	for i, m := range rows {
		out[i] = Membership{Account: accountOf(m.Account), Role: rbac.Role(m.Role)}
	}
	return out
}

// apiKeyOf converts a stored key, with its status at now.
func apiKeyOf(k store.APIKey, now time.Time) APIKey {
	out := APIKey{ID: k.ID, UserID: k.UserID, Name: k.Name, Prefix: k.Prefix, Role: rbac.Role(k.Role), Status: APIKeyActive,
		CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt, LastUsedAt: k.LastUsedAt}
	switch {
	case !k.RevokedAt.IsZero():
		out.Status = APIKeyRevoked
	case !k.ExpiresAt.IsZero() && now.After(k.ExpiresAt):
		out.Status = APIKeyExpired
	}
	return out
}

func invitationOf(i store.Invitation) Invitation {
	return Invitation{ID: i.ID, Account: Account{ID: i.AccountID, Name: i.AccountName, CreatedAt: i.AccountCreatedAt}, Role: rbac.Role(i.Role),
		InvitedBy: i.InvitedBy, CreatedAt: i.CreatedAt, ExpiresAt: i.ExpiresAt}
}

// invitedMember is an invitation as the inviting account sees it: a member under the ID it has
// there, with the name that account gave.
func invitedMember(i store.Invitation) Member {
	return Member{User: User{ID: i.MemberID, Email: i.Email, Name: i.Name, CreatedAt: i.CreatedAt}, Role: rbac.Role(i.Role), JoinedAt: i.CreatedAt}
}

// Team is a named group of an account's members.
type Team struct {
	ID        string
	Name      string
	Members   []TeamMember
	CreatedAt time.Time
	// Owns is what the team owns: the names of its projects and runtimes.
	Owns Owned
}

// Owned is what a team owns, by name.
type Owned struct {
	Projects []string
	Runtimes []string
}

// TeamMember is a member of a team.
type TeamMember struct {
	UserID  string
	Email   string
	AddedAt time.Time
}

// Rule is an attribute-based rule of an account.
type Rule struct {
	rbac.Rule
	CreatedAt time.Time
}

// Explanation answers "why may (or may not) this user take this action on this resource".
type Explanation struct {
	User     string // the user's email
	Action   rbac.Action
	Resource rbac.Resource
	rbac.Decision
}

// storedTime is t as the store gives times back: microseconds, UTC.
func storedTime(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }
