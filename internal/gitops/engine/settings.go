package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine/diff"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

// Argo CD's resource tracking (argocd-cm application.resourceTrackingMethod).
const (
	// AnnotationArgoTrackingID is Argo CD's tracking annotation,
	// "<app>:<group>/<kind>:<namespace>/<name>".
	AnnotationArgoTrackingID = "argocd.argoproj.io/tracking-id"
	// DefaultInstanceLabelKey is Argo CD's default application.instanceLabelKey.
	DefaultInstanceLabelKey = "app.kubernetes.io/instance"

	KeyTrackingMethod   = "application.resourceTrackingMethod"
	KeyInstanceLabelKey = "application.instanceLabelKey"
)

// TrackingMethod is how objects are marked with their application besides Freshet's own
// label and annotation (which the engine always writes: its watches select on them).
type TrackingMethod string

// Tracking methods (Argo CD's).
const (
	// TrackingNone writes only Freshet's markers (the default).
	TrackingNone TrackingMethod = ""
	// TrackingLabel also writes the instance label (<instanceLabelKey>: <app>).
	TrackingLabel TrackingMethod = "label"
	// TrackingAnnotation also writes argocd.argoproj.io/tracking-id.
	TrackingAnnotation TrackingMethod = "annotation"
	// TrackingAnnotationLabel writes both.
	TrackingAnnotationLabel TrackingMethod = "annotation+label"
)

func (m TrackingMethod) label() bool { return m == TrackingLabel || m == TrackingAnnotationLabel }
func (m TrackingMethod) annotation() bool {
	return m == TrackingAnnotation || m == TrackingAnnotationLabel
}

// Settings are what the engine takes from Argo CD's argocd-cm ConfigMap: Lua health checks
// (resource.customizations) and resource tracking.
type Settings struct {
	Health           *health.Customizations
	TrackingMethod   TrackingMethod
	InstanceLabelKey string // "" is DefaultInstanceLabelKey
}

func (s Settings) instanceLabelKey() string {
	if s.InstanceLabelKey == "" {
		return DefaultInstanceLabelKey
	}
	return s.InstanceLabelKey
}

// ParseSettings reads an argocd-cm ConfigMap's data. Problems (a script that does not compile,
// an unknown tracking method) name the key; what is valid is kept, an invalid tracking method
// or label key leaves the default.
func ParseSettings(data map[string]string) (Settings, []error) {
	var s Settings
	var problems []error
	s.Health, problems = health.ParseCustomizations(data)
	if v, ok := data[KeyTrackingMethod]; ok {
		switch m := TrackingMethod(strings.TrimSpace(v)); m {
		case TrackingLabel, TrackingAnnotation, TrackingAnnotationLabel:
			s.TrackingMethod = m
		case "":
		default:
			problems = append(problems, errdefs.Invalid("argocd-cm "+KeyTrackingMethod, v, "want label, annotation or annotation+label"))
		}
	}
	if v, ok := data[KeyInstanceLabelKey]; ok && strings.TrimSpace(v) != "" {
		k := strings.TrimSpace(v)
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			problems = append(problems, errdefs.Invalid("argocd-cm "+KeyInstanceLabelKey, v, "is not a label key: "+strings.Join(errs, "; ")))
		} else {
			s.InstanceLabelKey = k
		}
	}
	return s, problems
}

// SetSettings replaces the engine's argocd-cm settings (Lua health checks, resource tracking)
// and refreshes every application when they changed.
func (e *Engine) SetSettings(s Settings) {
	e.settings.Store(&s)
	e.checker.Store(e.rules.WithCustomizations(s.Health))
	e.mu.Lock()
	names := make([]string, 0, len(e.apps))
	for n := range e.apps {
		names = append(names, n)
	}
	e.mu.Unlock()
	for _, n := range names {
		e.queue.Add(n)
	}
}

// Settings returns the engine's argocd-cm settings.
func (e *Engine) Settings() Settings {
	if s := e.settings.Load(); s != nil {
		return *s
	}
	return Settings{}
}

func (e *Engine) health() *health.Checker { return e.checker.Load() }

// argoTrackingID is Argo CD's tracking id of an object of app.
func argoTrackingID(app string, k ResourceKey) string {
	return fmt.Sprintf("%s:%s/%s:%s/%s", app, k.Group, k.Kind, k.Namespace, k.Name)
}

// prepareHash covers what prepare takes from outside the rendered objects and the source:
// the app's Validate option and the tracking settings. A change prepares the objects anew.
func (e *Engine) prepareHash(a *app.Application) uint64 {
	s := e.Settings()
	v := ""
	if a.Spec.SyncPolicy != nil {
		v, _ = a.Spec.SyncPolicy.SyncOptions.Get("Validate")
	}
	return diff.Hash(map[string]any{"v": strings.ToLower(v), "t": string(s.TrackingMethod), "l": s.instanceLabelKey()})
}

