package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// Teams group an account's members; rules (rbac.Rule) are written for a team or a member. Every
// change bumps the account's policy version in its transaction, so every server reloads the
// account's rules on its next request there (policy.go).

// MaxRulesPerAccount bounds an account's rules.
const MaxRulesPerAccount = 5000

// CreateTeam creates a team in p's account.
func (s *Service) CreateTeam(ctx context.Context, p rbac.Principal, name string) (_ Team, err error) {
	e := audit.Start(ctx, p, "team.create", "team", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return Team{}, err
	}
	if err := validateName("name", name); err != nil {
		return Team{}, err
	}
	t := store.Team{ID: store.NewID(store.PrefixTeam), AccountID: p.AccountID, Name: name, CreatedAt: s.now()}
	e.Resource(t.ID)
	e.Detail("%q", name)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateTeam(ctx, t); err != nil {
			if errors.Is(err, errdefs.ErrConflict) {
				return fmt.Errorf("name: team %q already exists: %w", name, errdefs.ErrConflict)
			}
			return err
		}
		if err := tx.BumpPolicyVersion(ctx, p.AccountID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Team{}, err
	}
	return Team{ID: t.ID, Name: t.Name, CreatedAt: storedTime(t.CreatedAt), Members: []TeamMember{}, Owns: ownedOf(nil)}, nil
}

// ListTeams returns one page of p's account's teams with their members.
func (s *Service) ListTeams(ctx context.Context, p rbac.Principal, page paging.Page) ([]Team, error) {
	if err := rbac.Allow(p, rbac.ReadPolicy); err != nil {
		return nil, err
	}
	rows, err := s.db.ListTeams(ctx, p.AccountID, page)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return []Team{}, nil
	}
	ids := make([]string, len(rows))
	for i, t := range rows {
		ids[i] = t.ID
	}
	ms, err := s.db.TeamMembers(ctx, p.AccountID, ids...)
	if err != nil {
		return nil, err
	}
	owns, err := s.db.TeamsOwn(ctx, p.AccountID, ids...)
	if err != nil {
		return nil, err
	}
	byTeam := map[string][]TeamMember{}
	for _, m := range ms {
		byTeam[m.TeamID] = append(byTeam[m.TeamID], TeamMember{UserID: m.UserID, Email: m.Email, AddedAt: m.AddedAt})
	}
	out := make([]Team, len(rows))
	for i, t := range rows {
		members := byTeam[t.ID]
		if members == nil {
			members = []TeamMember{}
		}
		out[i] = Team{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, Members: members, Owns: ownedOf(owns[t.ID])}
	}
	return out, nil
}

// GetTeam returns p's account's team by ID or name, with its members.
func (s *Service) GetTeam(ctx context.Context, p rbac.Principal, ref string) (Team, error) {
	if err := rbac.Allow(p, rbac.ReadPolicy); err != nil {
		return Team{}, err
	}
	t, err := s.db.GetTeam(ctx, p.AccountID, ref)
	if err != nil {
		return Team{}, err
	}
	ms, err := s.db.TeamMembers(ctx, p.AccountID, t.ID)
	if err != nil {
		return Team{}, err
	}
	owns, err := s.db.TeamsOwn(ctx, p.AccountID, t.ID)
	if err != nil {
		return Team{}, err
	}
	out := Team{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, Members: make([]TeamMember, len(ms)), Owns: ownedOf(owns[t.ID])}
	for i, m := range ms {
		out.Members[i] = TeamMember{UserID: m.UserID, Email: m.Email, AddedAt: m.AddedAt}
	}
	return out, nil
}

func ownedOf(o *store.Owned) Owned {
	out := Owned{Projects: []string{}, Runtimes: []string{}}
	if o != nil {
		out.Projects = append(out.Projects, o.Projects...)
		out.Runtimes = append(out.Runtimes, o.Runtimes...)
	}
	return out
}

