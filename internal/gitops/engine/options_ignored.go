package engine

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// ignoredOptions are sync options Argo CD defines that the engine accepts but does not act
// on, with what happens instead; the values that would make a difference are listed.
var ignoredOptions = []struct {
	key, value, why string
}{
	{"ServerSideApply", "false", "objects are always applied server-side"},
	{"Force", "true", "not implemented: Replace=true replaces without deleting first"},
	{"Prune", "confirm", "not implemented: the prune happens without confirmation"},
	{"Delete", "confirm", "not implemented: the delete happens without confirmation"},
	{"ClientSideApplyMigration", "true", "not needed: objects are never applied client-side"},
}

// ignoredOptionWarnings names each accepted-but-ignored option in opts; where says whose
// options they are ("spec.syncPolicy.syncOptions", or a resource's annotation).
func ignoredOptionWarnings(opts app.SyncOptions, where string) []Condition {
	var out []Condition
	for _, o := range ignoredOptions {
		if v, ok := opts.Get(o.key); ok && strings.EqualFold(v, o.value) {
			out = append(out, Condition{Type: ConditionUnsupported, Message: fmt.Sprintf("%s: %s=%s is ignored: %s", where, o.key, v, o.why)})
		}
	}
	return out
}

// resourceOptionWarnings are ignoredOptionWarnings for an object's
// argocd.argoproj.io/sync-options annotation, and compareOptionWarnings for its
// argocd.argoproj.io/compare-options.
func resourceOptionWarnings(obj *unstructured.Unstructured, key ResourceKey) []Condition {
	var out []Condition
	if v, ok := obj.GetAnnotations()[AnnotationSyncOptions]; ok {
		var opts app.SyncOptions
		for _, o := range strings.Split(v, ",") {
			opts = append(opts, strings.TrimSpace(o))
		}
		out = append(out, ignoredOptionWarnings(opts, key.String()+" "+AnnotationSyncOptions)...)
	}
	if v, ok := obj.GetAnnotations()[AnnotationCompareOptions]; ok {
		out = append(out, compareOptionWarnings(v, key.String()+" "+AnnotationCompareOptions)...)
	}
	return out
}

// compareOptionWarnings names the compare options (argocd.argoproj.io/compare-options) that
// make no difference in Freshet: ServerSideDiff=false (the comparison is always a
// server-side apply dry-run). ServerSideDiff=true, IncludeMutationWebhook=true and
// IgnoreExtraneous are what Freshet does or honours.
func compareOptionWarnings(v, where string) []Condition {
	var out []Condition
	for _, o := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(o), "=")
		if k == "ServerSideDiff" && strings.EqualFold(val, "false") {
			out = append(out, Condition{Type: ConditionUnsupported, Message: fmt.Sprintf("%s: ServerSideDiff=false is ignored: "+
				"Freshet always compares with a server-side apply dry-run", where)})
		}
	}
	return out
}

// ignoreExtraneous: a live object annotated compare-options: IgnoreExtraneous does not make
// its app OutOfSync when it requires pruning.
func ignoreExtraneous(live *unstructured.Unstructured) bool {
	v, ok := compareOption(live, "IgnoreExtraneous")
	return ok && !strings.EqualFold(v, "false")
}
