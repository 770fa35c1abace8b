package rest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/identity"
)

var errUnauthenticated = fmt.Errorf("authentication required: send an API key or session token as 'Authorization: Bearer <token>': %w", errdefs.ErrUnauthenticated)

func errNoRoute(r *http.Request) error {
	return fmt.Errorf("no API route %s %s: see /api/v1/docs: %w", r.Method, r.URL.Path, errdefs.ErrNotFound)
}

func (a *API) login(w http.ResponseWriter, r *http.Request) error {
	var in client.LoginRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	if in.Email == "" {
		return errdefs.Invalid("email", "", "is required")
	}
	if in.Password == "" {
		return errdefs.Invalid("password", "", "is required")
	}
	res, err := a.id.Login(r.Context(), in.Email, in.Password, in.Account)
	if err != nil {
		return err
	}
	me, err := a.id.Me(r.Context(), res.Principal)
	if err != nil {
		return err
	}
	a.setSessionCookies(w, res.Token, res.CSRFToken, res.ExpiresAt)
	httpx.WriteJSON(w, http.StatusOK, client.LoginResponse{Token: res.Token, CSRFToken: res.CSRFToken, ExpiresAt: res.ExpiresAt, Me: ToMe(me, res.Principal)})
	return nil
}

// setSessionCookies sets the HttpOnly session cookie and the script-readable CSRF cookie.
func (a *API) setSessionCookies(w http.ResponseWriter, token, csrf string, expires time.Time) {
	maxAge := int(time.Until(expires).Seconds())
	if token == "" {
		maxAge = -1
	}
	http.SetCookie(w, &http.Cookie{Name: httpx.SessionCookie, Value: token, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteLaxMode})
	http.SetCookie(w, &http.Cookie{Name: httpx.CSRFCookie, Value: csrf, Path: "/", MaxAge: maxAge,
		Secure: a.secure, SameSite: http.SameSiteStrictMode})
}

func (a *API) logout(w http.ResponseWriter, r *http.Request) error {
	if err := a.id.Logout(r.Context(), principal(r)); err != nil {
		return err
	}
	a.setSessionCookies(w, "", "", time.Time{})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) switchAccount(w http.ResponseWriter, r *http.Request) error {
	var in client.SwitchAccountRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	if in.Account == "" {
		return errdefs.Invalid("account", "", "is required: an account ID or name")
	}
	p, err := a.id.SwitchAccount(r.Context(), principal(r), in.Account)
	if err != nil {
		return err
	}
	me, err := a.id.Me(r.Context(), p)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToMe(me, p))
	return nil
}

func (a *API) me(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	me, err := a.id.Me(r.Context(), p)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToMe(me, p))
	return nil
}

func (a *API) account(w http.ResponseWriter, r *http.Request) error {
	acct, err := a.id.Account(r.Context(), principal(r))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToAccount(acct))
	return nil
}

// deleteAccount deletes the caller's account; ?confirm= must be its name. The caller's session
// went with it, so its cookies are cleared.
func (a *API) deleteAccount(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	if err := a.id.DeleteAccount(r.Context(), p, r.URL.Query().Get("confirm")); err != nil {
		return err
	}
	if p.SessionID != "" {
		a.setSessionCookies(w, "", "", time.Time{})
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) createAccount(w http.ResponseWriter, r *http.Request) error {
	var in client.CreateAccountRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	acct, err := a.id.CreateAccount(r.Context(), principal(r), in.Name)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, ToAccount(acct))
	return nil
}

func (a *API) listUsers(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	ms, err := a.id.ListUsers(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	out := client.List[client.User]{Items: make([]client.User, 0, len(ms))}
	for _, m := range ms {
		out.Items = append(out.Items, ToUser(m))
	}
	if len(ms) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(ms), ms[len(ms)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createUser(w http.ResponseWriter, r *http.Request) error {
	var in client.CreateUserRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	res, err := a.id.CreateUser(r.Context(), principal(r), identity.CreateUserInput{Email: in.Email, Name: in.Name, Role: in.Role, Password: in.Password})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, client.CreatedUser{User: ToUser(res.Member), Password: res.Password})
	return nil
}

func (a *API) getUser(w http.ResponseWriter, r *http.Request) error {
	m, err := a.id.GetUser(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToUser(m))
	return nil
}

func (a *API) updateUser(w http.ResponseWriter, r *http.Request) error {
	var in client.UpdateUserRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	m, err := a.id.SetUserRole(r.Context(), principal(r), r.PathValue("id"), in.Role)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToUser(m))
	return nil
}

func (a *API) deleteUser(w http.ResponseWriter, r *http.Request) error {
	if err := a.id.DeleteUser(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) listInvitations(w http.ResponseWriter, r *http.Request) error {
	invs, err := a.id.ListInvitations(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := client.List[client.Invitation]{Items: make([]client.Invitation, 0, len(invs))}
	for _, i := range invs {
		out.Items = append(out.Items, ToInvitation(i))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) acceptInvitation(w http.ResponseWriter, r *http.Request) error {
	m, err := a.id.AcceptInvitation(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, client.AccountMembership{ID: m.Account.ID, Name: m.Account.Name, Role: string(m.Role)})
	return nil
}

func (a *API) declineInvitation(w http.ResponseWriter, r *http.Request) error {
	if err := a.id.DeclineInvitation(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) listAPIKeys(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	ks, err := a.id.ListAPIKeys(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	out := client.List[client.APIKey]{Items: make([]client.APIKey, 0, len(ks))}
	for _, k := range ks {
		out.Items = append(out.Items, ToAPIKey(k))
	}
	if len(ks) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(ks), ks[len(ks)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	var in client.CreateAPIKeyRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	expires, err := identity.ParseAPIKeyTTL(in.ExpiresIn)
	if err != nil {
		return err
	}
	k, token, err := a.id.CreateAPIKey(r.Context(), principal(r), identity.CreateAPIKeyInput{Name: in.Name, Role: in.Role, ExpiresIn: expires})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, client.CreatedAPIKey{APIKey: ToAPIKey(k), Token: token})
	return nil
}

func (a *API) revokeAPIKey(w http.ResponseWriter, r *http.Request) error {
	if err := a.id.RevokeAPIKey(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) listAudit(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := audit.Filter{Actor: q.Get("actor"), Action: q.Get("action"), ResourceType: q.Get("resourceType"),
		ResourceID: q.Get("resourceId"), Result: q.Get("result")}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if s := q.Get(t.name); s != "" {
			v, err := ParseTime(s, time.Now())
			if err != nil {
				return errdefs.Invalid(t.name, s, "is not a time: use RFC 3339 (2026-01-02T15:04:05Z) or a duration ago (24h)")
			}
			*t.dst = v
		}
	}
	evs, err := a.audit.List(r.Context(), principal(r), f, page)
	if err != nil {
		return err
	}
	out := client.List[client.AuditEvent]{Items: make([]client.AuditEvent, 0, len(evs))}
	for _, e := range evs {
		out.Items = append(out.Items, ToAuditEvent(e))
	}
	if len(evs) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(evs), evs[len(evs)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// ParseTime reads an RFC 3339 time or a duration meaning that long before now.
func ParseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("parse time %q", s)
	}
	return now.Add(-d), nil
}
