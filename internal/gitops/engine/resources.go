package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// One object of an application's tree, looked at and acted on by itself: the app-proxy's node
// panel (live and desired manifests, their diff, events, a Pod's log) and its per-resource
// actions (delete, restart). Only objects of the application's tree are reached: a managed
// resource (live or not) or an object one of them owns, so an application's name never opens
// the rest of its cluster.

// RestartedAtAnnotation is what a restart sets on a workload's pod template (kubectl rollout
// restart and Argo CD's restart action set the same).
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// maxEvents bounds the events answered for one object.
const maxEvents = 200

// ResourceDetail is one object of an application's tree with its manifests.
type ResourceDetail struct {
	ResourceKey
	Version string `json:"version"`
	UID     string `json:"uid,omitempty"`
	// Managed: a resource the application renders (or one it requires pruning); otherwise an
	// object a managed one owns, which has no desired state.
	Managed bool `json:"managed"`
	// Status is the managed resource's comparison (Synced, OutOfSync, Missing, RequiresPruning).
	Status DiffStatus `json:"status,omitempty"`
	// Live is the object in the cluster (managed fields and the last-applied annotation left
	// out); absent when it does not exist.
	Live map[string]any `json:"live,omitempty"`
	// Desired is what a sync would make of it (the server-side apply dry run, normalized,
	// ignored differences removed); absent for an object the application does not render.
	Desired map[string]any `json:"desired,omitempty"`
	// Diff is a unified diff from live to desired; "" when Synced or not managed.
	Diff    string `json:"diff,omitempty"`
	Message string `json:"message,omitempty"`
}

// ResourceEvent is a Kubernetes event about an object.
type ResourceEvent struct {
	Type      string    `json:"type"` // Normal or Warning
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Count     int64     `json:"count"`
	Source    string    `json:"source,omitempty"` // the component that reported it
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
}

// LogOptions selects a Pod's log.
type LogOptions struct {
	Container string
	Follow    bool
	// TailLines: the last N lines only (0: all).
	TailLines int64
	Previous  bool
}

// DeletePropagation names how an object's dependents go with it: foreground (they are deleted
// first), background (after it) or orphan (they stay).
type DeletePropagation string

// The propagation policies DeleteResource takes.
const (
	PropagationForeground DeletePropagation = "foreground"
	PropagationBackground DeletePropagation = "background"
	PropagationOrphan     DeletePropagation = "orphan"
)

// located is an object found in an application's tree.
type located struct {
	cmp     *comparison
	result  *resResult // the managed resource's comparison; nil for an owned object
	node    *TreeNode  // nil for a managed resource that is not live
	version string
}

// locate finds key in the application's tree, or answers not found naming it.
func (e *Engine) locate(ctx context.Context, name string, key ResourceKey) (*located, error) {
	if key.Kind == "" || key.Name == "" {
		return nil, errdefs.Invalid("kind", key.String(), "a resource needs its kind and name")
	}
	st, err := e.get(name)
	if err != nil {
		return nil, err
	}
	cmp := e.compare(ctx, st, "", false)
	if cmp.failed {
		return nil, comparisonError(cmp)
	}
	loc := &located{cmp: cmp}
	for _, r := range cmp.results {
		if r.ref.ResourceKey == key {
			loc.result, loc.version = r, r.ref.Version
			break
		}
	}
	roots, err := e.treeOf(ctx, name, cmp)
	if err != nil {
		return nil, err
	}
	var walk func(ns []*TreeNode) bool
	walk = func(ns []*TreeNode) bool {
		for _, n := range ns {
			if n.ResourceKey == key {
				loc.node, loc.version = n, n.Version
				return true
			}
			if walk(n.Children) {
				return true
			}
		}
		return false
	}
	walk(roots)
	if loc.result == nil && loc.node == nil {
		return nil, fmt.Errorf("resource %s is not in application %q's tree: %w", key, name, errdefs.ErrNotFound)
	}
	return loc, nil
}

