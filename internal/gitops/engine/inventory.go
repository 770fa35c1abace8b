package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The inventory is a ConfigMap per application in the destination cluster
// (Options.InventoryNamespace, default freshet-system), named freshet-app-<app>. It lists every
// object the engine has applied for the app (group, version, kind, namespace, name) and the
// app's sync history, so prune removes exactly what the app no longer renders, and rollback
// works, after a restart of the runtime.
const (
	DefaultInventoryNamespace = "freshet-system"
	inventoryPrefix           = "freshet-app-"
	labelInventory            = "freshet.dev/inventory"
	annotationInventoryApp    = "freshet.dev/app-name"
	inventoryKeyResources     = "resources"
	inventoryKeyHistory       = "history"
	// inventoryKeyChildren holds the Applications and AppProjects the app renders (app of
	// apps), as it last applied them, so they come back after a restart.
	inventoryKeyChildren = "children"
	// inventoryKeyHooks lists the hook objects syncs left in place (their delete policy keeps
	// them), deleted with the app.
	inventoryKeyHooks = "hooks"
	// maxHistoryChanged bounds the resources recorded per history entry (the inventory must
	// stay well under the 1 MiB ConfigMap limit).
	maxHistoryChanged = 50
)

var (
	gvrConfigMap = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrNamespace = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

type inventory struct {
	Resources []ObjRef
	History   []HistoryEntry
	Children  []json.RawMessage // read only: written from the engine's state
	Hooks     []ObjRef          // read only: written from the engine's state
	// absent: the cluster holds no inventory for the app (new to Freshet on this cluster).
	absent bool
}

func inventoryName(app string) string {
	name := inventoryPrefix + app
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(app))
	return inventoryPrefix + hex.EncodeToString(sum[:16])
}

// encodeRefs writes one line per object: group|version|kind|namespace|name.
func encodeRefs(refs []ObjRef) string {
	lines := make([]string, 0, len(refs))
	for _, r := range refs {
		lines = append(lines, strings.Join([]string{r.Group, r.Version, r.Kind, r.Namespace, r.Name}, "|"))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func decodeRefs(s string) []ObjRef {
	var out []ObjRef
	for _, l := range strings.Split(s, "\n") {
		f := strings.Split(l, "|")
		if len(f) != 5 {
			continue
		}
		out = append(out, ObjRef{ResourceKey: ResourceKey{Group: f[0], Kind: f[2], Namespace: f[3], Name: f[4]}, Version: f[1]})
	}
	return out
}

// bulkInventoryTTL is how long the one LIST of all inventories taken when the engine first
// reaches a cluster answers inventory reads (a restarted runtime loads every app's inventory
// with one request instead of one GET per app).
const bulkInventoryTTL = time.Minute

func (e *Engine) readInventory(ctx context.Context, c *cluster, app string) (*inventory, error) {
	if inv, ok, err := e.bulkInventory(ctx, c, app); ok || err != nil {
		return inv, err
	}
	obj, err := c.dyn.Resource(gvrConfigMap).Namespace(e.opts.InventoryNamespace).Get(ctx, inventoryName(app), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &inventory{absent: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read inventory of %s: %w", app, err)
	}
	return decodeInventory(obj), nil
}

func decodeInventory(obj *unstructured.Unstructured) *inventory {
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	inv := &inventory{Resources: decodeRefs(data[inventoryKeyResources])}
	if h := data[inventoryKeyHistory]; h != "" {
		_ = json.Unmarshal([]byte(h), &inv.History)
	}
	inv.Hooks = decodeRefs(data[inventoryKeyHooks])
	if c := data[inventoryKeyChildren]; c != "" {
		_ = json.Unmarshal([]byte(c), &inv.Children)
	}
	return inv
}

func (e *Engine) bulkInventory(ctx context.Context, c *cluster, app string) (*inventory, bool, error) {
	c.invMu.Lock()
	defer c.invMu.Unlock()
	if c.invAt.IsZero() {
		all := map[string]*inventory{}
		opts := metav1.ListOptions{LabelSelector: labelInventory, Limit: 500}
		for {
			list, err := c.dyn.Resource(gvrConfigMap).Namespace(e.opts.InventoryNamespace).List(ctx, opts)
			if err != nil {
				return nil, false, fmt.Errorf("list inventories: %w", err)
			}
			for i := range list.Items {
				if name := list.Items[i].GetAnnotations()[annotationInventoryApp]; name != "" {
					all[name] = decodeInventory(&list.Items[i])
				}
			}
			if list.GetContinue() == "" {
				break
			}
			opts.Continue = list.GetContinue()
		}
		c.invAll, c.invAt = all, time.Now()
	}
	if time.Since(c.invAt) > bulkInventoryTTL || c.invUsed[app] {
		return nil, false, nil
	}
	if c.invUsed == nil {
		c.invUsed = map[string]bool{}
	}
	c.invUsed[app] = true // later reads of this app go to the cluster
	inv := c.invAll[app]
	if inv == nil {
		inv = &inventory{absent: true}
	}
	return inv, true, nil
}

func (e *Engine) writeInventory(ctx context.Context, c *cluster, app string, inv *inventory) error {
	if err := e.ensureNamespace(ctx, c, e.opts.InventoryNamespace, nil, nil); err != nil {
		return fmt.Errorf("inventory namespace: %w", err)
	}
	hist, err := json.Marshal(inv.History)
	if err != nil {
		return err
	}
	data := map[string]any{inventoryKeyResources: encodeRefs(inv.Resources), inventoryKeyHistory: string(hist)}
	if children := e.childManifests(app); len(children) > 0 {
		c, err := json.Marshal(children)
		if err != nil {
			return err
		}
		data[inventoryKeyChildren] = string(c)
	}
	if hooks := e.hookRefs(app); len(hooks) > 0 {
		data[inventoryKeyHooks] = encodeRefs(hooks)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": inventoryName(app), "namespace": e.opts.InventoryNamespace,
			"labels":      map[string]any{labelInventory: appLabelValue(app)},
			"annotations": map[string]any{annotationInventoryApp: app},
		},
		"data": data,
	}}
	_, err = c.dyn.Resource(gvrConfigMap).Namespace(e.opts.InventoryNamespace).Apply(ctx, inventoryName(app), cm,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("write inventory of %s: %w", app, err)
	}
	return nil
}

// hookRefs are the hook objects an app's syncs left in place.
func (e *Engine) hookRefs(app string) []ObjRef {
	st, err := e.get(app)
	if err != nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]ObjRef(nil), st.hooks...)
}

