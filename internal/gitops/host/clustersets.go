package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/internal/gitops/appset"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// ApplicationSet resources of the watched namespace are run by the same ApplicationSet
// controller as those in git: decoded as in git, put under the owner
// appset.ResourceOwner(ns, name) (so git loads neither replace nor delete them, and a name
// git holds is refused), and their status written back in Argo CD's ApplicationSet shape.

// reconcileSet brings the controller in line with one ApplicationSet resource.
func (c *clusterApps) reconcileSet(ctx context.Context, name string) error {
	owner := appset.ResourceOwner(c.ns, name)
	obj, err := c.sets.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	u, _ := obj.(*unstructured.Unstructured)
	c.mu.Lock()
	gen, managed := c.setGens[name]
	c.mu.Unlock()
	if u == nil || u.GetDeletionTimestamp() != nil {
		// Argo CD deletes the generated Applications with their ApplicationSet (owner
		// references); their finalizers say whether their resources go too.
		if managed {
			if err := c.h.sets.Delete(ctx, name, owner, true); err != nil {
				return fmt.Errorf("deleting ApplicationSet %s: %w", name, err)
			}
		}
		c.mu.Lock()
		delete(c.setGens, name)
		delete(c.setProblems, name)
		c.mu.Unlock()
		return nil
	}
	if managed && gen == u.GetGeneration() {
		return nil // a status write, or a resync
	}
	data, err := json.Marshal(cleanDoc(u, "ApplicationSet"))
	if err != nil {
		return err
	}
	msg := ""
	set, derr := appset.Decode(data)
	if derr != nil {
		msg = strings.ReplaceAll(fmt.Sprintf("ApplicationSet %s/%s: %v", c.ns, name, derr), "line 1: ", "")
	} else if err := c.putSet(u, set, owner); err != nil {
		if !errors.Is(err, appset.ErrOwned) {
			return err
		}
		msg = fmt.Sprintf("%v; the first one registered keeps the name: rename or remove one", err)
	} else {
		c.mu.Lock()
		c.setGens[name] = u.GetGeneration()
		c.mu.Unlock()
	}
	c.mu.Lock()
	if msg == "" {
		delete(c.setProblems, name)
	} else if c.setProblems[name].msg != msg {
		c.setProblems[name] = problem{msg: msg, since: time.Now()}
	}
	c.mu.Unlock()
	return c.writeSetStatus(ctx, name)
}

// setChanged is the controller's OnStatus: the resource's status is written again.
func (c *clusterApps) setChanged(name string) {
	c.mu.Lock()
	_, ok := c.setGens[name]
	c.mu.Unlock()
	if ok {
		c.queue.Add("setstatus/" + name)
	}
}

