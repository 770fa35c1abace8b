// Package billing is plans, their limits and usage metering. The plan catalogue — which plans
// exist and what each allows — is the operator's configuration (Options: the embedded
// plans.yaml, or a file of their own), never code; which plan an account is on is a row of the
// database that only the operator changes (`freshet plan set`, on the database like `freshet
// master-key`), and a change takes effect at the next admission, on every replica.
//
// Limits are enforced at the moment of use, in the transaction that creates the resource:
// Admit locks the account's plan row (PostgreSQL: SELECT … FOR UPDATE; SQLite: its
// transactions hold the one write lock), counts what the account has and refuses with a
// *LimitError (errdefs.ErrLimitExceeded, HTTP 402) naming the limit, the plan and the current
// use when one more would pass the limit. Admissions of one account are thus serialized and
// none is admitted past a limit, however many arrive at once. What a runtime creates
// (applications, managed clusters) is admitted the same way by Reserve, which holds a
// reservation row until the runtime reports the object, refuses it, or ReservationTTL passes.
//
// Usage is metered per UTC day from the records themselves (builds, the syncs runtimes
// reported, audit records) and exported as JSON or CSV. See docs/billing.md.
package billing

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// LimitError is a refusal: one more of Resource would pass the account's plan's Limit.
type LimitError struct {
	Resource Resource
	Plan     string
	Limit    int64
	Used     int64
	Scope    string // what the limit applies within, when not the account (a runtime's name)
}

func (e *LimitError) Error() string {
	in := "the account"
	if e.Scope != "" {
		in = e.Scope
	}
	switch e.Resource {
	case BuildMinutes:
		return fmt.Sprintf("plan %q allows %d build minutes a month; the account has used %d this month (until the first of next month UTC, or a larger plan)", e.Plan, e.Limit, e.Used)
	case ConcurrentBuilds:
		return fmt.Sprintf("plan %q allows %d %s; the account has %d running", e.Plan, e.Limit, e.Resource.noun(e.Limit), e.Used)
	}
	return fmt.Sprintf("plan %q allows %d %s; %s has %d", e.Plan, e.Limit, e.Resource.noun(e.Limit), in, e.Used)
}

// Unwrap makes a LimitError errdefs.ErrLimitExceeded.
func (e *LimitError) Unwrap() error { return errdefs.ErrLimitExceeded }

// Store is what the billing service needs of the database outside a caller's transaction.
// *store.DB implements it.
type Store interface {
	Tx(ctx context.Context, fn func(tx *store.Tx) error) error
	GetAccount(ctx context.Context, id string) (store.Account, error)
	AccountByName(ctx context.Context, name string) (store.Account, error)
	GetAccountPlan(ctx context.Context, accountID string) (store.AccountPlan, error)
	CountUse(ctx context.Context, accountID, what string, since, now time.Time) (int64, error)
	UsageDays(ctx context.Context, accountID string, from, to time.Time) ([]store.UsageDay, error)
	ReleaseReservation(ctx context.Context, accountID, id string) error
}

var _ Store = (*store.DB)(nil)

// Service answers plans and usage and admits limited resources.
type Service struct {
	db  Store
	cat Catalogue
	log *slog.Logger
	now func() time.Time
	ttl time.Duration // of reservations
}

// Deps is what a Service is built from.
type Deps struct {
	Store     Store
	Catalogue Catalogue // Options.Catalogue(); a zero Catalogue is DefaultCatalogue()
	Log       *slog.Logger
	// ReservationTTL bounds a limit reservation's life (Options.ReservationTTL; 0:
	// ReservationTTL).
	ReservationTTL time.Duration
}

// New returns a Service built from d.
func New(d Deps) *Service {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cat := d.Catalogue
	if len(cat.Plans) == 0 {
		cat = DefaultCatalogue()
	}
	ttl := d.ReservationTTL
	if ttl <= 0 {
		ttl = ReservationTTL
	}
	return &Service{db: d.Store, cat: cat, log: log, now: time.Now, ttl: ttl}
}

// Catalogue returns the operator's catalogue.
func (s *Service) Catalogue() Catalogue { return s.cat }

