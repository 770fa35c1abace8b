package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/freshet-dev/freshet/api/appproxyv1"
)

// A runtime's Argo Rollouts, through its app-proxy (docs/appproxy.md, "Rollouts").
type (
	Rollout         = appproxyv1.Rollout
	RolloutDetail   = appproxyv1.RolloutDetail
	RolloutStep     = appproxyv1.RolloutStep
	RolloutRevision = appproxyv1.RolloutRevision
	AnalysisRun     = appproxyv1.AnalysisRun
	AnalysisMetric  = appproxyv1.AnalysisMetric
	Measurement     = appproxyv1.Measurement
)

// rolloutsPath is a runtime's rollouts collection; app, when set, scopes it to an
// application's Rollouts (so that the account's rules on applications apply).
func rolloutsPath(runtime, app string) string {
	if app != "" {
		return appPath(runtime, app) + "/rollouts"
	}
	return proxyPath(runtime) + "rollouts"
}

func rolloutPath(runtime, app, namespace, name string) string {
	return rolloutsPath(runtime, app) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// ListRollouts lists a runtime's Rollouts by namespace and name (an application's, when app
// is set).
func (c *Client) ListRollouts(ctx context.Context, runtime, app string) (List[Rollout], error) {
	var out List[Rollout]
	err := c.do(ctx, http.MethodGet, rolloutsPath(runtime, app), nil, nil, &out)
	return out, err
}

// GetRollout returns a Rollout with its steps, revisions and analysis runs; app, when set,
// must be the application that defines it.
func (c *Client) GetRollout(ctx context.Context, runtime, app, namespace, name string) (RolloutDetail, error) {
	var out RolloutDetail
	err := c.do(ctx, http.MethodGet, rolloutPath(runtime, app, namespace, name), nil, nil, &out)
	return out, err
}

// RolloutOperation runs op (promote, abort, retry, restart, undo, pause, resume) on a Rollout
// and returns it as it is afterwards. full is promote's; toRevision undo's (0: the previous
// revision).
func (c *Client) RolloutOperation(ctx context.Context, runtime, app, namespace, name, op string, full bool, toRevision int64) (RolloutDetail, error) {
	var body any = struct{}{}
	switch op {
	case "promote":
		body = appproxyv1.RolloutPromoteRequest{Full: full}
	case "undo":
		body = appproxyv1.RolloutUndoRequest{ToRevision: toRevision}
	}
	var out RolloutDetail
	err := c.do(ctx, http.MethodPost, rolloutPath(runtime, app, namespace, name)+"/"+url.PathEscape(op), nil, body, &out)
	return out, err
}
