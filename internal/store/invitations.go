package store

import (
	"context"
	"fmt"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
)

// PrefixInvitation prefixes invitation IDs.
const PrefixInvitation = "inv"

// Invitation asks a user who has a login to join another account. MemberID is the user ID the
// inviting account sees until the user answers; Email and the Account fields are read with it.
type Invitation struct {
	ID               string
	MemberID         string
	AccountID        string
	AccountName      string
	AccountCreatedAt time.Time
	UserID           string
	Email            string
	Name             string // the display name the inviting admin gave
	Role             string
	InvitedBy        string // the inviting principal, as audit records name it
	CreatedAt        time.Time
	ExpiresAt        time.Time
}

// CreateInvitation stores a new invitation. A user has at most one pending invitation per
// account: a second is ErrConflict; an expired one is replaced.
func (q *Queries) CreateInvitation(ctx context.Context, inv Invitation) error {
	// An expired invitation of the same user to the same account is replaced in the same
	// statement; a pending one stays and the new one is a conflict.
	res, err := q.exec(ctx, `INSERT INTO invitations (id, member_id, account_id, user_id, name, role, invited_by, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id, user_id) DO UPDATE SET id = excluded.id, member_id = excluded.member_id, name = excluded.name,
			role = excluded.role, invited_by = excluded.invited_by, created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE invitations.expires_at <= excluded.created_at`,
		inv.ID, inv.MemberID, inv.AccountID, inv.UserID, inv.Name, inv.Role, inv.InvitedBy, micros(inv.CreatedAt), micros(inv.ExpiresAt))
	if err != nil {
		return fmt.Errorf("create invitation: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("create invitation: %w", err)
	} else if n == 0 {
		return fmt.Errorf("create invitation: a pending invitation of user %s to account %s: %w", inv.UserID, inv.AccountID, errdefs.ErrConflict)
	}
	return nil
}

const invitationCols = `i.id, i.member_id, i.account_id, a.name, a.created_at, i.user_id, u.email, i.name, i.role, i.invited_by, i.created_at, i.expires_at`

const invitationFrom = ` FROM invitations i JOIN accounts a ON a.id = i.account_id JOIN users u ON u.id = i.user_id`

func scanInvitation(s interface{ Scan(...any) error }) (Invitation, error) {
	var inv Invitation
	var acctCreated, created, expires int64
	err := s.Scan(&inv.ID, &inv.MemberID, &inv.AccountID, &inv.AccountName, &acctCreated, &inv.UserID, &inv.Email, &inv.Name, &inv.Role,
		&inv.InvitedBy, &created, &expires)
	inv.AccountCreatedAt, inv.CreatedAt, inv.ExpiresAt = fromMicros(acctCreated), fromMicros(created), fromMicros(expires)
	return inv, err
}

func (q *Queries) invitations(ctx context.Context, where string, args ...any) ([]Invitation, error) {
	rows, err := q.query(ctx, `SELECT `+invitationCols+invitationFrom+` WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Invitation
	for rows.Next() {
		inv, err := scanInvitation(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, inv)
	}
	return out, rows.Err()
}

// InvitationsOf lists userID's invitations that have not expired at now, oldest first.
func (q *Queries) InvitationsOf(ctx context.Context, userID string, now time.Time) ([]Invitation, error) {
	return q.invitations(ctx, `i.user_id = ? AND i.expires_at > ? ORDER BY i.id`, userID, micros(now))
}

// InvitationOf returns userID's invitation id if it has not expired at now; another user's
// invitation is ErrNotFound.
func (q *Queries) InvitationOf(ctx context.Context, userID, id string, now time.Time) (Invitation, error) {
	inv, err := scanInvitation(q.queryRow(ctx, `SELECT `+invitationCols+invitationFrom+` WHERE i.user_id = ? AND i.id = ? AND i.expires_at > ?`,
		userID, id, micros(now)))
	if err != nil {
		return Invitation{}, notFound(err, "invitation", id)
	}
	return inv, nil
}

// InvitationByMember returns accountID's unexpired invitation known there as memberID.
func (q *Queries) InvitationByMember(ctx context.Context, accountID, memberID string, now time.Time) (Invitation, error) {
	inv, err := scanInvitation(q.queryRow(ctx, `SELECT `+invitationCols+invitationFrom+` WHERE i.account_id = ? AND i.member_id = ? AND i.expires_at > ?`,
		accountID, memberID, micros(now)))
	if err != nil {
		return Invitation{}, notFound(err, "user", memberID)
	}
	return inv, nil
}

// PendingInvitation returns accountID's unexpired invitation of userID.
func (q *Queries) PendingInvitation(ctx context.Context, accountID, userID string, now time.Time) (Invitation, error) {
	inv, err := scanInvitation(q.queryRow(ctx, `SELECT `+invitationCols+invitationFrom+` WHERE i.account_id = ? AND i.user_id = ? AND i.expires_at > ?`,
		accountID, userID, micros(now)))
	if err != nil {
		return Invitation{}, notFound(err, "invitation", userID)
	}
	return inv, nil
}

// ListInvitations returns one page of accountID's unexpired invitations ordered by member ID.
func (q *Queries) ListInvitations(ctx context.Context, accountID string, now time.Time, p paging.Page) ([]Invitation, error) {
	return q.invitations(ctx, `i.account_id = ? AND i.expires_at > ? AND i.member_id > ? ORDER BY i.member_id LIMIT ?`,
		accountID, micros(now), p.After, p.Size())
}

// SetInvitationRole changes the role accountID's invitation memberID offers.
func (q *Queries) SetInvitationRole(ctx context.Context, accountID, memberID, role string) error {
	res, err := q.exec(ctx, `UPDATE invitations SET role = ? WHERE account_id = ? AND member_id = ?`, role, accountID, memberID)
	if err != nil {
		return err
	}
	return affected(res, "user", memberID)
}

// DeleteInvitation removes invitation id.
func (q *Queries) DeleteInvitation(ctx context.Context, id string) error {
	res, err := q.exec(ctx, `DELETE FROM invitations WHERE id = ?`, id)
	if err != nil {
		return err
	}
	return affected(res, "invitation", id)
}

// DeleteExpiredInvitations removes invitations that expired at or before t and reports how many.
func (q *Queries) DeleteExpiredInvitations(ctx context.Context, t time.Time) (int64, error) {
	res, err := q.exec(ctx, `DELETE FROM invitations WHERE expires_at <= ?`, micros(t))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
