package identity

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
)

// The device flow of single sign-on (freshet login --sso --device): RFC 8628 with the control
// plane as the device-authorization server, so any identity provider an account uses works,
// whether or not it supports device grants itself.
const (
	DeviceTTL          = 10 * time.Minute // how long a device request may wait for its approval
	DeviceInterval     = 5                // seconds between polls at first
	deviceSlowDownStep = 5                // seconds added to the interval at each too-early poll
	maxDeviceInterval  = 60
	// UserCodeAlphabet is the letters of user codes: consonants without vowels (no words) and
	// without letters read as digits (RFC 8628 §6.1's example set).
	UserCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"
	userCodeLen      = 8 // 20^8 ≈ 2^34.6 codes, of which a few hundred are live at once
	maxDeviceAgent   = 120
	// Creation rate limits per source address and per account within loginWindow, and wrong
	// user codes allowed per source address.
	maxDevicesPerIP       = 20
	maxDevicesPerAccount  = 100
	maxUserCodeMissesByIP = 20
)

// DeviceError is one of RFC 8628's answers to a poll that opens no session: its code is
// authorization_pending or slow_down (HTTP 400 as §3.5 says: try again), or expired_token or
// access_denied (HTTP 401, as this API answers every refused login: the poll is over).
type DeviceError struct {
	Code    string
	Message string
}

// RFC 8628 §3.5 error codes.
const (
	DevicePendingCode  = "authorization_pending"
	DeviceSlowDownCode = "slow_down"
	DeviceExpiredCode  = "expired_token"
	DeviceDeniedCode   = "access_denied"
)

func (e *DeviceError) Error() string     { return e.Message }
func (e *DeviceError) ErrorCode() string { return e.Code }
func (e *DeviceError) HTTPStatus() int {
	if e.Code == DeviceExpiredCode || e.Code == DeviceDeniedCode {
		return http.StatusUnauthorized
	}
	return http.StatusBadRequest
}

// Unwrap makes a refusal (denied, expired) ErrUnauthenticated; pending and slow_down are
// ErrInvalid (try again).
func (e *DeviceError) Unwrap() error {
	if e.Code == DeviceExpiredCode || e.Code == DeviceDeniedCode {
		return errdefs.ErrUnauthenticated
	}
	return errdefs.ErrInvalid
}

// DeviceAuthorization is a new device request: DeviceCode is the CLI's secret to poll with,
// UserCode (XXXX-XXXX) what the person types at the verification page.
type DeviceAuthorization struct {
	DeviceCode string
	UserCode   string
	Account    Account
	ExpiresAt  time.Time
	Interval   int // seconds
}

