// Package runtimes is the control plane's runtime registry: hybrid runtimes that customers
// install in their clusters (many per account, CI and CD) and the hosted runtime the platform
// runs for an account (one per account, CD only). Each runtime has a token, hashed at rest,
// rotatable and scoped to that runtime; it reports over the runtime protocol (api/runtimev1)
// and is marked disconnected when its heartbeats stop.
//
// It also keeps what runtimes report of their GitOps applications (Report): the applications'
// state for listing and filtering without asking the runtime, and finished syncs as deployment
// records, published on the bus once each. Live detail (the resource tree) is read from the
// runtime through its tunnel, and verified git push webhooks are passed on to the account's
// runtimes so that their applications refresh at once.
//
// Its services hand out its own types (Runtime, Application, Deployment, AppCounts), decoded
// from the store's rows in one place each; the API layers only map them to their wire types.
// Store lists what it needs of the store.
package runtimes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
	"github.com/freshet-dev/freshet/internal/version"
	"github.com/freshet-dev/freshet/internal/webhook"
)

// Runtime types, access modes and statuses.
const (
	TypeHybrid = "hybrid"
	TypeHosted = "hosted"

	AccessIngress = "ingress"
	AccessTunnel  = "tunnel"

	StatusInstalling   = "installing"
	StatusHealthy      = "healthy"
	StatusDegraded     = "degraded"
	StatusDisconnected = "disconnected"
)

// ErrCDOnly is returned for CI and workflow features asked of a hosted runtime.
var ErrCDOnly = fmt.Errorf("hosted runtimes are CD only: run CI and workflows on a hybrid runtime: %w", errdefs.ErrInvalid)

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// Runtime is a registered runtime with what it last reported. Its token is not part of it:
// Register, CreateHosted and RotateToken return a new one once.
type Runtime struct {
	ID, AccountID, Name string
	Type                string // TypeHybrid or TypeHosted
	AccessMode          string // AccessTunnel or AccessIngress
	IngressURL          string // ingress mode: the URL its app-proxy is reachable at
	Repo                string // its installation repository
	Version             string // the version it last reported
	Status              string // StatusInstalling, StatusHealthy, StatusDegraded or StatusDisconnected
	// Info is what its last heartbeat reported: empty before the first.
	Info
	LastHeartbeat time.Time // zero before the first heartbeat
	CreatedAt     time.Time
	// OwnerTeam is the name of the team that owns the runtime (and its clusters, applications,
	// git sources and workflows); empty when none does.
	OwnerTeam string
	// Skew is how its version stands to the control plane's (version.CheckSkew); zero before
	// it reported one.
	Skew version.Skew
	// TokenExpiresAt is when its token stops working (Deps.TokenTTL after it was minted);
	// zero: never.
	TokenExpiresAt time.Time
	// Refusal is the last time its own token was refused (expired, or replaced by a
	// rotation), until the token works again; nil: none.
	Refusal *Refusal
}

// Refusal is a refused handshake or heartbeat of a runtime's own token.
type Refusal struct {
	At     time.Time
	Kind   string // RefusedExpired or RefusedReplaced
	Reason string // what the runtime was told, like "runtime token of edge expired at …"
	Remote string // the address it came from
}

// RefusedError is Authenticate's error for a token that was once the runtime's own: it has
// expired, or a rotation replaced it. It is errdefs.ErrUnauthenticated; its message tells the
// runtime's operator what to do.
type RefusedError struct {
	RuntimeID, AccountID, Name string
	Kind                       string // RefusedExpired or RefusedReplaced
	Reason                     string
}

// Kinds of refusal of a runtime's own token.
const (
	RefusedExpired  = "expired"
	RefusedReplaced = "replaced"
)

func (e *RefusedError) Error() string { return e.Reason }

// Unwrap makes it errdefs.ErrUnauthenticated.
func (e *RefusedError) Unwrap() error { return errdefs.ErrUnauthenticated }

