package rest

import (
	"net/http"
	"strings"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// ToTeam converts a team to its API form.
func ToTeam(t identity.Team) client.Team {
	out := client.Team{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, Members: make([]client.TeamMember, len(t.Members)),
		Owns: client.TeamOwns{Projects: orEmpty(t.Owns.Projects), Runtimes: orEmpty(t.Owns.Runtimes)}}
	for i, m := range t.Members {
		out.Members[i] = client.TeamMember{UserID: m.UserID, Email: m.Email, AddedAt: m.AddedAt}
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ToRule converts a rule to its API form.
func ToRule(r identity.Rule) client.Rule {
	out := client.Rule{ID: r.ID, TeamID: r.TeamID, UserID: r.UserID, Action: string(r.Action), Kind: string(r.Kind), Tags: r.Tags,
		Runtime: r.Runtime, Cluster: r.Cluster, Namespace: r.Namespace, Project: r.Project, Apps: r.Apps, ExceptApps: r.ExceptApps,
		Origin: r.Origin, Summary: r.Describe(), CreatedAt: r.CreatedAt}
	if r.Owner != "" {
		out.Owner = r.OwnerName
	}
	if r.TeamID != "" {
		out.Team = strings.TrimPrefix(r.Subject, "team ")
	} else {
		out.User = strings.TrimPrefix(r.Subject, "user ")
	}
	return out
}

// ToExplanation converts an authorization explanation to its API form.
func ToExplanation(e identity.Explanation) client.AuthzExplanation {
	out := client.AuthzExplanation{User: e.User, Action: string(e.Action), Resource: e.Resource.String(), Allowed: e.Allowed,
		Role: string(e.Role), Permission: string(e.Permission), RoleOK: e.RoleOK, Governed: e.Governed, Reasons: e.Reasons,
		Tags: e.Resource.Attrs.Tags, Runtime: e.Resource.Attrs.Runtime, Cluster: e.Resource.Attrs.Cluster, Namespace: e.Resource.Attrs.Namespace,
		Owner: e.Resource.Attrs.OwnerName}
	if e.Rule != nil {
		out.Rule = e.Rule.ID
	}
	if out.Reasons == nil {
		out.Reasons = []string{}
	}
	return out
}

func (a *API) listTeams(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	ts, err := a.id.ListTeams(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	out := client.List[client.Team]{Items: make([]client.Team, 0, len(ts))}
	for _, t := range ts {
		out.Items = append(out.Items, ToTeam(t))
	}
	if len(ts) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(ts), ts[len(ts)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createTeam(w http.ResponseWriter, r *http.Request) error {
	var in client.CreateTeamRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	t, err := a.id.CreateTeam(r.Context(), principal(r), in.Name)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, ToTeam(t))
	return nil
}

func (a *API) getTeam(w http.ResponseWriter, r *http.Request) error {
	t, err := a.id.GetTeam(r.Context(), principal(r), r.PathValue("team"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToTeam(t))
	return nil
}

func (a *API) deleteTeam(w http.ResponseWriter, r *http.Request) error {
	if err := a.id.DeleteTeam(r.Context(), principal(r), r.PathValue("team")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) addTeamMember(w http.ResponseWriter, r *http.Request) error {
	var in client.TeamMemberRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	if err := a.id.AddTeamMember(r.Context(), principal(r), r.PathValue("team"), in.User); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) removeTeamMember(w http.ResponseWriter, r *http.Request) error {
	if err := a.id.RemoveTeamMember(r.Context(), principal(r), r.PathValue("team"), r.PathValue("user")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) listRules(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	rs, err := a.id.ListRules(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	out := client.List[client.Rule]{Items: make([]client.Rule, 0, len(rs))}
	for _, x := range rs {
		out.Items = append(out.Items, ToRule(x))
	}
	if len(rs) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(rs), rs[len(rs)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createRule(w http.ResponseWriter, r *http.Request) error {
	var in client.CreateRuleRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	rule, err := a.id.CreateRule(r.Context(), principal(r), identity.RuleInput{Team: in.Team, User: in.User, Action: in.Action, Kind: in.Kind,
		Tags: in.Tags, Runtime: in.Runtime, Cluster: in.Cluster, Namespace: in.Namespace, Owner: in.Owner})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, ToRule(rule))
	return nil
}

func (a *API) deleteRule(w http.ResponseWriter, r *http.Request) error {
	if err := a.id.DeleteRule(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) explainAuthz(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	attrs := rbac.Attributes{Runtime: q.Get("runtime"), Cluster: q.Get("cluster"), Namespace: q.Get("namespace")}
	if t := q.Get("tags"); t != "" {
		attrs.Tags = strings.Split(t, ",")
	}
	ex, err := a.id.Explain(r.Context(), principal(r), q.Get("user"), q.Get("action"), q.Get("resource"), attrs)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToExplanation(ex))
	return nil
}

// ToSession converts a session to its API form.
func ToSession(s identity.Session) client.Session {
	return client.Session{ID: s.ID, Account: ToAccount(s.Account), CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt, Current: s.Current}
}

func (a *API) changePassword(w http.ResponseWriter, r *http.Request) error {
	var in client.ChangePasswordRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	if err := a.id.ChangePassword(r.Context(), principal(r), in.CurrentPassword, in.NewPassword); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) issuePasswordReset(w http.ResponseWriter, r *http.Request) error {
	res, err := a.id.IssuePasswordReset(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, client.PasswordResetToken{Token: res.Token, UserID: res.UserID, Email: res.Email, ExpiresAt: res.ExpiresAt, Emailed: res.Emailed})
	return nil
}

func (a *API) resetPassword(w http.ResponseWriter, r *http.Request) error {
	var in client.ResetPasswordRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	if in.Token == "" {
		return errdefs.Invalid("token", "", "is required: the reset token an admin gave you")
	}
	if err := a.id.ResetPassword(r.Context(), in.Token, in.NewPassword); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) listSessions(w http.ResponseWriter, r *http.Request) error {
	ss, err := a.id.ListSessions(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := client.List[client.Session]{Items: make([]client.Session, 0, len(ss))}
	for _, s := range ss {
		out.Items = append(out.Items, ToSession(s))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) revokeSession(w http.ResponseWriter, r *http.Request) error {
	if err := a.id.RevokeSession(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