// FormatUserCode writes a normalized user code as XXXX-XXXX.
func FormatUserCode(code string) string {
	if len(code) != userCodeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// NormalizeUserCode reads a user code as a person types it: any case, with or without the dash
// and spaces. It returns the 8 letters of UserCodeAlphabet in upper case, or an error naming
// user_code.
func NormalizeUserCode(raw string) (string, error) {
	bad := errdefs.Invalid("user_code", raw, "is not a user code: 8 letters of "+UserCodeAlphabet+" as your terminal shows them (XXXX-XXXX)")
	if len(raw) > 64 {
		return "", bad
	}
	var b strings.Builder
	for _, r := range raw {
		switch {
		case r == '-' || unicode.IsSpace(r):
			continue
		case r >= 'a' && r <= 'z':
			r -= 'a' - 'A'
		}
		if r > unicode.MaxASCII || !strings.ContainsRune(UserCodeAlphabet, r) {
			return "", bad
		}
		b.WriteRune(r)
	}
	if b.Len() != userCodeLen {
		return "", bad
	}
	return b.String(), nil
}

func newUserCode() string {
	b := make([]byte, userCodeLen)
	out := make([]byte, userCodeLen)
	for i := 0; i < userCodeLen; {
		_, _ = rand.Read(b) // never fails (crypto/rand)
		for _, c := range b {
			if c >= 240 { // 240 = 12×20: no modulo bias
				continue
			}
			out[i] = UserCodeAlphabet[int(c)%len(UserCodeAlphabet)]
			i++
			if i == userCodeLen {
				break
			}
		}
	}
	return string(out)
}

// accountByRef resolves an account ID or name; an unknown one is invalid "account".
func (s *Service) accountByRef(ctx context.Context, ref string) (store.Account, error) {
	a, err := s.db.GetAccount(ctx, ref)
	if errors.Is(err, errdefs.ErrNotFound) {
		a, err = s.db.AccountByName(ctx, ref)
	}
	if errors.Is(err, errdefs.ErrNotFound) {
		return a, errdefs.Invalid("account", ref, "is not an account")
	}
	return a, err
}

// StartDeviceSSO opens a device request for account (ID or name), which must have single
// sign-on. agent is the requester's User-Agent, shown on the verification page with its source
// address. Requests are limited per source address and per account.
func (s *Service) StartDeviceSSO(ctx context.Context, account, agent string) (out DeviceAuthorization, err error) {
	a, err := s.accountByRef(ctx, account)
	if err != nil {
		return DeviceAuthorization{}, err
	}
	if _, err := s.db.GetSSOConfig(ctx, a.ID); errors.Is(err, errdefs.ErrNotFound) {
		return DeviceAuthorization{}, errdefs.Invalid("account", account, "has no single sign-on configured: an admin sets it with PUT /api/v1/sso")
	} else if err != nil {
		return DeviceAuthorization{}, err
	}
	now := s.now()
	ip := audit.MetaFrom(ctx).SourceIP
	if ip != "" {
		if ok, wait := s.devicesByIP.reserve(ip, now); !ok {
			return DeviceAuthorization{}, errdefs.RetryAfter(fmt.Errorf("too many device logins from %s: try again in %s: %w", ip, wait.Round(time.Second), errdefs.ErrRateLimited), wait)
		}
	}
	if ok, wait := s.devicesByAccount.reserve(a.ID, now); !ok {
		return DeviceAuthorization{}, errdefs.RetryAfter(fmt.Errorf("too many device logins into account %s: try again in %s: %w", a.Name, wait.Round(time.Second), errdefs.ErrRateLimited), wait)
	}
	agent = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, agent)
	if len(agent) > maxDeviceAgent {
		agent = agent[:maxDeviceAgent]
	}
	deviceCode := randomString()
	for attempt := 0; ; attempt++ {
		userCode := newUserCode()
		d := store.SSODevice{DeviceHash: token.Hash(deviceCode), UserCodeHash: token.Hash(userCode), AccountID: a.ID, ClientIP: ip,
			ClientAgent: agent, CreatedAt: now, ExpiresAt: now.Add(DeviceTTL), Interval: DeviceInterval}
		e := audit.Start(ctx, rbac.Principal{}, "auth.sso-device-request", "account", a.ID)
		e.Account(a.ID)
		err = s.db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.DeleteExpiredSSODevices(ctx, now); err != nil {
				return err
			}
			if err := tx.CreateSSODevice(ctx, d); err != nil {
				return err
			}
			e.Detail("device login requested from %s (%s); expires %s", ip, agent, d.ExpiresAt.Format(time.RFC3339))
			return e.Commit(ctx, tx)
		})
		if errors.Is(err, errdefs.ErrConflict) && attempt < 3 {
			continue // a user code in use: draw another
		}
		if err != nil {
			return DeviceAuthorization{}, err
		}
		return DeviceAuthorization{DeviceCode: deviceCode, UserCode: FormatUserCode(userCode), Account: accountOf(a), ExpiresAt: d.ExpiresAt, Interval: DeviceInterval}, nil
	}
}