// Info is what a runtime last reported in a heartbeat. It is stored as JSON.
type Info struct {
	Capabilities []string              `json:"capabilities,omitempty"`
	Components   []runtimev1.Component `json:"components,omitempty"`
	Clusters     []runtimev1.Cluster   `json:"clusters,omitempty"`
	GitSources   []string              `json:"gitSources,omitempty"`
}

// InClusterName is the cluster a runtime runs in (gitops/engine.InClusterName): not a managed
// cluster, so the clusters-per-runtime limit does not count it.
const InClusterName = "in-cluster"

// managed names the managed clusters of a runtime's reported clusters.
func managed(cs []runtimev1.Cluster) []string {
	var out []string
	for _, c := range cs {
		if c.Name != InClusterName {
			out = append(out, c.Name)
		}
	}
	return out
}

// ManagedClusters names the managed clusters (its own in-cluster not counted) that
// accountID's runtime runtimeID listed in its last heartbeat, read in tx: what the
// clusters-per-runtime limit counts (internal/billing Reserve).
func ManagedClusters(ctx context.Context, tx *store.Tx, accountID, runtimeID string) ([]string, error) {
	row, err := tx.GetRuntime(ctx, accountID, runtimeID)
	if err != nil {
		return nil, err
	}
	rt, err := runtimeFromRow(row)
	if err != nil {
		return nil, err
	}
	return managed(rt.Clusters), nil
}

// runtimeFromRow returns the runtime a row holds. When its stored report does not decode, the
// error says so and the runtime has everything but Info: what needs no report (deleting it,
// marking it disconnected, authenticating it) can go on.
func runtimeFromRow(r store.Runtime) (Runtime, error) {
	rt := Runtime{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Type: r.Type, AccessMode: r.AccessMode, IngressURL: r.IngressURL,
		Repo: r.Repo, Version: r.Version, Status: r.Status, LastHeartbeat: r.LastHeartbeat, CreatedAt: r.CreatedAt,
		OwnerTeam: r.OwnerTeam, TokenExpiresAt: r.TokenExpiresAt}
	if !r.RefusedAt.IsZero() {
		rt.Refusal = &Refusal{At: r.RefusedAt, Kind: r.RefusedKind, Reason: r.RefusedReason, Remote: r.RefusedRemote}
	}
	if r.Version != "" {
		rt.Skew = version.CheckSkew("runtime", r.Version, version.Current())
	}
	if r.Info == "" {
		return rt, nil
	}
	if err := json.Unmarshal([]byte(r.Info), &rt.Info); err != nil {
		rt.Info = Info{}
		return rt, fmt.Errorf("runtime %s: stored report: %w", r.Name, err)
	}
	return rt, nil
}

// runtimesFromRows returns the runtimes rows hold; a report that does not decode is an error.
func runtimesFromRows(rows []store.Runtime) ([]Runtime, error) {
	out := make([]Runtime, 0, len(rows))
	for _, r := range rows {
		rt, err := runtimeFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, rt)
	}
	return out, nil
}

// Provisioner runs hosted runtimes. The registry stores each hosted runtime's token encrypted
// with it (HostedCredentials), so a provisioner can start them all again after a restart.
// Provision is called after a hosted runtime is created or its token rotated, Deprovision after
// it is deleted; a provisioner also removes the hosted runtimes no longer stored (an account
// deleted).
type Provisioner interface {
	Provision(ctx context.Context, rt Runtime, token string) error
	Deprovision(ctx context.Context, rt Runtime) error
}

// Service is the runtime registry.
type Service struct {
	db          Store
	audit       *audit.Log
	keys        *secrets.Keyring
	log         *slog.Logger
	now         func() time.Time
	provisioner Provisioner
	tunnel      Tunnel
	// onEvents is called after a report queued bus events in the outbox.
	onEvents func()
	// onOwnerChange is called after a runtime changed owner team (see Deps).
	onOwnerChange func(accountID string)
	// onProjectRoles replaces the rules derived from a runtime's AppProject roles.
	onProjectRoles ProjectRolesFunc
	// limits admits hosted runtimes under the account's plan; nil: none.
	limits Limits
	// decoy verifies deliveries to accounts without a GitOps webhook (HandleWebhook).
	decoy webhook.Decoy
	// recentPushes are the payloads of GitOps webhook deliveries already notified.
	recentPushes *webhook.Recent
	// tokenTTL is how long the tokens of hybrid runtimes work; 0: forever.
	tokenTTL time.Duration
}

