package engine

import (
	"context"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PostDelete hooks (argocd.argoproj.io/hook: PostDelete, or Helm's post-delete), as in Argo
// CD: never run by a sync; a cascading delete of the app first deletes its resources and
// waits until they are gone, then runs its PostDelete hooks wave by wave, as a sync runs
// hooks, and finally deletes the hook objects. A hook that fails (or does not complete within
// Options.HookTimeout) keeps the app, deleting, with a DeletionError condition naming the
// hook, which is left for inspection; the engine retries the deletion (see Engine.Remove).

// postDeleteHooks are the PostDelete hooks of the app's current desired state, in wave
// order. An app that cannot be rendered has none (its resources are deleted all the same).
func (e *Engine) postDeleteHooks(ctx context.Context, st *appState, cl *cluster) []*desiredObj {
	st.mu.Lock()
	ds := st.desired
	st.mu.Unlock()
	if ds == nil || ds.cluster != cl.host {
		a, project := e.appProject(st)
		var err error
		if ds, err = e.desiredFor(ctx, st, a, project, cl, "", false); err != nil {
			e.log.Warn("cascading delete: the application cannot be rendered; no PostDelete hooks run", logKeyApp, st.name, "error", err)
			return nil
		}
	}
	var out []*desiredObj
	for _, h := range ds.hooks {
		for _, t := range h.hookTypes {
			if t == HookPostDelete {
				out = append(out, h)
				break
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].wave < out[j].wave })
	return out
}

// waitGone waits until the objects a cascading delete deleted are gone.
func (e *Engine) waitGone(ctx context.Context, cl *cluster, refs []ObjRef) error {
	ctx, cancel := context.WithTimeout(ctx, e.opts.HookTimeout)
	defer cancel()
	for _, ref := range refs {
		m, err := cl.mapping(ref.GVK(), false)
		if err != nil {
			continue
		}
		for {
			_, err := cl.resource(m, ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("PostDelete hooks not run: %s is still being deleted: %w", ref.ResourceKey, ctx.Err())
			case <-time.After(e.opts.PollStep):
			}
		}
	}
	return nil
}

// runPostDelete runs the PostDelete hooks of a cascading delete and deletes them after. A
// retry (a previous attempt's hook failed) first deletes the hook objects of that attempt,
// whatever their delete policy, so each runs afresh.
func (e *Engine) runPostDelete(ctx context.Context, st *appState, cl *cluster, hooks []*desiredObj, retry bool) error {
	st.mu.Lock()
	a := st.app
	st.mu.Unlock()
	run := &syncRun{e: e, st: st, a: a, cl: cl, res: &SyncResult{Phase: PhaseRunning}}
	var created []ObjRef
	for _, h := range hooks {
		if name := h.obj.GetName(); retry && name != "" {
			if m, err := cl.mapping(h.ref.GVK(), false); err == nil {
				if err := deleteAndWait(ctx, cl.resource(m, h.key.Namespace), name, e.opts.PollStep); err != nil {
					return fmt.Errorf("PostDelete hook %s: deleting the previous attempt's: %w", h.key, err)
				}
				st.trackHook(h.ref, true)
			}
		}
		hr := run.runHook(ctx, h, HookPostDelete)
		ref := h.ref
		if hr.Name != "" {
			ref.Name = hr.Name
		}
		if !hr.Deleted && hr.Name != "" {
			created = append(created, ref)
		}
		if hr.Phase != PhaseSucceeded {
			return fmt.Errorf("PostDelete hook %s failed: %s", h.key, hr.Message)
		}
	}
	bg := metav1.DeletePropagationBackground
	for _, ref := range created {
		if m, err := cl.mapping(ref.GVK(), false); err == nil {
			if err := deleteObject(ctx, cl, m, ref, bg); err != nil {
				return err
			}
			st.trackHook(ref, true)
		}
	}
	return nil
}