// DeleteTeam deletes a team of p's account, with its rules. A team that owns projects or
// runtimes, or that another team's or a member's rule names as owner, is not deleted: the error
// names what it owns (give it to another team or to none first) or the rules.
func (s *Service) DeleteTeam(ctx context.Context, p rbac.Principal, ref string) (err error) {
	e := audit.Start(ctx, p, "team.delete", "team", ref)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return err
	}
	defer func() { s.revoked(err, p.AccountID, "") }() // its members lose its rules
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		t, err := tx.GetTeam(ctx, p.AccountID, ref)
		if err != nil {
			return err
		}
		e.Resource(t.ID)
		e.Detail("%q", t.Name)
		owns, err := tx.TeamsOwn(ctx, p.AccountID, t.ID)
		if err != nil {
			return err
		}
		if o := owns[t.ID]; o != nil {
			var what []string
			if len(o.Projects) > 0 {
				what = append(what, "projects "+strings.Join(o.Projects, ", "))
			}
			if len(o.Runtimes) > 0 {
				what = append(what, "runtimes "+strings.Join(o.Runtimes, ", "))
			}
			return fmt.Errorf("team %s owns %s: give them to another team or none first ('freshet project set-owner', 'freshet runtime set-owner'): %w",
				t.Name, strings.Join(what, " and "), errdefs.ErrConflict)
		}
		rules, err := tx.AllRules(ctx, p.AccountID)
		if err != nil {
			return err
		}
		var naming []string
		for _, row := range rules {
			if r, err := ruleOf(row); err == nil && r.Owner == t.ID && r.TeamID != t.ID {
				naming = append(naming, r.ID)
			}
		}
		if len(naming) > 0 {
			return fmt.Errorf("team %s is the owner of rules %s: delete them first: %w", t.Name, strings.Join(naming, ", "), errdefs.ErrConflict)
		}
		if err := tx.DeleteTeam(ctx, p.AccountID, t.ID); err != nil {
			return err
		}
		if err := tx.BumpPolicyVersion(ctx, p.AccountID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

// memberByRef finds a member of accountID by user ID or email, for field.
func memberByRef(ctx context.Context, q interface {
	GetMember(ctx context.Context, accountID, userID string) (store.Member, error)
	UserByEmail(ctx context.Context, email string) (store.User, error)
}, accountID, field, ref string) (store.Member, error) {
	id := ref
	if strings.Contains(ref, "@") {
		u, err := q.UserByEmail(ctx, ref)
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return store.Member{}, err
		}
		id = u.ID
	}
	m, err := q.GetMember(ctx, accountID, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return store.Member{}, errdefs.Invalid(field, ref, "is not a member of this account: give a member's email or user ID")
	}
	return m, err
}

// AddTeamMember adds a member of p's account (by email or user ID) to a team.
func (s *Service) AddTeamMember(ctx context.Context, p rbac.Principal, team, user string) (err error) {
	return s.changeTeamMember(ctx, p, "team.add-member", team, user, func(tx *store.Tx, t store.Team, m store.Member) error {
		if err := tx.AddTeamMember(ctx, p.AccountID, t.ID, m.ID, s.now()); err != nil {
			if errors.Is(err, errdefs.ErrConflict) {
				return fmt.Errorf("user: %s is already in team %s: %w", m.Email, t.Name, errdefs.ErrConflict)
			}
			return err
		}
		return nil
	})
}

// RemoveTeamMember takes a member (by email or user ID) out of a team of p's account.
func (s *Service) RemoveTeamMember(ctx context.Context, p rbac.Principal, team, user string) (err error) {
	err = s.changeTeamMember(ctx, p, "team.remove-member", team, user, func(tx *store.Tx, t store.Team, m store.Member) error {
		if err := tx.RemoveTeamMember(ctx, p.AccountID, t.ID, m.ID); err != nil {
			if errors.Is(err, errdefs.ErrNotFound) {
				return errdefs.Invalid("user", user, "is not in team "+t.Name)
			}
			return err
		}
		return nil
	})
	return err
}

