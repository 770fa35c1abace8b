package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine/diff"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

// App of apps. An application whose rendered manifests hold argoproj.io Applications and
// AppProjects does not apply them to its cluster (which has no such kinds): a sync creates,
// updates and prunes them as the engine's own applications and projects, owned by it. They
// show in the parent's resources like any resource, with the child's health; the parent's
// inventory keeps their manifests, so they come back after a restart.

// Argo CD's API group and the kinds the engine takes over from a parent's manifests.
const (
	ArgoGroup          = "argoproj.io"
	KindApplication    = "Application"
	KindAppProject     = "AppProject"
	KindApplicationSet = "ApplicationSet"
)

// ErrOwned: the application (or project) is owned by another application, or defined where
// applications are defined, and cannot be taken over.
var ErrOwned = fmt.Errorf("owned elsewhere: %w", errdefs.ErrConflict)

// CascadeFinalizer on a child Application makes pruning it from its parent delete its
// resources, as in Argo CD.
const CascadeFinalizer = "resources-finalizer.argocd.argoproj.io"

// childSpec is an Application or AppProject a parent renders.
type childSpec struct {
	kind    string
	app     *app.Application
	project *app.AppProject
	data    []byte // an ApplicationSet's manifest (JSON)
	hash    uint64
}

// AppSets is the ApplicationSet controller as the engine sees it: an application that renders
// ApplicationSets (app of apps) owns them, and the controller generates their applications.
type AppSets interface {
	// Check decodes and validates an ApplicationSet manifest (JSON); the error names the field.
	Check(data []byte) error
	// Put creates or replaces an ApplicationSet owned by application owner; it fails (ErrOwned)
	// when the name is defined elsewhere.
	Put(owner string, data []byte) error
	// State says whether an ApplicationSet exists, its owner ("" for one defined in git) and
	// its health.
	State(name string) (owner string, exists bool, h health.Result)
	// Delete removes the ApplicationSet owner owns, with the applications it generated;
	// without cascade their resources stay, whatever their finalizers say.
	Delete(ctx context.Context, name, owner string, cascade bool) error
}

// childSet is an ApplicationSet rendered by an application.
type childSet struct {
	owner string
	obj   *unstructured.Unstructured
	hash  uint64
}

// childProject is an AppProject rendered by an application.
type childProject struct {
	project *app.AppProject
	owner   string
	obj     *unstructured.Unstructured
	hash    uint64
}

func isArgoKind(group, kind string) bool {
	return group == ArgoGroup && (kind == KindApplication || kind == KindAppProject || kind == KindApplicationSet)
}

func isChildRef(r ObjRef) bool { return isArgoKind(r.Group, r.Kind) }

// decodeChild reads a rendered Application or AppProject with the same strict decoder as
// applications in git; the error names the field.
func (e *Engine) decodeChild(obj *unstructured.Unstructured) (*childSpec, error) {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	cs := &childSpec{kind: obj.GetKind()}
	var canon []byte
	switch cs.kind {
	case KindApplication:
		if cs.app, err = app.DecodeApplication(data); err != nil {
			return nil, err
		}
		canon, err = app.EncodeApplication(cs.app)
	case KindAppProject:
		if cs.project, err = app.DecodeAppProject(data); err != nil {
			return nil, err
		}
		canon, err = app.EncodeAppProject(cs.project)
	case KindApplicationSet:
		if e.opts.AppSets == nil {
			return nil, fmt.Errorf("kind %s: no ApplicationSet controller runs: %w", cs.kind, app.ErrUnsupported)
		}
		if err = e.opts.AppSets.Check(data); err != nil {
			return nil, err
		}
		canon, cs.data = data, data
	default:
		return nil, fmt.Errorf("kind %s: %w", cs.kind, app.ErrUnsupported)
	}
	if err != nil {
		return nil, err
	}
	cs.hash = diff.Hash(map[string]any{"m": string(canon)})
	return cs, nil
}

