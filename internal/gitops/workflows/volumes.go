package workflows

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// errClaimTaken: a claim named as a Workflow's would be exists and is not the Workflow's.
var errClaimTaken = errors.New("pvc already exists with different ownerreference")

// volumeNameRe is a volume's name: a DNS label, as Kubernetes requires.
var volumeNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// checkVolumes checks spec.volumes, spec.volumeClaimTemplates and spec.volumeClaimGC, and
// returns the names the workflow's templates may mount.
func checkVolumes(s *WorkflowSpec, path string) (map[string]bool, error) {
	names := map[string]bool{}
	for i, v := range s.Volumes {
		if err := checkVolumeName(v.Name, fmt.Sprintf("%s.volumes[%d].name", path, i), names); err != nil {
			return nil, err
		}
	}
	for i, c := range s.VolumeClaimTemplates {
		f := fmt.Sprintf("%s.volumeClaimTemplates[%d]", path, i)
		if err := checkVolumeName(c.Name, f+".metadata.name", names); err != nil {
			return nil, err
		}
		if c.Namespace != "" {
			return nil, errdefs.Invalid(f+".metadata.namespace", c.Namespace, "must be empty: the claim is made in the Workflow's namespace")
		}
		if len(c.Spec.AccessModes) == 0 {
			return nil, errdefs.Invalid(f+".spec.accessModes", "", "is required (e.g. [ReadWriteOnce])")
		}
		if _, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
			return nil, errdefs.Invalid(f+".spec.resources.requests.storage", "", "is required (e.g. 1Gi)")
		}
	}
	if g := s.VolumeClaimGC; g != nil {
		switch g.Strategy {
		case "", VolumeClaimGCOnCompletion, VolumeClaimGCOnSuccess:
		default:
			return nil, errdefs.Invalid(path+".volumeClaimGC.strategy", g.Strategy, "must be OnWorkflowCompletion or OnWorkflowSuccess")
		}
	}
	return names, nil
}

func checkVolumeName(name, field string, names map[string]bool) error {
	switch {
	case !volumeNameRe.MatchString(name):
		return errdefs.Invalid(field, name, "must be a DNS label: 1-63 lower-case letters, digits or '-', starting and ending with a letter or digit")
	case name == binVolume || name == scriptVolume:
		return errdefs.Invalid(field, name, "is the name of a volume Freshet's pods use themselves")
	case names[name]:
		return errdefs.Invalid(field, name, "is the name of another volume or volume claim template")
	}
	names[name] = true
	return nil
}

// checkMounts checks a container or script template's volumes and volumeMounts: every mount
// names a volume of the template, of spec.volumes or of spec.volumeClaimTemplates (global is
// nil in a WorkflowTemplate, whose templates may mount the calling Workflow's volumes).
func checkMounts(t *Template, c *corev1.Container, p, kind string, global map[string]bool) error {
	own := map[string]bool{}
	for i, v := range t.Volumes {
		if err := checkVolumeName(v.Name, fmt.Sprintf("%s.volumes[%d].name", p, i), own); err != nil {
			return err
		}
	}
	if c == nil {
		return nil
	}
	paths := map[string]bool{}
	for i, m := range c.VolumeMounts {
		f := fmt.Sprintf("%s.%s.volumeMounts[%d]", p, kind, i)
		switch {
		case m.Name == "":
			return errdefs.Invalid(f+".name", "", "is required")
		case global != nil && !own[m.Name] && !global[m.Name]:
			return errdefs.Invalid(f+".name", m.Name, "is not a volume of this template (volumes) or of the workflow (spec.volumes, spec.volumeClaimTemplates)")
		case !strings.HasPrefix(m.MountPath, "/"):
			return errdefs.Invalid(f+".mountPath", m.MountPath, "must be an absolute path")
		case m.MountPath == binDir || strings.HasPrefix(binDir, m.MountPath+"/") || m.MountPath == scriptDir:
			return errdefs.Invalid(f+".mountPath", m.MountPath, "hides the directory Freshet's emissary runs from ("+binDir+")")
		case paths[m.MountPath]:
			return errdefs.Invalid(f+".mountPath", m.MountPath, "is mounted twice")
		}
		paths[m.MountPath] = true
	}
	return nil
}

// claimName is Argo's name of a Workflow's claim: <workflow>-<claim template>.
func claimName(wf, claim string) string { return wf + "-" + claim }