func (s *Service) changeTeamMember(ctx context.Context, p rbac.Principal, action, team, user string, change func(tx *store.Tx, t store.Team, m store.Member) error) (err error) {
	e := audit.Start(ctx, p, action, "team", team)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return err
	}
	var userID string
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		t, err := tx.GetTeam(ctx, p.AccountID, team)
		if err != nil {
			return err
		}
		m, err := memberByRef(ctx, tx, p.AccountID, "user", user)
		if err != nil {
			return err
		}
		userID = m.ID
		e.Resource(t.ID)
		e.Detail("%s in %q", m.Email, t.Name)
		if err := change(tx, t, m); err != nil {
			return err
		}
		if err := tx.BumpPolicyVersion(ctx, p.AccountID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if action == "team.remove-member" {
		s.revoked(err, p.AccountID, userID) // leaving a team may take rules away
	}
	return err
}

// RuleInput creates a rule: for a Team (ID or name) or a User (email or ID), an action on a
// kind of resource with attributes.
type RuleInput struct {
	Team, User                  string
	Action, Kind                string
	Tags                        []string
	Runtime, Cluster, Namespace string
	// Owner is "own-team" (resources owned by the rule's team, or for a member's rule by a team
	// they are in) or a team of the account (name or ID) that must own the resource.
	Owner string
}

