package rbac

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// ProjectRole is an Argo CD AppProject role as a runtime reports it: the project, the role's
// name, its groups (Freshet team names) and its policy lines, already parsed (see
// app.ParsePolicy). Only lines on applications become rules.
type ProjectRole struct {
	Project  string
	Role     string
	Groups   []string
	Policies []ProjectPolicy
}

// ProjectPolicy is one parsed policy line: Argo CD's resource and action, the object's
// application glob (the part after "<project>/"; a "<namespace>/<app>" object is not mapped)
// and the effect.
type ProjectPolicy struct {
	Resource string
	Action   string
	Object   string
	Allow    bool
}

// argoActions maps Argo CD's actions on applications onto Freshet's.
func argoActions(a string) []Action {
	switch {
	case a == "get":
		return []Action{ActRead}
	case a == "sync":
		return []Action{ActSync}
	case a == "create":
		return []Action{ActCreate}
	case a == "update", a == "override", strings.HasPrefix(a, "action/"):
		return []Action{ActUpdate}
	case a == "delete":
		return []Action{ActDelete}
	case a == "*":
		return ActionsOn(KindApplications)
	}
	return nil
}

// DeriveProjectRules turns the roles of a runtime's AppProjects into rules on applications:
// each allow line becomes, for each team its role's groups name, a rule on kind applications
// with the runtime, the project and the line's application glob, the action mapped (get→read,
// sync, create, update/override/action/*→update, delete, *→every action); each deny line of
// a role adds its glob to the ExceptApps of the rules of the same project, team and action, so
// a deny wins over the project's allows for that team. teams maps team names of the runtime's
// account to their IDs; groups naming no team are returned (sorted, once each) and skipped,
// as are lines on other resources and objects naming a namespace. origin names each rule's
// source ("AppProject P of runtime R, role X").
func DeriveProjectRules(runtime string, teams map[string]string, roles []ProjectRole) (rules []*Rule, unknownGroups []string, skipped []string) {
	type key struct {
		project, team string
		action        Action
	}
	deny := map[key][]string{}
	for _, r := range roles {
		for _, p := range r.Policies {
			if p.Allow || !mappable(p) {
				continue
			}
			for _, g := range r.Groups {
				if id, ok := teams[g]; ok {
					for _, a := range argoActions(p.Action) {
						k := key{r.Project, id, a}
						deny[k] = append(deny[k], p.Object)
					}
				}
			}
		}
	}
	for _, r := range roles {
		for _, g := range r.Groups {
			if _, ok := teams[g]; !ok && !slices.Contains(unknownGroups, g) {
				unknownGroups = append(unknownGroups, g)
			}
		}
		for i, p := range r.Policies {
			if !mappable(p) {
				skipped = append(skipped, fmt.Sprintf("AppProject %s role %s policies[%d]: %s %s on %s is not mapped (only applications, with objects <project>/<app glob>)", r.Project, r.Role, i, p.Action, p.Resource, r.Project+"/"+p.Object))
				continue
			}
			if !p.Allow {
				continue
			}
			for _, g := range r.Groups {
				id, ok := teams[g]
				if !ok {
					continue
				}
				for _, a := range argoActions(p.Action) {
					rules = append(rules, &Rule{TeamID: id, Subject: "team " + g, Action: a, Kind: KindApplications,
						Runtime: runtime, Project: r.Project, Apps: []string{p.Object}, ExceptApps: deny[key{r.Project, id, a}],
						Origin: fmt.Sprintf("AppProject %s of runtime %s, role %s", r.Project, runtime, r.Role)})
				}
			}
		}
	}
	slices.Sort(unknownGroups)
	return rules, unknownGroups, skipped
}

func mappable(p ProjectPolicy) bool {
	return p.Resource == "applications" && p.Object != "" && !strings.Contains(p.Object, "/") && argoActions(p.Action) != nil && globValid(p.Object)
}

func globValid(g string) bool {
	_, err := path.Match(g, "")
	return err == nil
}
