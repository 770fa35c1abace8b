package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// Operations written to an Application resource: `argocd app sync` (and any tool writing the
// resource) sets its top-level `operation` field. The runtime performs the requested sync
// once, records it in status.operationState in Argo CD's shape and then removes `operation`
// (status first, so a client that waits for `operation` to go sees the final state).
//
// A change of `operation` increments the resource's metadata.generation (it is neither
// metadata nor status), so the generation of the resource that carried a request identifies
// it: a resource seen again at that generation or below (a status write, a stale cache) is
// the same request, never a new one.

// crOp is the request last taken from a resource.
type crOp struct {
	uid       types.UID
	gen       int64 // the resource's generation carrying the request
	raw       any   // the operation as written, for operationState.operation and the removal
	requested time.Time
	finished  time.Time // zero while it runs
	// phase and message are set for a request that did not reach the engine (invalid, or the
	// app cannot sync); else the engine's operation is the outcome.
	phase, message string
	warnings       []string
	running        bool
	cleared        bool
}

// operate takes the operation of a resource, if it is a new one.
func (c *clusterApps) operate(ctx context.Context, u *unstructured.Unstructured) error {
	name := u.GetName()
	raw := u.Object["operation"]
	c.mu.Lock()
	rec := c.ops[name]
	if rec != nil && rec.uid == u.GetUID() && u.GetGeneration() <= rec.gen {
		// The request already taken: remove it once it is finished.
		pending := !rec.running && !rec.cleared
		c.mu.Unlock()
		if pending {
			return c.clearOperation(ctx, name, rec)
		}
		return nil
	}
	_, managed := c.managed[name]
	pr := c.problems[name]
	rec = &crOp{uid: u.GetUID(), gen: u.GetGeneration(), raw: runtimeCopy(raw), requested: time.Now()}
	c.ops[name] = rec
	c.mu.Unlock()

	data, err := json.Marshal(map[string]any{"operation": raw})
	if err != nil {
		return err
	}
	op, derr := app.DecodeOperation(data)
	switch {
	case derr != nil:
		// The document is one line of JSON: the decoder's line numbers say nothing here.
		return c.refuseOperation(ctx, name, rec, "invalid operation: "+strings.ReplaceAll(derr.Error(), "line 1: ", ""))
	case !managed:
		return c.refuseOperation(ctx, name, rec, "the application cannot be synced: "+pr.msg)
	}
	opts := engine.SyncOptions{
		Revision: op.Sync.RevisionSpec(), Prune: op.Sync.Prune, DryRun: op.Sync.DryRun, Options: op.Sync.SyncOptions,
		SkipHooks: op.Sync.SkipHooks(), InitiatedBy: engine.InitiatedByUser, User: op.InitiatedBy.Username,
	}
	if op.InitiatedBy.Automated && op.InitiatedBy.Username == "" {
		opts.InitiatedBy = engine.InitiatedByAutomated
	}
	for _, r := range op.Sync.Resources {
		opts.Resources = append(opts.Resources, engine.ResourceKey{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
	}
	// A requested sync goes to what its revision names now, not to what the shared ref
	// advertisement said up to RefsTTL ago (as `freshet app sync` does).
	if a, err := c.h.eng.Spec(name); err == nil {
		if a.Spec.Source != nil {
			c.h.cache.Invalidate(a.Spec.Source.RepoURL)
		}
		for _, src := range a.Spec.Sources {
			c.h.cache.Invalidate(src.RepoURL)
		}
	}
	c.mu.Lock()
	rec.running, rec.warnings = true, op.Warnings
	c.mu.Unlock()
	c.h.log.Info("operation on an Application resource", "namespace", c.ns, "name", name, "revision", opts.Revision, "user", opts.User)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_, err := c.h.eng.Sync(ctx, name, opts)
		if ctx.Err() != nil {
			return // shutting down: the request stays on the resource for the next runtime
		}
		c.mu.Lock()
		rec.running = false
		rec.finished = time.Now()
		switch {
		case errors.Is(err, engine.ErrOperationRunning):
			// An automated sync runs: the request waits for it, as in Argo CD.
			rec.finished = time.Time{}
			delete(c.ops, name)
			c.mu.Unlock()
			c.queue.AddAfter("app/"+name, time.Second)
			return
		case err != nil:
			rec.phase, rec.message = string(engine.PhaseError), err.Error()
		}
		c.mu.Unlock()
		if err := c.writeStatus(ctx, name); err != nil {
			c.h.log.Warn("operationState not written", "name", name, "err", err)
		}
		if err := c.clearOperation(ctx, name, rec); err != nil {
			c.h.log.Warn("operation not removed; retrying", "name", name, "err", err)
			c.queue.AddRateLimited("app/" + name)
		}
	}()
	return nil
}

// refuseOperation records a request that cannot run: operationState Error with why, then the
// request is removed.
func (c *clusterApps) refuseOperation(ctx context.Context, name string, rec *crOp, msg string) error {
	c.mu.Lock()
	rec.phase, rec.message, rec.finished = string(engine.PhaseError), msg, time.Now()
	c.mu.Unlock()
	if err := c.writeStatus(ctx, name); err != nil {
		return err
	}
	return c.clearOperation(ctx, name, rec)
}

// clearOperation removes the request from the resource, unless it was replaced meanwhile (a
// JSON patch testing the value taken).
func (c *clusterApps) clearOperation(ctx context.Context, name string, rec *crOp) error {
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/operation", "value": rec.raw},
		{"op": "remove", "path": "/operation"},
	})
	if err != nil {
		return err
	}
	api := c.dyn.Resource(ApplicationsResource).Namespace(c.ns)
	_, err = api.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: ClusterAppsFieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		cur, gerr := api.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
		case gerr != nil:
			return err
		case cur.GetUID() != rec.uid || cur.GetGeneration() > rec.gen || !reflect.DeepEqual(cur.Object["operation"], rec.raw):
			// Replaced or removed by someone else: a new request is the informer's to deliver.
		default:
			return err
		}
	}
	c.mu.Lock()
	rec.cleared = true
	c.mu.Unlock()
	return nil
}