type ruleAttrs struct {
	Tags      []string `json:"tags,omitempty"`
	Runtime   string   `json:"runtime,omitempty"`
	Cluster   string   `json:"cluster,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Owner     string   `json:"owner,omitempty"` // rbac.OwnTeam or a team ID
	// Derived rules only (SetDerivedRules).
	Project    string   `json:"project,omitempty"`
	Apps       []string `json:"apps,omitempty"`
	ExceptApps []string `json:"exceptApps,omitempty"`
}

// ruleOf decodes a stored rule.
func ruleOf(r store.Rule) (Rule, error) {
	var a ruleAttrs
	if err := json.Unmarshal([]byte(r.Attrs), &a); err != nil {
		return Rule{}, fmt.Errorf("rule %s: decode attributes: %w", r.ID, err)
	}
	subject := "user " + r.UserEmail
	if r.TeamID != "" {
		subject = "team " + r.TeamName
	}
	return Rule{Rule: rbac.Rule{ID: r.ID, TeamID: r.TeamID, UserID: r.UserID, Subject: subject, Action: rbac.Action(r.Action),
		Kind: rbac.Kind(r.Kind), Tags: a.Tags, Runtime: a.Runtime, Cluster: a.Cluster, Namespace: a.Namespace, Owner: a.Owner, OwnerName: a.Owner,
		Project: a.Project, Apps: a.Apps, ExceptApps: a.ExceptApps, Origin: r.Origin},
		CreatedAt: r.CreatedAt}, nil
}

// CreateRule creates a rule in p's account. From then on the rule's kind is governed by rules
// there (see rbac.Authorize).
func (s *Service) CreateRule(ctx context.Context, p rbac.Principal, in RuleInput) (_ Rule, err error) {
	e := audit.Start(ctx, p, "rule.create", "rule", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return Rule{}, err
	}
	if (in.Team == "") == (in.User == "") {
		return Rule{}, errdefs.Invalid("team", in.Team, "or user must be given, not both: a rule is for one team or one member")
	}
	kind, err := rbac.ParseKind("kind", in.Kind)
	if err != nil {
		return Rule{}, err
	}
	action, err := rbac.ParseAction("action", in.Action)
	if err != nil {
		return Rule{}, err
	}
	r := rbac.Rule{ID: store.NewID(store.PrefixRule), TeamID: in.Team, UserID: in.User, Action: action, Kind: kind, Tags: in.Tags,
		Runtime: in.Runtime, Cluster: in.Cluster, Namespace: in.Namespace, Owner: in.Owner, OwnerName: in.Owner}
	if err := r.Validate(); err != nil {
		return Rule{}, err
	}
	for f, v := range map[string]string{"runtime": in.Runtime, "cluster": in.Cluster, "namespace": in.Namespace} {
		if len(v) > 253 || strings.ContainsAny(v, " \t\r\n/") {
			return Rule{}, errdefs.Invalid(f, v, "is not a name: up to 253 characters without spaces or '/'")
		}
	}
	now := s.now()
	row := store.Rule{ID: r.ID, AccountID: p.AccountID, Action: string(action), Kind: string(kind), CreatedAt: now}
	e.Resource(r.ID)
	ownerName := in.Owner
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		owner := in.Owner
		if owner != "" && owner != rbac.OwnTeam {
			t, err := tx.GetTeam(ctx, p.AccountID, owner)
			if errors.Is(err, errdefs.ErrNotFound) {
				return errdefs.Invalid("owner", in.Owner, "is not a team of this account: use own-team or a team's name (see 'freshet team list')")
			} else if err != nil {
				return err
			}
			owner, ownerName = t.ID, t.Name
		}
		attrs, err := json.Marshal(ruleAttrs{Tags: in.Tags, Runtime: in.Runtime, Cluster: in.Cluster, Namespace: in.Namespace, Owner: owner})
		if err != nil {
			return err
		}
		row.Attrs = string(attrs)
		rules, err := tx.AllRules(ctx, p.AccountID)
		if err != nil {
			return err
		}
		if len(rules) >= MaxRulesPerAccount {
			return errdefs.Invalid("rule", "", fmt.Sprintf("would be more than %d rules in this account", MaxRulesPerAccount))
		}
		if in.Team != "" {
			t, err := tx.GetTeam(ctx, p.AccountID, in.Team)
			if errors.Is(err, errdefs.ErrNotFound) {
				return errdefs.Invalid("team", in.Team, "is not a team of this account (see 'freshet team list')")
			} else if err != nil {
				return err
			}
			row.TeamID, row.TeamName = t.ID, t.Name
		} else {
			m, err := memberByRef(ctx, tx, p.AccountID, "user", in.User)
			if err != nil {
				return err
			}
			row.UserID, row.UserEmail = m.ID, m.Email
		}
		if err := tx.CreateRule(ctx, row); err != nil {
			return err
		}
		if err := tx.BumpPolicyVersion(ctx, p.AccountID); err != nil {
			return err
		}
		out, _ := ruleOf(row)
		out.OwnerName = ownerName
		e.Detail("%s", out.Describe())
		return e.Commit(ctx, tx)
	})
	// A new rule may make its kind governed, which narrows what everyone in the account may
	// reach: open streams there are checked again at once.
	s.revoked(err, p.AccountID, "")
	if err != nil {
		return Rule{}, err
	}
	row.CreatedAt = storedTime(now)
	out, err := ruleOf(row)
	out.OwnerName = ownerName
	return out, err
}

// nameOwners fills the OwnerName of rules naming an owner team.
func nameOwners(ctx context.Context, q interface {
	TeamNames(ctx context.Context, accountID string) (map[string]string, error)
}, accountID string, rules []*rbac.Rule) error {
	var names map[string]string
	for _, r := range rules {
		if r.Owner == "" || r.Owner == rbac.OwnTeam {
			continue
		}
		if names == nil {
			var err error
			if names, err = q.TeamNames(ctx, accountID); err != nil {
				return err
			}
		}
		if n, ok := names[r.Owner]; ok {
			r.OwnerName = n
		}
	}
	return nil
}

// ListRules returns one page of p's account's rules.
func (s *Service) ListRules(ctx context.Context, p rbac.Principal, page paging.Page) ([]Rule, error) {
	if err := rbac.Allow(p, rbac.ReadPolicy); err != nil {
		return nil, err
	}
	rows, err := s.db.ListRules(ctx, p.AccountID, page)
	if err != nil {
		return nil, err
	}
	out := make([]Rule, 0, len(rows))
	ptrs := make([]*rbac.Rule, 0, len(rows))
	for _, r := range rows {
		rule, err := ruleOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, rule)
	}
	for i := range out {
		ptrs = append(ptrs, &out[i].Rule)
	}
	if err := nameOwners(ctx, s.db, p.AccountID, ptrs); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteRule deletes a rule of p's account.
func (s *Service) DeleteRule(ctx context.Context, p rbac.Principal, id string) (err error) {
	e := audit.Start(ctx, p, "rule.delete", "rule", id)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return err
	}
	var users []string
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		r, err := tx.GetRule(ctx, p.AccountID, id)
		if err != nil {
			return err
		}
		if r.Origin != "" {
			return errdefs.Invalid("rule", id, "is derived from "+r.Origin+": change the AppProject's roles instead (the runtime's next report replaces the rule)")
		}
		if rule, err := ruleOf(r); err == nil {
			e.Detail("%s", rule.Describe())
		}
		if err := tx.DeleteRule(ctx, p.AccountID, id); err != nil {
			return err
		}
		if r.UserID != "" {
			users = append(users, r.UserID)
		} else {
			ms, err := tx.TeamMembers(ctx, p.AccountID, r.TeamID)
			if err != nil {
				return err
			}
			for _, m := range ms {
				users = append(users, m.UserID)
			}
		}
		if err := tx.BumpPolicyVersion(ctx, p.AccountID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	for _, u := range users {
		s.revoked(err, p.AccountID, u) // open streams re-check what the rule allowed
	}
	return err
}

// Describer describes the resource of kind k named name in accountID as rules see it, from
// the domain that owns it; ErrNotFound when there is none.
type Describer func(ctx context.Context, accountID string, k rbac.Kind, name string) (rbac.Resource, error)

// Explain answers whether user (an email or user ID; empty: p's own user) may take action on
// resource (KIND/NAME) in p's account, and why. The resource's attributes are read from the
// domain that holds it (Deps.Describe); a resource the control plane does not hold (clusters,
// gitsources live in runtimes) is described by attrs. Anyone may ask about themselves; asking
// about another member takes the right to manage rules.
func (s *Service) Explain(ctx context.Context, p rbac.Principal, user, action, resource string, attrs rbac.Attributes) (Explanation, error) {
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return Explanation{}, err
	}
	a, err := rbac.ParseAction("action", action)
	if err != nil {
		return Explanation{}, err
	}
	kind, name, ok := strings.Cut(resource, "/")
	if !ok || name == "" {
		return Explanation{}, errdefs.Invalid("resource", resource, "is not KIND/NAME (like pipelines/web/deploy or applications/RUNTIME/APP)")
	}
	k, err := rbac.ParseKind("resource", kind)
	if err != nil {
		return Explanation{}, err
	}
	res := rbac.Resource{Kind: k, Name: name, Attrs: attrs}
	if s.describe != nil && k != rbac.KindClusters && k != rbac.KindGitSources && k != rbac.KindWorkflows {
		if res, err = s.describe(ctx, p.AccountID, k, name); err != nil {
			return Explanation{}, fmt.Errorf("resource %s: %w", resource, err)
		}
	} else if s.describe != nil && attrs.Runtime != "" {
		// What a runtime holds is owned by the runtime's owner team.
		// A runtime the account does not have (yet) owns nothing.
		rt, err := s.describe(ctx, p.AccountID, rbac.KindRuntimes, attrs.Runtime)
		switch {
		case err == nil:
			res.Attrs.Owner = rt.Attrs.Owner
		case !errors.Is(err, errdefs.ErrNotFound):
			return Explanation{}, fmt.Errorf("runtime %s: %w", attrs.Runtime, err)
		}
	}
	if res.Attrs.Owner != "" {
		t, err := s.db.GetTeam(ctx, p.AccountID, res.Attrs.Owner)
		if err != nil {
			return Explanation{}, fmt.Errorf("resource %s: its owner team: %w", resource, err)
		}
		res.Attrs.OwnerName = t.Name
	}
	if user == "" {
		user = p.UserID
	}
	m, err := memberByRef(ctx, s.db, p.AccountID, "user", user)
	if err != nil {
		return Explanation{}, err
	}
	rules, err := s.rulesFor(ctx, p.AccountID, m.ID, m.PolicyVersion)
	if err != nil {
		return Explanation{}, err
	}
	// About oneself: as the caller is (an API key's role may be lower than its owner's).
	who := rbac.Principal{AccountID: p.AccountID, UserID: m.ID, Email: m.Email, Role: rbac.Role(m.Role), Rules: rules}
	if m.ID == p.UserID {
		who.Role = p.Role
	} else if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return Explanation{}, err
	}
	return Explanation{User: who.Email, Action: a, Resource: res, Decision: rbac.Explain(who, a, res)}, nil
}
