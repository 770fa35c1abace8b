package appset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/repourl"
)

// Defaults.
const (
	// DefaultRequeueInterval is how often an ApplicationSet is generated again without a push
	// (Argo CD's git generator default is 3 minutes).
	DefaultRequeueInterval = 3 * time.Minute
	// rollingPoll is how often a RollingSync in progress looks at its applications.
	rollingPoll = time.Second
)

// Condition types on an ApplicationSet (Argo CD's).
const (
	ConditionErrorOccurred      = "ErrorOccurred"
	ConditionResourcesUpToDate  = "ResourcesUpToDate"
	ConditionRolloutProgressing = "RolloutProgressing"
)

// Engine is what the controller needs of the GitOps engine.
type Engine interface {
	UpsertGenerated(a *app.Application, appSet string) error
	Generated(appSet string) []string
	Spec(name string) (*app.Application, error)
	Status(name string) (engine.AppStatus, error)
	Sync(ctx context.Context, name string, opts engine.SyncOptions) (*engine.SyncResult, error)
	Remove(ctx context.Context, name string, cascade bool) error
	Enqueue(name string)
}

var _ Engine = (*engine.Engine)(nil)

// Condition is a condition on an ApplicationSet.
type Condition struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"` // True or False
	Message string    `json:"message"`
	Since   time.Time `json:"since"`
}

// AppStep is a generated application's place in a RollingSync.
type AppStep struct {
	App     string `json:"application"`
	Step    int    `json:"step"`   // 1-based; 0: no step selects it (never synced by the strategy)
	Status  string `json:"status"` // Waiting, Pending, Progressing, Healthy (Argo CD's)
	Message string `json:"message,omitempty"`
}

// Status is what the controller reports for one ApplicationSet.
type Status struct {
	Name string `json:"name"`
	// Owner is the application that renders it (app of apps); "" when defined in git.
	Owner        string      `json:"owner,omitempty"`
	File         string      `json:"file,omitempty"`
	Applications []string    `json:"applications,omitempty"`
	Conditions   []Condition `json:"conditions,omitempty"`
	Steps        []AppStep   `json:"steps,omitempty"`
	GeneratedAt  time.Time   `json:"generatedAt"`
}

// Health is the ApplicationSet's health for a parent application: Degraded with the error
// when it cannot generate, Progressing before its first generation or while a rolling sync
// runs, else Healthy.
func (s Status) Health() health.Result {
	for _, c := range s.Conditions {
		if c.Type == ConditionErrorOccurred && c.Status == "True" {
			return health.Result{Status: health.Degraded, Message: c.Message}
		}
	}
	for _, c := range s.Conditions {
		if c.Type == ConditionRolloutProgressing && c.Status == "True" {
			return health.Result{Status: health.Progressing, Message: c.Message}
		}
	}
	if s.GeneratedAt.IsZero() {
		return health.Result{Status: health.Progressing, Message: "not generated yet"}
	}
	return health.Result{Status: health.Healthy}
}

// Entry is an ApplicationSet and where it is defined.
type Entry struct {
	Set   *ApplicationSet
	File  string // for people: apps/x.yaml, git-source S: path
	Owner string // the application that renders it; "" for one defined in git
}

// Options configure a Controller.
type Options struct {
	// Engine runs the generated applications; SetEngine sets it when the engine is built after
	// the controller (it takes the controller's Hook).
	Engine  Engine
	Sources Sources
	// RequeueInterval: DefaultRequeueInterval when 0.
	RequeueInterval time.Duration
	Logger          *slog.Logger
	// OnStatus is called when an ApplicationSet's status changes (may be nil).
	OnStatus func(Status)
}

// Controller keeps every ApplicationSet's applications generated.
type Controller struct {
	opts Options
	log  *slog.Logger

	mu   sync.Mutex
	sets map[string]*setState
	wake chan struct{}
	bg   sync.WaitGroup // rolling syncs
}

type setState struct {
	entry  Entry
	status Status
	due    time.Time
	gen    uint64 // counts Puts and Notifies: one during a reconcile asks for another
	repos  []string
	busy   sync.Mutex // one reconcile at a time
	// syncing are the applications the rolling sync started and that have not finished.
	syncing map[string]bool
}

