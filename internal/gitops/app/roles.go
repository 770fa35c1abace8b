package app

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// ProjectRole is an AppProject's role as Argo CD writes it: policies in Casbin's CSV form
// ("p, proj:<project>:<role>, applications, sync, <project>/*, allow") and the SSO groups
// bound to it. JWT tokens are not used (Freshet authenticates people itself).
type ProjectRole struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Policies    []string `json:"policies,omitempty"`
	Groups      []string `json:"groups,omitempty"`
}

// RolePolicy is one parsed policy line of a project role.
type RolePolicy struct {
	Resource string // applications, applicationsets, logs, exec
	Action   string // get, create, update, delete, sync, override, action/..., *
	// Object is "<project>/<app glob>" or "<project>/<namespace glob>/<app glob>".
	Object string
	Allow  bool // effect allow (false: deny)
}

// Policy resources and actions a project role may name (Argo CD's for project roles).
var (
	policyResources = []string{"applications", "applicationsets", "logs", "exec"}
	policyActions   = []string{"get", "create", "update", "delete", "sync", "override", "*"}
	roleName        = regexp.MustCompile(`^[a-zA-Z0-9]([-_a-zA-Z0-9]*[a-zA-Z0-9])?$`)
)

func init() {
	recognised[reflect.TypeFor[ProjectRole]()] = map[string]recognition{
		"jwtTokens": {false, "is ignored: Freshet issues no project tokens (people and CI authenticate to Freshet)"},
	}
}

// ParsePolicy parses one policy line of role in project. The error says what is wrong and
// what a valid line looks like.
func ParsePolicy(project, role, line string) (RolePolicy, error) {
	fields := strings.Split(line, ",")
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	subject := "proj:" + project + ":" + role
	example := fmt.Sprintf("want %q", "p, "+subject+", applications, <action>, "+project+"/<app>, allow|deny")
	if len(fields) != 6 {
		return RolePolicy{}, fmt.Errorf("has %d comma-separated fields; %s", len(fields), example)
	}
	if fields[0] != "p" {
		return RolePolicy{}, fmt.Errorf("starts with %q; a policy line starts with \"p\"; %s", fields[0], example)
	}
	if fields[1] != subject {
		return RolePolicy{}, fmt.Errorf("names subject %q; a role's policies name the role itself, %q", fields[1], subject)
	}
	p := RolePolicy{Resource: fields[2], Action: fields[3], Object: fields[4]}
	if !containsFold(policyResources, p.Resource) {
		return RolePolicy{}, fmt.Errorf("resource %q is not one a project role may name: %s", p.Resource, strings.Join(policyResources, ", "))
	}
	p.Resource = strings.ToLower(p.Resource)
	if !containsFold(policyActions, p.Action) && !(strings.HasPrefix(p.Action, "action/") && len(p.Action) > len("action/")) {
		return RolePolicy{}, fmt.Errorf("action %q is not valid: use %s or action/<group>/<kind>/<action>", p.Action, strings.Join(policyActions, ", "))
	}
	rest, ok := strings.CutPrefix(p.Object, project+"/")
	if !ok || rest == "" || strings.Count(rest, "/") > 1 {
		return RolePolicy{}, fmt.Errorf("object %q is not valid: use %s/<app>, %s/* or %s/<namespace>/<app> (a role governs its own project's applications)", p.Object, project, project, project)
	}
	for _, part := range strings.Split(rest, "/") {
		if _, err := compileGlob(part); err != nil || part == "" {
			return RolePolicy{}, fmt.Errorf("object %q: %q is not a valid glob", p.Object, part)
		}
	}
	switch strings.ToLower(fields[5]) {
	case "allow":
		p.Allow = true
	case "deny":
	default:
		return RolePolicy{}, fmt.Errorf("effect %q is not valid: use allow or deny", fields[5])
	}
	return p, nil
}

// validateRoles checks the project's roles: names valid and unique, groups not empty. A
// policy line that does not parse is a warning naming the role, the line and what is valid:
// the line is left out and the rest of the project applies.
func (p *AppProject) validateRoles(d *decoder) {
	if len(p.Spec.Roles) > 0 {
		d.warnings = append(d.warnings, fmt.Sprintf("spec.roles (line %d) become Freshet rules only for an AppProject resource of a runtime that watches them (--watch-cluster-apps); in git they are checked, not enforced", d.line("spec.roles")))
	}
	seen := map[string]int{}
	for i, r := range p.Spec.Roles {
		fp := fmt.Sprintf("spec.roles[%d]", i)
		switch {
		case r.Name == "":
			d.fail(fp+".name", d.line(fp), "", "is required")
		case !roleName.MatchString(r.Name):
			d.fail(fp+".name", d.line(fp+".name"), r.Name, "is not a valid role name: letters, digits, '-' and '_', starting and ending with a letter or digit")
		default:
			if j, dup := seen[r.Name]; dup {
				d.fail(fp+".name", d.line(fp+".name"), r.Name, fmt.Sprintf("is also the name of spec.roles[%d]; role names are unique", j))
			}
			seen[r.Name] = i
		}
		for j, g := range r.Groups {
			if strings.TrimSpace(g) == "" {
				gp := fmt.Sprintf("%s.groups[%d]", fp, j)
				d.fail(gp, d.line(gp), g, "is empty; name a group (a Freshet team)")
			}
		}
		if r.Name == "" {
			continue
		}
		for j, line := range r.Policies {
			pp := fmt.Sprintf("%s.policies[%d]", fp, j)
			if _, err := ParsePolicy(p.Metadata.Name, r.Name, line); err != nil {
				d.warnings = append(d.warnings, fmt.Sprintf("%s (role %q, line %d) %q is ignored: %v", pp, r.Name, d.line(pp), line, err))
			}
		}
	}
}

// RolePolicies returns a role's policies that parse.
func (p *AppProject) RolePolicies(role string) []RolePolicy {
	var out []RolePolicy
	for _, r := range p.Spec.Roles {
		if r.Name != role {
			continue
		}
		for _, line := range r.Policies {
			if pol, err := ParsePolicy(p.Metadata.Name, r.Name, line); err == nil {
				out = append(out, pol)
			}
		}
	}
	return out
}