// trackHook records (or, deleted, forgets) a hook object a sync created.
func (st *appState) trackHook(ref ObjRef, deleted bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	keep := st.hooks[:0:0]
	for _, h := range st.hooks {
		if h.ResourceKey != ref.ResourceKey {
			keep = append(keep, h)
		}
	}
	if !deleted {
		keep = append(keep, ref)
	}
	st.hooks = keep
}

func (e *Engine) deleteInventory(ctx context.Context, c *cluster, app string) error {
	err := c.dyn.Resource(gvrConfigMap).Namespace(e.opts.InventoryNamespace).Delete(ctx, inventoryName(app), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete inventory of %s: %w", app, err)
	}
	return nil
}

// ensureNamespace creates a namespace (server-side apply) unless the engine saw it already.
func (e *Engine) ensureNamespace(ctx context.Context, c *cluster, name string, labels, annotations map[string]string) error {
	key := c.host + "/" + name
	if labels == nil && annotations == nil {
		if _, ok := e.knownNamespaces.Load(key); ok {
			return nil
		}
		if _, err := c.dyn.Resource(gvrNamespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			e.knownNamespaces.Store(key, true)
			return nil
		}
	}
	md := map[string]any{"name": name}
	if len(labels) > 0 {
		md["labels"] = toAnyMap(labels)
	}
	if len(annotations) > 0 {
		md["annotations"] = toAnyMap(annotations)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": md}}
	if _, err := c.dyn.Resource(gvrNamespace).Apply(ctx, name, ns, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return err
	}
	e.knownNamespaces.Store(key, true)
	return nil
}

func toAnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mergeRefs(a, b []ObjRef) []ObjRef {
	seen := map[ResourceKey]bool{}
	var out []ObjRef
	for _, list := range [][]ObjRef{a, b} {
		for _, r := range list {
			if !seen[r.ResourceKey] {
				seen[r.ResourceKey] = true
				out = append(out, r)
			}
		}
	}
	return out
}