// New returns a Controller; Run starts it.
func New(opts Options) *Controller {
	if opts.RequeueInterval <= 0 {
		opts.RequeueInterval = DefaultRequeueInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Controller{opts: opts, log: opts.Logger, sets: map[string]*setState{}, wake: make(chan struct{}, 1)}
}

// SetEngine sets the engine before Run.
func (c *Controller) SetEngine(e Engine) { c.opts.Engine = e }

// ErrOwned: the ApplicationSet is defined elsewhere (in git, or by another application).
var ErrOwned = fmt.Errorf("ApplicationSet owned elsewhere: %w", errdefs.ErrConflict)

// Put adds or replaces an ApplicationSet; it is generated at once when Run runs (or by
// Reconcile).
func (c *Controller) Put(e Entry) error {
	name := e.Set.Metadata.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.sets[name]
	if st != nil && st.entry.Owner != e.Owner {
		return fmt.Errorf("ApplicationSet %q is already defined by %s: %w", name, ownerText(st.entry.Owner), ErrOwned)
	}
	if st == nil {
		st = &setState{syncing: map[string]bool{}}
		st.status = Status{Name: name}
		c.sets[name] = st
	}
	st.entry = e
	st.status.Owner, st.status.File = e.Owner, e.File
	st.due = time.Time{}
	st.gen++
	c.kick()
	return nil
}

// resourceOwnerPrefix marks the owner of an ApplicationSet resource of the runtime's cluster
// (never an application's name: it has a space).
const resourceOwnerPrefix = "ApplicationSet resource "

// ResourceOwner is the Entry.Owner of the ApplicationSet resource ns/name of the runtime's
// cluster: such a set is neither git's (SetAll leaves it) nor an application's.
func ResourceOwner(ns, name string) string { return resourceOwnerPrefix + ns + "/" + name }

// IsResourceOwner reports whether owner is a ResourceOwner.
func IsResourceOwner(owner string) bool { return strings.HasPrefix(owner, resourceOwnerPrefix) }

func ownerText(owner string) string {
	if IsResourceOwner(owner) {
		return owner
	}
	if owner == "" {
		return "the installation repository or a Git Source"
	}
	return "application " + owner
}

// Get returns an ApplicationSet's entry.
func (c *Controller) Get(name string) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.sets[name]
	if st == nil {
		return Entry{}, false
	}
	return st.entry, true
}

// SetAll makes the ApplicationSets defined in git (owner "") exactly these: new ones are
// added, changed ones replaced, missing ones deleted with their applications. Names held by
// an application's ApplicationSets are reported.
func (c *Controller) SetAll(ctx context.Context, entries map[string]Entry) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		if err := c.Put(entries[name]); err != nil {
			errs = append(errs, err)
		}
	}
	c.mu.Lock()
	var gone []string
	for name, st := range c.sets {
		if _, ok := entries[name]; !ok && st.entry.Owner == "" {
			gone = append(gone, name)
		}
	}
	c.mu.Unlock()
	for _, name := range gone {
		if err := c.Delete(ctx, name, "", true); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Delete removes an ApplicationSet (of that owner) and the applications it generated: with
// cascade, each with its resources when it carries the resources finalizer
// (preserveResourcesOnDeletion leaves it out), as Argo CD deletes them; without, resources
// stay.
func (c *Controller) Delete(ctx context.Context, name, owner string, cascade bool) error {
	c.mu.Lock()
	st := c.sets[name]
	if st == nil || st.entry.Owner != owner {
		c.mu.Unlock()
		return nil
	}
	delete(c.sets, name)
	c.mu.Unlock()
	st.busy.Lock()
	defer st.busy.Unlock()
	var errs []error
	for _, a := range c.opts.Engine.Generated(name) {
		if err := c.removeApp(ctx, a, cascade); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) removeApp(ctx context.Context, name string, cascade bool) error {
	spec, err := c.opts.Engine.Spec(name)
	if err != nil {
		return nil
	}
	cascade = cascade && slices.Contains(spec.Metadata.Finalizers, ResourcesFinalizer)
	if err := c.opts.Engine.Remove(ctx, name, cascade); err != nil && !errors.Is(err, engine.ErrAppNotFound) {
		return fmt.Errorf("remove application %s: %w", name, err)
	}
	return nil
}

// Status returns an ApplicationSet's status.
func (c *Controller) Status(name string) (Status, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.sets[name]
	if st == nil {
		return Status{}, false
	}
	return cloneStatus(st.status), true
}

// List returns every ApplicationSet's status, by name.
func (c *Controller) List() []Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Status, 0, len(c.sets))
	for _, name := range slices.Sorted(maps.Keys(c.sets)) {
		out = append(out, cloneStatus(c.sets[name].status))
	}
	return out
}

func cloneStatus(s Status) Status {
	s.Applications = slices.Clone(s.Applications)
	s.Conditions = slices.Clone(s.Conditions)
	s.Steps = slices.Clone(s.Steps)
	return s
}

// Notify generates again, at once, the ApplicationSets whose git generators read repoURL. It
// returns how many.
func (c *Controller) Notify(repoURL string) int {
	key, err := repourl.Normalize(repoURL)
	if err != nil {
		return 0
	}
	c.mu.Lock()
	n := 0
	for _, st := range c.sets {
		if slices.ContainsFunc(st.repos, func(u string) bool { k, _ := repourl.Normalize(u); return k == key }) {
			st.due = time.Time{}
			st.gen++
			n++
		}
	}
	c.mu.Unlock()
	if n > 0 {
		c.kick()
	}
	return n
}

func (c *Controller) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run generates every ApplicationSet when it is due, until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	defer c.bg.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.wake:
		case <-t.C:
		}
		now := time.Now()
		next := now.Add(c.opts.RequeueInterval)
		c.mu.Lock()
		due := map[string]uint64{}
		for name, st := range c.sets {
			if !st.due.After(now) {
				due[name] = st.gen
			} else if st.due.Before(next) {
				next = st.due
			}
		}
		c.mu.Unlock()
		for _, name := range slices.Sorted(maps.Keys(due)) {
			wait := c.Reconcile(ctx, name)
			c.mu.Lock()
			if st := c.sets[name]; st != nil {
				if st.gen == due[name] {
					st.due = time.Now().Add(wait)
				}
				if st.due.Before(next) {
					next = st.due
				}
			}
			c.mu.Unlock()
		}
		t.Reset(max(time.Until(next), 10*time.Millisecond))
	}
}