// writeSetStatus writes an ApplicationSet resource's status in Argo CD's shape: conditions
// (ErrorOccurred, ParametersGenerated, ResourcesUpToDate, RolloutProgressing with reason and
// lastTransitionTime), resources (each generated Application with its sync and health) and,
// for a RollingSync, applicationStatus.
func (c *clusterApps) writeSetStatus(ctx context.Context, name string) error {
	c.mu.Lock()
	_, managed := c.setGens[name]
	pr, hasProblem := c.setProblems[name]
	c.mu.Unlock()
	var st *appset.Status
	if managed {
		if s, ok := c.h.sets.Status(name); ok && s.Owner == appset.ResourceOwner(c.ns, name) {
			st = &s
		}
	}
	if st == nil && !hasProblem {
		return nil
	}
	apps := map[string]engine.AppStatus{}
	if st != nil {
		for _, a := range st.Applications {
			if s, err := c.h.eng.Status(a); err == nil {
				apps[a] = s
			}
		}
	}
	body, err := json.Marshal(map[string]any{"status": argoSetStatus(st, pr, c.ns, apps)})
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(ApplicationSetsResource).Namespace(c.ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: ClusterAppsFieldManager}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// argoSetStatus is an ApplicationSet's status in Argo CD's shape (a merge patch). st nil is a
// resource the controller does not run (pr says why).
func argoSetStatus(st *appset.Status, pr problem, ns string, apps map[string]engine.AppStatus) map[string]any {
	cond := func(typ, status, reason, msg string, since time.Time) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg, "lastTransitionTime": argoTimeOf(since)}
	}
	if st == nil {
		return map[string]any{
			"conditions": []any{
				cond(appset.ConditionErrorOccurred, "True", "ErrorOccurred", pr.msg, pr.since),
				cond("ParametersGenerated", "False", "ErrorOccurred", pr.msg, pr.since),
				cond(appset.ConditionResourcesUpToDate, "False", "ErrorOccurred", pr.msg, pr.since),
			},
			"resources": nil, "applicationStatus": nil,
		}
	}
	var conds []any
	errMsg, errSince := "", time.Time{}
	if pr.msg != "" {
		// The resource's new spec is refused; the controller runs the previous one.
		errMsg, errSince = pr.msg, pr.since
	}
	for _, cd := range st.Conditions {
		if cd.Type == appset.ConditionErrorOccurred && cd.Status == "True" && errMsg == "" {
			errMsg, errSince = cd.Message, cd.Since
		}
	}
	if errMsg != "" {
		conds = append(conds, cond(appset.ConditionErrorOccurred, "True", "ErrorOccurred", errMsg, errSince),
			cond("ParametersGenerated", "False", "ErrorOccurred", errMsg, errSince),
			cond(appset.ConditionResourcesUpToDate, "False", "ErrorOccurred", errMsg, errSince))
	} else {
		at := st.GeneratedAt
		for _, cd := range st.Conditions {
			if cd.Type == appset.ConditionResourcesUpToDate {
				at = cd.Since
			}
		}
		if !st.GeneratedAt.IsZero() {
			conds = append(conds, cond(appset.ConditionErrorOccurred, "False", "ApplicationSetUpToDate", "All applications have been generated successfully", at),
				cond("ParametersGenerated", "True", "ParametersGenerated", "Successfully generated parameters for all Applications", at),
				cond(appset.ConditionResourcesUpToDate, "True", "ApplicationSetUpToDate", "All applications have been generated successfully", at))
		}
	}
	for _, cd := range st.Conditions {
		if cd.Type == appset.ConditionRolloutProgressing {
			reason := "ApplicationSetRolloutComplete"
			if cd.Status == "True" {
				reason = "ApplicationSetModified"
			}
			conds = append(conds, cond(cd.Type, cd.Status, reason, cd.Message, cd.Since))
		}
	}
	var res []any
	for _, a := range st.Applications {
		r := map[string]any{"group": "argoproj.io", "version": "v1alpha1", "kind": "Application", "name": a, "namespace": ns, "status": string(engine.Unknown)}
		if s, ok := apps[a]; ok {
			r["status"] = string(s.Sync)
			h := map[string]any{"status": string(s.Health.Status)}
			if s.Health.Message != "" {
				h["message"] = s.Health.Message
			}
			r["health"] = h
		}
		res = append(res, r)
	}
	var steps []any
	for _, s := range st.Steps {
		m := map[string]any{"application": s.App, "status": s.Status, "message": s.Message, "step": strconv.Itoa(s.Step)}
		if s.Step == 0 {
			m["step"] = "-1" // Argo CD's value for an application no step selects
		}
		steps = append(steps, m)
	}
	return map[string]any{"conditions": conds, "resources": res, "applicationStatus": steps}
}

// putSet hands a decoded resource to the controller; the repositories its generators read are
// read afresh, so a spec change generates from what their branches name now.
func (c *clusterApps) putSet(u *unstructured.Unstructured, set *appset.ApplicationSet, owner string) error {
	gens, _, _ := unstructured.NestedSlice(u.Object, "spec", "generators")
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				if s, ok := e.(string); ok && k == "repoURL" && s != "" {
					c.h.cache.Invalidate(s)
				} else {
					walk(e)
				}
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(gens)
	return c.h.sets.Put(appset.Entry{Set: set, File: owner, Owner: owner})
}
