// Package client is the public Go client of the Freshet API. The freshet CLI talks to the
// server only through this package.
//
//	c := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("FRESHET_TOKEN")))
//	users, err := c.ListUsers(ctx, client.ListOptions{})
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds each request made with the default HTTP client.
const DefaultTimeout = 30 * time.Second

// Client calls one Freshet server.
type Client struct {
	base      string
	token     string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithToken authenticates requests with an API key or session token.
func WithToken(t string) Option { return func(c *Client) { c.token = t } }

// WithHTTPClient replaces the HTTP client (for custom TLS or timeouts).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the server at baseURL (scheme, host and port).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: &http.Client{Timeout: DefaultTimeout}, userAgent: "freshet-go-client"}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL returns the server URL.
func (c *Client) BaseURL() string { return c.base }

// Error is an error answered by the API.
type Error struct {
	Status    int
	Code      string `json:"code"`
	Message   string `json:"message"`
	Field     string `json:"field,omitempty"`
	RequestID string `json:"requestId,omitempty"`
}

func (e *Error) Error() string {
	return e.Message
}

// IsStatus reports whether err is an API error with HTTP status code.
func IsStatus(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == code
}

// newRequest builds an authenticated request; pathAndQuery is relative to the server URL.
func (c *Client) newRequest(ctx context.Context, method, pathAndQuery string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+pathAndQuery, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// readError turns an error response into an *Error.
func readError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb struct {
		Error Error `json:"error"`
	}
	if json.Unmarshal(data, &eb) != nil || eb.Error.Message == "" {
		eb.Error.Message = fmt.Sprintf("%s %s: %s", resp.Request.Method, resp.Request.URL.Path, resp.Status)
	}
	eb.Error.Status = resp.StatusCode
	return &eb.Error
}

func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	return c.doWith(ctx, method, path, query, nil, in, out)
}

// doWith is do with extra request headers.
func (c *Client) doWith(ctx context.Context, method, path string, query url.Values, header http.Header, in, out any) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = b
		header = header.Clone()
		if header == nil {
			header = http.Header{}
		}
		header.Set("Content-Type", "application/json")
	}
	return c.exchange(ctx, c.http, method, path, query, header, body, out)
}

