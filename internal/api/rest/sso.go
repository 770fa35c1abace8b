package rest

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/identity"
)

// ssoCallbackPath is where identity providers send browsers back to.
const ssoCallbackPath = "/auth/sso/callback"

func (a *API) ssoCallbackURL(r *http.Request) string { return a.baseURL(r) + ssoCallbackPath }

// ssoLogin sends the browser to the account's identity provider. With cli_port or
// cli_challenge the login is the CLI's (freshet login --sso): it ends at the CLI's listener on
// 127.0.0.1 instead of in the UI.
func (a *API) ssoLogin(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var u string
	var err error
	if q.Has("cli_port") || q.Has("cli_challenge") {
		u, err = a.id.BeginCLISSO(r.Context(), r.PathValue("account"), a.ssoCallbackURL(r), q.Get("cli_port"), q.Get("cli_challenge"))
	} else {
		u, err = a.id.BeginSSO(r.Context(), r.PathValue("account"), a.ssoCallbackURL(r))
	}
	if err != nil {
		return a.ssoFailed(w, r, err)
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u, http.StatusFound)
	return nil
}

// ssoCallback finishes a login the identity provider sent the browser back from: it sets the
// session cookies the password login sets and sends the browser to the UI. A CLI login sets no
// cookie: the browser goes to the CLI's listener on 127.0.0.1 with a one-time code.
func (a *API) ssoCallback(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		// The login in flight ends here; a device request it was to approve is denied.
		return a.ssoFailed(w, r, a.id.FailSSO(r.Context(), q.Get("state"), e, q.Get("error_description")))
	}
	res, err := a.id.FinishSSO(r.Context(), q.Get("state"), q.Get("code"), a.ssoCallbackURL(r))
	if err != nil {
		return a.ssoFailed(w, r, err)
	}
	if res.DeviceApproved {
		a.deviceApproved(w, res)
		return nil
	}
	w.Header().Set("Cache-Control", "no-store")
	if res.CLIRedirect != "" {
		http.Redirect(w, r, res.CLIRedirect, http.StatusFound)
		return nil
	}
	a.setSessionCookies(w, res.Token, res.CSRFToken, res.ExpiresAt)
	http.Redirect(w, r, "/", http.StatusFound)
	return nil
}

// ssoToken exchanges a CLI login's one-time code and the CLI's PKCE verifier for a session:
// the body the password login answers, without cookies.
func (a *API) ssoToken(w http.ResponseWriter, r *http.Request) error {
	var in client.SSOTokenRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	res, err := a.id.ExchangeSSOCode(r.Context(), in.Code, in.Verifier)
	if err != nil {
		return err
	}
	me, err := a.id.Me(r.Context(), res.Principal)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, client.LoginResponse{Token: res.Token, CSRFToken: res.CSRFToken, ExpiresAt: res.ExpiresAt, Me: ToMe(me, res.Principal)})
	return nil
}

func (a *API) toSSOConfig(c identity.SSOConfig, accountID string) client.SSOConfig {
	return client.SSOConfig{Issuer: c.Issuer, ClientID: c.ClientID, ClientSecretSet: c.ClientSecretSet, Scopes: c.Scopes,
		EmailClaim: c.EmailClaim, NameClaim: c.NameClaim, GroupsClaim: c.GroupsClaim, AllowedDomains: c.AllowedDomains,
		RequireSSO: c.RequireSSO, BreakGlass: c.BreakGlassEmail, LoginURL: a.publicURL + "/auth/sso/" + accountID + "/login", UpdatedAt: c.UpdatedAt}
}

func (a *API) getSSO(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	c, err := a.id.GetSSO(r.Context(), p)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, a.toSSOConfig(c, p.AccountID))
	return nil
}

func (a *API) setSSO(w http.ResponseWriter, r *http.Request) error {
	var in client.SSOConfigRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	p := principal(r)
	c, err := a.id.SetSSO(r.Context(), p, identity.SSOConfigInput{Issuer: in.Issuer, ClientID: in.ClientID, ClientSecret: in.ClientSecret,
		Scopes: in.Scopes, EmailClaim: in.EmailClaim, NameClaim: in.NameClaim, GroupsClaim: in.GroupsClaim,
		AllowedDomains: in.AllowedDomains, RequireSSO: in.RequireSSO, BreakGlass: in.BreakGlass})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, a.toSSOConfig(c, p.AccountID))
	return nil
}

func (a *API) deleteSSO(w http.ResponseWriter, r *http.Request) error {
	if err := a.id.DeleteSSO(r.Context(), principal(r)); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ssoFailed answers a single sign-on that could not start or finish. A browser (it asks for
// HTML) gets a page of the server's own that says why and links back to the login page — the
// reason is not put in a UI link, where anyone could write a message of their choosing; a
// program gets the JSON error.
func (a *API) ssoFailed(w http.ResponseWriter, r *http.Request, err error) error {
	if err == nil || !strings.Contains(r.Header.Get("Accept"), "text/html") {
		return err
	}
	a.renderPage(w, errdefs.HTTPStatus(err), ssoErrorPage, struct{ Message string }{errdefs.Public(err, httpx.RequestID(r.Context())).Message})
	return nil
}

var ssoErrorPage = template.Must(template.New("sso-error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>Freshet single sign-on</title>
<style>body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;line-height:1.5}</style></head><body>
<h1>Single sign-on failed</h1>
<p role="alert"><strong>{{.Message}}</strong></p>
<p><a href="/login">Back to log in</a></p>
</body></html>
`))