// runtimeCopy deep-copies a JSON value of an unstructured object.
func runtimeCopy(v any) any {
	if v == nil {
		return nil
	}
	return runtimeDeepCopy(v)
}

func runtimeDeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = runtimeDeepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = runtimeDeepCopy(e)
		}
		return out
	}
	return v
}

// operationFor is the request behind the engine's operation op, if it is the resource's
// (begun after the request was taken and not after it finished).
func (rec *crOp) matches(op *engine.SyncResult) bool {
	if rec == nil || op == nil || rec.phase != "" {
		return false
	}
	if op.InitiatedBy != engine.InitiatedByUser && op.InitiatedBy != engine.InitiatedByAutomated {
		return false
	}
	return !op.StartedAt.Before(rec.requested) && (rec.finished.IsZero() || !op.StartedAt.After(rec.finished))
}

// refusedState is operationState for a request that never reached the engine, when it is
// newer than the engine's last operation.
func (rec *crOp) refusedState(op *engine.SyncResult) (map[string]any, bool) {
	if rec == nil || rec.phase == "" || (op != nil && op.StartedAt.After(rec.requested)) {
		return nil, false
	}
	return map[string]any{
		"phase": rec.phase, "message": rec.message,
		"startedAt": argoTimeOf(rec.requested), "finishedAt": argoTimeOf(rec.finished),
		"operation": rec.raw,
	}, true
}

// warningsNote is appended to an operation's message for the request's ignored fields.
func (rec *crOp) warningsNote() string {
	if rec == nil || len(rec.warnings) == 0 {
		return ""
	}
	return fmt.Sprintf(" (ignored: %s)", strings.Join(rec.warnings, "; "))
}