// DeviceRequest is a pending device request as the verification page shows it.
type DeviceRequest struct {
	UserCode    string // XXXX-XXXX
	Account     Account
	ClientIP    string
	ClientAgent string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

var errUserCode = errdefs.Invalid("user_code", "", "is not a pending device login: check the code your terminal shows (it expires after 10 minutes), or run freshet login --sso --device again")

// pendingDevice finds the pending, unexpired request of userCode. Wrong codes count against
// the source address, so codes cannot be guessed at.
func (s *Service) pendingDevice(ctx context.Context, userCode string) (store.SSODevice, string, error) {
	code, err := NormalizeUserCode(userCode)
	if err != nil {
		return store.SSODevice{}, "", err
	}
	now := s.now()
	ip := audit.MetaFrom(ctx).SourceIP
	if ip != "" {
		if ok, wait := s.userCodeMisses.reserve(ip, now); !ok {
			return store.SSODevice{}, "", errdefs.RetryAfter(fmt.Errorf("too many wrong user codes: try again in %s: %w", wait.Round(time.Second), errdefs.ErrRateLimited), wait)
		}
	}
	var d store.SSODevice
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		d, err = tx.SSODeviceByUserCode(ctx, token.Hash(code))
		return err
	})
	if errors.Is(err, errdefs.ErrNotFound) || (err == nil && (d.Status != store.DevicePending || now.After(d.ExpiresAt))) {
		return store.SSODevice{}, "", errUserCode
	}
	if err != nil {
		return store.SSODevice{}, "", err
	}
	if ip != "" {
		s.userCodeMisses.release(ip, now)
	}
	return d, code, nil
}

// LookupDevice returns the pending request of userCode for the verification page to show.
func (s *Service) LookupDevice(ctx context.Context, userCode string) (DeviceRequest, error) {
	d, code, err := s.pendingDevice(ctx, userCode)
	if err != nil {
		return DeviceRequest{}, err
	}
	a, err := s.db.GetAccount(ctx, d.AccountID)
	if err != nil {
		return DeviceRequest{}, err
	}
	return DeviceRequest{UserCode: FormatUserCode(code), Account: accountOf(a), ClientIP: d.ClientIP, ClientAgent: d.ClientAgent,
		CreatedAt: d.CreatedAt, ExpiresAt: d.ExpiresAt}, nil
}

// ApproveDeviceSSO starts the login through the account's identity provider that approves the
// pending request of userCode, after the person confirmed it on the verification page. It
// returns the URL to send the browser to; the callback (FinishSSO) approves the request for the
// user the provider vouches for, or denies it with the reason single sign-on refuses them.
func (s *Service) ApproveDeviceSSO(ctx context.Context, userCode, redirectURL string) (string, error) {
	d, _, err := s.pendingDevice(ctx, userCode)
	if err != nil {
		return "", err
	}
	return s.beginSSO(ctx, d.AccountID, redirectURL, 0, "", d.DeviceHash)
}

// DenyDeviceSSO denies the pending request of userCode: the person at the verification page
// did not start it. The CLI's next poll answers access_denied.
func (s *Service) DenyDeviceSSO(ctx context.Context, userCode string) (err error) {
	e := audit.Start(ctx, rbac.Principal{}, "auth.sso-device-deny", "account", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	d, _, err := s.pendingDevice(ctx, userCode)
	if err != nil {
		return err
	}
	e.Account(d.AccountID)
	e.Resource(d.AccountID)
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DenySSODevice(ctx, d.DeviceHash, "the request was denied at the verification page"); err != nil {
			return err
		}
		e.Detail("device login requested from %s (%s) denied at the verification page", d.ClientIP, d.ClientAgent)
		return e.Commit(ctx, tx)
	})
}

// denyDevice denies deviceHash's request, if still pending, with reason: the single sign-on
// that was to approve it refused.
func (s *Service) denyDevice(ctx context.Context, deviceHash, reason string) {
	err := s.db.Tx(context.WithoutCancel(ctx), func(tx *store.Tx) error { return tx.DenySSODevice(ctx, deviceHash, reason) })
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		s.log.Error("deny device login", "err", err)
	}
}

// FailSSO ends the login in flight of state when the identity provider answered the callback
// with an error instead of a code (the person declined, or the provider refused): a device
// request it was to approve is denied. It returns the refusal to show.
func (s *Service) FailSSO(ctx context.Context, state, code, description string) error {
	refusal := SSOProviderError(code, description)
	if state == "" || len(state) > 128 {
		return refusal
	}
	l, err := takeOnce(ctx, s, state, (*store.Tx).TakeSSOLogin, func(l store.SSOLogin) time.Time { return l.ExpiresAt }, errSSOState)
	if err == nil && l.DeviceHash != "" {
		s.denyDevice(ctx, l.DeviceHash, refusal.Error())
	}
	return refusal
}

