package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Team is a named group of an account's members. Rules can be written for a team.
type Team struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	Members   []TeamMember `json:"members"`
	CreatedAt time.Time    `json:"createdAt"`
	Owns      TeamOwns     `json:"owns"` // what the team owns
}

// TeamOwns is what a team owns, by name: projects (with their pipelines and builds) and
// runtimes (with their clusters, applications, git sources and workflows).
type TeamOwns struct {
	Projects []string `json:"projects"`
	Runtimes []string `json:"runtimes"`
}

// SetOwnerRequest gives a project or runtime to Team (name or ID; empty: no team).
type SetOwnerRequest struct {
	Team string `json:"team"`
}

// TeamMember is a member of a team.
type TeamMember struct {
	UserID  string    `json:"userId"`
	Email   string    `json:"email"`
	AddedAt time.Time `json:"addedAt"`
}

// CreateTeamRequest creates a team.
type CreateTeamRequest struct {
	Name string `json:"name"`
}

// TeamMemberRequest adds a member (by email or user ID) to a team.
type TeamMemberRequest struct {
	User string `json:"user"`
}

// Rule is an attribute-based rule: a team or a user may take an action on resources of a kind
// that have its attributes. Once a kind has a rule, members and viewers need one to act on it.
type Rule struct {
	ID        string   `json:"id"`
	Team      string   `json:"team,omitempty"`   // the team's name, for a team's rule
	TeamID    string   `json:"teamId,omitempty"` //
	User      string   `json:"user,omitempty"`   // the user's email, for a user's rule
	UserID    string   `json:"userId,omitempty"` //
	Action    string   `json:"action"`
	Kind      string   `json:"kind"`
	Tags      []string `json:"tags,omitempty"` // the resource has one of them
	Runtime   string   `json:"runtime,omitempty"`
	Cluster   string   `json:"cluster,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Owner     string   `json:"owner,omitempty"` // own-team, or the name of the team that must own the resource
	// Project, Apps and ExceptApps narrow a rule on applications to an Argo CD project and the
	// application names matching one of Apps and none of ExceptApps (globs).
	Project    string   `json:"project,omitempty"`
	Apps       []string `json:"apps,omitempty"`
	ExceptApps []string `json:"exceptApps,omitempty"`
	// Origin names where a derived rule comes from ("AppProject P of runtime R, role X"); such a
	// rule is read-only: the runtime's next report replaces it. Empty for hand-written rules.
	Origin    string    `json:"origin,omitempty"`
	Summary   string    `json:"summary"` // the rule in one line
	CreatedAt time.Time `json:"createdAt"`
}

// CreateRuleRequest creates a rule for a team (ID or name) or a user (email or ID).
type CreateRuleRequest struct {
	Team      string   `json:"team,omitempty"`
	User      string   `json:"user,omitempty"`
	Action    string   `json:"action"`
	Kind      string   `json:"kind"`
	Tags      []string `json:"tags,omitempty"`
	Runtime   string   `json:"runtime,omitempty"`
	Cluster   string   `json:"cluster,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Owner     string   `json:"owner,omitempty"` // own-team, or a team's name or ID
}

// AuthzExplanation says whether a user may take an action on a resource, and why.
type AuthzExplanation struct {
	User       string   `json:"user"`
	Action     string   `json:"action"`
	Resource   string   `json:"resource"` // KIND/NAME
	Allowed    bool     `json:"allowed"`
	Role       string   `json:"role"`
	Permission string   `json:"permission,omitempty"` // the role permission the action needs
	RoleOK     bool     `json:"roleAllows"`
	Governed   bool     `json:"governed"`          // rules govern the resource's kind in the account
	Rule       string   `json:"rule,omitempty"`    // the ID of the rule that allowed it
	Reasons    []string `json:"reasons"`           // each step of the decision
	Tags       []string `json:"tags,omitempty"`    // the resource's attributes, as rules saw them
	Runtime    string   `json:"runtime,omitempty"` //
	Cluster    string   `json:"cluster,omitempty"` //
	Namespace  string   `json:"namespace,omitempty"`
	Owner      string   `json:"owner,omitempty"` // the name of the team that owns the resource
}

// ExplainRequest asks whether User (email or ID; empty: the caller) may take Action on
// Resource (KIND/NAME). Resources the control plane does not hold (clusters, gitsources) are
// described by the attributes given.
type ExplainRequest struct {
	User, Action, Resource      string
	Runtime, Cluster, Namespace string
	Tags                        []string
}

// ListTeams returns one page of the account's teams with their members.
func (c *Client) ListTeams(ctx context.Context, o ListOptions) (List[Team], error) {
	var out List[Team]
	err := c.do(ctx, http.MethodGet, "/api/v1/teams", listQuery(o), nil, &out)
	return out, err
}

// GetTeam returns a team by ID or name.
func (c *Client) GetTeam(ctx context.Context, team string) (Team, error) {
	var out Team
	err := c.do(ctx, http.MethodGet, "/api/v1/teams/"+url.PathEscape(team), nil, nil, &out)
	return out, err
}

// CreateTeam creates a team.
func (c *Client) CreateTeam(ctx context.Context, name string) (Team, error) {
	var out Team
	err := c.do(ctx, http.MethodPost, "/api/v1/teams", nil, CreateTeamRequest{Name: name}, &out)
	return out, err
}