// Deps is what the registry is built from.
type Deps struct {
	Store Store            // the *store.DB
	Audit *audit.Log       // records every change
	Keys  *secrets.Keyring // encrypts the accounts' GitOps webhook secrets
	Log   *slog.Logger
	// Provisioner runs hosted runtimes; nil: none can be created.
	Provisioner Provisioner
	// Tunnel reaches connected runtimes (resource trees, push notifications); nil: those
	// answer that the runtime is unreachable.
	Tunnel Tunnel
	// OnEvents is called after a report queued bus events (finished syncs) in the outbox, to
	// wake the outbox relay; it must not block.
	OnEvents func()
	// Limits admits hosted runtimes under the account's plan (a *billing.Service); nil: no
	// limits beyond one hosted runtime per account.
	Limits Limits
	// OnOwnerChange is called after a runtime changed owner team, which may take away what rules
	// gave some of the account's members: streams held open there are checked again at once.
	OnOwnerChange func(accountID string)
	// OnProjectRoles replaces the rules derived from a runtime's AppProject roles after a
	// report listed them (identity.Service.SetDerivedRules); nil: roles are not enforced.
	OnProjectRoles ProjectRolesFunc
	// TokenTTL is how long a hybrid runtime's token works after Register or RotateToken minted
	// it (the operator's --runtime-token-ttl); 0: forever. Hosted runtimes' tokens, held by
	// the platform, and the token `freshet up` mints for its own runtime never expire.
	TokenTTL time.Duration
}

// New returns the registry built from d.
func New(d Deps) *Service {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var sealer webhook.Keyring // a nil *secrets.Keyring must stay a nil interface
	if d.Keys != nil {
		sealer = d.Keys
	}
	return &Service{db: d.Store, audit: d.Audit, keys: d.Keys, log: log, now: time.Now,
		provisioner: d.Provisioner, tunnel: d.Tunnel, onEvents: d.OnEvents, limits: d.Limits, onOwnerChange: d.OnOwnerChange, onProjectRoles: d.OnProjectRoles,
		decoy: webhook.NewDecoy(sealer), recentPushes: webhook.NewRecent(webhook.ReplayWindow, 0), tokenTTL: max(d.TokenTTL, 0)}
}

// Limits is the account's plan as the runtime registry asks it: Admit refuses, in the
// transaction that creates a hosted runtime, one more than the plan allows.
type Limits interface {
	Admit(ctx context.Context, tx *store.Tx, accountID string, r billing.Resource) error
}

// RegisterInput registers a hybrid runtime.
type RegisterInput struct {
	Name        string
	AccessMode  string // ingress or tunnel
	IngressHost string // ingress mode: https URL or host the app-proxy is reachable at
	Repo        string // the installation repository
	Team        string // the team (name or ID) that owns the runtime; empty: none
}

func validate(in *RegisterInput) error {
	if !nameRE.MatchString(in.Name) {
		return errdefs.Invalid("name", in.Name, "is not a runtime name: use 1-40 lowercase letters, digits and '-', starting and ending with a letter or digit")
	}
	switch in.AccessMode {
	case "":
		in.AccessMode = AccessTunnel
	case AccessTunnel, AccessIngress:
	default:
		return errdefs.Invalid("accessMode", in.AccessMode, "is not ingress or tunnel")
	}
	if in.AccessMode == AccessIngress {
		if in.IngressHost == "" {
			return errdefs.Invalid("ingressHost", "", "is required in ingress mode: the host or URL the app-proxy is reachable at")
		}
		if !strings.Contains(in.IngressHost, "://") {
			in.IngressHost = "https://" + in.IngressHost
		}
		if u, err := url.Parse(in.IngressHost); err != nil || u.Host == "" {
			return errdefs.Invalid("ingressHost", in.IngressHost, "is not a host name or https URL")
		}
	}
	return nil
}

