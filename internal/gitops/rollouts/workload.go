package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// workloadRef.scaleDown values, as Argo Rollouts has them.
const (
	ScaleDownNever         = "never"
	ScaleDownOnSuccess     = "onsuccess"
	ScaleDownProgressively = "progressively"
)

// validateWorkloadRef checks spec.workloadRef: an apps/v1 Deployment by name, a scaleDown this
// controller knows, and no template of the Rollout's own (as Argo Rollouts requires).
func validateWorkloadRef(s *RolloutSpec) error {
	const f = "spec.workloadRef"
	r := s.WorkloadRef
	switch {
	case r.Kind != "Deployment" || r.APIVersion != "apps/v1":
		return errdefs.Invalid(f+".kind", r.APIVersion+" "+r.Kind, "is not supported (supported: apiVersion apps/v1, kind Deployment)")
	case r.Name == "":
		return errdefs.Invalid(f+".name", "", "is required")
	case r.ScaleDown != "" && r.ScaleDown != ScaleDownNever && r.ScaleDown != ScaleDownOnSuccess && r.ScaleDown != ScaleDownProgressively:
		return errdefs.Invalid(f+".scaleDown", r.ScaleDown, "must be never, onsuccess or progressively")
	case !reflect.DeepEqual(s.Template, corev1.PodTemplateSpec{}):
		return errdefs.Invalid("spec.template", "", "must be empty with spec.workloadRef (the template is the Deployment's)")
	}
	return nil
}

// resolveWorkload copies the referenced Deployment's pod template (and its selector, when the
// Rollout has none) into ro, then validates the result. A Deployment that does not exist is a
// temporary error; a template that does not fit is invalid.
func (c *Controller) resolveWorkload(ro *Rollout) (*appsv1.Deployment, error) {
	ref := ro.Spec.WorkloadRef
	if ref == nil {
		return nil, nil
	}
	d, err := c.deployLister.Deployments(ro.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deployment %q (spec.workloadRef.name) does not exist", ref.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("read deployment %s: %w", ref.Name, err)
	}
	ro.Spec.Template = *d.Spec.Template.DeepCopy()
	if ro.Spec.Selector == nil {
		ro.Spec.Selector = d.Spec.Selector.DeepCopy()
	}
	if err := validateSpec(&ro.Spec, true); err != nil {
		return nil, fmt.Errorf("%w (the template of deployment %q, spec.workloadRef)", err, ref.Name)
	}
	return d, nil
}

// workloadScale is the Deployment's scale scaleDown asks for, given the status about to be
// written (Argo Rollouts: only while the first revision rolls out — a migration from the
// Deployment): onsuccess → 0 once Healthy; progressively → replicas minus the Rollout's ready
// pods, 0 once Healthy. ok false: leave it.
func workloadScale(ro *Rollout, p *plan, st *RolloutStatus) (int32, bool) {
	ref := ro.Spec.WorkloadRef
	if ref == nil || p.newRS == nil || revisionOf(p.newRS) != 1 {
		return 0, false
	}
	switch ref.ScaleDown {
	case ScaleDownOnSuccess:
		return 0, st.Phase == PhaseHealthy
	case ScaleDownProgressively:
		if st.Phase == PhaseHealthy {
			return 0, true
		}
		if st.ReadyReplicas > 0 {
			return max(0, replicas(&ro.Spec)-st.ReadyReplicas), true
		}
	}
	return 0, false
}

// scaleWorkload applies workloadScale to the Deployment.
func (c *Controller) scaleWorkload(ctx context.Context, ro *Rollout, d *appsv1.Deployment, p *plan, st *RolloutStatus) error {
	n, ok := workloadScale(ro, p, st)
	if !ok || d == nil || (d.Spec.Replicas != nil && *d.Spec.Replicas == n) {
		return nil
	}
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": n}})
	if _, err := c.kube.AppsV1().Deployments(ro.Namespace).Patch(ctx, d.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("scale deployment %s (spec.workloadRef.scaleDown): %w", d.Name, err)
	}
	return nil
}