// prepareChild turns a rendered argoproj.io object into a desired child, or a condition
// saying why it cannot be one.
func (e *Engine) prepareChild(parent *app.Application, project *app.AppProject, o render.Object, obj *unstructured.Unstructured) (*desiredObj, *Condition) {
	gvk := obj.GroupVersionKind()
	key := ResourceKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	bad := func(format string, args ...any) (*desiredObj, *Condition) {
		return nil, &Condition{Type: ConditionInvalidSpec, Source: o.Source,
			Message: fmt.Sprintf("%s (%s): ", key, o.Source) + fmt.Sprintf(format, args...)}
	}
	if gvk.Kind == KindApplicationSet && e.opts.AppSets == nil {
		return bad("this runtime runs no ApplicationSet controller; render the Applications themselves (nothing of this application is synced while it renders one)")
	}
	if err := project.PermitsResource(gvk.Group, gvk.Kind, true); err != nil {
		return bad("%v", err)
	}
	cs, err := e.decodeChild(obj)
	if err != nil {
		return bad("not a valid %s: %v", gvk.Kind, err)
	}
	if cs.kind == KindApplication && cs.app.Metadata.Name == parent.Metadata.Name {
		return bad("an application cannot render itself")
	}
	d := &desiredObj{obj: obj, key: key, ref: ObjRef{ResourceKey: key, Version: gvk.Version}, source: o.Source,
		wave: syncWave(obj), namespaced: true, child: cs}
	d.hash = cs.hash
	return d, nil
}

// resolveProject finds a project by name: where applications are defined, else rendered by
// a parent, else the built-in default; a name found nowhere is a project that permits nothing.
func (e *Engine) resolveProject(name string) *app.AppProject {
	if e.opts.Projects != nil {
		if p := e.opts.Projects(name); p != nil {
			return p
		}
	}
	e.mu.Lock()
	cp := e.projects[name]
	e.mu.Unlock()
	if cp != nil {
		return cp.project
	}
	if name == app.DefaultProject || name == "" {
		return app.NewDefaultProject()
	}
	p := &app.AppProject{APIVersion: app.APIVersion, Kind: app.KindAppProject}
	p.Metadata.Name = name
	p.Spec.Description = fmt.Sprintf("project %q is not defined", name)
	return p
}