// PollDeviceSSO answers the CLI's poll with deviceCode: the session once the request is
// approved (exactly once: a concurrent or later poll finds it gone), else a *DeviceError —
// authorization_pending, slow_down (polled sooner than the interval, which grows by 5 s),
// expired_token (expired, unknown or used) or access_denied (with the reason).
func (s *Service) PollDeviceSSO(ctx context.Context, deviceCode string) (res LoginResult, err error) {
	if deviceCode == "" || len(deviceCode) > 128 {
		return LoginResult{}, errdefs.Invalid("deviceCode", "", "is required: the device code POST /auth/sso/{account}/device answered (at most 128 characters)")
	}
	now := s.now()
	var outcome *DeviceError
	var opened bool
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		d, err := tx.GetSSODevice(ctx, token.Hash(deviceCode))
		if errors.Is(err, errdefs.ErrNotFound) {
			outcome = &DeviceError{DeviceExpiredCode, "the device code is unknown, expired or already used: run freshet login --sso --device again"}
			return nil
		}
		if err != nil {
			return err
		}
		if now.After(d.ExpiresAt) {
			outcome = &DeviceError{DeviceExpiredCode, "the device login expired before it was approved: run freshet login --sso --device again"}
			return tx.DeleteSSODevice(ctx, d.DeviceHash, d.Status)
		}
		switch d.Status {
		case store.DeviceDenied:
			outcome = &DeviceError{DeviceDeniedCode, "the device login was denied: " + d.Reason}
			return tx.DeleteSSODevice(ctx, d.DeviceHash, d.Status)
		case store.DevicePending:
			interval := d.Interval
			if !d.LastPollAt.IsZero() && now.Sub(d.LastPollAt) < time.Duration(d.Interval)*time.Second {
				interval = min(d.Interval+deviceSlowDownStep, maxDeviceInterval)
				outcome = &DeviceError{DeviceSlowDownCode, fmt.Sprintf("polled sooner than every %d s: wait %d s between polls", d.Interval, interval)}
			} else {
				outcome = &DeviceError{DevicePendingCode, "waiting for the approval at the verification page"}
			}
			return tx.PollSSODevice(ctx, d.DeviceHash, now, interval)
		case store.DeviceApproved:
			if err := tx.DeleteSSODevice(ctx, d.DeviceHash, store.DeviceApproved); err != nil {
				return err // ErrNotFound: a concurrent poll took it
			}
			res, err = s.openApprovedSession(ctx, tx, d.AccountID, d.UserID, now, fmt.Sprintf("issuer %s, through the CLI (device flow, requested from %s)", d.Issuer, d.ClientIP))
			opened = err == nil
			return err
		}
		return fmt.Errorf("device request in unknown status %q", d.Status)
	})
	switch {
	case errors.Is(err, errdefs.ErrNotFound) && !opened:
		return LoginResult{}, &DeviceError{DeviceExpiredCode, "the device code is unknown, expired or already used: run freshet login --sso --device again"}
	case err != nil:
		if errors.Is(err, errdefs.ErrUnauthenticated) {
			return LoginResult{}, &DeviceError{DeviceDeniedCode, err.Error()}
		}
		return LoginResult{}, err
	case outcome != nil:
		return LoginResult{}, outcome
	}
	return res, nil
}

// openApprovedSession opens, on tx, the session of a CLI login single sign-on vouched for
// (userID in accountID): the account must still have single sign-on and the user still be a
// member. It is SSO-bound and audited as auth.sso-login with detail.
func (s *Service) openApprovedSession(ctx context.Context, tx *store.Tx, accountID, userID string, now time.Time, detail string) (LoginResult, error) {
	if _, err := tx.GetSSOConfig(ctx, accountID); errors.Is(err, errdefs.ErrNotFound) {
		return LoginResult{}, ssoRefused("the account no longer has single sign-on")
	} else if err != nil {
		return LoginResult{}, err
	}
	u, err := tx.GetUser(ctx, userID)
	if err != nil {
		return LoginResult{}, err
	}
	m, err := tx.GetMember(ctx, accountID, userID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return LoginResult{}, ssoRefused("%s is no longer a member of this account", u.Email)
	}
	if err != nil {
		return LoginResult{}, err
	}
	res, _, err := s.openSSOSession(ctx, tx, accountID, u, m.Role, now, detail)
	return res, err
}
