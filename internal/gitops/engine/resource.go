package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Annotations and labels the engine reads (Argo CD's, so manifests written for Argo CD keep
// working) and writes (Freshet's tracking).
const (
	AnnotationSyncWave         = "argocd.argoproj.io/sync-wave"
	AnnotationHook             = "argocd.argoproj.io/hook"
	AnnotationHookDeletePolicy = "argocd.argoproj.io/hook-delete-policy"
	AnnotationSyncOptions      = "argocd.argoproj.io/sync-options"
	AnnotationCompareOptions   = "argocd.argoproj.io/compare-options"
	AnnotationHelmHook         = "helm.sh/hook"
	AnnotationHelmHookWeight   = "helm.sh/hook-weight"
	AnnotationHelmDeletePolicy = "helm.sh/hook-delete-policy"

	// LabelApp marks every object the engine applies with its application ("freshet.dev/app:
	// guestbook"; names longer than a label value are hashed). The engine's informers watch
	// only labelled objects.
	LabelApp = "freshet.dev/app"
	// AnnotationTrackingID names the application and resource an object belongs to
	// ("guestbook:apps/Deployment:default/web"), as Argo CD's tracking id does, so a copied
	// object is not mistaken for a managed one.
	AnnotationTrackingID = "freshet.dev/tracking-id"
)

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "freshet"

// HookType is when a hook runs.
type HookType string

// Hook types (Argo CD's).
const (
	HookPreSync  HookType = "PreSync"
	HookSync     HookType = "Sync"
	HookPostSync HookType = "PostSync"
	HookSyncFail HookType = "SyncFail"
	HookSkip     HookType = "Skip"
	// HookPostDelete hooks run after a cascading delete has deleted the app's resources.
	HookPostDelete HookType = "PostDelete"
)

// DeletePolicy is when a hook object is deleted.
type DeletePolicy string

// Hook delete policies (Argo CD's).
const (
	HookSucceeded      DeletePolicy = "HookSucceeded"
	HookFailed         DeletePolicy = "HookFailed"
	BeforeHookCreation DeletePolicy = "BeforeHookCreation"
)

// ResourceKey names a Kubernetes object independent of its API version.
type ResourceKey struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (k ResourceKey) String() string {
	gk := k.Kind
	if k.Group != "" {
		gk = k.Kind + "." + k.Group
	}
	if k.Namespace == "" {
		return gk + "/" + k.Name
	}
	return gk + "/" + k.Namespace + "/" + k.Name
}

// KeyOf returns an object's key.
func KeyOf(obj *unstructured.Unstructured) ResourceKey {
	gvk := obj.GroupVersionKind()
	return ResourceKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// ObjRef is a key plus the API version to reach the object with (what the inventory stores).
type ObjRef struct {
	ResourceKey
	Version string `json:"version"`
}

// GVK returns the ref's group/version/kind.
func (r ObjRef) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// appLabelValue is the LabelApp value for an application name.
func appLabelValue(app string) string {
	if len(app) <= validation.LabelValueMaxLength && len(validation.IsValidLabelValue(app)) == 0 {
		return app
	}
	sum := sha256.Sum256([]byte(app))
	return "h-" + hex.EncodeToString(sum[:16])
}

func trackingID(app string, k ResourceKey) string {
	return fmt.Sprintf("%s:%s/%s:%s/%s", app, k.Group, k.Kind, k.Namespace, k.Name)
}

// syncWave is an object's wave: argocd.argoproj.io/sync-wave, else helm.sh/hook-weight, else
// 0. As in Argo CD (gitops-engine's syncwaves.Wave), the Helm weight orders any object that
// carries it, hook or not.
func syncWave(obj *unstructured.Unstructured) int {
	ann := obj.GetAnnotations()
	if v, ok := ann[AnnotationSyncWave]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			return n
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(ann[AnnotationHelmHookWeight])); err == nil {
		return n
	}
	return 0
}

// helmHookTypes maps Helm hooks onto Argo CD hooks, as Argo CD does (post-delete is a
// PostDelete hook, run by a cascading delete); other Helm hooks (test, pre-delete, rollback)
// are not run.
var helmHookTypes = map[string]HookType{
	"pre-install":  HookPreSync,
	"pre-upgrade":  HookPreSync,
	"post-install": HookPostSync,
	"post-upgrade": HookPostSync,
	"post-delete":  HookPostDelete,
}

var helmDeletePolicies = map[string]DeletePolicy{
	"before-hook-creation": BeforeHookCreation,
	"hook-succeeded":       HookSucceeded,
	"hook-failed":          HookFailed,
}

// hookInfo says whether an object is a hook and of which types. An object with
// argocd.argoproj.io/hook is a hook (Skip: not applied at all); otherwise helm.sh/hook makes
// it one (mapped as Argo CD maps it: a Helm hook with no mapped type is never applied).
func hookInfo(obj *unstructured.Unstructured) (isHook bool, types []HookType) {
	ann := obj.GetAnnotations()
	if v, ok := ann[AnnotationHook]; ok {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			switch HookType(t) {
			case HookPreSync, HookSync, HookPostSync, HookSyncFail, HookSkip, HookPostDelete:
				types = append(types, HookType(t))
			}
		}
		return true, types
	}
	if v, ok := ann[AnnotationHelmHook]; ok {
		seen := map[HookType]bool{}
		for _, t := range strings.Split(v, ",") {
			if ht, ok := helmHookTypes[strings.TrimSpace(t)]; ok && !seen[ht] {
				seen[ht] = true
				types = append(types, ht)
			}
		}
		return true, types
	}
	return false, nil
}