// childState describes what the engine holds under a child's name: its live manifest when
// parent owns it, its owner ("" for an application defined in git) and whether it exists.
func (e *Engine) childState(kind, name string) (obj *unstructured.Unstructured, owner string, hash uint64, exists bool, status AppStatus) {
	if kind == KindApplicationSet {
		e.mu.Lock()
		cs := e.appSets[name]
		e.mu.Unlock()
		if e.opts.AppSets == nil {
			return nil, "", 0, false, AppStatus{}
		}
		setOwner, ok, h := e.opts.AppSets.State(name)
		switch {
		case !ok:
			return nil, "", 0, false, AppStatus{}
		case cs == nil || cs.owner != setOwner:
			return nil, setOwner, 0, true, AppStatus{Health: h}
		}
		return cs.obj, cs.owner, cs.hash, true, AppStatus{Health: h, ReconciledAt: e.now(), Sync: Synced}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if kind == KindAppProject {
		if cp := e.projects[name]; cp != nil {
			return cp.obj, cp.owner, cp.hash, true, AppStatus{}
		}
		if e.opts.Projects != nil && e.opts.Projects(name) != nil {
			return nil, "", 0, true, AppStatus{}
		}
		return nil, "", 0, false, AppStatus{}
	}
	st := e.apps[name]
	if st == nil {
		return nil, "", 0, false, AppStatus{}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ownerObj, st.owner, st.childHash, true, st.status
}

// childHealth is a child application's health as its parent sees it (Argo CD's documented
// health check for Applications: Progressing until the child has a status).
func childHealth(kind string, s AppStatus) health.Result {
	if kind == KindAppProject {
		return health.Result{Status: health.Healthy}
	}
	if kind == KindApplicationSet {
		return s.Health
	}
	if s.ReconciledAt.IsZero() {
		return health.Result{Status: health.Progressing, Message: "not compared yet"}
	}
	h := s.Health
	if s.Sync != Synced && h.Message == "" {
		h.Message = "sync status " + string(s.Sync)
	}
	return h
}

// compareChild compares a desired child with the engine's application or project of that
// name.
func (e *Engine) compareChild(parent string, d *desiredObj) *resResult {
	r := &resResult{d: d, ref: d.ref}
	obj, owner, hash, exists, status := e.childState(d.child.kind, d.key.Name)
	switch {
	case !exists:
		r.status, r.health = DiffMissing, health.Result{Status: health.Missing}
		return r
	case owner != parent:
		r.status, r.conflict = DiffOutOfSync, true
		r.message = ownedMessage(d.child.kind, d.key.Name, owner)
		r.health = health.Result{Status: health.Unknown, Message: r.message}
		return r
	case hash == d.hash:
		r.status = DiffSynced
	default:
		r.status = DiffOutOfSync
	}
	r.live = obj
	r.health = childHealth(d.child.kind, status)
	return r
}

func ownedMessage(kind, name, owner string) string {
	if owner == "" {
		return fmt.Sprintf("%s %q is already defined where applications are defined (installation repository or Git Source), not by this application", kind, name)
	}
	return fmt.Sprintf("%s %q is already owned by application %q", kind, name, owner)
}

// extraChild is what the parent's inventory lists and it no longer renders (nil when gone or
// owned by someone else).
func (e *Engine) extraChild(parent string, ref ObjRef) *unstructured.Unstructured {
	obj, owner, _, exists, _ := e.childState(ref.Kind, ref.Name)
	if !exists || owner != parent || obj == nil {
		return nil
	}
	return obj
}

// applyChild creates or updates a child; dry run only says what it would do.
func (e *Engine) applyChild(parent string, d *desiredObj, dryRun bool) (ResultCode, error) {
	_, owner, hash, exists, _ := e.childState(d.child.kind, d.key.Name)
	switch {
	case exists && owner != parent:
		return ResultFailed, fmt.Errorf("%s: %w", ownedMessage(d.child.kind, d.key.Name, owner), ErrOwned)
	case exists && hash == d.hash:
		return ResultUnchanged, nil
	case dryRun && exists:
		return ResultConfigured, nil
	case dryRun:
		return ResultCreated, nil
	}
	code := ResultConfigured
	if !exists {
		code = ResultCreated
	}
	if d.child.kind == KindApplicationSet {
		if err := e.opts.AppSets.Put(parent, d.child.data); err != nil {
			return ResultFailed, err
		}
		e.mu.Lock()
		e.appSets[d.key.Name] = &childSet{owner: parent, obj: d.obj, hash: d.hash}
		e.mu.Unlock()
		return code, nil
	}
	if d.child.kind == KindAppProject {
		e.mu.Lock()
		e.projects[d.key.Name] = &childProject{project: d.child.project, owner: parent, obj: d.obj, hash: d.hash}
		owned := e.childrenUsing(d.key.Name)
		e.mu.Unlock()
		for _, n := range owned {
			e.queue.Add(n) // their permissions may have changed
		}
		e.projectsChanged()
		return code, nil
	}
	if err := e.upsert(d.child.app, nil, parent, d.obj, d.hash); err != nil {
		return ResultFailed, err
	}
	return code, nil
}

// childrenUsing lists the applications of a project (e.mu held).
func (e *Engine) childrenUsing(project string) []string {
	var out []string
	for name, st := range e.apps {
		st.mu.Lock()
		if st.app != nil && st.app.Spec.Project == project {
			out = append(out, name)
		}
		st.mu.Unlock()
	}
	return out
}

// removeChild removes a child the parent no longer renders; an Application is removed with
// cascade when it carries Argo CD's resources finalizer, as in Argo CD.
func (e *Engine) removeChild(ctx context.Context, parent string, ref ObjRef) error {
	if ref.Kind == KindAppProject {
		e.mu.Lock()
		cp := e.projects[ref.Name]
		if cp != nil && cp.owner == parent {
			delete(e.projects, ref.Name)
		}
		e.mu.Unlock()
		if cp != nil && cp.owner == parent {
			e.projectsChanged()
		}
		return nil
	}
	if ref.Kind == KindApplicationSet {
		return e.removeAppSet(ctx, ref.Name, parent, true)
	}
	st, err := e.get(ref.Name)
	if err != nil {
		return nil
	}
	st.mu.Lock()
	owner, a := st.owner, st.app
	st.mu.Unlock()
	if owner != parent {
		return nil
	}
	err = e.Remove(ctx, ref.Name, slices.Contains(a.Metadata.Finalizers, CascadeFinalizer))
	if errors.Is(err, ErrAppNotFound) {
		return nil
	}
	return err
}

// removeChildren removes everything an application owns (its deletion).
func (e *Engine) removeChildren(ctx context.Context, parent string, cascade bool) error {
	e.mu.Lock()
	var names []string
	for name, st := range e.apps {
		st.mu.Lock()
		if st.owner == parent {
			names = append(names, name)
		}
		st.mu.Unlock()
	}
	removedProjects := false
	for name, cp := range e.projects {
		if cp.owner == parent {
			delete(e.projects, name)
			removedProjects = true
		}
	}
	var sets []string
	for name, cs := range e.appSets {
		if cs.owner == parent {
			sets = append(sets, name)
		}
	}
	e.mu.Unlock()
	if removedProjects {
		e.projectsChanged()
	}
	sort.Strings(names)
	sort.Strings(sets)
	var errs []error
	for _, n := range sets {
		// Its generated applications go with it (with their resources as their finalizers say).
		if err := e.removeAppSet(ctx, n, parent, cascade); err != nil {
			errs = append(errs, fmt.Errorf("ApplicationSet %s: %w", n, err))
		}
	}
	for _, n := range names {
		if err := e.Remove(ctx, n, cascade); err != nil && !errors.Is(err, ErrAppNotFound) {
			errs = append(errs, fmt.Errorf("child %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// childManifests are the manifests of what parent owns, for its inventory.
func (e *Engine) childManifests(parent string) []json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []json.RawMessage
	add := func(obj *unstructured.Unstructured) {
		if data, err := json.Marshal(obj.Object); err == nil {
			out = append(out, data)
		}
	}
	for _, st := range e.apps {
		st.mu.Lock()
		if st.owner == parent && st.ownerObj != nil {
			add(st.ownerObj)
		}
		st.mu.Unlock()
	}
	for _, cp := range e.projects {
		if cp.owner == parent {
			add(cp.obj)
		}
	}
	for _, cs := range e.appSets {
		if cs.owner == parent {
			add(cs.obj)
		}
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i]) < string(out[j]) })
	return out
}

// restoreChildren brings back, after a restart, the children a parent's inventory lists.
func (e *Engine) restoreChildren(parent string, manifests []json.RawMessage) {
	for _, m := range manifests {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(m); err != nil {
			continue
		}
		cs, err := e.decodeChild(obj)
		if err != nil {
			e.log.Warn("child not restored", logKeyApp, parent, logKeyErr, err)
			continue
		}
		if _, _, _, exists, _ := e.childState(cs.kind, obj.GetName()); exists {
			continue
		}
		d := &desiredObj{obj: obj, key: KeyOf(obj), child: cs, hash: cs.hash}
		if _, err := e.applyChild(parent, d, false); err != nil {
			e.log.Warn("child not restored", logKeyApp, parent, logKeyErr, err)
		}
	}
}

// Owner returns the application that owns an application ("" for one defined in git).
func (e *Engine) Owner(name string) (string, error) {
	st, err := e.get(name)
	if err != nil {
		return "", err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.owner, nil
}

// Spec returns an application's spec as the engine runs it.
func (e *Engine) Spec(name string) (*app.Application, error) {
	st, err := e.get(name)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.app, nil
}

// waitChild: is a child application applied at `at` settled (compared since, not
// Progressing, no sync running)?
func (e *Engine) childPending(name string, at time.Time) (bool, string) {
	st, err := e.get(name)
	if err != nil {
		return false, ""
	}
	st.mu.Lock()
	s := st.status
	running := st.opCancel != nil
	st.mu.Unlock()
	switch {
	case s.ReconciledAt.Before(at):
		return true, "not compared yet"
	case running:
		return true, "syncing"
	case s.Health.Status == health.Progressing:
		return true, s.Health.Message
	}
	return false, ""
}

// removeAppSet removes an ApplicationSet parent owns, with its applications (and, with
// cascade, their resources as their finalizers say).
func (e *Engine) removeAppSet(ctx context.Context, name, parent string, cascade bool) error {
	e.mu.Lock()
	cs := e.appSets[name]
	if cs != nil && cs.owner == parent {
		delete(e.appSets, name)
	}
	e.mu.Unlock()
	if cs == nil || cs.owner != parent || e.opts.AppSets == nil {
		return nil
	}
	return e.opts.AppSets.Delete(ctx, name, parent, cascade)
}

// ChildProjects are the AppProjects applications render (app of apps), by name, with the
// application that renders each.
func (e *Engine) ChildProjects() []OwnedProject {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]OwnedProject, 0, len(e.projects))
	for _, cp := range e.projects {
		out = append(out, OwnedProject{Project: cp.project, Owner: cp.owner})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Project.Metadata.Name < out[j].Project.Metadata.Name })
	return out
}

// OwnedProject is an AppProject an application renders, and that application.
type OwnedProject struct {
	Project *app.AppProject
	Owner   string
}

// projectsChanged tells Options.ProjectsChanged (e.mu not held).
func (e *Engine) projectsChanged() {
	if e.opts.ProjectsChanged != nil {
		e.opts.ProjectsChanged()
	}
}
