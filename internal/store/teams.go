package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
)

// ID prefixes of teams and rules.
const (
	PrefixTeam = "tm"
	PrefixRule = "rul"
)

// Team is a named group of an account's members.
type Team struct {
	ID        string
	AccountID string
	Name      string
	CreatedAt time.Time
}

// TeamMember is one member of a team.
type TeamMember struct {
	TeamID  string
	UserID  string
	Email   string
	AddedAt time.Time
}

// Rule is a stored attribute-based rule. Attrs is JSON; TeamName and UserEmail are filled when
// rules are read.
type Rule struct {
	ID        string
	AccountID string
	TeamID    string // set for a team's rule
	UserID    string // set for a member's rule
	TeamName  string
	UserEmail string
	Action    string
	Kind      string
	Attrs     string
	CreatedAt time.Time
	// SourceRuntimeID and Origin are set on a rule derived from a runtime's AppProject roles.
	SourceRuntimeID string
	Origin          string
}

// BumpPolicyVersion marks accountID's teams or rules as changed.
func (q *Queries) BumpPolicyVersion(ctx context.Context, accountID string) error {
	_, err := q.exec(ctx, `UPDATE accounts SET policy_version = policy_version + 1 WHERE id = ?`, accountID)
	return err
}

// PolicyVersion returns how many times accountID's teams or rules changed.
func (q *Queries) PolicyVersion(ctx context.Context, accountID string) (int64, error) {
	var v int64
	err := q.queryRow(ctx, `SELECT policy_version FROM accounts WHERE id = ?`, accountID).Scan(&v)
	if err != nil {
		return 0, notFound(err, "account", accountID)
	}
	return v, nil
}

