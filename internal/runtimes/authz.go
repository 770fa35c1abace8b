package runtimes

import (
	"context"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// The resources of this package as attribute-based rules see them (rbac.Authorize): a runtime
// by its name (its runtime attribute is itself); an application by runtime/name, with its
// runtime, its destination cluster (name, or server URL when unnamed) and namespace, its Argo CD
// project and its name (what rules derived from AppProject roles match). Both carry
// the runtime's owner team (owner: the team's ID, empty when none): what a runtime holds is
// owned by the runtime's owner.

func runtimeResource(name, owner string) rbac.Resource {
	return rbac.Resource{Kind: rbac.KindRuntimes, Name: name, Attrs: rbac.Attributes{Runtime: name, Owner: owner}}
}

func rtResource(rt store.Runtime) rbac.Resource {
	res := runtimeResource(rt.Name, rt.OwnerTeamID)
	res.Attrs.OwnerName = rt.OwnerTeam
	return res
}

func appResource(runtime, owner, name, project, destName, destServer, namespace string) rbac.Resource {
	cluster := destName
	if cluster == "" {
		cluster = destServer
	}
	return rbac.Resource{Kind: rbac.KindApplications, Name: runtime + "/" + name,
		Attrs: rbac.Attributes{Runtime: runtime, Cluster: cluster, Namespace: namespace, Project: project, App: name, Owner: owner}}
}

func appRowResource(r store.Application) rbac.Resource {
	return appResource(r.Runtime, r.RuntimeOwner, r.Name, r.Project, r.DestName, r.DestServer, r.DestNamespace)
}

func (a Application) resource() rbac.Resource {
	return appResource(a.Runtime, a.RuntimeOwner, a.Name, a.Project, a.DestName, a.DestServer, a.DestNamespace)
}

// Resource describes the resource of kind k named name in accountID as rules see it, for
// explaining a decision: runtimes by name or ID, applications as runtime/name.
func (s *Service) Resource(ctx context.Context, accountID string, k rbac.Kind, name string) (rbac.Resource, error) {
	switch k {
	case rbac.KindRuntimes:
		rt, err := s.db.GetRuntime(ctx, accountID, name)
		if err != nil {
			return rbac.Resource{}, err
		}
		return rtResource(rt), nil
	case rbac.KindApplications:
		runtime, app, ok := cutLast(name)
		if !ok {
			return rbac.Resource{}, errdefs.Invalid("resource", "applications/"+name, "names an application as applications/RUNTIME/NAME")
		}
		row, err := s.db.GetApplication(ctx, accountID, runtime, app)
		if err != nil {
			return rbac.Resource{}, err
		}
		return appRowResource(row), nil
	}
	return rbac.Resource{}, errdefs.Invalid("resource", string(k), "is not a kind the control plane can describe (runtimes, applications)")
}

func cutLast(s string) (string, string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return s[:i], s[i+1:], i > 0 && i < len(s)-1
		}
	}
	return "", "", false
}

// visibleApps fills one page of applications p may read, reading on past hidden ones so that a
// short page is the last.
func visibleApps(page paging.Page, p rbac.Principal, list func(paging.Page) ([]store.Application, error)) ([]store.Application, error) {
	want := page.Size()
	var out []store.Application
	for {
		rows, err := list(page)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if rbac.Visible(p, appRowResource(r)) {
				out = append(out, r)
			}
		}
		if len(out) >= want {
			return out[:want], nil
		}
		if len(rows) < page.Size() {
			return out, nil
		}
		page.After = rows[len(rows)-1].ID
	}
}
