package billing

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/freshet-dev/freshet/internal/store"
)

// ReservationTTL bounds how long a reservation counts against a limit without the runtime
// reporting the object it was taken for: a runtime answers a create at once and reports the
// new application (or lists the new cluster in its heartbeat) within seconds, so after two
// minutes the reservation is dropped and what the runtime reports is all that counts.
const ReservationTTL = 2 * time.Minute

// Claim is one creation a runtime makes on the control plane's behalf (an application or a
// managed cluster created through its app-proxy), to be admitted before the request is
// forwarded.
type Claim struct {
	Resource  Resource // Applications or ClustersPerRuntime
	RuntimeID string
	Runtime   string // the runtime's name, for a refusal's scope
	Name      string // the object's name, as the runtime will report it
	By        string // who asks (a user's ID), recorded with the reservation
	// Reported returns the names of what the runtime reported of Resource, read in tx: for
	// ClustersPerRuntime, the managed clusters of its last heartbeat (its own in-cluster
	// excluded). Applications are counted from the reported rows and need none.
	Reported func(ctx context.Context, tx *store.Tx) ([]string, error)
}

// Reserve admits c in accountID, as Admit does a resource the control plane creates: in one
// transaction, under the account's plan row lock, it counts what the runtimes reported plus
// the unexpired reservations of objects they have not reported yet (by runtime and name), and
// refuses with a *LimitError when one more would pass the limit; otherwise it stores a
// reservation and returns its ID, which counts the object until the runtime reports it
// (then it is settled), Release drops it (the runtime refused), or ReservationTTL passes.
// Concurrent creations thus never pass a limit, even before any runtime reported the first.
//
// It returns "" (nothing to release) when the plan does not bound c.Resource, or when the
// object exists already (a create that replaces or conflicts adds nothing). A second create of
// a name still pending counts once.
func (s *Service) Reserve(ctx context.Context, accountID string, c Claim) (string, error) {
	var res string
	switch c.Resource {
	case Applications:
		res = store.ReserveApplications
	case ClustersPerRuntime:
		res = store.ReserveClusters
		if c.Reported == nil {
			return "", fmt.Errorf("reserve %s: no reported clusters", c.Resource)
		}
	default:
		return "", fmt.Errorf("reserve %s: only what runtimes create is reserved; use Admit", c.Resource)
	}
	row, err := s.db.GetAccountPlan(ctx, accountID)
	if err != nil {
		return "", err
	}
	if s.plan(accountID, row.Plan).Limit(c.Resource) == Unlimited {
		return "", nil
	}
	id := ""
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		id = ""
		now := s.now()
		exists, err := s.refuseClaim(ctx, tx, accountID, row.Plan, c, now)
		if err != nil || exists {
			return err
		}
		plan, err := tx.LockAccountPlan(ctx, accountID)
		if err != nil {
			return err
		}
		if err := tx.DeleteExpiredReservations(ctx, accountID, now); err != nil {
			return err
		}
		if exists, err = s.refuseClaim(ctx, tx, accountID, plan, c, now); err != nil || exists {
			return err
		}
		id = store.NewID("lrs")
		return tx.ReserveLimit(ctx, store.LimitReservation{ID: id, AccountID: accountID, Resource: res, RuntimeID: c.RuntimeID,
			Name: c.Name, CreatedBy: c.By, CreatedAt: now, ExpiresAt: now.Add(s.ttl)})
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// refuseClaim counts accountID's use of c.Resource (reported and pending) and refuses c when
// plan's limit is reached. exists is true when c's object is reported already (nothing new is
// created). The pending reservations are read before the reported objects: a report that
// lands in between settles a reservation after its object is stored, so the object is counted
// twice at worst, never missed.
func (s *Service) refuseClaim(ctx context.Context, tx *store.Tx, accountID, plan string, c Claim, now time.Time) (exists bool, err error) {
	p := s.plan(accountID, plan)
	limit := p.Limit(c.Resource)
	if limit == Unlimited {
		return false, nil
	}
	var used int64
	pendingName := false
	scope := ""
	switch c.Resource {
	case Applications:
		pending, err := tx.PendingApplications(ctx, accountID, now)
		if err != nil {
			return false, err
		}
		if exists, err = tx.ApplicationReported(ctx, accountID, c.RuntimeID, c.Name); err != nil || exists {
			return exists, err
		}
		reported, err := tx.CountUse(ctx, accountID, store.UseApplications, now, now)
		if err != nil {
			return false, err
		}
		pendingName = slices.Contains(pending, store.Reserved{RuntimeID: c.RuntimeID, Name: c.Name})
		used = reported + int64(len(pending))
	case ClustersPerRuntime:
		scope = "runtime " + c.Runtime
		pending, err := tx.PendingReservations(ctx, accountID, store.ReserveClusters, c.RuntimeID, now)
		if err != nil {
			return false, err
		}
		reported, err := c.Reported(ctx, tx)
		if err != nil {
			return false, err
		}
		if slices.Contains(reported, c.Name) {
			return true, nil
		}
		names := map[string]bool{}
		for _, n := range reported {
			names[n] = true
		}
		for _, r := range pending {
			names[r.Name] = true
		}
		pendingName = names[c.Name]
		used = int64(len(names))
	}
	if !pendingName && used >= limit {
		return false, &LimitError{Resource: c.Resource, Plan: p.Name, Limit: limit, Used: used, Scope: scope}
	}
	return false, nil
}

// Release drops accountID's reservation id: the runtime refused the creation or could not be
// reached, so nothing was created. Releasing "" does nothing.
func (s *Service) Release(ctx context.Context, accountID, id string) error {
	if id == "" {
		return nil
	}
	return s.db.ReleaseReservation(ctx, accountID, id)
}

// Limited reports whether accountID's plan bounds r (an unlocked read of the plan).
func (s *Service) Limited(ctx context.Context, accountID string, r Resource) (bool, error) {
	row, err := s.db.GetAccountPlan(ctx, accountID)
	if err != nil {
		return false, err
	}
	return s.plan(accountID, row.Plan).Limit(r) != Unlimited, nil
}
