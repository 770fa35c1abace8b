package rollouts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Errors of the operations.
var (
	// ErrNotFound: no such Rollout.
	ErrNotFound = fmt.Errorf("rollout %w", errdefs.ErrNotFound)
	// ErrNothingToDo: the operation does not apply to the Rollout's state (promote of a fully
	// promoted Rollout, retry of one that is not aborted).
	ErrNothingToDo = fmt.Errorf("rollout: %w", errdefs.ErrConflict)
)

// Promote moves a Rollout on, as `kubectl argo rollouts promote` does. full skips every
// remaining step (and, blue-green, any pause) at once. Otherwise: a paused Rollout (spec.paused,
// a pause step, a blue-green pause) resumes; a canary that is not paused skips its current step.
func (c *Controller) Promote(ctx context.Context, namespace, name string, full bool) error {
	return onConflict(func() error { return c.promote(ctx, namespace, name, full) })
}

// onConflict runs op again (up to 5 times) when the Rollout changed between its read and its
// write — the controller writes status often — so each attempt decides on what it read.
func onConflict(op func() error) error {
	var err error
	for range 5 {
		if err = op(); !errors.Is(err, errChanged) {
			return err
		}
	}
	return err
}

var errChanged = errors.New("changed meanwhile")

func (c *Controller) promote(ctx context.Context, namespace, name string, full bool) error {
	ro, err := c.get(ctx, namespace, name)
	if err != nil {
		return err
	}
	if ro.Status.StableRS != "" && ro.Status.StableRS == ro.Status.CurrentPodHash && !ro.Status.Abort {
		return fmt.Errorf("promote %s/%s: already fully promoted: %w", namespace, name, ErrNothingToDo)
	}
	if ro.Spec.Paused {
		if err := c.patch(ctx, ro, false, map[string]any{"spec": map[string]any{"paused": false}}); err != nil {
			return err
		}
		if !full && len(ro.Status.PauseConditions) == 0 {
			return nil
		}
		if ro, err = c.get(ctx, namespace, name); err != nil {
			return err
		}
	}
	status := map[string]any{}
	switch {
	case full:
		status["promoteFull"] = true
		status["pauseConditions"] = nil
	case len(ro.Status.PauseConditions) > 0:
		status["pauseConditions"] = nil // the controller sees controllerPause without conditions: the step is done
	case ro.Spec.Strategy.Canary != nil && ro.Status.CurrentStepIndex != nil && int(*ro.Status.CurrentStepIndex) < len(ro.Spec.Strategy.Canary.Steps):
		status["currentStepIndex"] = *ro.Status.CurrentStepIndex + 1
	default:
		return fmt.Errorf("promote %s/%s: no step or pause to promote (use full promotion): %w", namespace, name, ErrNothingToDo)
	}
	return c.patch(ctx, ro, true, map[string]any{"status": status})
}

// Abort stops an update: traffic and scale return to the stable revision (phase Degraded,
// reason RolloutAborted) until Retry or a new revision.
func (c *Controller) Abort(ctx context.Context, namespace, name string) error {
	return onConflict(func() error {
		ro, err := c.get(ctx, namespace, name)
		if err != nil {
			return err
		}
		if ro.Status.StableRS == ro.Status.CurrentPodHash {
			return fmt.Errorf("abort %s/%s: no update in progress: %w", namespace, name, ErrNothingToDo)
		}
		return c.patch(ctx, ro, true, map[string]any{"status": map[string]any{"abort": true}})
	})
}

// Retry starts an aborted update again from its first step.
func (c *Controller) Retry(ctx context.Context, namespace, name string) error {
	return onConflict(func() error {
		ro, err := c.get(ctx, namespace, name)
		if err != nil {
			return err
		}
		if !ro.Status.Abort {
			return fmt.Errorf("retry %s/%s: not aborted: %w", namespace, name, ErrNothingToDo)
		}
		if err := c.deleteFailedRuns(ctx, ro); err != nil {
			return err
		}
		return c.patch(ctx, ro, true, map[string]any{"status": map[string]any{"abort": false, "pauseConditions": nil, "controllerPause": false}})
	})
}

// Pause sets spec.paused; Resume clears it (Promote of a manually paused Rollout does too).
func (c *Controller) Pause(ctx context.Context, namespace, name string, pause bool) error {
	return onConflict(func() error {
		ro, err := c.get(ctx, namespace, name)
		if err != nil {
			return err
		}
		return c.patch(ctx, ro, false, map[string]any{"spec": map[string]any{"paused": pause}})
	})
}

// Get returns a Rollout as the API server has it.
func (c *Controller) Get(ctx context.Context, namespace, name string) (*Rollout, error) {
	return c.get(ctx, namespace, name)
}

func (c *Controller) get(ctx context.Context, namespace, name string) (*Rollout, error) {
	u, err := c.dyn.Resource(RolloutsResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s/%s: %w", namespace, name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read rollout %s/%s: %w", namespace, name, err)
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	ro, err := Decode(data)
	if ro == nil {
		return nil, err
	}
	return ro, nil
}

