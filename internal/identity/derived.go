package identity

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// DerivedRules is what SetDerivedRules made of a runtime's AppProject roles.
type DerivedRules struct {
	Rules []Rule
	// UnknownGroups are groups naming no team of the account: ignored, shown.
	UnknownGroups []string
	// Skipped are policy lines that map onto no rule (other resources, namespaced objects).
	Skipped []string
}

// SetDerivedRules replaces the rules derived from the AppProject roles runtime runtimeID (named
// runtimeName) of accountID reported (rbac.DeriveProjectRules): its roles' groups name teams of
// the account, their allow lines on applications become rules for those teams scoped to the
// runtime, the project and the line's application glob, deny lines except. The caller is the
// runtime's own report (no principal). Rules from a project that is gone go with the next
// report; all of them go with the runtime.
func (s *Service) SetDerivedRules(ctx context.Context, accountID, runtimeID, runtimeName string, roles []rbac.ProjectRole) (DerivedRules, error) {
	var out DerivedRules
	var users []string
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		names, err := tx.TeamNames(ctx, accountID)
		if err != nil {
			return err
		}
		teams := make(map[string]string, len(names))
		for id, name := range names {
			teams[name] = id
		}
		rules, unknown, skipped := rbac.DeriveProjectRules(runtimeName, teams, roles)
		out.UnknownGroups, out.Skipped = unknown, skipped
		if len(rules) > MaxRulesPerAccount {
			return fmt.Errorf("runtime %s: AppProject roles derive %d rules, more than %d", runtimeName, len(rules), MaxRulesPerAccount)
		}
		now := s.now()
		rows := make([]store.Rule, 0, len(rules))
		for _, r := range rules {
			if err := r.Validate(); err != nil {
				return fmt.Errorf("runtime %s: derived rule %s: %w", runtimeName, r.Describe(), err)
			}
			r.ID = store.NewID(store.PrefixRule)
			attrs, err := json.Marshal(ruleAttrs{Runtime: r.Runtime, Project: r.Project, Apps: r.Apps, ExceptApps: r.ExceptApps})
			if err != nil {
				return err
			}
			rows = append(rows, store.Rule{ID: r.ID, TeamID: r.TeamID, Action: string(r.Action), Kind: string(r.Kind), Attrs: string(attrs),
				CreatedAt: now, Origin: r.Origin})
			out.Rules = append(out.Rules, Rule{Rule: *r, CreatedAt: storedTime(now)})
		}
		changed, err := tx.ReplaceDerivedRules(ctx, accountID, runtimeID, rows)
		if err != nil || !changed {
			return err
		}
		members, err := tx.TeamMembers(ctx, accountID)
		if err != nil {
			return err
		}
		for _, m := range members {
			users = append(users, m.UserID)
		}
		return tx.BumpPolicyVersion(ctx, accountID)
	})
	for _, u := range users {
		s.revoked(err, accountID, u) // open streams re-check what the rules allowed
	}
	return out, err
}