// CreateTeam inserts a team; a name taken in the account is ErrConflict.
func (q *Queries) CreateTeam(ctx context.Context, t Team) error {
	_, err := q.exec(ctx, `INSERT INTO teams (id, account_id, name, created_at) VALUES (?, ?, ?, ?)`, t.ID, t.AccountID, t.Name, micros(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("create team %q: %w", t.Name, err)
	}
	return nil
}

// GetTeam returns accountID's team with ID or name ref.
func (q *Queries) GetTeam(ctx context.Context, accountID, ref string) (Team, error) {
	var t Team
	var created int64
	err := q.queryRow(ctx, `SELECT id, account_id, name, created_at FROM teams WHERE account_id = ? AND (id = ? OR name = ?)`,
		accountID, ref, ref).Scan(&t.ID, &t.AccountID, &t.Name, &created)
	if err != nil {
		return Team{}, notFound(err, "team", ref)
	}
	t.CreatedAt = fromMicros(created)
	return t, nil
}

// ListTeams returns one page of accountID's teams ordered by ID.
func (q *Queries) ListTeams(ctx context.Context, accountID string, p paging.Page) ([]Team, error) {
	rows, err := q.query(ctx, `SELECT id, account_id, name, created_at FROM teams WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?`,
		accountID, p.After, p.Size())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Team
	for rows.Next() {
		var t Team
		var created int64
		if err := rows.Scan(&t.ID, &t.AccountID, &t.Name, &created); err != nil {
			return nil, err
		}
		t.CreatedAt = fromMicros(created)
		out = append(out, t)
	}
	return out, rows.Err()
}

// DeleteTeam deletes accountID's team id with its memberships and rules.
func (q *Queries) DeleteTeam(ctx context.Context, accountID, id string) error {
	res, err := q.exec(ctx, `DELETE FROM teams WHERE account_id = ? AND id = ?`, accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "team", id)
}

// AddTeamMember puts userID (a member of accountID) in team teamID; a member already in the
// team is ErrConflict.
func (q *Queries) AddTeamMember(ctx context.Context, accountID, teamID, userID string, at time.Time) error {
	_, err := q.exec(ctx, `INSERT INTO team_members (team_id, account_id, user_id, created_at) VALUES (?, ?, ?, ?)`,
		teamID, accountID, userID, micros(at))
	if err != nil {
		return fmt.Errorf("add team member %s: %w", userID, err)
	}
	return nil
}

// RemoveTeamMember takes userID out of team teamID of accountID.
func (q *Queries) RemoveTeamMember(ctx context.Context, accountID, teamID, userID string) error {
	res, err := q.exec(ctx, `DELETE FROM team_members WHERE account_id = ? AND team_id = ? AND user_id = ?`, accountID, teamID, userID)
	if err != nil {
		return err
	}
	return affected(res, "team member", userID)
}

// TeamMembers lists the members of accountID's teams teamIDs (every team when teamIDs is
// empty), by team and then user ID.
func (q *Queries) TeamMembers(ctx context.Context, accountID string, teamIDs ...string) ([]TeamMember, error) {
	query := `SELECT tm.team_id, tm.user_id, u.email, tm.created_at FROM team_members tm JOIN users u ON u.id = tm.user_id
		WHERE tm.account_id = ?`
	args := []any{accountID}
	if len(teamIDs) > 0 {
		query += ` AND tm.team_id IN (?` + repeat(",?", len(teamIDs)-1) + `)`
		for _, id := range teamIDs {
			args = append(args, id)
		}
	}
	rows, err := q.query(ctx, query+` ORDER BY tm.team_id, tm.user_id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []TeamMember
	for rows.Next() {
		var m TeamMember
		var at int64
		if err := rows.Scan(&m.TeamID, &m.UserID, &m.Email, &at); err != nil {
			return nil, err
		}
		m.AddedAt = fromMicros(at)
		out = append(out, m)
	}
	return out, rows.Err()
}

// CreateRule inserts a rule.
func (q *Queries) CreateRule(ctx context.Context, r Rule) error {
	_, err := q.exec(ctx, `INSERT INTO authz_rules (id, account_id, team_id, user_id, action, kind, attrs, created_at, source_runtime_id, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.AccountID, nullString(r.TeamID), nullString(r.UserID), r.Action, r.Kind, r.Attrs, micros(r.CreatedAt), nullString(r.SourceRuntimeID), r.Origin)
	if err != nil {
		return fmt.Errorf("create rule: %w", err)
	}
	return nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

const ruleSelect = `SELECT r.id, r.account_id, COALESCE(r.team_id, ''), COALESCE(r.user_id, ''), COALESCE(t.name, ''), COALESCE(u.email, ''),
	r.action, r.kind, r.attrs, r.created_at, COALESCE(r.source_runtime_id, ''), r.origin FROM authz_rules r
	LEFT JOIN teams t ON t.id = r.team_id LEFT JOIN users u ON u.id = r.user_id `

func scanRule(s interface{ Scan(...any) error }) (Rule, error) {
	var r Rule
	var created int64
	err := s.Scan(&r.ID, &r.AccountID, &r.TeamID, &r.UserID, &r.TeamName, &r.UserEmail, &r.Action, &r.Kind, &r.Attrs, &created, &r.SourceRuntimeID, &r.Origin)
	r.CreatedAt = fromMicros(created)
	return r, err
}

// ListRules returns one page of accountID's rules ordered by ID.
func (q *Queries) ListRules(ctx context.Context, accountID string, p paging.Page) ([]Rule, error) {
	return q.rules(ctx, `WHERE r.account_id = ? AND r.id > ? ORDER BY r.id LIMIT ?`, accountID, p.After, p.Size())
}

// AllRules returns every rule of accountID, ordered by ID.
func (q *Queries) AllRules(ctx context.Context, accountID string) ([]Rule, error) {
	return q.rules(ctx, `WHERE r.account_id = ? ORDER BY r.id`, accountID)
}

// rules returns the rules that where (a WHERE clause with its ORDER BY and LIMIT) selects.
func (q *Queries) rules(ctx context.Context, where string, args ...any) ([]Rule, error) {
	rows, err := q.query(ctx, ruleSelect+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Rule
	for rows.Next() {
		r, err := scanRule(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// GetRule returns accountID's rule id.
func (q *Queries) GetRule(ctx context.Context, accountID, id string) (Rule, error) {
	r, err := scanRule(q.queryRow(ctx, ruleSelect+`WHERE r.account_id = ? AND r.id = ?`, accountID, id))
	if err != nil {
		return Rule{}, notFound(err, "rule", id)
	}
	return r, nil
}

// ReplaceDerivedRules replaces the rules derived from runtimeID's AppProject roles in
// accountID with rules (each with SourceRuntimeID and Origin set), and reports whether any
// were there before or are now.
func (q *Queries) ReplaceDerivedRules(ctx context.Context, accountID, runtimeID string, rules []Rule) (bool, error) {
	res, err := q.exec(ctx, `DELETE FROM authz_rules WHERE account_id = ? AND source_runtime_id = ?`, accountID, runtimeID)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	for _, r := range rules {
		r.AccountID, r.SourceRuntimeID = accountID, runtimeID
		if err := q.CreateRule(ctx, r); err != nil {
			return false, err
		}
	}
	return n > 0 || len(rules) > 0, nil
}

// DeleteRule deletes accountID's rule id.
func (q *Queries) DeleteRule(ctx context.Context, accountID, id string) error {
	res, err := q.exec(ctx, `DELETE FROM authz_rules WHERE account_id = ? AND id = ?`, accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "rule", id)
}

// Owned is what a team owns: its projects' and runtimes' names.
type Owned struct {
	Projects []string
	Runtimes []string
}

// TeamsOwn returns what each of accountID's teams teamIDs (none: all) owns, by team ID; teams
// that own nothing are absent.
func (q *Queries) TeamsOwn(ctx context.Context, accountID string, teamIDs ...string) (map[string]*Owned, error) {
	out := map[string]*Owned{}
	want := map[string]bool{}
	for _, id := range teamIDs {
		want[id] = true
	}
	for _, t := range []string{"projects", "runtimes"} {
		rows, err := q.query(ctx, `SELECT owner_team_id, name FROM `+t+` WHERE account_id = ? AND owner_team_id <> '' ORDER BY name`, accountID)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var team, name string
			if err := rows.Scan(&team, &name); err != nil {
				rows.Close()
				return nil, err
			}
			if len(want) > 0 && !want[team] {
				continue
			}
			o := out[team]
			if o == nil {
				o = &Owned{}
				out[team] = o
			}
			if t == "projects" {
				o.Projects = append(o.Projects, name)
			} else {
				o.Runtimes = append(o.Runtimes, name)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// IsTeamMember reports whether userID is in accountID's team teamID.
func (q *Queries) IsTeamMember(ctx context.Context, accountID, teamID, userID string) (bool, error) {
	var n int
	err := q.queryRow(ctx, `SELECT COUNT(*) FROM team_members WHERE account_id = ? AND team_id = ? AND user_id = ?`, accountID, teamID, userID).Scan(&n)
	return n > 0, err
}

// TeamNames returns the names of accountID's teams by ID.
func (q *Queries) TeamNames(ctx context.Context, accountID string) (map[string]string, error) {
	rows, err := q.query(ctx, `SELECT id, name FROM teams WHERE account_id = ?`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		out[id] = name
	}
	return out, rows.Err()
}
