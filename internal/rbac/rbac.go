// Package rbac decides what a caller may do. Every request resolves to a Principal (account,
// user, role) before any handler runs, and every service method asks Allow before it acts: one
// authorization path for REST, GraphQL and the CLI.
package rbac

import (
	"fmt"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Role is a member's role in an account.
type Role string

// Roles, from least to most privileged.
const (
	Viewer Role = "viewer"
	Member Role = "member"
	Admin  Role = "admin"
)

// Roles lists the valid roles, least privileged first.
var Roles = []Role{Viewer, Member, Admin}

func (r Role) rank() int {
	switch r {
	case Viewer:
		return 1
	case Member:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r grants everything other grants.
func (r Role) AtLeast(other Role) bool { return r.Valid() && r.rank() >= other.rank() }

// Min returns the less privileged of r and other.
func (r Role) Min(other Role) Role {
	if other.rank() < r.rank() {
		return other
	}
	return r
}

// ParseRole validates a role named by a user, for field.
func ParseRole(field, s string) (Role, error) {
	r := Role(s)
	if !r.Valid() {
		return "", errdefs.Invalid(field, s, "is not a role: use admin, member or viewer")
	}
	return r, nil
}

// Principal is who is calling, resolved before any handler runs.
type Principal struct {
	AccountID string
	UserID    string
	Email     string
	Role      Role
	KeyID     string // set when the caller used an API key
	KeyName   string
	SessionID string // set when the caller used a session
	// SSOBound is set when the session was opened through the account's single sign-on: an
	// account's identity provider vouches for the user in that account only, so the session
	// cannot switch accounts or change the user's (global) password.
	SSOBound bool
	// Rules are the attribute-based rules that bind the user in the account (nil: none); see
	// Authorize.
	Rules *Rules
}

// Actor is how the principal appears in audit records.
func (p Principal) Actor() string {
	if p.KeyID != "" {
		return fmt.Sprintf("%s (api key %s)", p.Email, p.KeyName)
	}
	return p.Email
}

// Permission is an action on a kind of resource.
type Permission string

// Permissions and the least role that holds each.
const (
	ReadAccount   Permission = "account.read"
	ReadUsers     Permission = "users.read"
	ManageUsers   Permission = "users.manage"
	ReadAPIKeys   Permission = "apikeys.read" // own keys; admins see all
	ManageAPIKeys Permission = "apikeys.manage"
	ReadAudit     Permission = "audit.read"
	// Teams and attribute-based rules.
	ReadPolicy   Permission = "policy.read"
	ManagePolicy Permission = "policy.manage"
	// CreateAccounts lets an account's admins create further accounts (they become their admin).
	CreateAccounts Permission = "accounts.create"
	// DeleteAccount lets an account's admins delete the account and everything in it.
	DeleteAccount Permission = "account.delete"
	// Pipelines, builds, contexts and runners.
	ReadPipelines   Permission = "pipelines.read"
	ManagePipelines Permission = "pipelines.manage"
	RunPipelines    Permission = "pipelines.run"
	ApproveBuilds   Permission = "builds.approve"
	ReadContexts    Permission = "contexts.read"
	ManageContexts  Permission = "contexts.manage"
	DecryptContexts Permission = "contexts.decrypt"
	ReadRunners     Permission = "runners.read"
	ManageRunners   Permission = "runners.manage"
	// GitOps runtimes.
	ReadRuntimes   Permission = "runtimes.read"
	ManageRuntimes Permission = "runtimes.manage"
)

var minRole = map[Permission]Role{
	ReadAccount:     Viewer,
	ReadUsers:       Viewer,
	ManageUsers:     Admin,
	ReadAPIKeys:     Viewer,
	ManageAPIKeys:   Viewer,
	ReadAudit:       Admin,
	ReadPolicy:      Viewer,
	ManagePolicy:    Admin,
	CreateAccounts:  Admin,
	DeleteAccount:   Admin,
	ReadPipelines:   Viewer,
	ManagePipelines: Member,
	RunPipelines:    Member,
	ApproveBuilds:   Member,
	ReadContexts:    Viewer,
	ManageContexts:  Member,
	DecryptContexts: Admin,
	ReadRunners:     Viewer,
	ManageRunners:   Admin,
	ReadRuntimes:    Viewer,
	ManageRuntimes:  Admin,
}

// Allow returns nil if p holds perm, and an error wrapping errdefs.ErrForbidden otherwise.
func Allow(p Principal, perm Permission) error {
	need, ok := minRole[perm]
	if !ok {
		return fmt.Errorf("unknown permission %q: %w", perm, errdefs.ErrForbidden)
	}
	if p.AccountID == "" || !p.Role.AtLeast(need) {
		return fmt.Errorf("%s needs role %s or higher (you have %s): %w", perm, need, orNone(p.Role), errdefs.ErrForbidden)
	}
	return nil
}

func orNone(r Role) Role {
	if r == "" {
		return "none"
	}
	return r
}
