package identity

import (
	"context"
	"errors"
	"fmt"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// OwnerLabel names an owner team in audit details: "team NAME", or "none".
func OwnerLabel(team string) string {
	if team == "" {
		return "none"
	}
	return "team " + team
}

// OwnerTeam resolves team ref (name or ID; empty: none) of p's account, named by field, as the
// new owner of a resource team oldID owns now (empty: none). Admins may give anything to any
// team; anyone else must be a member of both the old and the new owner. Projects (pipeline) and
// runtimes (runtimes) take their owner through it.
func OwnerTeam(ctx context.Context, q interface {
	GetTeam(ctx context.Context, accountID, ref string) (store.Team, error)
	IsTeamMember(ctx context.Context, accountID, teamID, userID string) (bool, error)
}, p rbac.Principal, field, ref, oldID string) (store.Team, error) {
	var t store.Team
	if ref != "" {
		var err error
		t, err = q.GetTeam(ctx, p.AccountID, ref)
		if errors.Is(err, errdefs.ErrNotFound) {
			return t, errdefs.Invalid(field, ref, "is not a team of this account (see 'freshet team list'); give a team's name or ID, or nothing for no owner")
		} else if err != nil {
			return t, err
		}
	}
	if p.Role == rbac.Admin {
		return t, nil
	}
	for _, id := range []string{oldID, t.ID} {
		if id == "" {
			continue
		}
		in, err := q.IsTeamMember(ctx, p.AccountID, id, p.UserID)
		if err != nil {
			return t, err
		}
		if !in {
			name := t.Name
			if id != t.ID {
				if old, err := q.GetTeam(ctx, p.AccountID, id); err == nil {
					name = old.Name
				}
			}
			return t, fmt.Errorf("%s: only an admin or a member of team %s may give what it owns away or make it an owner: %w", field, name, errdefs.ErrForbidden)
		}
	}
	return t, nil
}
