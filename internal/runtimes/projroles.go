package runtimes

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// ProjectRolesFunc replaces the rules derived from runtime rt's AppProject roles (an
// identity.Service's SetDerivedRules); the registry calls it after a report that listed them.
type ProjectRolesFunc func(ctx context.Context, accountID, runtimeID, runtimeName string, roles []rbac.ProjectRole) error

// Argo CD's resources and actions a project role may name (app.ParsePolicy's), as the control
// plane checks a runtime's report of them.
var (
	roleResources = []string{"applications", "applicationsets", "logs", "exec"}
	roleActions   = []string{"get", "create", "update", "delete", "sync", "override", "*"}
)

// prepareProjectRoles validates a ProjectRolesListed event's roles (field names the event) and
// converts them: every name, group and policy is data from the runtime's cluster, checked for
// shape and bounded, never interpreted beyond rbac.DeriveProjectRules.
func prepareProjectRoles(field string, ev *runtimev1.AppEvent) ([]rbac.ProjectRole, error) {
	if ev.App != "" {
		return nil, errdefs.Invalid(field+".app", ev.App, "must be empty for "+ev.Type+": project roles are the runtime's")
	}
	if n := len(ev.ProjectRoles); n > runtimev1.MaxProjectRoles {
		return nil, errdefs.Invalid(field+".projectRoles", fmt.Sprintf("%d roles", n), fmt.Sprintf("are too many: at most %d", runtimev1.MaxProjectRoles))
	}
	out := make([]rbac.ProjectRole, 0, len(ev.ProjectRoles))
	seen := map[string]int{}
	for i, r := range ev.ProjectRoles {
		fp := fmt.Sprintf("%s.projectRoles[%d]", field, i)
		if msgs := validation.IsDNS1123Subdomain(r.Project); len(msgs) > 0 {
			return nil, errdefs.Invalid(fp+".project", r.Project, "is not an AppProject name: "+strings.Join(msgs, "; "))
		}
		if !roleNameOK(r.Role) {
			return nil, errdefs.Invalid(fp+".role", r.Role, "is not a role name: up to 63 letters, digits, '-' and '_'")
		}
		if j, dup := seen[r.Project+"\x00"+r.Role]; dup {
			return nil, errdefs.Invalid(fp+".role", r.Role, fmt.Sprintf("of project %s is listed at projectRoles[%d] too", r.Project, j))
		}
		seen[r.Project+"\x00"+r.Role] = i
		if len(r.Groups) > rbac.MaxRuleTags {
			return nil, errdefs.Invalid(fp+".groups", fmt.Sprint(len(r.Groups)), fmt.Sprintf("are more than %d groups", rbac.MaxRuleTags))
		}
		for j, g := range r.Groups {
			if g == "" || len(g) > 253 || hasSpaceOrControl(g) {
				return nil, errdefs.Invalid(fmt.Sprintf("%s.groups[%d]", fp, j), g, "is not a group name: 1-253 characters without spaces")
			}
		}
		if n := len(r.Policies); n > runtimev1.MaxRolePolicies {
			return nil, errdefs.Invalid(fp+".policies", fmt.Sprintf("%d policies", n), fmt.Sprintf("are too many: at most %d", runtimev1.MaxRolePolicies))
		}
		role := rbac.ProjectRole{Project: r.Project, Role: r.Role, Groups: slices.Clone(r.Groups)}
		for j, p := range r.Policies {
			pp := fmt.Sprintf("%s.policies[%d]", fp, j)
			if !slices.Contains(roleResources, p.Resource) {
				return nil, errdefs.Invalid(pp+".resource", p.Resource, "is not one of "+strings.Join(roleResources, ", "))
			}
			if !slices.Contains(roleActions, p.Action) && !(strings.HasPrefix(p.Action, "action/") && len(p.Action) <= 253 && !hasSpaceOrControl(p.Action)) {
				return nil, errdefs.Invalid(pp+".action", p.Action, "is not one of "+strings.Join(roleActions, ", ")+" or action/<group>/<kind>/<action>")
			}
			if p.Object == "" || len(p.Object) > 253 || hasSpaceOrControl(p.Object) || strings.Count(p.Object, "/") > 1 {
				return nil, errdefs.Invalid(pp+".object", p.Object, "is not an application glob (<app> or <namespace>/<app>, without the project)")
			}
			for _, part := range strings.Split(p.Object, "/") {
				if _, err := path.Match(part, ""); err != nil || part == "" {
					return nil, errdefs.Invalid(pp+".object", p.Object, "is not a valid glob (*, ?, [a-z])")
				}
			}
			role.Policies = append(role.Policies, rbac.ProjectPolicy{Resource: p.Resource, Action: p.Action, Object: p.Object, Allow: p.Allow})
		}
		out = append(out, role)
	}
	return out, nil
}

func roleNameOK(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