// createClaims makes the claims of spec.volumeClaimTemplates once, when the run starts, and
// records them in status.persistentVolumeClaims; false when the workflow cannot go on.
func (o *operation) createClaims(st *WorkflowStatus) bool {
	o.claims = st.PersistentVolumeClaims
	if len(o.spec.VolumeClaimTemplates) == len(st.PersistentVolumeClaims) {
		return true
	}
	for _, ct := range o.spec.VolumeClaimTemplates {
		if slices.ContainsFunc(st.PersistentVolumeClaims, func(v corev1.Volume) bool { return v.Name == ct.Name }) {
			continue
		}
		pvc := ct.DeepCopy()
		pvc.Name, pvc.Namespace, pvc.GenerateName = claimName(o.wf.Name, ct.Name), o.wf.Namespace, ""
		pvc.ResourceVersion, pvc.UID = "", ""
		if pvc.Labels == nil {
			pvc.Labels = map[string]string{}
		}
		pvc.Labels[LabelWorkflow] = o.wf.Name
		pvc.OwnerReferences = []metav1.OwnerReference{o.ownerRef()}
		var err error
		if len(pvc.Name) > 253 {
			err = fmt.Errorf("claim name %q is longer than 253 characters", pvc.Name)
		} else {
			err = o.cl.createClaim(o.ctx, o.wf, pvc)
		}
		if err != nil {
			if errors.Is(err, errClaimTaken) || errors.Is(err, errdefs.ErrInvalid) || strings.Contains(err.Error(), "longer than") {
				st.Phase, st.Message = WorkflowError, "pvc create error: "+err.Error()
				o.finishWaiting(st)
				return false
			}
			o.err = fmt.Errorf("create pvc %s: %w", pvc.Name, err)
			if st.Phase == WorkflowUnknown {
				st.Phase = WorkflowPending
			}
			st.Message = "Waiting for a PVC to be created. " + err.Error()
			return false
		}
		st.PersistentVolumeClaims = append(st.PersistentVolumeClaims, corev1.Volume{Name: ct.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}})
	}
	if st.Phase == WorkflowPending {
		st.Message = ""
	}
	o.claims = st.PersistentVolumeClaims
	return true
}

// gcClaims deletes a finished workflow's claims as spec.volumeClaimGC says (Argo's default
// deletes them only when it succeeded: a retry of a failed run finds its data); the ones it
// could not delete stay in the status and are tried again.
func (o *operation) gcClaims(st *WorkflowStatus) {
	if !st.Phase.Completed() || len(st.PersistentVolumeClaims) == 0 {
		return
	}
	if !claimsDue(o.spec, st.Phase) {
		return
	}
	var kept []corev1.Volume
	for _, v := range st.PersistentVolumeClaims {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if err := o.cl.deleteClaim(o.ctx, o.wf.Namespace, v.PersistentVolumeClaim.ClaimName); err != nil {
			kept = append(kept, v)
			o.after(gcRetry)
		}
	}
	st.PersistentVolumeClaims = kept
}

func claimsDue(spec *WorkflowSpec, phase WorkflowPhase) bool {
	strategy := VolumeClaimGCOnSuccess
	if spec.VolumeClaimGC != nil && spec.VolumeClaimGC.Strategy != "" {
		strategy = spec.VolumeClaimGC.Strategy
	}
	return strategy == VolumeClaimGCOnCompletion || phase == WorkflowSucceeded
}

// podVolumes gives a pod the template's volumes and those of the workflow (spec.volumes, with
// the workflow's variables substituted, and its claims) that the main container mounts.
func (o *operation) podVolumes(t *Template, main *corev1.Container) ([]corev1.Volume, error) {
	out := append([]corev1.Volume(nil), t.Volumes...)
	var global []corev1.Volume
	if len(o.spec.Volumes) > 0 {
		global = append(global, o.spec.Volumes...)
		if err := substitute(&global, "spec.volumes", o.globals, []string{"workflow"}); err != nil {
			return nil, err
		}
	}
	for _, m := range main.VolumeMounts {
		if m.Name == scriptVolume || m.Name == binVolume {
			continue // Freshet's own, added with their volumes
		}
		if slices.ContainsFunc(out, func(v corev1.Volume) bool { return v.Name == m.Name }) {
			continue
		}
		i := slices.IndexFunc(global, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i >= 0 {
			out = append(out, global[i])
			continue
		}
		if i := slices.IndexFunc(o.claims, func(v corev1.Volume) bool { return v.Name == m.Name }); i >= 0 {
			out = append(out, o.claims[i])
			continue
		}
		return nil, fmt.Errorf("volume '%s' not found in workflow spec", m.Name)
	}
	return out, nil
}
