package identity

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/freshet-dev/freshet/internal/rbac"
	"golang.org/x/sync/singleflight"
)

// policyCache holds each account's rules compiled per user, with the account's policy version
// they were read at. Authenticate reads the version with the request's member (no query of its
// own), and the account's rules and team members are read again only when it moved: a change
// on any replica bumps it in the change's transaction, so no server acts on rules older than
// the request's own read of its member.
type policyCache struct {
	mu       sync.Mutex
	accounts map[string]*accountPolicy
	// loads makes the requests that find an account's rules stale at once share one load.
	loads singleflight.Group
}

// accountPolicy is one account's rules, compiled: what binds each user named by a rule or a
// team, and what binds everyone else (governed kinds, no rules).
type accountPolicy struct {
	version int64
	byUser  map[string]*rbac.Rules
	others  *rbac.Rules // nil when no kind is governed
}

func (a *accountPolicy) rulesOf(userID string) *rbac.Rules {
	if r, ok := a.byUser[userID]; ok {
		return r
	}
	return a.others
}

// rulesFor returns the rules that bind userID in accountID, as of policy version (or newer).
func (s *Service) rulesFor(ctx context.Context, accountID, userID string, version int64) (*rbac.Rules, error) {
	s.policies.mu.Lock()
	ap := s.policies.accounts[accountID]
	s.policies.mu.Unlock()
	if ap != nil && ap.version >= version {
		return ap.rulesOf(userID), nil
	}
	v, err, _ := s.policies.loads.Do(accountID, func() (any, error) {
		// A load already done for this version (or a newer one) while this one waited serves.
		s.policies.mu.Lock()
		cur := s.policies.accounts[accountID]
		s.policies.mu.Unlock()
		if cur != nil && cur.version >= version {
			return cur, nil
		}
		return s.loadPolicy(context.WithoutCancel(ctx), accountID, version)
	})
	if err != nil {
		return nil, err
	}
	ap = v.(*accountPolicy)
	if ap.version < version {
		// A load for an older version was in flight when this request read its member: load
		// again rather than act on rules older than that read.
		if ap, err = s.loadPolicy(ctx, accountID, version); err != nil {
			return nil, err
		}
	}
	s.policies.mu.Lock()
	if cur := s.policies.accounts[accountID]; cur == nil || cur.version < ap.version {
		s.policies.accounts[accountID] = ap
	}
	s.policies.mu.Unlock()
	return ap.rulesOf(userID), nil
}

// loadPolicy reads and compiles accountID's rules. version was read before: what is read here
// is at least as new.
func (s *Service) loadPolicy(ctx context.Context, accountID string, version int64) (*accountPolicy, error) {
	rows, err := s.db.AllRules(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	ap := &accountPolicy{version: version, byUser: map[string]*rbac.Rules{}}
	if len(rows) == 0 {
		return ap, nil
	}
	members, err := s.db.TeamMembers(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("load team members: %w", err)
	}
	teamsOf := map[string][]string{}
	for _, m := range members {
		teamsOf[m.UserID] = append(teamsOf[m.UserID], m.TeamID)
	}
	var governed []rbac.Kind
	var all []*rbac.Rule
	byTeam := map[string][]*rbac.Rule{}
	byUser := map[string][]*rbac.Rule{}
	for _, row := range rows {
		r, err := ruleOf(row)
		if err != nil {
			return nil, err
		}
		rule := &r.Rule
		all = append(all, rule)
		// A rule derived from a runtime's AppProject roles refines a kind the account governs; it
		// does not make the kind governed on its own. Otherwise one AppProject with a role, applied
		// by whoever may write to the runtime's namespace, would take applications away from
		// every member and viewer the role does not name.
		if rule.Origin == "" && !slices.Contains(governed, rule.Kind) {
			governed = append(governed, rule.Kind)
		}
		if rule.TeamID != "" {
			byTeam[rule.TeamID] = append(byTeam[rule.TeamID], rule)
		} else {
			byUser[rule.UserID] = append(byUser[rule.UserID], rule)
		}
	}
	if err := nameOwners(ctx, s.db, accountID, all); err != nil {
		return nil, fmt.Errorf("load rules: owner teams: %w", err)
	}
	users := map[string]bool{}
	for u := range byUser {
		users[u] = true
	}
	for u := range teamsOf {
		users[u] = true
	}
	for u := range users {
		rules := slices.Clone(byUser[u])
		for _, t := range teamsOf[u] {
			rules = append(rules, byTeam[t]...)
		}
		ap.byUser[u] = rbac.NewRules(governed, rules, teamsOf[u]...)
	}
	ap.others = rbac.NewRules(governed, nil)
	return ap, nil
}
