package identity

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/token"
)

// deviceCode returns err's RFC 8628 code, or "".
func deviceCode(err error) string {
	var de *DeviceError
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

// TestSSODeviceLogin runs the device flow (freshet login --sso --device) through a real OpenID
// provider: the test is the CLI (it polls) and the browser on another machine (it approves the
// user code through the provider with a cookie jar).
func TestSSODeviceLogin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log, Keys: secrets.Generate(), Net: netpolicy.Unrestricted()})
		var skew atomic.Int64 // the server's clock runs ahead by this much
		s.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		wait := func(d time.Duration) { skew.Add(int64(d)) }
		idp := startIdP(t)
		base := ssoFrontend(t, s)
		acme, err := s.Provision(ctx, "acme", "admin@acme.test", "admin-password")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Provision(ctx, "nosso", "admin@nosso.test", "admin-password"); err != nil {
			t.Fatal(err)
		}
		admin, err := s.Login(ctx, "admin@acme.test", "admin-password", "acme")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetSSO(ctx, admin.Principal, SSOConfigInput{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
			AllowedDomains: []string{"acme.test"}}); err != nil {
			t.Fatal(err)
		}
		// approve is the browser on another machine: it opens the approval of userCode and
		// follows every redirect through the provider, which logs in email.
		approve := func(userCode, email string) (int, string) {
			t.Helper()
			if email != "" { // "": the approval is expected to stop before the provider
				u := mockUser(email, true)
				idp.QueueUser(&u)
			}
			jar, _ := cookiejar.New(nil)
			c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
			resp, err := c.Get(base + "/device/approve?" + url.Values{"user_code": {userCode}}.Encode())
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, strings.TrimSpace(string(body))
		}

		// An account without SSO, or no account: a clear refusal, nothing stored.
		if _, err := s.StartDeviceSSO(ctx, "nosso", "freshet-cli/test"); errdefs.Field(err) != "account" || !strings.Contains(err.Error(), "no single sign-on") {
			t.Fatalf("account without SSO: %v", err)
		}
		if _, err := s.StartDeviceSSO(ctx, "no-such-account", "freshet-cli/test"); errdefs.Field(err) != "account" {
			t.Fatalf("unknown account: %v", err)
		}

		// The happy path: pending, too fast (slow_down), approved, the session once.
		d, err := s.StartDeviceSSO(ctx, "acme", "freshet-cli/test\x1b[31m")
		if err != nil {
			t.Fatal(err)
		}
		if len(d.UserCode) != 9 || d.UserCode[4] != '-' || d.Interval != DeviceInterval || len(d.DeviceCode) != 43 || d.Account.ID != acme.Account.ID {
			t.Fatalf("device authorization: %+v", d)
		}
		if _, err := NormalizeUserCode(d.UserCode); err != nil {
			t.Fatalf("user code %q does not read back: %v", d.UserCode, err)
		}
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DevicePendingCode {
			t.Fatalf("first poll: %v", err)
		}
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DeviceSlowDownCode || !strings.Contains(err.Error(), "wait 10 s") {
			t.Fatalf("poll too soon: %v", err)
		}
		wait(6 * time.Second) // the interval is 10 s now
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DeviceSlowDownCode || !strings.Contains(err.Error(), "wait 15 s") {
			t.Fatalf("poll sooner than the grown interval: %v", err)
		}
		wait(16 * time.Second)
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DevicePendingCode {
			t.Fatalf("poll after the interval: %v", err)
		}
		// The verification page shows the request: account, where from, with what (printable).
		spaced := strings.ToLower(strings.ReplaceAll(d.UserCode, "-", " "))
		req, err := s.LookupDevice(ctx, spaced)
		if err != nil || req.UserCode != d.UserCode || req.Account.Name != "acme" || req.ClientAgent != "freshet-cli/test[31m" {
			t.Fatalf("lookup %q: %+v %v", spaced, req, err)
		}
		if code, body := approve(d.UserCode, "jane@acme.test"); code != http.StatusOK || body != "device approved for jane@acme.test" {
			t.Fatalf("approval: %d %q", code, body)
		}
		// Approved once: the code no longer shows at the page.
		if _, err := s.LookupDevice(ctx, d.UserCode); errdefs.Field(err) != "user_code" {
			t.Fatalf("lookup of an approved request: %v", err)
		}
		wait(16 * time.Second)
		res, err := s.PollDeviceSSO(ctx, d.DeviceCode)
		if err != nil {
			t.Fatalf("poll after approval: %v", err)
		}
		jp, err := s.Authenticate(ctx, res.Token)
		if err != nil || jp.AccountID != acme.Account.ID || jp.Email != "jane@acme.test" || jp.Role != rbac.Member || !jp.SSOBound {
			t.Fatalf("session: %+v %v", jp, err)
		}
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DeviceExpiredCode || !strings.Contains(err.Error(), "already used") {
			t.Fatalf("poll after the session: %v", err)
		}
		evs, err := db.ListAudit(ctx, acme.Account.ID, store.AuditFilter{}, paging.Page{Limit: 200})
		if err != nil {
			t.Fatal(err)
		}
		var requested, approved, loggedIn bool
		for _, ev := range evs {
			requested = requested || ev.Action == "auth.sso-device-request"
			approved = approved || (ev.Action == "auth.sso-device-approve" && ev.ActorID == jp.UserID && ev.Result == audit.ResultSuccess)
			loggedIn = loggedIn || (ev.Action == "auth.sso-login" && ev.ResourceID == jp.SessionID && strings.Contains(ev.Detail, "device flow"))
		}
		if !requested || !approved || !loggedIn {
			t.Errorf("audit: request %v, approval %v, session %v", requested, approved, loggedIn)
		}

		// Wrong, malformed and used user codes name user_code.
		for _, bad := range []string{"BBBB-BBBB", "hello", "AAAA-AAAA", d.UserCode, strings.Repeat("B", 9), ""} {
			if _, err := s.LookupDevice(ctx, bad); errdefs.Field(err) != "user_code" {
				t.Errorf("LookupDevice(%q) = %v, want invalid user_code", bad, err)
			}
			if code, body := approve(bad, ""); code != http.StatusBadRequest || !strings.Contains(body, "user_code") {
				t.Errorf("approve %q: %d %q", bad, code, body)
			}
		}
		if _, err := s.PollDeviceSSO(ctx, "made-up"); deviceCode(err) != DeviceExpiredCode {
			t.Fatalf("made-up device code: %v", err)
		}
		if _, err := s.PollDeviceSSO(ctx, ""); errdefs.Field(err) != "deviceCode" {
			t.Fatalf("empty device code: %v", err)
		}

		// The device code is used once even when polled concurrently.
		d, err = s.StartDeviceSSO(ctx, "acme", "cli")
		if err != nil {
			t.Fatal(err)
		}
		if code, body := approve(d.UserCode, "jane@acme.test"); code != http.StatusOK {
			t.Fatalf("approval: %d %q", code, body)
		}
		var wg sync.WaitGroup
		var sessions, used atomic.Int32
		for range 8 {
			wg.Go(func() {
				_, err := s.PollDeviceSSO(ctx, d.DeviceCode)
				switch {
				case err == nil:
					sessions.Add(1)
				case deviceCode(err) == DeviceExpiredCode:
					used.Add(1)
				default:
					t.Errorf("concurrent poll: %v", err)
				}
			})
		}
		wg.Wait()
		if sessions.Load() != 1 || used.Load() != 7 {
			t.Fatalf("8 concurrent polls: %d sessions, %d used", sessions.Load(), used.Load())
		}

		// Denied at the verification page.
		d, err = s.StartDeviceSSO(ctx, "acme", "cli")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.DenyDeviceSSO(ctx, d.UserCode); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DeviceDeniedCode || !strings.Contains(err.Error(), "denied at the verification page") {
			t.Fatalf("denied: %v", err)
		}
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DeviceExpiredCode {
			t.Fatalf("poll after the denial was told: %v", err)
		}

		// Single sign-on refuses the person (domain not allowed): denied with the reason.
		d, err = s.StartDeviceSSO(ctx, "acme", "cli")
		if err != nil {
			t.Fatal(err)
		}
		if code, body := approve(d.UserCode, "mallory@evil.test"); code != http.StatusUnauthorized || !strings.Contains(body, `email domain "evil.test" is not allowed`) {
			t.Fatalf("outside domain: %d %q", code, body)
		}
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DeviceDeniedCode || !strings.Contains(err.Error(), `email domain "evil.test" is not allowed`) {
			t.Fatalf("outside domain poll: %v", err)
		}
		if _, err := db.UserByEmail(ctx, "mallory@evil.test"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("refused user created: %v", err)
		}

		// The provider answers the callback with an error (the person declined there): denied.
		d, err = s.StartDeviceSSO(ctx, "acme", "cli")
		if err != nil {
			t.Fatal(err)
		}
		noFollow := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Get(base + "/device/approve?" + url.Values{"user_code": {d.UserCode}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		to, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || !strings.HasPrefix(to.String(), idp.Issuer()) || to.Query().Get("state") == "" {
			t.Fatalf("approval redirect %q (%d)", resp.Header.Get("Location"), resp.StatusCode)
		}
		resp, err = noFollow.Get(base + "/callback?" + url.Values{"state": {to.Query().Get("state")}, "error": {"access_denied"}, "error_description": {"the user said no"}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DeviceDeniedCode || !strings.Contains(err.Error(), "the user said no") {
			t.Fatalf("provider declined: %v", err)
		}

		// Expired: nobody approved within DeviceTTL.
		d, err = s.StartDeviceSSO(ctx, "acme", "cli")
		if err != nil {
			t.Fatal(err)
		}
		wait(DeviceTTL + time.Second)
		if _, err := s.LookupDevice(ctx, d.UserCode); errdefs.Field(err) != "user_code" {
			t.Fatalf("lookup of an expired request: %v", err)
		}
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DeviceExpiredCode || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("expired: %v", err)
		}
		// The sweep removes expired requests nobody polls any more.
		d, err = s.StartDeviceSSO(ctx, "acme", "cli")
		if err != nil {
			t.Fatal(err)
		}
		wait(DeviceTTL + time.Second)
		if _, _, err := s.SweepExpired(ctx); err != nil {
			t.Fatal(err)
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := tx.GetSSODevice(ctx, token.Hash(d.DeviceCode)); return err }); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("expired request after the sweep: %v", err)
		}

		// SSO removed after the approval: the poll is refused.
		skew.Store(0) // the provider's tokens are checked against the server's clock
		d, err = s.StartDeviceSSO(ctx, "acme", "cli")
		if err != nil {
			t.Fatal(err)
		}
		if code, body := approve(d.UserCode, "jane@acme.test"); code != http.StatusOK {
			t.Fatalf("approval: %d %q", code, body)
		}
		if err := s.DeleteSSO(ctx, admin.Principal); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DeviceDeniedCode || !strings.Contains(err.Error(), "no longer has single sign-on") {
			t.Fatalf("poll after SSO removed: %v", err)
		}
		if _, err := s.SetSSO(ctx, admin.Principal, SSOConfigInput{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret,
			AllowedDomains: []string{"acme.test"}}); err != nil {
			t.Fatal(err)
		}

		// Requests are limited per source address, and wrong user codes too.
		ipCtx := audit.WithMeta(ctx, audit.Meta{SourceIP: "203.0.113.7"})
		for i := range maxDevicesPerIP + 1 {
			_, err := s.StartDeviceSSO(ipCtx, "acme", "cli")
			if i < maxDevicesPerIP && err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if i == maxDevicesPerIP && !errors.Is(err, errdefs.ErrRateLimited) {
				t.Fatalf("request %d from one address: %v, want rate limited", i, err)
			}
		}
		var limited error
		for range maxUserCodeMissesByIP + 1 {
			_, limited = s.LookupDevice(ipCtx, "BBBB-BBBB")
		}
		if !errors.Is(limited, errdefs.ErrRateLimited) {
			t.Fatalf("wrong user codes from one address: %v, want rate limited", limited)
		}
	})
}

