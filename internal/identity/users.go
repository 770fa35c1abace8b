package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// CreateUserInput is what an admin gives to add a user to their account.
type CreateUserInput struct {
	Email    string
	Name     string // defaults to the email's local part
	Role     string
	Password string // empty: one is generated and returned once
}

// CreateUserResult is the new member and, when generated, their first password.
type CreateUserResult struct {
	Member   Member
	Password string
	Existing bool // the user already existed in another account and was added to this one
}

// CreateUser adds a user to p's account. A user who already exists in another account is added
// as a member; their password cannot be set from here.
func (s *Service) CreateUser(ctx context.Context, p rbac.Principal, in CreateUserInput) (res CreateUserResult, err error) {
	e := audit.Start(ctx, p, "user.create", "user", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageUsers); err != nil {
		return res, err
	}
	in.Email = strings.TrimSpace(in.Email)
	if err := validateEmail("email", in.Email); err != nil {
		return res, err
	}
	in.Email = strings.ToLower(in.Email)
	role, err := rbac.ParseRole("role", in.Role)
	if err != nil {
		return res, err
	}
	if in.Name == "" {
		in.Name, _, _ = strings.Cut(in.Email, "@")
	}
	if len(in.Name) > maxDisplayNameLength {
		return res, errdefs.Invalid("name", in.Name, fmt.Sprintf("is longer than %d characters", maxDisplayNameLength))
	}
	if in.Password != "" {
		if err := validatePassword("password", in.Password); err != nil {
			return res, err
		}
	}
	e.Detail("%s as %s", in.Email, role)
	existing, err := s.db.UserByEmail(ctx, in.Email)
	switch {
	case err == nil:
		if in.Password != "" {
			return res, fmt.Errorf("email: %q already has a Freshet login; add them without a password: %w", in.Email, errdefs.ErrConflict)
		}
		res.Existing = true
	case errors.Is(err, errdefs.ErrNotFound):
		pw := in.Password
		if pw == "" {
			pw = GeneratePassword()
			res.Password = pw
		}
		hash, err := HashPassword(pw)
		if err != nil {
			return res, err
		}
		existing = store.User{ID: store.NewID(store.PrefixUser), Email: in.Email, Name: in.Name, PasswordHash: hash, CreatedAt: s.now()}
	default:
		return res, err
	}
	e.Resource(existing.ID)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if !res.Existing {
			if err := tx.CreateUser(ctx, existing); err != nil {
				return err
			}
		}
		if err := tx.AddMember(ctx, p.AccountID, existing.ID, string(role), s.now()); err != nil {
			if errors.Is(err, errdefs.ErrConflict) {
				return fmt.Errorf("email: %q is already a member of this account: %w", in.Email, errdefs.ErrConflict)
			}
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return CreateUserResult{}, err
	}
	res.Member, err = s.member(ctx, p.AccountID, existing.ID)
	return res, err
}

// ListUsers returns one page of p's account's users.
func (s *Service) ListUsers(ctx context.Context, p rbac.Principal, page paging.Page) ([]Member, error) {
	if err := rbac.Allow(p, rbac.ReadUsers); err != nil {
		return nil, err
	}
	ms, err := s.db.ListMembers(ctx, p.AccountID, page)
	if err != nil {
		return nil, err
	}
	return membersOf(ms), nil
}

// GetUser returns a user of p's account.
func (s *Service) GetUser(ctx context.Context, p rbac.Principal, id string) (Member, error) {
	if err := rbac.Allow(p, rbac.ReadUsers); err != nil {
		return Member{}, err
	}
	return s.member(ctx, p.AccountID, id)
}

func (s *Service) member(ctx context.Context, accountID, userID string) (Member, error) {
	m, err := s.db.GetMember(ctx, accountID, userID)
	if err != nil {
		return Member{}, err
	}
	return memberOf(m), nil
}

// SetUserRole changes the role of a user in p's account. The last admin keeps the role.
func (s *Service) SetUserRole(ctx context.Context, p rbac.Principal, id, roleName string) (m Member, err error) {
	e := audit.Start(ctx, p, "user.update", "user", id)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageUsers); err != nil {
		return m, err
	}
	role, err := rbac.ParseRole("role", roleName)
	if err != nil {
		return m, err
	}
	e.Detail("role %s", role)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		cur, err := tx.GetMember(ctx, p.AccountID, id)
		if err != nil {
			return err
		}
		if cur.Role == string(rbac.Admin) && role != rbac.Admin {
			if err := lastAdminCheck(ctx, tx, p.AccountID); err != nil {
				return err
			}
		}
		if err := tx.SetMemberRole(ctx, p.AccountID, id, string(role)); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	s.revoked(err, p.AccountID, id)
	if err != nil {
		return m, err
	}
	return s.member(ctx, p.AccountID, id)
}

// DeleteUser removes a user from p's account, with their API keys and sessions there. The
// account's last admin cannot be removed.
func (s *Service) DeleteUser(ctx context.Context, p rbac.Principal, id string) (err error) {
	e := audit.Start(ctx, p, "user.delete", "user", id)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageUsers); err != nil {
		return err
	}
	defer func() { s.revoked(err, p.AccountID, id) }()
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		m, err := tx.GetMember(ctx, p.AccountID, id)
		if err != nil {
			return err
		}
		e.Detail("%s", m.Email)
		if m.Role == string(rbac.Admin) {
			if err := lastAdminCheck(ctx, tx, p.AccountID); err != nil {
				return err
			}
		}
		if err := tx.RemoveMember(ctx, p.AccountID, id); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

func lastAdminCheck(ctx context.Context, tx *store.Tx, accountID string) error {
	n, err := tx.CountMembersWithRole(ctx, accountID, string(rbac.Admin))
	if err != nil {
		return err
	}
	if n <= 1 {
		return fmt.Errorf("the account's last admin cannot be removed or demoted: make another user admin first: %w", errdefs.ErrConflict)
	}
	return nil
}