// Register registers a hybrid runtime in p's account and returns its token, shown once.
func (s *Service) Register(ctx context.Context, p rbac.Principal, in RegisterInput) (rt Runtime, tok string, err error) {
	e := audit.Start(ctx, p, "runtime.register", "runtime", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRuntimes); err != nil {
		return rt, "", err
	}
	if err := validate(&in); err != nil {
		return rt, "", err
	}
	team, err := identity.OwnerTeam(ctx, s.db, p, "team", in.Team, "")
	if err != nil {
		return rt, "", err
	}
	if err := rbac.Authorize(p, rbac.ActCreate, runtimeResource(in.Name, team.ID)); err != nil {
		return rt, "", err
	}
	in.Team = team.ID
	rt, tok, err = s.create(ctx, p.AccountID, TypeHybrid, in, s.expiry(TypeHybrid), e)
	rt.OwnerTeam = team.Name
	return rt, tok, err
}

// expiry is when a token minted now for a runtime of type typ stops working: zero (never) for
// hosted runtimes, whose token the platform holds and rotates itself, and without a TTL.
func (s *Service) expiry(typ string) time.Time {
	if typ == TypeHosted || s.tokenTTL <= 0 {
		return time.Time{}
	}
	return s.now().Add(s.tokenTTL).UTC()
}

func (s *Service) create(ctx context.Context, accountID, typ string, in RegisterInput, expires time.Time, e *audit.Entry) (Runtime, string, error) {
	minted := token.Runtime.New()
	now := s.now()
	row := store.Runtime{ID: store.NewID(store.PrefixRuntime), AccountID: accountID, Name: in.Name, Type: typ, AccessMode: in.AccessMode,
		IngressURL: in.IngressHost, Repo: in.Repo, TokenPrefix: minted.ID, TokenHash: minted.Hash, Status: StatusInstalling,
		Info: "{}", CreatedAt: now, OwnerTeamID: in.Team, TokenExpiresAt: expires}
	e.Resource(row.ID)
	e.Detail("%s runtime %q (%s)", typ, in.Name, in.AccessMode)
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if typ == TypeHosted && s.limits != nil {
			if err := s.limits.Admit(ctx, tx, accountID, billing.HostedRuntimes); err != nil {
				return err
			}
		}
		if err := tx.CreateRuntime(ctx, row); err != nil {
			return err
		}
		if typ == TypeHosted {
			if err := s.keepHostedToken(ctx, tx, row.ID, minted.Token); err != nil {
				return err
			}
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Runtime{}, "", err
	}
	rt, err := runtimeFromRow(row)
	return rt, minted.Token, err
}

// CreateHosted provisions p's account's hosted runtime: run by the platform, CD only, one per
// account.
func (s *Service) CreateHosted(ctx context.Context, p rbac.Principal, name string) (rt Runtime, err error) {
	e := audit.Start(ctx, p, "runtime.create-hosted", "runtime", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRuntimes); err != nil {
		return rt, err
	}
	if s.provisioner == nil {
		return rt, fmt.Errorf("this server cannot run hosted runtimes: %w", errdefs.ErrUnavailable)
	}
	in := RegisterInput{Name: name, AccessMode: AccessTunnel}
	if in.Name == "" {
		in.Name = "hosted"
	}
	if err := validate(&in); err != nil {
		return rt, err
	}
	if err := rbac.Authorize(p, rbac.ActCreate, runtimeResource(in.Name, "")); err != nil {
		return rt, err
	}
	existing, err := s.db.ListRuntimes(ctx, p.AccountID)
	if err != nil {
		return rt, err
	}
	for _, x := range existing {
		if x.Type == TypeHosted {
			return rt, fmt.Errorf("the account already has a hosted runtime (one per account): %s: %w", x.Name, errdefs.ErrConflict)
		}
	}
	rt, token, err := s.create(ctx, p.AccountID, TypeHosted, in, time.Time{}, e)
	if err != nil {
		return rt, err
	}
	if err := s.provisioner.Provision(ctx, rt, token); err != nil {
		s.db.DeleteRuntime(context.WithoutCancel(ctx), rt.AccountID, rt.ID)
		return Runtime{}, fmt.Errorf("provision hosted runtime: %w", err)
	}
	return rt, nil
}

