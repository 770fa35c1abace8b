package engine

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FailOnSharedResource=true (an app's sync option, as in Argo CD): a sync fails before
// anything is applied when an object it would apply is tracked by another application
// (Freshet's tracking id, Argo CD's argocd.argoproj.io/tracking-id, or, with label tracking,
// the instance label naming another app). Without the option the object is taken over.

// trackedBy names the application a live object is tracked by ("" when none).
func (e *Engine) trackedBy(live *unstructured.Unstructured) string {
	ann := live.GetAnnotations()
	for _, key := range []string{AnnotationTrackingID, AnnotationArgoTrackingID} {
		if id, ok := ann[key]; ok {
			name, _, _ := strings.Cut(id, ":")
			// Argo CD writes apps outside its own namespace as <namespace>_<name>.
			if _, n, ok := strings.Cut(name, "_"); ok {
				name = n
			}
			return name
		}
	}
	if s := e.Settings(); s.TrackingMethod.label() {
		return live.GetLabels()[s.instanceLabelKey()]
	}
	return ""
}

// checkShared fails the sync, naming every shared object and the application that tracks
// it, when FailOnSharedResource=true and one of applies is another application's.
func (r *syncRun) checkShared(ctx context.Context, applies []*resResult) error {
	if !r.syncOpt.Enabled("FailOnSharedResource") {
		return nil
	}
	var shared []string
	for _, rr := range applies {
		d := rr.d
		if d.child != nil {
			continue // child applications have their own ownership check
		}
		live := rr.live
		if live == nil {
			// Objects another tool tracks carry no Freshet label, so the watch caches do not
			// hold them: read them.
			m := d.restMapping()
			if m == nil {
				continue // the kind does not exist yet: nothing of it can be shared
			}
			obj, err := r.cl.resource(m, d.key.Namespace).Get(ctx, d.key.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return r.fail(PhaseFailed, temporaryAPIError(err), "FailOnSharedResource=true: reading %s: %v", d.key, err)
			}
			live = obj
		}
		if other := r.e.trackedBy(live); other != "" && other != r.st.name {
			msg := fmt.Sprintf("%s is tracked by application %q", d.key, other)
			r.record(d.ref, ResultFailed, d.wave, msg+" (FailOnSharedResource=true)")
			shared = append(shared, fmt.Sprintf("%s (%s) is tracked by application %q", d.key, d.source, other))
		}
	}
	if len(shared) > 0 {
		return r.fail(PhaseFailed, false, "shared resource found (FailOnSharedResource=true), nothing was applied: %s", strings.Join(shared, "; "))
	}
	return nil
}
