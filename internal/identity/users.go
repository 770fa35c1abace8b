package identity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
}

// InvitationTTL is how long an invitation can be accepted.
const InvitationTTL = 7 * 24 * time.Hour

// CreateUser adds a user to p's account. An email that has no login yet becomes a new user and
// a member at once. An email that already has one (in another account) gets an invitation
// instead: the user becomes a member only by accepting it (AcceptInvitation), and their
// password is never set from here. Both answer alike — the same member shape (an invitation is
// listed, read, changed and removed as a member under an ID of p's account's own), a generated
// password when none was given, the same password hashing time and the same audit record — so
// an admin cannot use user creation to learn which emails other accounts have.
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
	alreadyMember := fmt.Errorf("email: %q is already a member of this account: %w", in.Email, errdefs.ErrConflict)
	// Both kinds take the same steps — the same lookups, a password hash, a transaction of a few
	// writes (no sweep of expired invitations: the server sweeps them on its own), no read-back —
	// so they also take the same time.
	existing, err := s.db.UserByEmail(ctx, in.Email)
	found := err == nil
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return res, err
	}
	if _, err := s.db.GetMember(ctx, p.AccountID, existing.ID); err == nil {
		return res, alreadyMember
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return res, err
	}
	if _, err := s.db.PendingInvitation(ctx, p.AccountID, existing.ID, s.now()); err == nil {
		return res, alreadyMember // the account sees its invitations as members
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return res, err
	}
	pw := in.Password
	if pw == "" {
		pw = GeneratePassword()
		res.Password = pw
	}
	// Hashed either way: an invitation throws the hash away.
	hash, err := s.hasher.hash(ctx, pw)
	if err != nil {
		return CreateUserResult{}, err
	}
	now := s.now()
	// As the store gives times back: microseconds, UTC.
	stored := time.UnixMicro(now.UnixMicro()).UTC()
	res.Member = Member{User: User{ID: store.NewID(store.PrefixUser), Email: in.Email, Name: in.Name, CreatedAt: stored}, Role: role, JoinedAt: stored}
	e.Resource(res.Member.ID)
	if !found {
		u := store.User{ID: res.Member.ID, Email: in.Email, Name: in.Name, PasswordHash: hash, CreatedAt: now}
		err = s.db.Tx(ctx, func(tx *store.Tx) error {
			if err := s.admitMember(ctx, tx, p.AccountID); err != nil {
				return err
			}
			if err := tx.CreateUser(ctx, u); err != nil {
				return err
			}
			if err := tx.AddMember(ctx, p.AccountID, u.ID, string(role), now); err != nil {
				return err
			}
			return e.Commit(ctx, tx)
		})
	} else {
		inv := store.Invitation{ID: store.NewID(store.PrefixInvitation), MemberID: res.Member.ID, AccountID: p.AccountID,
			UserID: existing.ID, Name: in.Name, Role: string(role), InvitedBy: p.Actor(), CreatedAt: now, ExpiresAt: now.Add(InvitationTTL)}
		err = s.db.Tx(ctx, func(tx *store.Tx) error {
			// Admitted here too, as a new user is: at the limit both answers are the same 402,
			// so the refusal does not tell whether the email has a login elsewhere. Accepting
			// is admitted again (the account may have filled up meanwhile).
			if err := s.admitMember(ctx, tx, p.AccountID); err != nil {
				return err
			}
			if err := tx.CreateInvitation(ctx, inv); err != nil {
				if errors.Is(err, errdefs.ErrConflict) {
					return alreadyMember
				}
				return err
			}
			return e.Commit(ctx, tx)
		})
	}
	if err != nil {
		return CreateUserResult{}, err
	}
	return res, nil
}

// ListUsers returns one page of p's account's users: its members and, as members under their
// IDs there, the users it has invited who have not answered yet.
func (s *Service) ListUsers(ctx context.Context, p rbac.Principal, page paging.Page) ([]Member, error) {
	if err := rbac.Allow(p, rbac.ReadUsers); err != nil {
		return nil, err
	}
	ms, err := s.db.ListMembers(ctx, p.AccountID, page)
	if err != nil {
		return nil, err
	}
	invs, err := s.db.ListInvitations(ctx, p.AccountID, s.now(), page)
	if err != nil {
		return nil, err
	}
	out := membersOf(ms)
	for _, inv := range invs {
		out = append(out, invitedMember(inv))
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	if n := page.Size(); len(out) > n {
		out = out[:n]
	}
	return out, nil
}

// GetUser returns a user of p's account.
func (s *Service) GetUser(ctx context.Context, p rbac.Principal, id string) (Member, error) {
	if err := rbac.Allow(p, rbac.ReadUsers); err != nil {
		return Member{}, err
	}
	return s.member(ctx, p.AccountID, id)
}

// member returns accountID's member id, or its invitation known there as id.
func (s *Service) member(ctx context.Context, accountID, id string) (Member, error) {
	m, err := s.db.GetMember(ctx, accountID, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		inv, ierr := s.db.InvitationByMember(ctx, accountID, id, s.now())
		if ierr == nil {
			return invitedMember(inv), nil
		}
		if !errors.Is(ierr, errdefs.ErrNotFound) {
			return Member{}, ierr
		}
	}
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
		if errors.Is(err, errdefs.ErrNotFound) {
			// An invitation offers the role; it counts for no admin until it is accepted.
			if _, ierr := tx.InvitationByMember(ctx, p.AccountID, id, s.now()); ierr != nil {
				return ierr
			}
			if err := tx.SetInvitationRole(ctx, p.AccountID, id, string(role)); err != nil {
				return err
			}
			return e.Commit(ctx, tx)
		}
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
		if errors.Is(err, errdefs.ErrNotFound) {
			inv, ierr := tx.InvitationByMember(ctx, p.AccountID, id, s.now())
			if ierr != nil {
				return ierr
			}
			e.Detail("%s", inv.Email)
			if err := tx.DeleteInvitation(ctx, inv.ID); err != nil {
				return err
			}
			return e.Commit(ctx, tx)
		}
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