// List returns p's account's runtimes.
func (s *Service) List(ctx context.Context, p rbac.Principal) ([]Runtime, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return nil, err
	}
	rows, err := s.db.ListRuntimes(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	rows = slices.DeleteFunc(rows, func(r store.Runtime) bool { return !rbac.Visible(p, rtResource(r)) })
	return runtimesFromRows(rows)
}

// ListOwnedBy returns p's account's runtimes team (name or ID) owns.
func (s *Service) ListOwnedBy(ctx context.Context, p rbac.Principal, team string) ([]Runtime, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return nil, err
	}
	t, err := s.db.GetTeam(ctx, p.AccountID, team)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, errdefs.Invalid("owner", team, "is not a team of this account (see 'freshet team list')")
	} else if err != nil {
		return nil, err
	}
	rows, err := s.db.ListRuntimes(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	rows = slices.DeleteFunc(rows, func(r store.Runtime) bool { return r.OwnerTeamID != t.ID || !rbac.Visible(p, rtResource(r)) })
	return runtimesFromRows(rows)
}

// Get returns a runtime by ID or name.
func (s *Service) Get(ctx context.Context, p rbac.Principal, ref string) (Runtime, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return Runtime{}, err
	}
	row, err := s.db.GetRuntime(ctx, p.AccountID, ref)
	if err != nil {
		return Runtime{}, err
	}
	if err := rbac.Authorize(p, rbac.ActRead, rtResource(row)); err != nil {
		return Runtime{}, err
	}
	return runtimeFromRow(row)
}

// RotateToken gives a runtime a new token; the old one stops working at once (its holder is
// told it was replaced). A hybrid runtime's new token expires after Deps.TokenTTL.
func (s *Service) RotateToken(ctx context.Context, p rbac.Principal, ref string) (tok string, err error) {
	e := audit.Start(ctx, p, "runtime.rotate-token", "runtime", ref)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRuntimes); err != nil {
		return "", err
	}
	minted := token.Runtime.New()
	var hosted *store.Runtime
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		rt, err := tx.GetRuntime(ctx, p.AccountID, ref)
		if err != nil {
			return err
		}
		e.Resource(rt.ID)
		if err := rbac.Authorize(p, rbac.ActUpdate, rtResource(rt)); err != nil {
			return err
		}
		if err := tx.SetRuntimeToken(ctx, p.AccountID, rt.ID, minted.ID, minted.Hash, s.expiry(rt.Type), s.now()); err != nil {
			return err
		}
		if rt.Type == TypeHosted {
			if err := s.keepHostedToken(ctx, tx, rt.ID, minted.Token); err != nil {
				return err
			}
			hosted = &rt
		}
		return e.Commit(ctx, tx)
	})
	if err == nil && hosted != nil && s.provisioner != nil {
		// The platform runs it: it restarts with the new token (the old one stops working now).
		r, _ := runtimeFromRow(*hosted)
		if perr := s.provisioner.Provision(ctx, r, minted.Token); perr != nil {
			s.log.Warn("restart hosted runtime with its new token", "runtime", r.Name, "account", r.AccountID, "err", perr)
		}
	}
	return minted.Token, err
}

