package client

import "time"

// Account is a tenant.
type Account struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// AccountMembership is an account the caller belongs to, with their role there.
type AccountMembership struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// User is a member of the caller's account.
type User struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"createdAt"`
}

// Me describes the caller.
type Me struct {
	User     User                `json:"user"`
	Account  Account             `json:"account"`
	Role     string              `json:"role"`
	Via      string              `json:"via"` // "session" or "apikey"
	Accounts []AccountMembership `json:"accounts"`
}

// APIKey is an API key as listed; its secret is never returned after creation.
type APIKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Role       string     `json:"role"`
	UserID     string     `json:"userId"`
	Status     string     `json:"status"` // active, expired, revoked
	CreatedAt  time.Time  `json:"createdAt"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
}

// CreatedAPIKey is a new API key with its token, shown once.
type CreatedAPIKey struct {
	APIKey
	Token string `json:"token"`
}

// AuditEvent is one audit record.
type AuditEvent struct {
	ID           string    `json:"id"`
	Time         time.Time `json:"time"`
	ActorID      string    `json:"actorId,omitempty"`
	Actor        string    `json:"actor"`
	Action       string    `json:"action"`
	ResourceType string    `json:"resourceType"`
	ResourceID   string    `json:"resourceId,omitempty"`
	Result       string    `json:"result"`
	RequestID    string    `json:"requestId,omitempty"`
	SourceIP     string    `json:"sourceIp,omitempty"`
	Detail       string    `json:"detail,omitempty"`
}

// List is one page of a collection. NextCursor, when set, fetches the next page.
type List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// LoginRequest logs in with a password.
type LoginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Account  string `json:"account,omitempty"` // ID or name; default: the user's first account
}

// LoginResponse is a new session.
type LoginResponse struct {
	Token     string    `json:"token"`
	CSRFToken string    `json:"csrfToken"`
	ExpiresAt time.Time `json:"expiresAt"`
	Me        Me        `json:"me"`
}

// SSOTokenRequest exchanges the one-time code a CLI single sign-on sent the CLI's loopback
// listener, with the PKCE verifier whose challenge the CLI started the login with, for a
// session (POST /auth/sso/token; the answer is a LoginResponse).
type SSOTokenRequest struct {
	Code     string `json:"code"`
	Verifier string `json:"verifier"`
}

// DeviceAuthorization is a new device login (freshet login --sso --device; POST
// /auth/sso/{account}/device, RFC 8628 §3.2 in this API's spelling): the CLI polls with
// deviceCode; a person opens verificationUri in any browser, enters userCode (XXXX-XXXX) —
// or opens verificationUriComplete, which carries it — confirms, and logs in through the
// account's single sign-on.
type DeviceAuthorization struct {
	DeviceCode              string `json:"deviceCode"`
	UserCode                string `json:"userCode"`
	Account                 string `json:"account"` // the account's name
	VerificationURI         string `json:"verificationUri"`
	VerificationURIComplete string `json:"verificationUriComplete"`
	ExpiresIn               int    `json:"expiresIn"` // seconds
	Interval                int    `json:"interval"`  // seconds to wait between polls
}

// DeviceTokenRequest polls a device login (POST /auth/sso/device/token): the answer is a
// LoginResponse once approved, else a 400 whose code is authorization_pending, slow_down
// (wait 5 s longer between polls from now on), expired_token or access_denied.
type DeviceTokenRequest struct {
	DeviceCode string `json:"deviceCode"`
}

// SSOConfig is an account's OpenID Connect single sign-on as admins see it (never the secret).
type SSOConfig struct {
	Issuer          string    `json:"issuer"`
	ClientID        string    `json:"clientId"`
	ClientSecretSet bool      `json:"clientSecretSet"`
	Scopes          []string  `json:"scopes"`
	EmailClaim      string    `json:"emailClaim"`
	NameClaim       string    `json:"nameClaim"`
	GroupsClaim     string    `json:"groupsClaim"`
	AllowedDomains  []string  `json:"allowedDomains"`
	RequireSSO      bool      `json:"requireSso"`
	BreakGlass      string    `json:"breakGlass,omitempty"` // the admin's email
	LoginURL        string    `json:"loginUrl"`             // where members start a login
	UpdatedAt       time.Time `json:"updatedAt"`
}

// SSOConfigRequest sets an account's single sign-on. An empty clientSecret keeps the stored one;
// empty scopes and claims take the defaults (openid email profile; email, name, groups).
type SSOConfigRequest struct {
	Issuer         string   `json:"issuer"`
	ClientID       string   `json:"clientId"`
	ClientSecret   string   `json:"clientSecret,omitempty"`
	Scopes         []string `json:"scopes,omitempty"`
	EmailClaim     string   `json:"emailClaim,omitempty"`
	NameClaim      string   `json:"nameClaim,omitempty"`
	GroupsClaim    string   `json:"groupsClaim,omitempty"`
	AllowedDomains []string `json:"allowedDomains"`
	RequireSSO     bool     `json:"requireSso,omitempty"`
	BreakGlass     string   `json:"breakGlass,omitempty"` // email or user ID of an admin; required with requireSso
}