// DeleteTeam deletes a team and its rules.
func (c *Client) DeleteTeam(ctx context.Context, team string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/teams/"+url.PathEscape(team), nil, nil, nil)
}

// AddTeamMember adds a member of the account (email or user ID) to a team.
func (c *Client) AddTeamMember(ctx context.Context, team, user string) error {
	return c.do(ctx, http.MethodPost, "/api/v1/teams/"+url.PathEscape(team)+"/members", nil, TeamMemberRequest{User: user}, nil)
}

// RemoveTeamMember takes a member (email or user ID) out of a team.
func (c *Client) RemoveTeamMember(ctx context.Context, team, user string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/teams/"+url.PathEscape(team)+"/members/"+url.PathEscape(user), nil, nil, nil)
}

// ListRules returns one page of the account's rules.
func (c *Client) ListRules(ctx context.Context, o ListOptions) (List[Rule], error) {
	var out List[Rule]
	err := c.do(ctx, http.MethodGet, "/api/v1/rules", listQuery(o), nil, &out)
	return out, err
}

// CreateRule creates a rule.
func (c *Client) CreateRule(ctx context.Context, r CreateRuleRequest) (Rule, error) {
	var out Rule
	err := c.do(ctx, http.MethodPost, "/api/v1/rules", nil, r, &out)
	return out, err
}

// DeleteRule deletes a rule.
func (c *Client) DeleteRule(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/rules/"+url.PathEscape(id), nil, nil, nil)
}

// ExplainAuthz says whether a user may take an action on a resource, and why.
func (c *Client) ExplainAuthz(ctx context.Context, r ExplainRequest) (AuthzExplanation, error) {
	q := url.Values{}
	for k, v := range map[string]string{"user": r.User, "action": r.Action, "resource": r.Resource, "runtime": r.Runtime, "cluster": r.Cluster, "namespace": r.Namespace} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(r.Tags) > 0 {
		q.Set("tags", strings.Join(r.Tags, ","))
	}
	var out AuthzExplanation
	err := c.do(ctx, http.MethodGet, "/api/v1/authz/explain", q, nil, &out)
	return out, err
}

// ChangePasswordRequest changes the caller's password (from a login session).
type ChangePasswordRequest struct {
	CurrentPassword string `json:"currentPassword"`
	NewPassword     string `json:"newPassword"`
}

// PasswordResetToken is a one-time token with which a user sets a new password; shown once to
// the admin who issued it.
type PasswordResetToken struct {
	// Token is empty when the server emailed it to the user (Emailed): then no admin sees it.
	Token     string    `json:"token,omitempty"`
	UserID    string    `json:"userId"`
	Email     string    `json:"email"`
	ExpiresAt time.Time `json:"expiresAt"`
	Emailed   bool      `json:"emailed"`
}

// ResetPasswordRequest sets a new password with a reset token (no login).
type ResetPasswordRequest struct {
	Token       string `json:"token"`
	NewPassword string `json:"newPassword"`
}

// Session is one of the caller's login sessions (never its token).
type Session struct {
	ID        string    `json:"id"`
	Account   Account   `json:"account"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	Current   bool      `json:"current"` // the session of this request
}

// ChangePassword changes the caller's password; the caller's other sessions end.
func (c *Client) ChangePassword(ctx context.Context, r ChangePasswordRequest) error {
	return c.do(ctx, http.MethodPost, "/api/v1/me/password", nil, r, nil)
}

// IssuePasswordReset makes a one-time reset token for a member (ID or email) of the account.
func (c *Client) IssuePasswordReset(ctx context.Context, user string) (PasswordResetToken, error) {
	var out PasswordResetToken
	err := c.do(ctx, http.MethodPost, "/api/v1/users/"+url.PathEscape(user)+"/password-reset", nil, struct{}{}, &out)
	return out, err
}

// ResetPassword sets a new password with a reset token; needs no credentials.
func (c *Client) ResetPassword(ctx context.Context, r ResetPasswordRequest) error {
	return c.do(ctx, http.MethodPost, "/api/v1/auth/password-reset", nil, r, nil)
}

// ListSessions lists the caller's login sessions in every account.
func (c *Client) ListSessions(ctx context.Context) (List[Session], error) {
	var out List[Session]
	err := c.do(ctx, http.MethodGet, "/api/v1/me/sessions", nil, nil, &out)
	return out, err
}

// RevokeSession ends one of the caller's sessions.
func (c *Client) RevokeSession(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/me/sessions/"+url.PathEscape(id), nil, nil, nil)
}

// GetSSO returns the account's single sign-on configuration (admins).
func (c *Client) GetSSO(ctx context.Context) (SSOConfig, error) {
	var out SSOConfig
	err := c.do(ctx, http.MethodGet, "/api/v1/sso", nil, nil, &out)
	return out, err
}

// SetSSO creates or replaces the account's single sign-on (admins).
func (c *Client) SetSSO(ctx context.Context, r SSOConfigRequest) (SSOConfig, error) {
	var out SSOConfig
	err := c.do(ctx, http.MethodPut, "/api/v1/sso", nil, r, &out)
	return out, err
}

// DeleteSSO removes the account's single sign-on (admins).
func (c *Client) DeleteSSO(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/sso", nil, nil, nil)
}