// live reads the located object from the cluster (nil, nil when it does not exist).
func (l *located) live(ctx context.Context, key ResourceKey) (*unstructured.Unstructured, error) {
	m, err := l.cmp.cl.mapping(schema.GroupVersionKind{Group: key.Group, Version: l.version, Kind: key.Kind}, false)
	if err != nil {
		return nil, fmt.Errorf("resource %s: %w", key, err)
	}
	obj, err := l.cmp.cl.resource(m, key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return obj, nil
}

// Resource returns one object of an application's tree with its live and desired manifests
// and their diff.
func (e *Engine) Resource(ctx context.Context, name string, key ResourceKey) (*ResourceDetail, error) {
	loc, err := e.locate(ctx, name, key)
	if err != nil {
		return nil, err
	}
	out := &ResourceDetail{ResourceKey: key, Version: loc.version, Managed: loc.result != nil}
	if loc.node != nil {
		out.UID = loc.node.UID
	}
	var live *unstructured.Unstructured
	if loc.node != nil || (loc.result != nil && loc.result.live != nil) {
		if live, err = loc.live(ctx, key); err != nil {
			return nil, err
		}
	}
	if live != nil {
		live = live.DeepCopy()
		live.SetManagedFields(nil)
		if a := live.GetAnnotations(); a != nil {
			delete(a, "kubectl.kubernetes.io/last-applied-configuration")
			if len(a) == 0 {
				a = nil
			}
			live.SetAnnotations(a)
		}
		out.Live = live.Object
		out.UID = string(live.GetUID())
	}
	if r := loc.result; r != nil {
		st, _ := e.get(name)
		st.mu.Lock()
		a := st.app
		st.mu.Unlock()
		respect := a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.SyncOptions.Enabled("RespectIgnoreDifferences")
		rd, desired := e.diffOne(ctx, loc.cmp, r, compileIgnores(a.Spec.IgnoreDifferences), respect)
		out.Status, out.Diff, out.Message = rd.Status, rd.Diff, rd.Message
		if desired != nil {
			out.Desired = desired.Object
		}
	}
	return out, nil
}

// ResourceEvents returns the events about one object of an application's tree, newest first.
func (e *Engine) ResourceEvents(ctx context.Context, name string, key ResourceKey) ([]ResourceEvent, error) {
	loc, err := e.locate(ctx, name, key)
	if err != nil {
		return nil, err
	}
	sel := fields.Set{"involvedObject.kind": key.Kind, "involvedObject.name": key.Name}
	if loc.node != nil && loc.node.UID != "" {
		sel["involvedObject.uid"] = loc.node.UID
	}
	ns := key.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault // cluster-scoped objects' events are recorded there
	}
	list, err := loc.cmp.cl.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace(ns).
		List(ctx, metav1.ListOptions{FieldSelector: sel.AsSelector().String(), Limit: maxEvents})
	if err != nil {
		return nil, fmt.Errorf("list the events of %s: %w", key, err)
	}
	out := make([]ResourceEvent, 0, len(list.Items))
	for i := range list.Items {
		var ev corev1.Event
		b, err := json.Marshal(list.Items[i].Object)
		if err != nil || json.Unmarshal(b, &ev) != nil {
			continue
		}
		re := ResourceEvent{Type: ev.Type, Reason: ev.Reason, Message: ev.Message, Count: int64(ev.Count),
			Source: ev.Source.Component, FirstSeen: ev.FirstTimestamp.Time, LastSeen: ev.LastTimestamp.Time}
		if re.Source == "" {
			re.Source = ev.ReportingController
		}
		if re.LastSeen.IsZero() {
			re.LastSeen = ev.EventTime.Time
		}
		if re.FirstSeen.IsZero() {
			re.FirstSeen = re.LastSeen
		}
		if re.Count == 0 {
			re.Count = 1
		}
		out = append(out, re)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastSeen.After(out[j].LastSeen) })
	return out, nil
}