// patch merge-patches the Rollout (its status subresource when status), guarded by the
// resourceVersion read, so an operation never acts on a state it did not see.
func (c *Controller) patch(ctx context.Context, ro *Rollout, status bool, body map[string]any) error {
	body["metadata"] = map[string]any{"resourceVersion": ro.ResourceVersion}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	var sub []string
	if status {
		sub = []string{"status"}
	}
	_, err = c.dyn.Resource(RolloutsResource).Namespace(ro.Namespace).Patch(ctx, ro.Name, types.MergePatchType, b, metav1.PatchOptions{FieldManager: FieldManager}, sub...)
	if apierrors.IsConflict(err) {
		return fmt.Errorf("rollout %s/%s: %w: %w", ro.Namespace, ro.Name, errChanged, errors.Join(errdefs.ErrConflict, err))
	}
	if err != nil {
		return fmt.Errorf("update rollout %s/%s: %w", ro.Namespace, ro.Name, err)
	}
	return nil
}

// Resume clears spec.paused (a manual pause), as `kubectl argo rollouts resume` does; a Rollout
// that is not paused so is ErrNothingToDo (a pause step is promoted, not resumed).
func (c *Controller) Resume(ctx context.Context, namespace, name string) error {
	return onConflict(func() error {
		ro, err := c.get(ctx, namespace, name)
		if err != nil {
			return err
		}
		if !ro.Spec.Paused {
			return fmt.Errorf("resume %s/%s: not paused (spec.paused is false; a pause step is ended with promote): %w", namespace, name, ErrNothingToDo)
		}
		return c.patch(ctx, ro, false, map[string]any{"spec": map[string]any{"paused": false}})
	})
}

// Restart sets spec.restartAt to now, as `kubectl argo rollouts restart` does: the controller
// replaces the stable revision's pods created before then, one at a time while every replica is
// available. It returns the time set.
func (c *Controller) Restart(ctx context.Context, namespace, name string) (time.Time, error) {
	at := c.opts.Now().UTC().Truncate(time.Second)
	// restartAt is compared with pods' creation times, which have whole seconds: a pod created
	// within the current second is older than a restartAt of the next one.
	at = at.Add(time.Second)
	err := onConflict(func() error {
		ro, err := c.get(ctx, namespace, name)
		if err != nil {
			return err
		}
		return c.patch(ctx, ro, false, map[string]any{"spec": map[string]any{"restartAt": at.Format(time.RFC3339)}})
	})
	return at, err
}

// Undo sets the Rollout's pod template to that of an earlier revision, as `kubectl argo rollouts
// undo [--to-revision N]` does; toRevision 0 is the revision before the current one. The
// controller then rolls the template out as a new update, through the steps. The ReplicaSet's
// template carries the API server's defaults, so it hashes differently from the Rollout's
// original: the update is a new revision, and the old ReplicaSet stays as history. It returns
// the revision gone back to.
func (c *Controller) Undo(ctx context.Context, namespace, name string, toRevision int64) (int64, error) {
	if toRevision < 0 {
		return 0, errdefs.Invalid("toRevision", fmt.Sprint(toRevision), "must be a revision number (1 or more), or 0 for the previous revision")
	}
	var rev int64
	err := onConflict(func() error {
		ro, err := c.get(ctx, namespace, name)
		if err != nil {
			return err
		}
		list, err := c.kube.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{LabelSelector: PodTemplateHashLabel})
		if err != nil {
			return fmt.Errorf("list ReplicaSets: %w", err)
		}
		rss := owned(ro, list.Items)
		current := PodTemplateHash(&ro.Spec.Template, ro.Status.CollisionCount)
		var target *appsv1.ReplicaSet
		if toRevision == 0 {
			// The newest revision other than the current template's.
			for i := len(rss) - 1; i >= 0; i-- {
				if rss[i].Labels[PodTemplateHashLabel] != current {
					target = rss[i]
					break
				}
			}
			if target == nil {
				return fmt.Errorf("undo %s/%s: no previous revision: %w", namespace, name, ErrNothingToDo)
			}
		} else {
			var have []string
			for _, rs := range rss {
				if revisionOf(rs) == toRevision {
					target = rs
				}
				have = append(have, fmt.Sprint(revisionOf(rs)))
			}
			if target == nil {
				return errdefs.Invalid("toRevision", fmt.Sprint(toRevision), fmt.Sprintf("is no revision of rollout %s/%s (it has %s)", namespace, name, strings.Join(have, ", ")))
			}
		}
		rev = revisionOf(target)
		if target.Labels[PodTemplateHashLabel] == current {
			return fmt.Errorf("undo %s/%s: revision %d is the current template: %w", namespace, name, rev, ErrNothingToDo)
		}
		tmpl := target.Spec.Template.DeepCopy()
		delete(tmpl.Labels, PodTemplateHashLabel)
		tmpl.CreationTimestamp = metav1.Time{}
		// A merge patch of the whole template would keep keys the old revision lacks: replace
		// it with a JSON patch, carrying the resourceVersion read so that a Rollout changed
		// meanwhile is a conflict.
		ops := []map[string]any{
			{"op": "replace", "path": "/metadata/resourceVersion", "value": ro.ResourceVersion},
			{"op": "replace", "path": "/spec/template", "value": tmpl},
		}
		b, err := json.Marshal(ops)
		if err != nil {
			return err
		}
		_, err = c.dyn.Resource(RolloutsResource).Namespace(namespace).Patch(ctx, name, types.JSONPatchType, b, metav1.PatchOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) {
			return fmt.Errorf("rollout %s/%s: %w: %w", namespace, name, errChanged, errors.Join(errdefs.ErrConflict, err))
		}
		if err != nil {
			return fmt.Errorf("update rollout %s/%s: %w", namespace, name, err)
		}
		return nil
	})
	return rev, err
}
