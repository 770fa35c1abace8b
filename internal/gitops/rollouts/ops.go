package rollouts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
		if err := c.deleteFailedExperiments(ctx, ro); err != nil {
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