// SetOwner makes team (name or ID; empty: none) the owner of p's account's runtime ref, and so
// of its clusters, applications, git sources and workflows. It takes the right to update the
// runtime and, unless p is an admin, membership of both the team that owns it now and the new
// one.
func (s *Service) SetOwner(ctx context.Context, p rbac.Principal, ref, team string) (rt Runtime, err error) {
	e := audit.Start(ctx, p, "runtime.set-owner", "runtime", ref)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRuntimes); err != nil {
		return rt, err
	}
	var row store.Runtime
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		row, err = tx.GetRuntime(ctx, p.AccountID, ref)
		if err != nil {
			return err
		}
		e.Resource(row.ID)
		if err := rbac.Authorize(p, rbac.ActUpdate, rtResource(row)); err != nil {
			return err
		}
		t, err := identity.OwnerTeam(ctx, tx, p, "team", team, row.OwnerTeamID)
		if err != nil {
			return err
		}
		e.Detail("%q: owner %s → %s", row.Name, identity.OwnerLabel(row.OwnerTeam), identity.OwnerLabel(t.Name))
		if err := tx.SetRuntimeOwner(ctx, p.AccountID, row.ID, t.ID); err != nil {
			return err
		}
		row.OwnerTeamID, row.OwnerTeam = t.ID, t.Name
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Runtime{}, err
	}
	if s.onOwnerChange != nil {
		s.onOwnerChange(p.AccountID)
	}
	rt, _ = runtimeFromRow(row)
	return rt, nil
}

// Delete deregisters a runtime (a hosted one is also stopped); its token stops working.
func (s *Service) Delete(ctx context.Context, p rbac.Principal, ref string) (err error) {
	e := audit.Start(ctx, p, "runtime.delete", "runtime", ref)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRuntimes); err != nil {
		return err
	}
	row, err := s.db.GetRuntime(ctx, p.AccountID, ref)
	if err != nil {
		return err
	}
	rt, _ := runtimeFromRow(row) // deleting it needs no report
	e.Resource(rt.ID)
	if err := rbac.Authorize(p, rbac.ActDelete, rtResource(row)); err != nil {
		return err
	}
	if err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteRuntime(ctx, p.AccountID, rt.ID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	}); err != nil {
		return err
	}
	// A hosted runtime is stopped once its row (and stored token) is gone, so the provisioner's
	// next pass cannot start it again; if stopping fails here, that pass removes it.
	if rt.Type == TypeHosted && s.provisioner != nil {
		if err := s.provisioner.Deprovision(context.WithoutCancel(ctx), rt); err != nil {
			s.log.Warn("stop deleted hosted runtime (the provisioner removes it on its next pass)", "runtime", rt.Name, "account", rt.AccountID, "err", err)
		}
	}
	return nil
}

// Authenticate resolves a runtime token. Any failure is ErrUnauthenticated: a *RefusedError,
// naming the runtime and what to do, when the token was the runtime's own and has expired or
// was replaced by a rotation (the secret is checked first, so only its holder learns that),
// "invalid runtime token" otherwise. A successful one forgets the runtime's last refusal. A
// runtime whose stored report does not decode still authenticates (without Info), so that its
// next heartbeat replaces the report.
func (s *Service) Authenticate(ctx context.Context, tok string) (Runtime, error) {
	unauth := fmt.Errorf("invalid runtime token: %w", errdefs.ErrUnauthenticated)
	id, secret, ok := token.Runtime.Parse(tok)
	if !ok {
		return Runtime{}, unauth
	}
	row, err := s.db.RuntimeByPrefix(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		if prev, perr := s.db.RuntimeByPrevPrefix(ctx, id); perr == nil && token.Verify(prev.PrevTokenHash, secret) {
			return Runtime{}, &RefusedError{RuntimeID: prev.ID, AccountID: prev.AccountID, Name: prev.Name, Kind: RefusedReplaced,
				Reason: fmt.Sprintf("runtime token of %s was replaced at %s by rotate-token: run the runtime with its new token (or rotate again with `freshet runtime rotate-token %s`)",
					prev.Name, prev.TokenRotatedAt.UTC().Format(time.RFC3339), prev.Name)}
		}
		return Runtime{}, unauth
	}
	if err != nil || !token.Verify(row.TokenHash, secret) {
		return Runtime{}, unauth
	}
	if exp := row.TokenExpiresAt; !exp.IsZero() && !s.now().Before(exp) {
		return Runtime{}, &RefusedError{RuntimeID: row.ID, AccountID: row.AccountID, Name: row.Name, Kind: RefusedExpired,
			Reason: fmt.Sprintf("runtime token of %s expired at %s: rotate it with `freshet runtime rotate-token %s`",
				row.Name, exp.UTC().Format(time.RFC3339), row.Name)}
	}
	if !row.RefusedAt.IsZero() {
		if err := s.db.ClearRuntimeRefused(ctx, row.ID); err != nil {
			s.log.Warn("forget the runtime's last refusal", "runtime", row.Name, "account", row.AccountID, "err", err)
		} else {
			row.RefusedAt, row.RefusedKind, row.RefusedReason, row.RefusedRemote = time.Time{}, "", "", ""
		}
	}
	rt, err := runtimeFromRow(row)
	if err != nil {
		s.log.Warn("runtime authenticated without its last report", "runtime", rt.Name, "account", rt.AccountID, "err", err)
	}
	return rt, nil
}

