package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// appProxyAPI is the prefix of the app-proxy's REST API under a runtime's path.
const appProxyAPI = "/app-proxy/api/v1/"

// appProxyOperation names what a request to a runtime's app-proxy does, as rules see it: the
// kind, the action and the resource's name ("" for a collection). ok is false for what rules
// do not describe (the app-proxy's GraphQL, its version, notifications).
func appProxyOperation(method, path string) (kind rbac.Kind, action rbac.Action, name string, ok bool) {
	rest, found := strings.CutPrefix(path, appProxyAPI)
	if !found {
		return "", "", "", false
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	switch parts[0] {
	case "applications":
		kind = rbac.KindApplications
	case "git-sources":
		kind = rbac.KindGitSources
	case "git": // git/repositories: what a git source could read
		return rbac.KindGitSources, rbac.ActRead, "", method == http.MethodGet
	case "clusters":
		kind = rbac.KindClusters
	case "workflows", "workflow-templates", "cluster-workflow-templates", "cron-workflows":
		return workflowOperation(method, parts)
	case "sensors", "event-sources": // a Delivery Pipeline's parts: reading them is reading workflows
		return rbac.KindWorkflows, rbac.ActRead, "", method == http.MethodGet && len(parts) == 1
	default:
		return "", "", "", false
	}
	if kind == rbac.KindApplications && len(parts) >= 3 && parts[2] == "rollouts" {
		// An application's Rollouts (the runtime answers only those the application defines):
		// reading them is reading the application; an operation (promote, abort, undo, ...)
		// changes what runs, as a sync does.
		switch {
		case method == http.MethodGet && (len(parts) == 3 || len(parts) == 5):
			return kind, rbac.ActRead, parts[1], true
		case method == http.MethodPost && len(parts) == 6:
			return kind, rbac.ActSync, parts[1], true
		}
		return "", "", "", false
	}
	if kind == rbac.KindApplications && len(parts) >= 3 && parts[2] == "resource" {
		// One object of an application's tree (the runtime answers only those): reading its
		// manifests, events or a Pod's log is reading the application; deleting it is the
		// application's delete; a restart changes what runs, as a sync does.
		switch {
		case len(parts) == 3 && method == http.MethodGet:
			return kind, rbac.ActRead, parts[1], true
		case len(parts) == 3 && method == http.MethodDelete:
			return kind, rbac.ActDelete, parts[1], true
		case len(parts) == 4 && method == http.MethodGet && (parts[3] == "events" || parts[3] == "logs"):
			return kind, rbac.ActRead, parts[1], true
		case len(parts) == 4 && method == http.MethodPost && parts[3] == "restart":
			return kind, rbac.ActSync, parts[1], true
		}
		return "", "", "", false
	}
	switch {
	case len(parts) == 1 && method == http.MethodGet:
		return kind, rbac.ActRead, "", true
	case len(parts) == 1 && method == http.MethodPost:
		return kind, rbac.ActCreate, "", true
	case len(parts) == 2 && method == http.MethodGet:
		return kind, rbac.ActRead, parts[1], true
	case len(parts) == 2 && method == http.MethodDelete:
		return kind, rbac.ActDelete, parts[1], true
	case len(parts) == 3 && kind == rbac.KindApplications:
		name = parts[1]
		switch parts[2] {
		case "diff", "history", "tree":
			return kind, rbac.ActRead, name, method == http.MethodGet
		case "refresh":
			return kind, rbac.ActRead, name, method == http.MethodPost
		case "sync", "rollback":
			return kind, rbac.ActSync, name, method == http.MethodPost
		case "terminate":
			return kind, rbac.ActTerminate, name, method == http.MethodPost
		case "auto-sync":
			return kind, rbac.ActUpdate, name, method == http.MethodPost
		}
	}
	return "", "", "", false
}

// workflowOperation names a request under workflows/, workflow-templates/ or
// cluster-workflow-templates/ for rules: reading (lists, a workflow, its log, templates) is
// read; submit and resubmit create, retry runs, stop and terminate terminate, suspend and
// resume update. A CronWorkflow's create is create, lint read, delete delete, update, suspend
// and resume update. A workflow or CronWorkflow is named NAMESPACE/NAME.
func workflowOperation(method string, parts []string) (rbac.Kind, rbac.Action, string, bool) {
	k := rbac.KindWorkflows
	if parts[0] == "cron-workflows" {
		return cronWorkflowOperation(method, parts)
	}
	if parts[0] != "workflows" {
		return k, rbac.ActRead, "", method == http.MethodGet && len(parts) <= 3
	}
	switch {
	case len(parts) == 1 && method == http.MethodGet:
		return k, rbac.ActRead, "", true
	case len(parts) == 1 && method == http.MethodPost:
		return k, rbac.ActCreate, "", true
	case len(parts) == 3 && method == http.MethodGet:
		return k, rbac.ActRead, parts[1] + "/" + parts[2], true
	case len(parts) == 4 && method == http.MethodGet && parts[3] == "log":
		return k, rbac.ActRead, parts[1] + "/" + parts[2], true
	case len(parts) == 4 && method == http.MethodPost:
		name := parts[1] + "/" + parts[2]
		switch parts[3] {
		case "resubmit":
			return k, rbac.ActCreate, name, true
		case "retry":
			return k, rbac.ActRun, name, true
		case "stop", "terminate":
			return k, rbac.ActTerminate, name, true
		case "suspend", "resume":
			return k, rbac.ActUpdate, name, true
		}
	}
	return "", "", "", false
}

func cronWorkflowOperation(method string, parts []string) (rbac.Kind, rbac.Action, string, bool) {
	k := rbac.KindWorkflows
	switch {
	case len(parts) == 1 && method == http.MethodGet:
		return k, rbac.ActRead, "", true
	case len(parts) == 1 && method == http.MethodPost:
		return k, rbac.ActCreate, "", true
	case len(parts) == 2 && method == http.MethodPost && parts[1] == "lint":
		return k, rbac.ActRead, "", true
	case len(parts) == 3 && method == http.MethodGet:
		return k, rbac.ActRead, parts[1] + "/" + parts[2], true
	case len(parts) == 3 && method == http.MethodDelete:
		return k, rbac.ActDelete, parts[1] + "/" + parts[2], true
	case len(parts) == 3 && method == http.MethodPut:
		return k, rbac.ActUpdate, parts[1] + "/" + parts[2], true
	case len(parts) == 4 && method == http.MethodPost && (parts[3] == "suspend" || parts[3] == "resume"):
		return k, rbac.ActUpdate, parts[1] + "/" + parts[2], true
	}
	return "", "", "", false
}

// authorizeAppProxy applies the account's rules to a request p sends to runtime rtName's
// app-proxy through the tunnel (path is below the runtime's prefix). The role layer has been
// checked already. An application's cluster and namespace come from the control plane's copy
// of what the runtime reported; one the runtime has not reported (or a new one) is described by
// its runtime alone.
func (s *Server) authorizeAppProxy(ctx context.Context, p rbac.Principal, rtName, method, path string) error {
	bound := p.Bound(rbac.KindApplications) || p.Bound(rbac.KindGitSources) || p.Bound(rbac.KindClusters) || p.Bound(rbac.KindWorkflows)
	if !bound {
		return nil
	}
	kind, action, name, ok := appProxyOperation(method, path)
	if !ok {
		return fmt.Errorf("%s %s on runtime %s: rules govern GitOps resources in this account and do not describe this request (use the app-proxy's REST API, or the control plane's GraphQL for applications): %w",
			method, path, rtName, errdefs.ErrForbidden)
	}
	res := rbac.Resource{Kind: kind, Name: rtName, Attrs: rbac.Attributes{Runtime: rtName}}
	if name != "" {
		res.Name = rtName + "/" + name
		if kind == rbac.KindApplications {
			res.Attrs.App = name // its project comes with the reported row below
		}
	}
	if ns, _, ok := strings.Cut(name, "/"); ok && kind == rbac.KindWorkflows {
		res.Attrs.Namespace = ns // a workflow's rules may name its namespace
	}
	if p.OwnerMatters(kind) {
		// What a runtime holds is owned by the runtime's owner team, read now: ownership can
		// change while the tunnel stays up.
		rt, err := s.runtimes.Resource(ctx, p.AccountID, rbac.KindRuntimes, rtName)
		if err != nil {
			return err
		}
		res.Attrs.Owner = rt.Attrs.Owner
	}
	if kind == rbac.KindApplications && name != "" && p.Bound(kind) {
		got, err := s.runtimes.Resource(ctx, p.AccountID, kind, rtName+"/"+name)
		switch {
		case err == nil:
			res = got
		case !errors.Is(err, errdefs.ErrNotFound):
			return err
		}
	}
	return rbac.Authorize(p, action, res)
}

// runtimePath is r's path below runtime rt's prefix (/runtimes/NAME or /runtimes/ID).
func runtimePath(r *http.Request, name, id string) string {
	path := strings.TrimPrefix(r.URL.Path, "/runtimes/"+name)
	return strings.TrimPrefix(path, "/runtimes/"+id)
}
