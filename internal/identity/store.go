package identity

import (
	"context"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
)

// Store is what the identity service needs of the database outside its transactions.
// *store.DB implements it. Reads of tenant data take the account ID and see only that account.
type Store interface {
	// Tx runs fn in one transaction: the change and its audit record commit together or not at all.
	Tx(ctx context.Context, fn func(tx *store.Tx) error) error
	// CountAccounts counts every account, to tell a new database from a used one.
	CountAccounts(ctx context.Context) (int, error)
	// GetAccount returns the account with id.
	GetAccount(ctx context.Context, id string) (store.Account, error)
	// GetUser returns the user with id, whatever their accounts.
	GetUser(ctx context.Context, id string) (store.User, error)
	// UserByEmail returns the user with email (compared in lower case), for login.
	UserByEmail(ctx context.Context, email string) (store.User, error)
	// MembershipsOf lists the accounts userID belongs to, oldest account first.
	MembershipsOf(ctx context.Context, userID string) ([]store.Membership, error)
	// GetMember returns userID as a member of accountID, or ErrNotFound when it is not one.
	GetMember(ctx context.Context, accountID, userID string) (store.Member, error)
	// ListMembers returns one page of accountID's members ordered by user ID.
	ListMembers(ctx context.Context, accountID string, p paging.Page) ([]store.Member, error)
	// CountMembersWithRole counts accountID's members that have role.
	CountMembersWithRole(ctx context.Context, accountID, role string) (int, error)
	// APIKeyByPrefix returns the key with the public prefix, for authentication.
	APIKeyByPrefix(ctx context.Context, prefix string) (store.APIKey, error)
	// ListAPIKeys returns one page of accountID's keys; userID, when set, keeps only theirs.
	ListAPIKeys(ctx context.Context, accountID, userID string, p paging.Page) ([]store.APIKey, error)
	// TouchAPIKey records that key id was used at t.
	TouchAPIKey(ctx context.Context, id string, t time.Time) error
	// PendingInvitation returns accountID's unexpired invitation of userID.
	PendingInvitation(ctx context.Context, accountID, userID string, now time.Time) (store.Invitation, error)
	// InvitationByMember returns accountID's unexpired invitation known there as memberID.
	InvitationByMember(ctx context.Context, accountID, memberID string, now time.Time) (store.Invitation, error)
	// ListInvitations returns one page of accountID's unexpired invitations ordered by member ID.
	ListInvitations(ctx context.Context, accountID string, now time.Time, p paging.Page) ([]store.Invitation, error)
	// InvitationsOf lists userID's unexpired invitations, oldest first.
	InvitationsOf(ctx context.Context, userID string, now time.Time) ([]store.Invitation, error)
	// SessionByHash returns the session whose token hashes to hash.
	SessionByHash(ctx context.Context, hash string) (store.Session, error)
	// GetTeam returns accountID's team with ID or name ref.
	GetTeam(ctx context.Context, accountID, ref string) (store.Team, error)
	// ListTeams returns one page of accountID's teams ordered by ID.
	ListTeams(ctx context.Context, accountID string, p paging.Page) ([]store.Team, error)
	// TeamMembers lists the members of accountID's teams teamIDs (all teams when none).
	TeamMembers(ctx context.Context, accountID string, teamIDs ...string) ([]store.TeamMember, error)
	// TeamNames returns the names of accountID's teams by ID.
	TeamNames(ctx context.Context, accountID string) (map[string]string, error)
	// TeamsOwn returns what accountID's teams teamIDs (none: all) own, by team ID.
	TeamsOwn(ctx context.Context, accountID string, teamIDs ...string) (map[string]*store.Owned, error)
	// ListRules returns one page of accountID's rules ordered by ID.
	ListRules(ctx context.Context, accountID string, p paging.Page) ([]store.Rule, error)
	// AllRules returns every rule of accountID, to build the account's policy.
	AllRules(ctx context.Context, accountID string) ([]store.Rule, error)
	// SessionsOf lists userID's unexpired sessions in every account, oldest first.
	SessionsOf(ctx context.Context, userID string, now time.Time) ([]store.Session, error)
	// PasswordResetByID returns the password reset token with public id.
	PasswordResetByID(ctx context.Context, id string) (store.PasswordReset, error)
	// DeleteExpiredSessions removes sessions that expired before t and reports how many.
	DeleteExpiredSessions(ctx context.Context, t time.Time) (int64, error)
	// DeleteExpiredInvitations removes invitations that expired at or before t and reports how many.
	DeleteExpiredInvitations(ctx context.Context, t time.Time) (int64, error)
	// GetSSOConfig returns accountID's single sign-on configuration.
	GetSSOConfig(ctx context.Context, accountID string) (store.SSOConfig, error)
	// AccountByName returns the account named name.
	AccountByName(ctx context.Context, name string) (store.Account, error)
}

var _ Store = (*store.DB)(nil)