// CreateAccountRequest creates an account with the caller as its admin.
type CreateAccountRequest struct {
	Name string `json:"name"`
}

// SwitchAccountRequest moves a session to another account.
type SwitchAccountRequest struct {
	Account string `json:"account"`
}

// CreateUserRequest adds a user to the caller's account.
type CreateUserRequest struct {
	Email    string `json:"email"`
	Name     string `json:"name,omitempty"`
	Role     string `json:"role"`
	Password string `json:"password,omitempty"`
}

// CreatedUser is a new member; Password is set once when the server generated it. When the
// email already had a login, the user was invited instead and joins on accepting; the answer
// looks the same (and the password is not theirs to use).
type CreatedUser struct {
	User
	Password string `json:"password,omitempty"`
}

// Invitation asks the caller's user to join another account (an admin there added their
// email). Only the invited user sees it, and accepts or declines it.
type Invitation struct {
	ID        string    `json:"id"`
	Account   Account   `json:"account"`
	Role      string    `json:"role"`
	InvitedBy string    `json:"invitedBy"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// UpdateUserRequest changes a member.
type UpdateUserRequest struct {
	Role string `json:"role"`
}

// CreateAPIKeyRequest creates an API key.
type CreateAPIKeyRequest struct {
	Name string `json:"name"`
	Role string `json:"role,omitempty"`
	// ExpiresIn is a Go duration ("720h"); "0" means never; empty means the server default (90 days).
	ExpiresIn string `json:"expiresIn,omitempty"`
}

// ListOptions pages through a collection.
type ListOptions struct {
	Limit int
	After string
}

// AuditFilter narrows an audit listing.
type AuditFilter struct {
	ListOptions
	Actor        string
	Action       string // exact, or a prefix such as "user.*"
	ResourceType string
	ResourceID   string
	Result       string
	Since        time.Time
	Until        time.Time
}

// Runtime is a GitOps runtime.
type Runtime struct {
	ID            string             `json:"id"`
	Name          string             `json:"name"`
	Type          string             `json:"type"`       // hybrid or hosted
	AccessMode    string             `json:"accessMode"` // ingress or tunnel
	IngressURL    string             `json:"ingressUrl,omitempty"`
	Repo          string             `json:"repo,omitempty"`
	Version       string             `json:"version,omitempty"`
	Status        string             `json:"status"` // installing, healthy, degraded, disconnected
	LastHeartbeat *time.Time         `json:"lastHeartbeat,omitempty"`
	Capabilities  []string           `json:"capabilities,omitempty"`
	Components    []RuntimeComponent `json:"components,omitempty"`
	Clusters      []RuntimeCluster   `json:"clusters,omitempty"`
	GitSources    []string           `json:"gitSources,omitempty"`
	CreatedAt     time.Time          `json:"createdAt"`
	OwnerTeam     string             `json:"ownerTeam,omitempty"` // the team that owns it (and what it holds)
	// VersionSkew is how its version stands to the control plane's; absent before it reported
	// one.
	VersionSkew *VersionSkew `json:"versionSkew,omitempty"`
	// TokenExpiresAt is when its token stops working (the server's --runtime-token-ttl after
	// register or rotate-token); absent: never.
	TokenExpiresAt *time.Time `json:"tokenExpiresAt,omitempty"`
	// TokenRefusal is the last refused handshake or heartbeat of its own token (expired, or
	// replaced by rotate-token), until the runtime connects with a working one; absent: none.
	TokenRefusal *RuntimeRefusal `json:"tokenRefusal,omitempty"`
}

// RuntimeRefusal is a runtime's refused handshake or heartbeat.
type RuntimeRefusal struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`           // what the runtime was told, with what to do
	Remote string    `json:"remote,omitempty"` // the address it came from
	// Kind is why: "expired" (its token's time ran out) or "replaced" (rotate-token gave it
	// a new one, which the runtime does not use yet).
	Kind string `json:"kind"`
}

// VersionSkew is how a runtime's or runner's version stands to the control plane's under the
// version skew policy: agents may lag by one minor version.
type VersionSkew struct {
	Status  string `json:"status"` // current, outdated (one minor behind), unsupported (refused) or unknown (a development build)
	Agent   string `json:"agent"`  // the runtime's or runner's version
	Server  string `json:"server"` // the control plane's version
	Message string `json:"message,omitempty"`
}

// RuntimeComponent is a part of a runtime and its health.
type RuntimeComponent struct {
	Name    string `json:"name"`
	Health  string `json:"health"`
	Message string `json:"message,omitempty"`
	Version string `json:"version,omitempty"`
}

// RuntimeCluster is a cluster a runtime deploys to.
type RuntimeCluster struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Health string `json:"health,omitempty"`
}

// RegisterRuntimeRequest registers a hybrid runtime.
type RegisterRuntimeRequest struct {
	Name        string `json:"name"`
	AccessMode  string `json:"accessMode,omitempty"`
	IngressHost string `json:"ingressHost,omitempty"`
	Repo        string `json:"repo,omitempty"`
	Team        string `json:"team,omitempty"` // the owner team (name or ID)
}

// RegisteredRuntime is a runtime with its token, shown once.
type RegisteredRuntime struct {
	Runtime
	Token string `json:"token"`
}
