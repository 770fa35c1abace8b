package httpx

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// Cookie and header names of UI sessions.
const (
	SessionCookie = "freshet_session"
	CSRFCookie    = "freshet_csrf"
	CSRFHeader    = "X-CSRF-Token"
)

// Authenticator resolves a bearer token to a principal. identity.Service implements it.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (rbac.Principal, error)
}

// CSRFFunc derives the CSRF token that belongs to a session token.
type CSRFFunc func(sessionToken string) string

// Authenticate resolves every request's credentials — "Authorization: Bearer <token>" or the
// session cookie — to a principal before any handler runs. Requests with no credentials pass
// through without a principal (handlers that need one answer 401); requests with bad
// credentials are refused with 401 here. Cookie-authenticated requests that change state must
// carry the session's CSRF token in the X-CSRF-Token header.
func Authenticate(a Authenticator, csrf CSRFFunc, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, viaCookie := credentials(r)
		if token == "" {
			next.ServeHTTP(w, r)
			return
		}
		if viaCookie && !safeMethod(r.Method) {
			want := csrf(token)
			if got := r.Header.Get(CSRFHeader); subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
				WriteError(w, r, log, fmt.Errorf("missing or wrong %s header for a cookie session: %w", CSRFHeader, errdefs.ErrForbidden))
				return
			}
		}
		p, err := a.Authenticate(r.Context(), token)
		if err != nil && viaCookie && errors.Is(err, errdefs.ErrUnauthenticated) {
			// A stale cookie (the session expired or was ended) is no credential at all: clear it
			// and carry on anonymously, so the UI can show its login page and log in again.
			ClearSessionCookies(w)
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			if errors.Is(err, errdefs.ErrUnauthenticated) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="freshet"`)
			}
			WriteError(w, r, log, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// ClearSessionCookies tells the browser to drop the session and CSRF cookies.
func ClearSessionCookies(w http.ResponseWriter) {
	for _, name := range []string{SessionCookie, CSRFCookie} {
		http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1})
	}
}

func credentials(r *http.Request) (token string, viaCookie bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok), false
		}
		return "invalid", false // an Authorization header we cannot use is an error, not anonymity
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		return c.Value, true
	}
	return "", false
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}
