package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
)

// FinalizerArtifactGC keeps a Workflow whose artifacts are deleted with it (artifactGC
// OnWorkflowDeletion) until they are: Argo's finalizer name.
const FinalizerArtifactGC = "workflows.argoproj.io/artifact-gc"

// gcTimeout bounds one object's deletion; gcRetry is when a failed deletion is tried again.
const (
	gcTimeout = 30 * time.Second
	gcRetry   = 30 * time.Second
)

// needsGCFinalizer reports whether any output artifact of the spec's templates is deleted with
// the Workflow.
func needsGCFinalizer(spec *WorkflowSpec) bool {
	if spec.ArtifactGC != nil && spec.ArtifactGC.Strategy == ArtifactGCOnWorkflowDeletion {
		return true
	}
	for _, t := range spec.Templates {
		for _, a := range t.Outputs.Artifacts {
			if a.ArtifactGC != nil && a.ArtifactGC.Strategy == ArtifactGCOnWorkflowDeletion {
				return true
			}
		}
	}
	return false
}

// artifactRef is one output artifact of one node.
type artifactRef struct {
	node string
	i    int
}

// dueArtifacts lists the S3 output artifacts artifactGC deletes now: those of strategy
// OnWorkflowCompletion once the Workflow has completed, and with deleting those of
// OnWorkflowDeletion too.
func dueArtifacts(spec *WorkflowSpec, st *WorkflowStatus, deleting bool) []artifactRef {
	var out []artifactRef
	for id, n := range st.Nodes {
		if n.Outputs == nil || n.Type != NodeTypePod {
			continue
		}
		for i := range n.Outputs.Artifacts {
			a := &n.Outputs.Artifacts[i]
			if a.Deleted || a.S3 == nil {
				continue
			}
			switch gcStrategy(spec, a) {
			case ArtifactGCOnWorkflowCompletion:
				if st.Phase.Completed() || deleting {
					out = append(out, artifactRef{id, i})
				}
			case ArtifactGCOnWorkflowDeletion:
				if deleting {
					out = append(out, artifactRef{id, i})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].node != out[j].node {
			return out[i].node < out[j].node
		}
		return out[i].i < out[j].i
	})
	return out
}

// gcArtifacts deletes the objects due (dueArtifacts) and marks them deleted in st; it returns
// whether st changed. It stops at the first failure.
func (c *Controller) gcArtifacts(ctx context.Context, ns string, spec *WorkflowSpec, st *WorkflowStatus, deleting bool) (bool, error) {
	due := dueArtifacts(spec, st, deleting)
	if len(due) == 0 {
		return false, nil
	}
	m := &artifacts.Mover{Policy: c.opts.Policy, Timeout: gcTimeout}
	secret := c.secretReader(ctx, ns)
	changed := false
	for _, r := range due {
		n := st.Nodes[r.node]
		a := &n.Outputs.Artifacts[r.i]
		s := a.S3
		loc := &artifacts.S3{Endpoint: s.Endpoint, Bucket: s.Bucket, Region: s.Region, Key: s.Key, Insecure: s.Insecure != nil && *s.Insecure}
		var err error
		if loc.AccessKey, err = secret(s.AccessKeySecret); err == nil {
			loc.SecretKey, err = secret(s.SecretKeySecret)
		}
		if err == nil {
			err = m.Delete(ctx, loc)
		}
		if err != nil {
			return changed, fmt.Errorf("artifactGC: node %s output artifact %q: %w", n.Name, a.Name, err)
		}
		a.Deleted = true
		st.Nodes[r.node] = n
		changed = true
	}
	if st.ArtifactGCStatus == nil {
		st.ArtifactGCStatus = &ArtifactGCStatus{}
	}
	st.ArtifactGCStatus.Done = len(dueArtifacts(spec, st, deleting)) == 0
	return changed, nil
}

// secretReader reads Secret keys of namespace ns (each Secret once); a nil selector reads "".
func (c *Controller) secretReader(ctx context.Context, ns string) func(*corev1.SecretKeySelector) (string, error) {
	secrets := map[string]string{}
	return func(sel *corev1.SecretKeySelector) (string, error) {
		if sel == nil {
			return "", nil
		}
		k := sel.Name + "\x00" + sel.Key
		if v, ok := secrets[k]; ok {
			return v, nil
		}
		s, err := c.kube.CoreV1().Secrets(ns).Get(ctx, sel.Name, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("secret %s/%s: %w", ns, sel.Name, err)
		}
		v, ok := s.Data[sel.Key]
		if !ok {
			return "", fmt.Errorf("secret %s/%s has no key %q", ns, sel.Name, sel.Key)
		}
		secrets[k] = string(v)
		return string(v), nil
	}
}

// finalizeDeleted deletes the artifacts of a Workflow being deleted, then lets it go (removes
// FinalizerArtifactGC). With spec.artifactGC.forceFinalizerRemoval a failure lets it go too.
func (c *Controller) finalizeDeleted(ctx context.Context, u *unstructured.Unstructured) (time.Duration, error) {
	if !slices.Contains(u.GetFinalizers(), FinalizerArtifactGC) {
		return 0, nil
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return 0, err
	}
	wf, _ := Decode(data)
	var gcErr error
	if wf != nil {
		spec := c.runSpec(ctx, wf)
		_, gcErr = c.gcArtifacts(ctx, wf.Namespace, spec, &wf.Status, true)
		if gcErr != nil && !(spec.ArtifactGC != nil && spec.ArtifactGC.ForceFinalizerRemoval) {
			c.log.Info("workflow artifact GC failed; the workflow is kept until it succeeds", logWorkflow, u.GetNamespace()+"/"+u.GetName(), logErr, gcErr)
			return 0, gcErr
		}
	}
	obj := u.DeepCopy()
	obj.SetFinalizers(slices.DeleteFunc(slices.Clone(u.GetFinalizers()), func(f string) bool { return f == FinalizerArtifactGC }))
	if _, err := c.dyn.Resource(WorkflowsResource).Namespace(u.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return 0, errors.Join(gcErr, fmt.Errorf("remove finalizer: %w", err))
	}
	return 0, nil
}