// maxRefusalText bounds the remote address recorded with a refusal.
const maxRefusalText = 256

// RecordRefusal records err, when Authenticate refused a runtime's own token with it (a
// *RefusedError), as that runtime's last refusal, from remote (the caller's address), and
// logs it; other errors are left to the caller. Both the tunnel handshake and the runtime
// protocol call it, so either path shows the same refusal. The same refusal is written at most
// once a minute (store.RefusalRecordEvery).
func (s *Service) RecordRefusal(ctx context.Context, err error, remote string) {
	var re *RefusedError
	if !errors.As(err, &re) {
		return
	}
	if len(remote) > maxRefusalText {
		remote = remote[:maxRefusalText]
	}
	wrote, werr := s.db.SetRuntimeRefused(context.WithoutCancel(ctx), re.RuntimeID, s.now(), re.Kind, re.Reason, remote)
	if werr != nil {
		s.log.Warn("record a runtime's refusal", "runtime", re.Name, "account", re.AccountID, "err", werr)
		return
	}
	if wrote {
		s.log.Warn("runtime refused", "runtime", re.Name, "account", re.AccountID, "remote", remote, "why", re.Reason)
	}
}

// Heartbeat records a runtime's report and returns its new status: healthy when every
// enabled component is, degraded otherwise.
func (s *Service) Heartbeat(ctx context.Context, rt Runtime, hb runtimev1.HeartbeatRequest) (string, error) {
	if hb.Protocol != runtimev1.ProtocolVersion {
		return "", errdefs.Invalid("protocol", fmt.Sprint(hb.Protocol), fmt.Sprintf("is not supported: this server speaks runtime protocol %d", runtimev1.ProtocolVersion))
	}
	// The version skew policy: a runtime lagging more than one minor version (or newer than the
	// control plane) is refused. Its version is recorded, so the registry shows why.
	if sk := version.CheckSkew("runtime", hb.Version, version.Current()); sk.Status == version.SkewUnsupported {
		if rt.Version != hb.Version || rt.Status != StatusDisconnected {
			info, _ := json.Marshal(rt.Info)
			if err := s.db.RuntimeHeartbeat(ctx, rt.ID, hb.Version, StatusDisconnected, string(info), rt.LastHeartbeat); err != nil {
				return "", err
			}
		}
		return "", errdefs.Invalid("version", hb.Version, sk.Message)
	}
	if rt.Type == TypeHosted {
		for _, c := range hb.Capabilities {
			if c == "ci" || c == "workflows" {
				return "", fmt.Errorf("capability %q: %w", c, ErrCDOnly)
			}
		}
	}
	status := StatusHealthy
	for _, c := range hb.Components {
		if c.Health == runtimev1.ComponentDegraded {
			status = StatusDegraded
		}
	}
	info, _ := json.Marshal(Info{Capabilities: hb.Capabilities, Components: hb.Components, Clusters: hb.Clusters, GitSources: hb.GitSources})
	if err := s.db.RuntimeHeartbeat(ctx, rt.ID, hb.Version, status, string(info), s.now()); err != nil {
		return "", err
	}
	// The limit reservations of the clusters it lists are settled, now that the stored
	// heartbeat counts them (internal/billing Reserve).
	// A failure leaves them to expire (they count the clusters twice until then, never zero).
	if err := s.db.SettleReservations(ctx, rt.AccountID, store.ReserveClusters, rt.ID, managed(hb.Clusters)); err != nil {
		s.log.Warn("settle cluster limit reservations", "runtime", rt.Name, "account", rt.AccountID, "err", err)
	}
	if rt.Status != status {
		s.log.Info("runtime status", "runtime", rt.Name, "account", rt.AccountID, "from", rt.Status, "to", status)
	}
	return status, nil
}