// isSkipped reports an object annotated hook: Skip (never applied).
func isSkipped(types []HookType) bool {
	for _, t := range types {
		if t == HookSkip {
			return true
		}
	}
	return false
}

// deletePolicies of a hook: argocd.argoproj.io/hook-delete-policy, else Helm's mapped, else
// BeforeHookCreation (Argo CD's default).
func deletePolicies(obj *unstructured.Unstructured) []DeletePolicy {
	ann := obj.GetAnnotations()
	var out []DeletePolicy
	if v, ok := ann[AnnotationHookDeletePolicy]; ok {
		for _, p := range strings.Split(v, ",") {
			switch DeletePolicy(strings.TrimSpace(p)) {
			case HookSucceeded, HookFailed, BeforeHookCreation:
				out = append(out, DeletePolicy(strings.TrimSpace(p)))
			}
		}
	} else if v, ok := ann[AnnotationHelmDeletePolicy]; ok {
		for _, p := range strings.Split(v, ",") {
			if dp, ok := helmDeletePolicies[strings.TrimSpace(p)]; ok {
				out = append(out, dp)
			}
		}
	}
	if len(out) == 0 {
		out = []DeletePolicy{BeforeHookCreation}
	}
	return out
}

func hasPolicy(list []DeletePolicy, p DeletePolicy) bool {
	for _, x := range list {
		if x == p {
			return true
		}
	}
	return false
}

// resourceSyncOption reads one option of the per-resource argocd.argoproj.io/sync-options
// annotation ("Prune=false,Replace=true").
func resourceSyncOption(obj *unstructured.Unstructured, key string) (string, bool) {
	return annotationOption(obj, AnnotationSyncOptions, key)
}

// compareOption reads one option of an object's argocd.argoproj.io/compare-options
// annotation ("IgnoreExtraneous", "ServerSideDiff=true"); an option without a value is "true".
func compareOption(obj *unstructured.Unstructured, key string) (string, bool) {
	if obj == nil {
		return "", false
	}
	v, ok := annotationOption(obj, AnnotationCompareOptions, key)
	if ok && v == "" {
		v = "true"
	}
	return v, ok
}

func annotationOption(obj *unstructured.Unstructured, annotation, key string) (string, bool) {
	v, ok := obj.GetAnnotations()[annotation]
	if !ok {
		return "", false
	}
	for _, opt := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(opt), "=")
		if k == key {
			return val, true
		}
	}
	return "", false
}

// kindOrder is the order kinds are applied in within a wave: Helm's install order, which Argo
// CD uses. Unknown kinds (custom resources) go last.
var kindOrder = func() map[string]int {
	kinds := []string{
		"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy", "PodDisruptionBudget",
		"ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass", "PersistentVolume",
		"PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleList",
		"ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList",
		"Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
		"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
	}
	m := make(map[string]int, len(kinds))
	for i, k := range kinds {
		m[k] = i - len(kinds) // known kinds are negative, unknown (0) sort last
	}
	return m
}()

// sortForApply orders objects by wave, then kind order (unknown kinds by kind name), then
// name.
func sortForApply[T any](items []T, obj func(T) *unstructured.Unstructured) {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := obj(items[i]), obj(items[j])
		if wa, wb := syncWave(a), syncWave(b); wa != wb {
			return wa < wb
		}
		if ka, kb := kindOrder[a.GetKind()], kindOrder[b.GetKind()]; ka != kb {
			return ka < kb
		}
		if a.GetKind() != b.GetKind() {
			// Custom kinds by kind name, as gitops-engine orders them: an AppProject before
			// the Applications that use it.
			return a.GetKind() < b.GetKind()
		}
		return a.GetName() < b.GetName()
	})
}