// plan resolves a stored plan name: "" (never set) is the catalogue's default; a name the
// catalogue no longer lists (the operator removed it) falls back to the default too, and says so.
func (s *Service) plan(accountID, name string) Plan {
	if name != "" {
		if p, ok := s.cat.Plan(name); ok {
			return p
		}
		s.log.Warn("account's plan is not in the catalogue; the default plan applies", "account", accountID, "plan", name, "default", s.cat.Default)
	}
	p, _ := s.cat.Plan(s.cat.Default)
	return p
}

// monthStart is the first instant of t's calendar month, UTC: the build-minutes period.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// counted maps the resources the database counts to its counts; the others are counted by
// whoever reports them (a runtime's clusters).
var counted = map[Resource]string{
	Users: store.UseMembers, Runners: store.UseRunners, ConcurrentBuilds: store.UseActiveBuilds,
	BuildMinutes: store.UseBuildMinutes, HostedRuntimes: store.UseHostedRuntimes, Applications: store.UseApplications,
}

// Admit checks in tx — the transaction that creates one more of r in accountID — that the
// account's plan allows it, and refuses with a *LimitError when it does not. When the plan
// bounds r, it locks the account's plan row until tx ends, so concurrent admissions of the
// account wait for each other and each counts what the one before committed: call it before
// tx writes the resource. Two reads come first, without the lock: a plan that does not bound
// r admits at once (an admission that read the plan before a change committed is ordered
// before the change), and a count already at the limit refuses at once (use only grows under
// the lock, so this refuses nothing the lock would admit, bar a slot freed in between).
// BuildMinutes admits while the month's minutes are below the limit (a build that starts then
// runs to its end).
func (s *Service) Admit(ctx context.Context, tx *store.Tx, accountID string, r Resource) error {
	what, ok := counted[r]
	if !ok {
		return fmt.Errorf("admit %s: the database does not count it; use Check", r)
	}
	row, err := tx.GetAccountPlan(ctx, accountID)
	if err != nil {
		return err
	}
	if s.plan(accountID, row.Plan).Limit(r) == Unlimited {
		return nil
	}
	now := s.now()
	if err := s.refuseAt(ctx, tx, accountID, row.Plan, r, what, now); err != nil {
		return err
	}
	name, err := tx.LockAccountPlan(ctx, accountID)
	if err != nil {
		return err
	}
	return s.refuseAt(ctx, tx, accountID, name, r, what, now)
}

// refuseAt counts accountID's use of r and refuses when plan's limit is reached.
func (s *Service) refuseAt(ctx context.Context, tx *store.Tx, accountID, plan string, r Resource, what string, now time.Time) error {
	p := s.plan(accountID, plan)
	limit := p.Limit(r)
	if limit == Unlimited {
		return nil
	}
	used, err := tx.CountUse(ctx, accountID, what, monthStart(now), now)
	if err != nil {
		return err
	}
	if used >= limit {
		return &LimitError{Resource: r, Plan: p.Name, Limit: limit, Used: used}
	}
	return nil
}

// Check refuses one more of r in accountID when the account's use, as the database holds it
// now, is at its plan's limit — without a lock or a reservation, so two callers racing may
// both pass: a glance, not an admission. Applications created through a runtime's app-proxy
// are admitted with Reserve.
func (s *Service) Check(ctx context.Context, accountID string, r Resource) error {
	what, ok := counted[r]
	if !ok {
		return fmt.Errorf("check %s: the database does not count it; use CheckReported", r)
	}
	row, err := s.db.GetAccountPlan(ctx, accountID)
	if err != nil {
		return err
	}
	p := s.plan(accountID, row.Plan)
	limit := p.Limit(r)
	if limit == Unlimited {
		return nil
	}
	now := s.now()
	used, err := s.db.CountUse(ctx, accountID, what, monthStart(now), now)
	if err != nil {
		return err
	}
	if used >= limit {
		return &LimitError{Resource: r, Plan: p.Name, Limit: limit, Used: used}
	}
	return nil
}

// CheckReported refuses one more of r within scope (a runtime, for ClustersPerRuntime) where
// its owner reported used of them, without a lock (a glance; Reserve admits).
func (s *Service) CheckReported(ctx context.Context, accountID string, r Resource, scope string, used int64) error {
	row, err := s.db.GetAccountPlan(ctx, accountID)
	if err != nil {
		return err
	}
	p := s.plan(accountID, row.Plan)
	if limit := p.Limit(r); limit != Unlimited && used >= limit {
		return &LimitError{Resource: r, Plan: p.Name, Limit: limit, Used: used, Scope: scope}
	}
	return nil
}