// PodLogs writes a Pod's log (one of its containers) to w, flushing each line when w can; with
// Follow it returns when the container ends or ctx is done. started is called once the Pod's
// log stream has opened, before the first line.
func (e *Engine) PodLogs(ctx context.Context, name string, key ResourceKey, o LogOptions, started func(), w io.Writer) error {
	if key.Group != "" || key.Kind != "Pod" {
		return errdefs.Invalid("kind", key.Kind, "logs are a Pod's: give kind Pod")
	}
	loc, err := e.locate(ctx, name, key)
	if err != nil {
		return err
	}
	if loc.cmp.cl.cfg == nil {
		return fmt.Errorf("the log of pod %s/%s: no client for its cluster: %w", key.Namespace, key.Name, errdefs.ErrUnavailable)
	}
	kc, err := kubernetes.NewForConfig(loc.cmp.cl.cfg)
	if err != nil {
		return err
	}
	po := &corev1.PodLogOptions{Container: o.Container, Follow: o.Follow, Previous: o.Previous}
	if o.TailLines > 0 {
		po.TailLines = &o.TailLines
	}
	rc, err := kc.CoreV1().Pods(key.Namespace).GetLogs(key.Name, po).Stream(ctx)
	if err != nil {
		var se apierrors.APIStatus
		if errors.As(err, &se) && se.Status().Code == 400 {
			if o.Container != "" {
				return errdefs.Invalid("container", o.Container, se.Status().Message)
			}
			// Not scheduled yet, or waiting for its image: the log may come.
			return fmt.Errorf("the log of pod %s/%s: %s: %w", key.Namespace, key.Name, se.Status().Message, errdefs.ErrUnavailable)
		}
		if apierrors.IsNotFound(err) {
			// The Pod gone, or its node answering 404 for the log (kwok's nodes do).
			if _, gerr := kc.CoreV1().Pods(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{}); apierrors.IsNotFound(gerr) {
				return fmt.Errorf("pod %s/%s: %w", key.Namespace, key.Name, errdefs.ErrNotFound)
			}
		}
		// The node's kubelet did not answer (it is away, or not a real node): the log may come.
		return fmt.Errorf("the log of pod %s/%s: %v: %w", key.Namespace, key.Name, err, errdefs.ErrUnavailable)
	}
	defer rc.Close()
	if started != nil {
		started()
	}
	flush := func() {}
	if f, ok := w.(interface{ Flush() }); ok {
		flush = f.Flush
	}
	br := bufio.NewReaderSize(rc, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if _, werr := w.Write(line); werr != nil {
				return nil // the reader went away
			}
			flush()
		}
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// DeleteResource deletes one object of an application's tree. A managed resource comes back
// at the next sync while git has it (auto-sync: at once); an owned object is usually recreated
// by its owner (a Pod by its ReplicaSet).
func (e *Engine) DeleteResource(ctx context.Context, name string, key ResourceKey, p DeletePropagation) error {
	var policy metav1.DeletionPropagation
	switch p {
	case PropagationForeground, "":
		policy = metav1.DeletePropagationForeground
	case PropagationBackground:
		policy = metav1.DeletePropagationBackground
	case PropagationOrphan:
		policy = metav1.DeletePropagationOrphan
	default:
		return errdefs.Invalid("propagation", string(p), "must be foreground, background or orphan")
	}
	loc, err := e.locate(ctx, name, key)
	if err != nil {
		return err
	}
	if loc.node == nil {
		return fmt.Errorf("resource %s is not in the cluster: %w", key, errdefs.ErrNotFound)
	}
	m, err := loc.cmp.cl.mapping(schema.GroupVersionKind{Group: key.Group, Version: loc.version, Kind: key.Kind}, false)
	if err != nil {
		return fmt.Errorf("resource %s: %w", key, err)
	}
	return deleteObject(ctx, loc.cmp.cl, m, ObjRef{ResourceKey: key, Version: loc.version}, policy)
}

// restartable are the kinds a restart rolls (their pod template gets RestartedAtAnnotation).
var restartable = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true}

// RestartResource rolls a Deployment's, StatefulSet's or DaemonSet's Pods, as kubectl rollout
// restart does: the pod template's RestartedAtAnnotation is set to now (a merge patch by a
// field manager of its own, so that the engine's server-side apply neither owns nor reverts
// it). It returns the time set.
func (e *Engine) RestartResource(ctx context.Context, name string, key ResourceKey, now time.Time) (time.Time, error) {
	if key.Group != "apps" || !restartable[key.Kind] {
		return time.Time{}, errdefs.Invalid("kind", key.Kind, "restart rolls a Deployment, StatefulSet or DaemonSet (group apps)")
	}
	loc, err := e.locate(ctx, name, key)
	if err != nil {
		return time.Time{}, err
	}
	if loc.node == nil {
		return time.Time{}, fmt.Errorf("resource %s is not in the cluster: %w", key, errdefs.ErrNotFound)
	}
	m, err := loc.cmp.cl.mapping(schema.GroupVersionKind{Group: key.Group, Version: loc.version, Kind: key.Kind}, false)
	if err != nil {
		return time.Time{}, fmt.Errorf("resource %s: %w", key, err)
	}
	at := now.UTC().Truncate(time.Second)
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{RestartedAtAnnotation: at.Format(time.RFC3339)}}}}})
	_, err = loc.cmp.cl.resource(m, key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "freshet-restart"})
	if err != nil {
		return time.Time{}, fmt.Errorf("restart %s: %w", key, err)
	}
	return at, nil
}

// network is what the tree's network view draws of an object: a Pod's labels, a Service's
// selector, the Services an Ingress routes to.
func network(obj *unstructured.Unstructured) *TreeNetwork {
	gvk := obj.GroupVersionKind()
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		if l := obj.GetLabels(); len(l) > 0 {
			return &TreeNetwork{Labels: l}
		}
	case gvk.Group == "" && gvk.Kind == "Service":
		sel, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector")
		if len(sel) > 0 {
			return &TreeNetwork{Selector: sel}
		}
	case gvk.Group == "networking.k8s.io" && gvk.Kind == "Ingress":
		seen := map[string]bool{}
		var backends []string
		add := func(b any) {
			m, _ := b.(map[string]any)
			svc, _ := m["service"].(map[string]any)
			if n, _ := svc["name"].(string); n != "" && !seen[n] {
				seen[n] = true
				backends = append(backends, n)
			}
		}
		if b, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "defaultBackend"); ok {
			add(b)
		}
		rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
		for _, r := range rules {
			rm, _ := r.(map[string]any)
			paths, _, _ := unstructured.NestedSlice(rm, "http", "paths")
			for _, p := range paths {
				pm, _ := p.(map[string]any)
				add(pm["backend"])
			}
		}
		if len(backends) > 0 {
			return &TreeNetwork{Backends: backends}
		}
	}
	return nil
}
