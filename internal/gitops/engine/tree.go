package engine

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// childKinds are the kinds listed to find the objects managed resources own: ReplicaSets of
// Deployments, Pods of ReplicaSets, StatefulSets, DaemonSets and Jobs, Jobs of CronJobs,
// EndpointSlices of Services.
var childKinds = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Version: "v1", Resource: "pods"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
}

const (
	maxTreeDepth    = 6
	treeListLimit   = 500
	maxTreeChildren = 5000 // per kind and namespace
)

// Tree returns an application's live resources with the objects they own, through owner
// references (Deployment → ReplicaSet → Pod), each with its health; managed resources also
// carry their sync status. Children are listed from the cluster when asked (the tree is a
// user's request, not part of every refresh).
func (e *Engine) Tree(ctx context.Context, name string) ([]*TreeNode, error) {
	st, err := e.get(name)
	if err != nil {
		return nil, err
	}
	cmp := e.compare(ctx, st, "", false)
	if cmp.failed {
		return nil, comparisonError(cmp)
	}
	return e.treeOf(ctx, name, cmp)
}

// treeOf is Tree for a comparison made.
func (e *Engine) treeOf(ctx context.Context, name string, cmp *comparison) ([]*TreeNode, error) {
	namespaces := map[string]bool{}
	var roots []*TreeNode
	for _, r := range cmp.results {
		if r.live == nil {
			continue
		}
		n := e.node(r.live)
		if r.d != nil && r.d.child != nil {
			n.Health = r.health // a child application: its own health
		}
		n.Sync = Synced
		if r.status != DiffSynced {
			n.Sync = OutOfSync
		}
		roots = append(roots, n)
		if ns := r.live.GetNamespace(); ns != "" {
			namespaces[ns] = true
		}
	}
	// Hook objects syncs left in place (a PostSync Job, say), as Argo CD shows them.
	for _, ref := range e.hookRefs(name) {
		m, err := cmp.cl.mapping(ref.GVK(), false)
		if err != nil {
			continue
		}
		live, err := cmp.cl.resource(m, ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			continue // gone (deleted by hand, or by its TTL)
		}
		n := e.node(live)
		n.Hook = true
		roots = append(roots, n)
		if ns := live.GetNamespace(); ns != "" {
			namespaces[ns] = true
		}
	}
	owned := map[types.UID][]*unstructured.Unstructured{}
	for ns := range namespaces {
		for _, gvr := range childKinds {
			objs, err := listAll(ctx, cmp.cl, gvr, ns)
			if err != nil {
				if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || meta.IsNoMatchError(err) {
					continue
				}
				return nil, fmt.Errorf("list %s in %s: %w", gvr.Resource, ns, err)
			}
			for _, o := range objs {
				for _, ref := range o.GetOwnerReferences() {
					owned[ref.UID] = append(owned[ref.UID], o)
				}
			}
		}
	}
	seen := map[types.UID]bool{}
	var attach func(n *TreeNode, depth int)
	attach = func(n *TreeNode, depth int) {
		if depth >= maxTreeDepth || seen[types.UID(n.UID)] {
			return
		}
		seen[types.UID(n.UID)] = true
		for _, c := range owned[types.UID(n.UID)] {
			cn := e.node(c)
			attach(cn, depth+1)
			n.Children = append(n.Children, cn)
		}
		sort.Slice(n.Children, func(i, j int) bool {
			a, b := n.Children[i], n.Children[j]
			if a.Kind != b.Kind {
				return a.Kind < b.Kind
			}
			return a.Name < b.Name
		})
	}
	for _, r := range roots {
		attach(r, 0)
	}
	return roots, nil
}

func (e *Engine) node(obj *unstructured.Unstructured) *TreeNode {
	gvk := obj.GroupVersionKind()
	n := &TreeNode{
		ResourceKey: KeyOf(obj), Version: gvk.Version, UID: string(obj.GetUID()),
		Health: e.health().Assess(obj), CreatedAt: obj.GetCreationTimestamp().Time, Network: network(obj),
	}
	if gvk.Kind == "Pod" && gvk.Group == "" {
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "containers")
		for _, c := range containers {
			if m, ok := c.(map[string]any); ok {
				if img, ok := m["image"].(string); ok {
					n.Images = append(n.Images, img)
				}
			}
		}
	}
	return n
}

func listAll(ctx context.Context, cl *cluster, gvr schema.GroupVersionResource, ns string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	opts := metav1.ListOptions{Limit: treeListLimit}
	for {
		list, err := cl.dyn.Resource(gvr).Namespace(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		if list.GetContinue() == "" || len(out) >= maxTreeChildren {
			return out, nil
		}
		opts.Continue = list.GetContinue()
	}
}

func metav1DeletePropagationForeground() metav1.DeletionPropagation {
	return metav1.DeletePropagationForeground
}

// deleteObject deletes one object; already gone is success.
func deleteObject(ctx context.Context, cl *cluster, m *meta.RESTMapping, ref ObjRef, policy metav1.DeletionPropagation) error {
	err := cl.resource(m, ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", ref.ResourceKey, err)
	}
	return nil
}