// Free returns how many more of r accountID's plan allows now (Unlimited when it does not
// bound r), for callers that skip work a limit would refuse — the dispatcher offers no more
// builds than the account has free concurrent builds. It takes no lock: Admit still decides.
func (s *Service) Free(ctx context.Context, accountID string, r Resource) (int64, error) {
	what, ok := counted[r]
	if !ok {
		return 0, fmt.Errorf("free %s: the database does not count it", r)
	}
	row, err := s.db.GetAccountPlan(ctx, accountID)
	if err != nil {
		return 0, err
	}
	limit := s.plan(accountID, row.Plan).Limit(r)
	if limit == Unlimited {
		return Unlimited, nil
	}
	now := s.now()
	used, err := s.db.CountUse(ctx, accountID, what, monthStart(now), now)
	if err != nil {
		return 0, err
	}
	return max(0, limit-used), nil
}

// Use is one resource's limit and the account's current use of it.
type Use struct {
	Resource Resource
	Limit    int64 // Unlimited when the plan does not bound it
	Used     int64 // -1 when the control plane does not count it (clusters per runtime)
	Period   string
}

// AccountPlan is an account's plan with its limits and what the account uses of each.
type AccountPlan struct {
	AccountID string
	Plan      Plan
	Default   bool // the account was never put on a plan: the catalogue's default applies
	ChangedBy string
	ChangedAt time.Time
	Uses      []Use
}

// Get returns p's account's plan, limits and current use. Every member may read it.
func (s *Service) Get(ctx context.Context, p rbac.Principal) (AccountPlan, error) {
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return AccountPlan{}, err
	}
	return s.accountPlan(ctx, p.AccountID)
}

func (s *Service) accountPlan(ctx context.Context, accountID string) (AccountPlan, error) {
	row, err := s.db.GetAccountPlan(ctx, accountID)
	if err != nil {
		return AccountPlan{}, err
	}
	_, listed := s.cat.Plan(row.Plan)
	out := AccountPlan{AccountID: accountID, Plan: s.plan(accountID, row.Plan), Default: !listed, ChangedBy: row.ChangedBy, ChangedAt: row.ChangedAt}
	now := s.now()
	for _, r := range Resources {
		u := Use{Resource: r, Limit: out.Plan.Limit(r), Used: -1}
		if r == BuildMinutes {
			u.Period = "month"
		}
		if what, ok := counted[r]; ok {
			if u.Used, err = s.db.CountUse(ctx, accountID, what, monthStart(now), now); err != nil {
				return AccountPlan{}, err
			}
		}
		out.Uses = append(out.Uses, u)
	}
	return out, nil
}

// SetPlan puts the account named (or with ID) account on plan at once — the operator's
// command, which works on the database (there is no API for it: an account admin does not
// choose their own plan). by says who, for the audit record.
func (s *Service) SetPlan(ctx context.Context, account, plan, by string) (AccountPlan, error) {
	if _, ok := s.cat.Plan(plan); !ok {
		return AccountPlan{}, errdefs.Invalid("plan", plan, "names no plan of the catalogue: use "+joinNames(s.cat))
	}
	a, err := s.db.AccountByName(ctx, account)
	if err != nil {
		if a, err = s.db.GetAccount(ctx, account); err != nil {
			return AccountPlan{}, fmt.Errorf("account %q: %w", account, errdefs.ErrNotFound)
		}
	}
	old, err := s.db.GetAccountPlan(ctx, a.ID)
	if err != nil {
		return AccountPlan{}, err
	}
	e := audit.System(ctx, a.ID, "billing.plan.set", "account", a.ID)
	e.Detail("plan %s → %s by %s", orDefault(old.Plan), plan, by)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.LockAccountPlan(ctx, a.ID); err != nil {
			return err
		}
		if err := tx.SetAccountPlan(ctx, store.AccountPlan{AccountID: a.ID, Plan: plan, ChangedBy: by, ChangedAt: s.now()}); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return AccountPlan{}, err
	}
	return s.accountPlan(ctx, a.ID)
}

func orDefault(plan string) string {
	if plan == "" {
		return "(default)"
	}
	return plan
}

func joinNames(c Catalogue) string {
	out := ""
	for i, n := range c.Names() {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