// MarkDisconnected marks a runtime disconnected now (its tunnel dropped, or its heartbeats
// stopped) and audits it.
func (s *Service) MarkDisconnected(ctx context.Context, rt Runtime, why string) error {
	if rt.Status == StatusDisconnected {
		return nil
	}
	// The status and its audit record commit together: whoever sees one sees the other.
	e := audit.System(ctx, rt.AccountID, "runtime.disconnected", "runtime", rt.ID)
	e.Detail("%s", why)
	if err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.SetRuntimeStatus(ctx, rt.ID, StatusDisconnected); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	}); err != nil {
		return err
	}
	s.log.Warn("runtime disconnected", "runtime", rt.Name, "account", rt.AccountID, "why", why)
	return nil
}

// MarkDisconnectedID is MarkDisconnected for account's runtime id (a runtime deregistered
// meanwhile is left alone).
func (s *Service) MarkDisconnectedID(ctx context.Context, accountID, id, why string) error {
	row, err := s.db.GetRuntime(ctx, accountID, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	rt, _ := runtimeFromRow(row) // marking it needs no report
	return s.MarkDisconnected(ctx, rt, why)
}

// Sweep marks runtimes without a recent heartbeat disconnected, until ctx ends.
func (s *Service) Sweep(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		stale, err := s.db.StaleRuntimes(ctx, s.now().Add(-runtimev1.DisconnectAfter))
		if err != nil {
			s.log.Warn("sweep runtimes", "err", err)
			continue
		}
		for _, row := range stale {
			rt, _ := runtimeFromRow(row) // marking it needs no report
			s.MarkDisconnected(ctx, rt, "no heartbeat since "+rt.LastHeartbeat.Format(time.RFC3339))
		}
	}
}

// EnsureRuntime returns the token of hybrid runtime name in account, reusing the one saved in
// tokenFile when it still works and otherwise registering the runtime anew (replacing one of
// that name) and saving its token there with mode 0600. `freshet up` runs its in-process
// runtime with it.
func (s *Service) EnsureRuntime(ctx context.Context, accountID, name, tokenFile string) (string, error) {
	if b, err := os.ReadFile(tokenFile); err == nil {
		tok := strings.TrimSpace(string(b))
		if rt, err := s.Authenticate(ctx, tok); err == nil && rt.AccountID == accountID {
			return tok, nil
		}
	}
	if old, err := s.db.GetRuntime(ctx, accountID, name); err == nil {
		if err := s.db.DeleteRuntime(ctx, accountID, old.ID); err != nil {
			return "", err
		}
	}
	e := audit.System(ctx, accountID, "runtime.register", "runtime", "")
	// Its token never expires: this server holds it, like a hosted runtime's.
	_, tok, err := s.create(ctx, accountID, TypeHybrid, RegisterInput{Name: name, AccessMode: AccessTunnel}, time.Time{}, e)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("save runtime token: %w", err)
	}
	return tok, nil
}