func FuzzNormalizeUserCode(f *testing.F) {
	for _, s := range []string{"BCDF-GHJK", "bcdf ghjk", "BCDFGHJK", "AAAA-AAAA", "", "ＢＣＤＦ-ＧＨＪＫ", "bcdf-ghjk-", strings.Repeat("-", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		code, err := NormalizeUserCode(raw)
		if err != nil {
			if errdefs.Field(err) != "user_code" {
				t.Fatalf("refusal %v does not name user_code", err)
			}
			return
		}
		if len(code) != userCodeLen || strings.Trim(code, UserCodeAlphabet) != "" {
			t.Fatalf("%q normalized to %q", raw, code)
		}
		if again, err := NormalizeUserCode(FormatUserCode(code)); err != nil || again != code {
			t.Fatalf("%q: formatted %q reads back as %q, %v", code, FormatUserCode(code), again, err)
		}
	})
}

// BenchmarkSSODeviceLogin measures one whole device login (freshet login --sso --device)
// without the CLI process and without its waits: the request, the verification page's approval
// through the provider (redirects, callback with code exchange and token verification) and the
// poll that opens the session (SQLite). The CLI's 5 s poll interval is not in it: the server's
// clock is moved past it instead. Compare with BenchmarkSSOLogin and BenchmarkSSOCLILogin:
// go test -run '^$' -bench 'BenchmarkSSO' ./internal/identity/
func BenchmarkSSODeviceLogin(b *testing.B) {
	db := storetest.Open(b, store.SQLite)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log, Keys: secrets.Generate(), Net: netpolicy.Unrestricted()})
	s.devicesByAccount = newFailureLimiter(1 << 30) // the benchmark's logins are not an attack
	var skew atomic.Int64
	s.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	idp := startIdP(b)
	base := ssoFrontend(b, s)
	if _, err := s.Provision(ctx, "acme", "admin@acme.test", "admin-password"); err != nil {
		b.Fatal(err)
	}
	admin, err := s.Login(ctx, "admin@acme.test", "admin-password", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.SetSSO(ctx, admin.Principal, SSOConfigInput{Issuer: idp.Issuer(), ClientID: idp.ClientID, ClientSecret: idp.ClientSecret, AllowedDomains: []string{"acme.test"}}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		skew.Store(0)
		d, err := s.StartDeviceSSO(ctx, "acme", "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); deviceCode(err) != DevicePendingCode {
			b.Fatalf("first poll: %v", err)
		}
		u := mockUser("jane@acme.test", true)
		idp.QueueUser(&u)
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
		resp, err := c.Get(base + "/device/approve?" + url.Values{"user_code": {d.UserCode}}.Encode())
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("approval: %d", resp.StatusCode)
		}
		skew.Store(int64(DeviceInterval * time.Second))
		if _, err := s.PollDeviceSSO(ctx, d.DeviceCode); err != nil {
			b.Fatal(err)
		}
	}
}