// Reconcile generates one ApplicationSet now and applies the result; it returns when the
// ApplicationSet wants to be looked at again.
func (c *Controller) Reconcile(ctx context.Context, name string) time.Duration {
	c.mu.Lock()
	st := c.sets[name]
	c.mu.Unlock()
	if st == nil {
		return c.opts.RequeueInterval
	}
	st.busy.Lock()
	defer st.busy.Unlock()
	c.mu.Lock()
	set, owner, before := st.entry.Set, st.entry.Owner, st.status.Health()
	c.mu.Unlock()
	if owner != "" && !IsResourceOwner(owner) {
		// The owning application shows this ApplicationSet's health among its resources.
		defer func() {
			c.mu.Lock()
			after := st.status.Health()
			c.mu.Unlock()
			if after != before {
				c.opts.Engine.Enqueue(owner)
			}
		}()
	}
	res, err := Render(ctx, set, c.opts.Sources)
	if err != nil {
		c.setCondition(st, ConditionErrorOccurred, "True", err.Error())
		c.log.Warn("ApplicationSet not generated", "applicationset", name, "err", err)
		return c.opts.RequeueInterval
	}
	c.mu.Lock()
	st.repos = res.Repos
	c.mu.Unlock()
	rolling := set.Spec.Strategy != nil && set.Spec.Strategy.Type == StrategyRollingSync
	if err := c.apply(ctx, set, res, rolling); err != nil {
		c.setCondition(st, ConditionErrorOccurred, "True", err.Error())
		return c.opts.RequeueInterval
	}
	names := make([]string, len(res.Apps))
	for i, g := range res.Apps {
		names[i] = g.App.Metadata.Name
	}
	c.mu.Lock()
	st.status.Applications = names
	st.status.GeneratedAt = time.Now()
	c.mu.Unlock()
	c.setCondition(st, ConditionErrorOccurred, "False", "")
	c.setCondition(st, ConditionResourcesUpToDate, "True", fmt.Sprintf("%d applications generated", len(names)))
	if rolling {
		if c.rollingSync(ctx, st, set, res) {
			return rollingPoll
		}
	}
	return c.opts.RequeueInterval
}

// apply brings the engine's applications of the set in line with the render, as
// applicationsSync permits. Conflicts (a name held elsewhere) are checked before anything
// changes.
func (c *Controller) apply(ctx context.Context, set *ApplicationSet, res *Result, rolling bool) error {
	name := set.Metadata.Name
	policy := PolicySync
	if p := set.Spec.SyncPolicy; p != nil && p.ApplicationsSync != "" {
		policy = p.ApplicationsSync
	}
	existing := map[string]bool{}
	for _, a := range c.opts.Engine.Generated(name) {
		existing[a] = true
	}
	for _, g := range res.Apps {
		n := g.App.Metadata.Name
		if existing[n] {
			continue
		}
		if _, err := c.opts.Engine.Status(n); err == nil {
			return fmt.Errorf("%s: renders application %q, which exists and is not generated by this ApplicationSet: %w", g.Origin, n, engine.ErrOwned)
		}
	}
	var errs []error
	want := map[string]bool{}
	for _, g := range res.Apps {
		a := g.App
		want[a.Metadata.Name] = true
		if existing[a.Metadata.Name] && (policy == PolicyCreateOnly || policy == PolicyCreateDelete) {
			continue
		}
		if rolling && a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.Automated != nil {
			// The rolling sync decides when each application syncs, as Argo CD's does.
			cp := *a
			sp := *a.Spec.SyncPolicy
			sp.Automated = nil
			cp.Spec.SyncPolicy = &sp
			a = &cp
		}
		if err := c.opts.Engine.UpsertGenerated(a, name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", g.Origin, err))
		}
	}
	if policy == PolicySync || policy == PolicyCreateDelete {
		for a := range existing {
			if !want[a] {
				if err := c.removeApp(ctx, a, true); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) setCondition(st *setState, typ, status, msg string) {
	c.mu.Lock()
	changed := true
	conds := st.status.Conditions
	i := slices.IndexFunc(conds, func(x Condition) bool { return x.Type == typ })
	switch {
	case i >= 0 && conds[i].Status == status && conds[i].Message == msg:
		changed = false
	case i >= 0:
		conds[i] = Condition{Type: typ, Status: status, Message: msg, Since: time.Now()}
	case status == "False" && msg == "":
		changed = false
	default:
		st.status.Conditions = append(conds, Condition{Type: typ, Status: status, Message: msg, Since: time.Now()})
	}
	s := cloneStatus(st.status)
	c.mu.Unlock()
	if changed && c.opts.OnStatus != nil {
		c.opts.OnStatus(s)
	}
}
