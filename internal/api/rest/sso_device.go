package rest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/identity"
)

// The device flow of single sign-on (freshet login --sso --device, RFC 8628): the CLI asks for
// a device request, a person confirms its user code at devicePath in any browser and logs in
// through the account's identity provider, and the CLI polls for the session.
const (
	devicePath          = "/auth/sso/device"
	deviceConfirmCookie = "freshet_device_confirm"
)

// baseURL is where browsers reach the server: the public URL, else this request's host.
func (a *API) baseURL(r *http.Request) string {
	if a.publicURL != "" {
		return a.publicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// ssoDevice opens a device request for the account in the path (no body): the CLI's device
// code to poll with, and the user code and page a person approves it at.
func (a *API) ssoDevice(w http.ResponseWriter, r *http.Request) error {
	d, err := a.id.StartDeviceSSO(r.Context(), r.PathValue("account"), r.UserAgent())
	if err != nil {
		return err
	}
	verify := a.baseURL(r) + devicePath
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, client.DeviceAuthorization{DeviceCode: d.DeviceCode, UserCode: d.UserCode, Account: d.Account.Name,
		VerificationURI: verify, VerificationURIComplete: verify + "?" + url.Values{"user_code": {d.UserCode}}.Encode(),
		ExpiresIn: int(time.Until(d.ExpiresAt).Round(time.Second).Seconds()), Interval: d.Interval})
	return nil
}

// ssoDeviceToken answers the CLI's poll: the password login's body once the request is
// approved, else a 400 whose code is RFC 8628's (authorization_pending, slow_down,
// expired_token, access_denied).
func (a *API) ssoDeviceToken(w http.ResponseWriter, r *http.Request) error {
	var in client.DeviceTokenRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	res, err := a.id.PollDeviceSSO(r.Context(), in.DeviceCode)
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

// devicePage is the verification page: without a user code, a form to enter one; with one, what
// the request is (account, where from, when) and explicit Approve and Deny buttons. The buttons
// carry a confirmation token that must match a SameSite=Strict cookie this page set, so no other
// site can approve or deny on the person's behalf.
var devicePage = template.Must(template.New("device").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>Freshet device login</title>
<style>body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;line-height:1.5}
code{font-size:1.4rem;letter-spacing:.1em}dt{font-weight:600}.warn{background:#fff4ce;padding:.6rem;border-radius:4px}
button,input{font-size:1rem;padding:.4rem .8rem}form{display:inline-block;margin-right:1rem}</style></head><body>
<h1>Freshet device login</h1>
{{- if .Message}}<p role="alert"><strong>{{.Message}}</strong></p>{{end}}
{{- if .Request}}
<p>A <code>freshet login --sso --device</code> asks to log in to account <strong>{{.Request.Account.Name}}</strong> as you.</p>
<dl><dt>Code</dt><dd><code>{{.Request.UserCode}}</code></dd>
<dt>Account</dt><dd>{{.Request.Account.Name}}</dd>
<dt>Requested from</dt><dd>{{.Request.ClientIP}} ({{.Request.ClientAgent}})</dd>
<dt>Requested at</dt><dd>{{.Request.CreatedAt.Format "2006-01-02 15:04:05 MST"}}; expires {{.Request.ExpiresAt.Format "15:04:05 MST"}}</dd></dl>
<p class="warn">Approve only if <strong>you</strong> just ran this command and your terminal shows this code. Someone who sent you this link or code gets your login if you approve.</p>
<form method="get" action="{{.Path}}"><input type="hidden" name="user_code" value="{{.Request.UserCode}}"><input type="hidden" name="confirm" value="{{.Confirm}}"><input type="hidden" name="action" value="approve"><button type="submit">Approve and log in</button></form>
<form method="get" action="{{.Path}}"><input type="hidden" name="user_code" value="{{.Request.UserCode}}"><input type="hidden" name="confirm" value="{{.Confirm}}"><input type="hidden" name="action" value="deny"><button type="submit">Deny</button></form>
{{- else if not .Done}}
<form method="get" action="{{.Path}}"><label>Enter the code your terminal shows: <input name="user_code" autocomplete="off" autocapitalize="characters" placeholder="XXXX-XXXX" value="{{.UserCode}}" required></label> <button type="submit">Continue</button></form>
{{- end}}
</body></html>
`))

type devicePageData struct {
	Path     string
	Message  string
	UserCode string
	Request  *identity.DeviceRequest
	Confirm  string
	Done     bool
}

func (a *API) renderDevicePage(w http.ResponseWriter, status int, d devicePageData) {
	d.Path = devicePath
	a.renderPage(w, status, devicePage, d)
}

// renderPage writes one of the few pages the server renders itself (the SSO pages): no
// scripts, no framing, no referrer.
func (a *API) renderPage(w http.ResponseWriter, status int, page *template.Template, data any) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_ = page.Execute(w, data)
}

// deviceVerify serves the verification page and its two actions (approve: redirect to the
// account's identity provider; deny).
func (a *API) deviceVerify(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	userCode := q.Get("user_code")
	fail := func(err error) error {
		a.renderDevicePage(w, errdefs.HTTPStatus(err), devicePageData{Message: errdefs.Public(err, httpx.RequestID(r.Context())).Message, UserCode: userCode})
		return nil
	}
	if userCode == "" {
		a.renderDevicePage(w, http.StatusOK, devicePageData{})
		return nil
	}
	action := q.Get("action")
	if action == "" {
		req, err := a.id.LookupDevice(r.Context(), userCode)
		if err != nil {
			return fail(err)
		}
		b := make([]byte, 32)
		_, _ = rand.Read(b) // never fails (crypto/rand)
		confirm := base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: deviceConfirmCookie, Value: confirm, Path: devicePath, MaxAge: int(identity.DeviceTTL.Seconds()),
			HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteStrictMode})
		a.renderDevicePage(w, http.StatusOK, devicePageData{Request: &req, Confirm: confirm})
		return nil
	}
	ck, err := r.Cookie(deviceConfirmCookie)
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(q.Get("confirm"))) != 1 {
		return fail(errdefs.Invalid("confirm", "", "does not match this browser's confirmation: open the page with the code and press Approve or Deny there"))
	}
	// The confirmation is used once.
	http.SetCookie(w, &http.Cookie{Name: deviceConfirmCookie, Value: "", Path: devicePath, MaxAge: -1, HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteStrictMode})
	switch action {
	case "approve":
		u, err := a.id.ApproveDeviceSSO(r.Context(), userCode, a.ssoCallbackURL(r))
		if err != nil {
			return fail(err)
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, u, http.StatusFound)
		return nil
	case "deny":
		if err := a.id.DenyDeviceSSO(r.Context(), userCode); err != nil {
			return fail(err)
		}
		a.renderDevicePage(w, http.StatusOK, devicePageData{Message: "Denied: the device login will not be logged in. You can close this tab.", Done: true})
		return nil
	}
	return fail(errdefs.Invalid("action", action, "must be approve or deny"))
}

// deviceApproved is the page the callback of a device approval ends at.
func (a *API) deviceApproved(w http.ResponseWriter, res identity.SSOResult) {
	a.renderDevicePage(w, http.StatusOK, devicePageData{Done: true,
		Message: "Approved: the device login is logged in as " + res.Principal.Email + ". You can close this tab."})
}
