// Package audit records who did what: every mutating API call leaves one record with actor,
// account, action, resource, request id, source address, result and time.
//
// A successful change writes its record in the same transaction as the change (Entry.Commit), so
// a change without a record cannot exist. A call that fails or is denied writes its record after
// the fact (Log.Finish). Records are listed per account, newest first, as Events selected by a
// Filter; the log reads and writes the database through Store.
package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// Results of an audited call.
const (
	ResultSuccess = "success"
	ResultDenied  = "denied"
	ResultFailure = "failure"
)

// Meta is the request-scoped part of an audit record, set by the HTTP layer.
type Meta struct {
	RequestID string
	SourceIP  string
}

type metaKey struct{}

// WithMeta returns ctx carrying m.
func WithMeta(ctx context.Context, m Meta) context.Context {
	return context.WithValue(ctx, metaKey{}, m)
}

// MetaFrom returns the Meta in ctx, or the zero Meta.
func MetaFrom(ctx context.Context) Meta {
	m, _ := ctx.Value(metaKey{}).(Meta)
	return m
}

// Entry is an audit record under construction for one call.
type Entry struct {
	ev      store.AuditEvent
	written bool
}

// Start begins the record of action on a resource by p.
func Start(ctx context.Context, p rbac.Principal, action, resourceType, resourceID string) *Entry {
	m := MetaFrom(ctx)
	actor := p.Actor()
	if actor == "" {
		actor = "anonymous"
	}
	return &Entry{ev: store.AuditEvent{
		AccountID: p.AccountID, ActorID: p.UserID, Actor: actor, Action: action,
		ResourceType: resourceType, ResourceID: resourceID, RequestID: m.RequestID, SourceIP: m.SourceIP,
	}}
}

// System begins a record of an action the platform itself takes in account.
func System(ctx context.Context, accountID, action, resourceType, resourceID string) *Entry {
	e := Start(ctx, rbac.Principal{AccountID: accountID, Email: "system"}, action, resourceType, resourceID)
	return e
}

// Resource sets the ID of the resource, once it is known.
func (e *Entry) Resource(id string) { e.ev.ResourceID = id }

// Account sets the account, for calls that learn it late (login).
func (e *Entry) Account(id string) { e.ev.AccountID = id }

// Detail adds a short human-readable detail. Never put secrets here.
func (e *Entry) Detail(format string, args ...any) { e.ev.Detail = fmt.Sprintf(format, args...) }

// Commit writes the record as a success on tx, the transaction that makes the change.
func (e *Entry) Commit(ctx context.Context, tx *store.Tx) error {
	e.ev.Result = ResultSuccess
	e.stamp()
	if err := tx.InsertAudit(ctx, e.ev); err != nil {
		return err
	}
	e.written = true
	return nil
}

func (e *Entry) stamp() {
	e.ev.ID = store.NewID(store.PrefixAudit)
	e.ev.CreatedAt = time.Now()
}

// Log writes the records of calls that did not commit a change, and lists records.
type Log struct {
	db  Store
	log *slog.Logger
}

// NewLog returns a Log on db.
func NewLog(db Store, log *slog.Logger) *Log { return &Log{db: db, log: log} }

// Finish writes e as denied or failed when the call returned err and its record was not already
// committed. Calls that never reached an account (bad login for an unknown user) are only logged.
func (l *Log) Finish(ctx context.Context, e *Entry, err error) {
	if e.written {
		return
	}
	if err == nil {
		// A success that wrote nothing, e.g. an idempotent no-op: still a record.
		e.ev.Result = ResultSuccess
	} else {
		e.ev.Result = ResultFailure
		if errors.Is(err, errdefs.ErrForbidden) || errors.Is(err, errdefs.ErrUnauthenticated) || errors.Is(err, errdefs.ErrRateLimited) {
			e.ev.Result = ResultDenied
		}
		if e.ev.Detail == "" {
			e.ev.Detail = err.Error()
		}
	}
	if e.ev.AccountID == "" {
		l.log.Info("audit", "action", e.ev.Action, "actor", e.ev.Actor, "result", e.ev.Result, "request_id", e.ev.RequestID, "source_ip", e.ev.SourceIP)
		return
	}
	e.stamp()
	// The request may be cancelled already; the record must still be written.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if werr := l.db.InsertAudit(wctx, e.ev); werr != nil {
		l.log.Error("write audit record", "action", e.ev.Action, "err", werr)
	}
	e.written = true
}

// Event is one audit record as the log lists it.
type Event struct {
	ID           string
	AccountID    string
	ActorID      string // user ID, or "" for anonymous attempts
	Actor        string // what the actor is called: an email, "apikey:<name>", …
	Action       string // e.g. "user.create"
	ResourceType string
	ResourceID   string
	RequestID    string
	SourceIP     string
	Result       string // ResultSuccess, ResultDenied or ResultFailure
	Detail       string
	Time         time.Time
}

func eventOf(e store.AuditEvent) Event {
	return Event{ID: e.ID, AccountID: e.AccountID, ActorID: e.ActorID, Actor: e.Actor, Action: e.Action,
		ResourceType: e.ResourceType, ResourceID: e.ResourceID, RequestID: e.RequestID, SourceIP: e.SourceIP,
		Result: e.Result, Detail: e.Detail, Time: e.CreatedAt}
}

// Filter narrows a listing. Zero fields do not filter.
type Filter struct {
	Actor        string // matches the actor's user ID or name
	Action       string // exact, or a prefix ending in '.' or '*' ("user." / "user.*")
	ResourceType string
	ResourceID   string
	Result       string
	Since        time.Time // records at or after
	Until        time.Time // records before
}

func (f Filter) store() store.AuditFilter {
	return store.AuditFilter{Actor: f.Actor, Action: f.Action, ResourceType: f.ResourceType, ResourceID: f.ResourceID,
		Result: f.Result, Since: f.Since, Until: f.Until}
}

// List returns p's account's records matching f, newest first. Only admins may read the audit log.
func (l *Log) List(ctx context.Context, p rbac.Principal, f Filter, page paging.Page) ([]Event, error) {
	if err := rbac.Allow(p, rbac.ReadAudit); err != nil {
		return nil, err
	}
	rows, err := l.db.ListAudit(ctx, p.AccountID, f.store(), page)
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(rows))
	for i, e := range rows {
		out[i] = eventOf(e)
	}
	return out, nil
}