// exchange sends one request (body already encoded, nil for none) with h and decodes the JSON
// answer into out, or the API's error body into an *Error.
func (c *Client) exchange(ctx context.Context, h *http.Client, method, path string, query url.Values, header http.Header, body []byte, out any) error {
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := c.newRequest(ctx, method, path, rd)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := h.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return readError(resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}

func listQuery(o ListOptions) url.Values {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.After != "" {
		q.Set("after", o.After)
	}
	return q
}

// Login opens a session with email and password. The returned token authenticates later calls.
func (c *Client) Login(ctx context.Context, r LoginRequest) (LoginResponse, error) {
	var out LoginResponse
	err := c.do(ctx, http.MethodPost, "/api/v1/auth/login", nil, r, &out)
	return out, err
}

// SSOToken exchanges a CLI single sign-on's one-time code and PKCE verifier for a session.
func (c *Client) SSOToken(ctx context.Context, r SSOTokenRequest) (LoginResponse, error) {
	var out LoginResponse
	err := c.do(ctx, http.MethodPost, "/auth/sso/token", nil, r, &out)
	return out, err
}

// StartDeviceLogin opens a device login into account (ID or name) through its single sign-on.
func (c *Client) StartDeviceLogin(ctx context.Context, account string) (DeviceAuthorization, error) {
	var out DeviceAuthorization
	err := c.do(ctx, http.MethodPost, "/auth/sso/"+url.PathEscape(account)+"/device", nil, nil, &out)
	return out, err
}

// PollDeviceLogin asks whether a device login is approved: the session, or an *Error whose
// Code is authorization_pending, slow_down, expired_token or access_denied.
func (c *Client) PollDeviceLogin(ctx context.Context, deviceCode string) (LoginResponse, error) {
	var out LoginResponse
	err := c.do(ctx, http.MethodPost, "/auth/sso/device/token", nil, DeviceTokenRequest{DeviceCode: deviceCode}, &out)
	return out, err
}

// Logout ends the session the client's token belongs to.
func (c *Client) Logout(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/api/v1/auth/logout", nil, struct{}{}, nil)
}

// SwitchAccount moves the session to another account the user belongs to.
func (c *Client) SwitchAccount(ctx context.Context, account string) (Me, error) {
	var out Me
	err := c.do(ctx, http.MethodPost, "/api/v1/auth/switch-account", nil, SwitchAccountRequest{Account: account}, &out)
	return out, err
}

// Me describes the caller.
func (c *Client) Me(ctx context.Context) (Me, error) {
	var out Me
	err := c.do(ctx, http.MethodGet, "/api/v1/me", nil, nil, &out)
	return out, err
}

// Account returns the caller's account.
func (c *Client) Account(ctx context.Context) (Account, error) {
	var out Account
	err := c.do(ctx, http.MethodGet, "/api/v1/account", nil, nil, &out)
	return out, err
}

// CreateAccount creates an account with the caller as its admin. Switch to it with SwitchAccount.
func (c *Client) CreateAccount(ctx context.Context, name string) (Account, error) {
	var out Account
	err := c.do(ctx, http.MethodPost, "/api/v1/accounts", nil, CreateAccountRequest{Name: name}, &out)
	return out, err
}

// DeleteAccount deletes the caller's current account and everything in it (its admins only);
// confirm must be the account's name. The caller's session and keys in it stop working.
func (c *Client) DeleteAccount(ctx context.Context, confirm string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/account", url.Values{"confirm": {confirm}}, nil, nil)
}

// ListUsers returns one page of the account's users.
func (c *Client) ListUsers(ctx context.Context, o ListOptions) (List[User], error) {
	var out List[User]
	err := c.do(ctx, http.MethodGet, "/api/v1/users", listQuery(o), nil, &out)
	return out, err
}

// GetUser returns one user of the account.
func (c *Client) GetUser(ctx context.Context, id string) (User, error) {
	var out User
	err := c.do(ctx, http.MethodGet, "/api/v1/users/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// CreateUser adds a user to the account.
func (c *Client) CreateUser(ctx context.Context, r CreateUserRequest) (CreatedUser, error) {
	var out CreatedUser
	err := c.do(ctx, http.MethodPost, "/api/v1/users", nil, r, &out)
	return out, err
}

// UpdateUser changes a user's role.
func (c *Client) UpdateUser(ctx context.Context, id string, r UpdateUserRequest) (User, error) {
	var out User
	err := c.do(ctx, http.MethodPatch, "/api/v1/users/"+url.PathEscape(id), nil, r, &out)
	return out, err
}

// DeleteUser removes a user from the account.
func (c *Client) DeleteUser(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/users/"+url.PathEscape(id), nil, nil, nil)
}

// ListInvitations lists the invitations to other accounts the caller's user has not answered.
func (c *Client) ListInvitations(ctx context.Context) (List[Invitation], error) {
	var out List[Invitation]
	err := c.do(ctx, http.MethodGet, "/api/v1/invitations", nil, nil, &out)
	return out, err
}

// AcceptInvitation joins the account that invited the caller's user (a session only).
func (c *Client) AcceptInvitation(ctx context.Context, id string) (AccountMembership, error) {
	var out AccountMembership
	err := c.do(ctx, http.MethodPost, "/api/v1/invitations/"+url.PathEscape(id)+"/accept", nil, struct{}{}, &out)
	return out, err
}

// DeclineInvitation declines an invitation of the caller's user (a session only).
func (c *Client) DeclineInvitation(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/api/v1/invitations/"+url.PathEscape(id)+"/decline", nil, struct{}{}, nil)
}

// CreateAPIKey creates an API key; the token is in the result only.
func (c *Client) CreateAPIKey(ctx context.Context, r CreateAPIKeyRequest) (CreatedAPIKey, error) {
	var out CreatedAPIKey
	err := c.do(ctx, http.MethodPost, "/api/v1/apikeys", nil, r, &out)
	return out, err
}

// ListAPIKeys returns one page of API keys (all of the account's for admins, one's own otherwise).
func (c *Client) ListAPIKeys(ctx context.Context, o ListOptions) (List[APIKey], error) {
	var out List[APIKey]
	err := c.do(ctx, http.MethodGet, "/api/v1/apikeys", listQuery(o), nil, &out)
	return out, err
}

// RevokeAPIKey revokes an API key.
func (c *Client) RevokeAPIKey(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/apikeys/"+url.PathEscape(id), nil, nil, nil)
}

// ListAudit returns one page of audit records, newest first.
func (c *Client) ListAudit(ctx context.Context, f AuditFilter) (List[AuditEvent], error) {
	q := listQuery(f.ListOptions)
	for k, v := range map[string]string{"actor": f.Actor, "action": f.Action, "resourceType": f.ResourceType, "resourceId": f.ResourceID, "result": f.Result} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.Format(time.RFC3339Nano))
	}
	var out List[AuditEvent]
	err := c.do(ctx, http.MethodGet, "/api/v1/audit", q, nil, &out)
	return out, err
}

// GraphQLError is one error of a GraphQL response.
type GraphQLError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// GraphQLErrors are the errors a GraphQL query answered.
type GraphQLErrors []GraphQLError

func (e GraphQLErrors) Error() string {
	msgs := make([]string, len(e))
	for i, x := range e {
		msgs[i] = x.Message
	}
	return "graphql: " + strings.Join(msgs, "; ")
}

// GraphQL runs query with variables and decodes its data into out.
func (c *Client) GraphQL(ctx context.Context, query string, variables map[string]any, out any) error {
	var resp struct {
		Data   json.RawMessage `json:"data"`
		Errors GraphQLErrors   `json:"errors"`
	}
	in := map[string]any{"query": query, "variables": variables}
	if err := c.do(ctx, http.MethodPost, "/api/graphql", nil, in, &resp); err != nil {
		return err
	}
	if len(resp.Errors) > 0 {
		return resp.Errors
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(resp.Data, out)
}

// Health reports whether the server is ready to serve.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/readyz", nil, nil, nil)
}

// ListRuntimes lists the account's runtimes.
func (c *Client) ListRuntimes(ctx context.Context) (List[Runtime], error) {
	var out List[Runtime]
	err := c.do(ctx, http.MethodGet, "/api/v1/runtimes", nil, nil, &out)
	return out, err
}

// GetRuntime returns a runtime by name or ID.
func (c *Client) GetRuntime(ctx context.Context, name string) (Runtime, error) {
	var out Runtime
	err := c.do(ctx, http.MethodGet, "/api/v1/runtimes/"+url.PathEscape(name), nil, nil, &out)
	return out, err
}

// RegisterRuntime registers a hybrid runtime; the token is in the result only.
func (c *Client) RegisterRuntime(ctx context.Context, r RegisterRuntimeRequest) (RegisteredRuntime, error) {
	var out RegisteredRuntime
	err := c.do(ctx, http.MethodPost, "/api/v1/runtimes", nil, r, &out)
	return out, err
}

// CreateHostedRuntime provisions the account's hosted runtime (one per account, CD only).
func (c *Client) CreateHostedRuntime(ctx context.Context, name string) (Runtime, error) {
	var out Runtime
	err := c.do(ctx, http.MethodPost, "/api/v1/runtimes/hosted", nil, map[string]string{"name": name}, &out)
	return out, err
}

// RotateRuntimeToken gives a runtime a new token (shown once); the old one stops working.
func (c *Client) RotateRuntimeToken(ctx context.Context, name string) (RegisteredRuntime, error) {
	var out RegisteredRuntime
	err := c.do(ctx, http.MethodPost, "/api/v1/runtimes/"+url.PathEscape(name)+"/token", nil, struct{}{}, &out)
	return out, err
}

// SetRuntimeOwner gives a runtime (and its clusters, applications, git sources and workflows)
// to team (name or ID; empty: no team).
func (c *Client) SetRuntimeOwner(ctx context.Context, name, team string) (Runtime, error) {
	var out Runtime
	err := c.do(ctx, http.MethodPut, "/api/v1/runtimes/"+url.PathEscape(name)+"/owner", nil, SetOwnerRequest{Team: team}, &out)
	return out, err
}

// ListRuntimesOwnedBy lists the runtimes team (name or ID) owns.
func (c *Client) ListRuntimesOwnedBy(ctx context.Context, team string) (List[Runtime], error) {
	var out List[Runtime]
	err := c.do(ctx, http.MethodGet, "/api/v1/runtimes", url.Values{"owner": {team}}, nil, &out)
	return out, err
}

// DeleteRuntime deregisters a runtime.
func (c *Client) DeleteRuntime(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/runtimes/"+url.PathEscape(name), nil, nil, nil)
}
