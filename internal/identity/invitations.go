package identity

import (
	"context"
	"errors"
	"fmt"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// Invitations are how a user who already has a login joins another account: an admin there
// adds their email (CreateUser), and only the user's own acceptance makes them a member. Until
// they answer, the inviting account sees the invitation as one of its users; the invited user
// sees it here, with the account's name and who invited them.

// ListInvitations lists the invitations p's user has not answered and that have not expired.
func (s *Service) ListInvitations(ctx context.Context, p rbac.Principal) ([]Invitation, error) {
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return nil, err
	}
	rows, err := s.db.InvitationsOf(ctx, p.UserID, s.now())
	if err != nil {
		return nil, err
	}
	out := make([]Invitation, len(rows))
	for i, r := range rows {
		out[i] = invitationOf(r)
	}
	return out, nil
}

// AcceptInvitation makes p's user a member of the account that invited them, with the role the
// invitation offers. It is recorded in both accounts: the one joined, and the one p acts from.
func (s *Service) AcceptInvitation(ctx context.Context, p rbac.Principal, id string) (_ Membership, err error) {
	e := audit.Start(ctx, p, "invitation.accept", "invitation", id)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := s.answerable(p); err != nil {
		return Membership{}, err
	}
	var m Membership
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		now := s.now()
		inv, err := tx.InvitationOf(ctx, p.UserID, id, now)
		if err != nil {
			return err
		}
		if err := tx.DeleteInvitation(ctx, inv.ID); err != nil {
			return err
		}
		if err := s.admitMember(ctx, tx, inv.AccountID); err != nil {
			return err
		}
		if err := tx.AddMember(ctx, inv.AccountID, p.UserID, inv.Role, now); err != nil {
			if errors.Is(err, errdefs.ErrConflict) {
				return fmt.Errorf("you are already a member of account %q: %w", inv.AccountName, errdefs.ErrConflict)
			}
			return err
		}
		joined := audit.Start(ctx, rbac.Principal{AccountID: inv.AccountID, UserID: p.UserID, Email: p.Email}, "invitation.accept", "user", p.UserID)
		joined.Detail("%s joined as %s, invited by %s", p.Email, inv.Role, inv.InvitedBy)
		if err := joined.Commit(ctx, tx); err != nil {
			return err
		}
		e.Detail("joined account %q as %s", inv.AccountName, inv.Role)
		m = Membership{Account: invitationOf(inv).Account, Role: rbac.Role(inv.Role)}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Membership{}, err
	}
	return m, nil
}

// DeclineInvitation deletes p's user's invitation without joining. It is recorded in the
// account that invited them (which sees its user go) and in the one p acts from.
func (s *Service) DeclineInvitation(ctx context.Context, p rbac.Principal, id string) (err error) {
	e := audit.Start(ctx, p, "invitation.decline", "invitation", id)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := s.answerable(p); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		inv, err := tx.InvitationOf(ctx, p.UserID, id, s.now())
		if err != nil {
			return err
		}
		if err := tx.DeleteInvitation(ctx, inv.ID); err != nil {
			return err
		}
		declined := audit.Start(ctx, rbac.Principal{AccountID: inv.AccountID, UserID: p.UserID, Email: p.Email}, "invitation.decline", "user", inv.MemberID)
		declined.Detail("%s declined to join as %s, invited by %s", p.Email, inv.Role, inv.InvitedBy)
		if err := declined.Commit(ctx, tx); err != nil {
			return err
		}
		e.Detail("declined account %q", inv.AccountName)
		return e.Commit(ctx, tx)
	})
}

// answerable checks that p may answer invitations: a user's own login session, not an API key,
// which belongs to one account and acts for it.
func (s *Service) answerable(p rbac.Principal) error {
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return err
	}
	if p.SessionID == "" {
		return errdefs.Invalid("session", "", "is absent: API keys belong to one account; answer invitations with a login session (freshet login)")
	}
	if p.SSOBound {
		return fmt.Errorf("session: was opened through an account's single sign-on and acts in that account only: answer invitations from a password login session: %w", errdefs.ErrForbidden)
	}
	return nil
}