// Bounds on the search for objects Argo CD tracked for an app.
const (
	adoptMaxObjects = 5000
	adoptPageSize   = 500
)

// adoptTracked finds, once per app, when the cluster holds no Freshet inventory for it (an app
// moved from Argo CD), the objects Argo CD tracked for it that it no longer renders: objects
// of the kinds it renders, in the namespaces it renders into, whose
// argocd.argoproj.io/tracking-id names the app and the object itself, or (with label tracking
// configured) whose instance label (application.instanceLabelKey) is the app's name. They join the inventory, so they
// require pruning as Argo CD would prune them. The objects it still renders are adopted by
// the next sync's apply.
func (e *Engine) adoptTracked(ctx context.Context, st *appState, cl *cluster, ds *desiredSet) []ObjRef {
	st.mu.Lock()
	if st.adoptedDone || st.inv == nil || !st.inv.absent {
		st.mu.Unlock()
		return nil
	}
	st.adoptedDone = true
	st.mu.Unlock()
	set := e.Settings()
	labelKey := set.instanceLabelKey()
	// Objects with only the instance label count under label tracking only: a chart's own
	// app.kubernetes.io/instance label is no sign that Argo CD applied the object.
	byLabel := set.TrackingMethod.label()
	want := map[ResourceKey]bool{}
	type scope struct {
		m  *meta.RESTMapping
		ns string
	}
	var scopes []scope
	seen := map[string]bool{}
	for _, d := range ds.resources {
		want[d.key] = true
		m := d.restMapping()
		if d.child != nil || m == nil {
			continue
		}
		k := m.Resource.String() + "|" + d.key.Namespace
		if !seen[k] {
			seen[k] = true
			scopes = append(scopes, scope{m, d.key.Namespace})
		}
	}
	var out []ObjRef
	adopted := map[ResourceKey]bool{}
	for _, sc := range scopes {
		gvk := sc.m.GroupVersionKind
		for _, o := range e.trackedObjects(ctx, cl, sc.m, sc.ns) {
			k := ResourceKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: o.namespace, Name: o.name}
			if want[k] || adopted[k] {
				continue
			}
			if (o.argoID != "" && o.argoID == argoTrackingID(st.name, k)) || (o.argoID == "" && byLabel && o.labels[labelKey] == st.name) {
				adopted[k] = true
				out = append(out, ObjRef{ResourceKey: k, Version: gvk.Version})
			}
		}
	}
	if len(out) > 0 {
		st.mu.Lock()
		st.adopted = adopted
		st.mu.Unlock()
		e.log.Info("objects Argo CD tracked for the application join its inventory", "app", st.name, "count", len(out))
	}
	return out
}

// trackedObj is what adoption needs of a live object.
type trackedObj struct {
	namespace, name string
	argoID          string
	labels          map[string]string
}

type trackedList struct {
	at    time.Time
	items []trackedObj
}

// trackedListTTL: applications coming to a cluster together (a restarted runtime, a migration)
// share one LIST per kind and namespace.
const trackedListTTL = time.Minute

// trackedObjects lists the objects of a kind in a namespace that Argo CD may have applied: no
// Freshet tracking id, no owner, not being deleted, with Argo CD's tracking id or any labels.
// Bounded by adoptMaxObjects; shared for trackedListTTL.
func (e *Engine) trackedObjects(ctx context.Context, cl *cluster, m *meta.RESTMapping, ns string) []trackedObj {
	key := cl.host + "|" + m.Resource.String() + "|" + ns
	e.trackedMu.Lock()
	defer e.trackedMu.Unlock()
	if l, ok := e.tracked[key]; ok && time.Since(l.at) < trackedListTTL {
		return l.items
	}
	var items []trackedObj
	opts := metav1.ListOptions{Limit: adoptPageSize}
	read := 0
	for read < adoptMaxObjects {
		list, err := cl.resource(m, ns).List(ctx, opts)
		if err != nil {
			break // forbidden or gone: nothing to adopt of this kind
		}
		for i := range list.Items {
			o := &list.Items[i]
			read++
			if o.GetDeletionTimestamp() != nil || len(o.GetOwnerReferences()) > 0 {
				continue
			}
			ann := o.GetAnnotations()
			if _, mine := ann[AnnotationTrackingID]; mine {
				continue // Freshet's: the inventory decides
			}
			id := ann[AnnotationArgoTrackingID]
			if id == "" && len(o.GetLabels()) == 0 {
				continue
			}
			items = append(items, trackedObj{namespace: o.GetNamespace(), name: o.GetName(), argoID: id, labels: o.GetLabels()})
		}
		if list.GetContinue() == "" {
			break
		}
		opts.Continue = list.GetContinue()
	}
	if e.tracked == nil || len(e.tracked) > 1024 {
		e.tracked = map[string]trackedList{}
	}
	e.tracked[key] = trackedList{at: time.Now(), items: items}
	return items
}
