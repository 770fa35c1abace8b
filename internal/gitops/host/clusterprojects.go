package host

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// condInvalidPolicy is the condition an AppProject resource gets for each policy line of its
// roles that does not parse (the line is left out, the rest of the project applies). Argo CD's
// condition types ending in "Warning" are warnings.
const condInvalidPolicy = "InvalidPolicyWarning"

// projectConditions are the conditions of an AppProject resource's status: InvalidSpecError
// when it does not decode (its apps are then refused), one InvalidPolicyWarning per policy
// line that does not parse. Each is {type, message}; times are added when written.
func projectConditions(u *unstructured.Unstructured) []map[string]any {
	data, err := json.Marshal(cleanDoc(u, app.KindAppProject))
	if err != nil {
		return []map[string]any{{"type": condInvalidSpec, "message": err.Error()}}
	}
	p, err := app.DecodeAppProject(data)
	if err != nil {
		return []map[string]any{{"type": condInvalidSpec, "message": fmt.Sprintf("AppProject %s is not loaded (its applications are refused): %v", u.GetName(), err)}}
	}
	var conds []map[string]any
	for i, r := range p.Spec.Roles {
		for j, line := range r.Policies {
			if _, err := app.ParsePolicy(p.Metadata.Name, r.Name, line); err != nil {
				conds = append(conds, map[string]any{"type": condInvalidPolicy,
					"message": fmt.Sprintf("spec.roles[%d].policies[%d] (role %q) %q is ignored: %v", i, j, r.Name, line, err)})
			}
		}
	}
	return conds
}

// writeProjectStatuses writes the status of each AppProject resource of the namespace as
// Argo CD shapes it — jwtTokensByRole (always empty: Freshet issues no project tokens) — plus
// the conditions above. A resource whose status already says so is not written, so the
// status update's own watch event ends here; a condition that stays keeps its time.
func (c *clusterApps) writeProjectStatuses(ctx context.Context) error {
	objs, err := c.projs.List(labels.Everything())
	if err != nil {
		return err
	}
	now := argoTimeOf(time.Now())
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || u.GetDeletionTimestamp() != nil {
			continue
		}
		want := projectConditions(u)
		old, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		_, hasTokens, _ := unstructured.NestedMap(u.Object, "status", "jwtTokensByRole")
		if hasTokens && sameConditions(old, want) {
			continue
		}
		conds := make([]any, len(want))
		for i, cd := range want {
			cd["lastTransitionTime"] = now
			for _, o := range old {
				if om, ok := o.(map[string]any); ok && om["type"] == cd["type"] && om["message"] == cd["message"] && om["lastTransitionTime"] != nil {
					cd["lastTransitionTime"] = om["lastTransitionTime"]
				}
			}
			conds[i] = cd
		}
		status := map[string]any{"jwtTokensByRole": map[string]any{}, "conditions": conds}
		if len(conds) == 0 {
			status["conditions"] = nil // merge patch: remove
		}
		body, err := json.Marshal(map[string]any{"status": status})
		if err != nil {
			return err
		}
		_, err = c.dyn.Resource(AppProjectsResource).Namespace(c.ns).Patch(ctx, u.GetName(), types.MergePatchType, body, metav1.PatchOptions{FieldManager: ClusterAppsFieldManager}, "status")
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// clusterProjects are the namespace's AppProject resources that decode.
func (c *clusterApps) clusterProjects() []*app.AppProject {
	c.mu.Lock()
	projects := make([]*app.AppProject, 0, len(c.projects))
	for _, p := range c.projects {
		projects = append(projects, p)
	}
	c.mu.Unlock()
	slices.SortFunc(projects, func(a, b *app.AppProject) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	return projects
}

// rolesEvent lists the roles of every AppProject the runtime runs, with their policy lines
// that parse (the control plane derives rules from them: docs/security.md). A name defined in
// several places is listed once, from where a cluster application finds it first: an
// AppProject resource, then the installation repository, then a Git Source, then an
// application that renders it (app of apps).
func (h *Host) rolesEvent() runtimev1.AppEvent {
	var projects []*app.AppProject
	seen := map[string]string{}
	add := func(p *app.AppProject, where string) {
		name := p.Metadata.Name
		if prev, dup := seen[name]; dup {
			h.log.Debug("AppProject defined twice: its roles are taken from the first", "project", name, "first", prev, "also", where)
			return
		}
		seen[name] = where
		projects = append(projects, p)
	}
	if h.capps != nil {
		for _, p := range h.capps.clusterProjects() {
			add(p, "AppProject resource")
		}
	}
	h.mu.Lock()
	gitProjects := slices.Collect(maps.Values(h.projects))
	h.mu.Unlock()
	slices.SortFunc(gitProjects, func(a, b *app.AppProject) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	for _, p := range gitProjects {
		add(p, "git")
	}
	if h.eng != nil {
		for _, op := range h.eng.ChildProjects() {
			add(op.Project, "application "+op.Owner)
		}
	}
	ev := runtimev1.AppEvent{Type: runtimev1.ProjectRolesListed, At: time.Now(), ProjectRoles: []runtimev1.ProjectRoleRecord{}}
	for _, p := range projects {
		for _, r := range p.Spec.Roles {
			if len(ev.ProjectRoles) >= runtimev1.MaxProjectRoles {
				h.log.Warn("AppProject roles: more than the control plane takes; the rest are not reported", "max", runtimev1.MaxProjectRoles)
				return ev
			}
			rec := runtimev1.ProjectRoleRecord{Project: p.Metadata.Name, Role: r.Name, Groups: r.Groups}
			for _, line := range r.Policies {
				pol, err := app.ParsePolicy(p.Metadata.Name, r.Name, line)
				if err != nil || len(rec.Policies) >= runtimev1.MaxRolePolicies {
					continue // shown as a condition of the AppProject, or a warning of its apps
				}
				rec.Policies = append(rec.Policies, runtimev1.ProjectPolicyRecord{Resource: pol.Resource, Action: pol.Action,
					Object: strings.TrimPrefix(pol.Object, p.Metadata.Name+"/"), Allow: pol.Allow})
			}
			ev.ProjectRoles = append(ev.ProjectRoles, rec)
		}
	}
	return ev
}

// snapshotRoles is the roles event sent with a snapshot; it is what the control plane holds
// after it, so reportRoles compares later lists with it.
func (h *Host) snapshotRoles() runtimev1.AppEvent {
	ev := h.rolesEvent()
	h.rolesMu.Lock()
	h.lastRoles = ev.ProjectRoles
	h.rolesMu.Unlock()
	return ev
}

// reportRoles sends the roles of the runtime's AppProjects when they differ from the last
// list sent: after a load of the installation repository, a change of the AppProject
// resources, or of those applications render.
func (h *Host) reportRoles() {
	if h.rep == nil || h.rep.sink == nil {
		return
	}
	ev := h.rolesEvent()
	h.rolesMu.Lock()
	defer h.rolesMu.Unlock()
	if h.lastRoles != nil && reflect.DeepEqual(h.lastRoles, ev.ProjectRoles) {
		return
	}
	h.lastRoles = ev.ProjectRoles
	h.rep.enqueue(ev)
}

// sameConditions: the written conditions say what want says (type and message, in order).
func sameConditions(old []any, want []map[string]any) bool {
	if len(old) != len(want) {
		return false
	}
	for i, o := range old {
		om, ok := o.(map[string]any)
		if !ok || !reflect.DeepEqual(om["type"], want[i]["type"]) || !reflect.DeepEqual(om["message"], want[i]["message"]) {
			return false
		}
	}
	return true
}
