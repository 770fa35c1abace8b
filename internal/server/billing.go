package server

import (
	"context"
	"net/http"

	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// inClusterName is the cluster a runtime runs in (gitops/engine.InClusterName): it is not a
// managed cluster, and clusters-per-runtime does not count it.
const inClusterName = "in-cluster"

// checkAppProxyLimits refuses, before the request reaches the runtime, an application or a
// managed cluster created through runtime rtName's app-proxy when the account's plan allows no
// more: applications as the runtimes reported them, clusters as rtName's last heartbeat listed
// them. The runtime creates them, outside the control plane's transactions, so the check is as
// fresh as those reports (see docs/billing.md). Requests that create nothing pass.
func (s *Server) checkAppProxyLimits(ctx context.Context, p rbac.Principal, rtName, method, path string) error {
	if method != http.MethodPost {
		return nil
	}
	kind, action, name, ok := appProxyOperation(method, path)
	if !ok || action != rbac.ActCreate || name != "" {
		return nil
	}
	switch kind {
	case rbac.KindApplications:
		return s.billing.Check(ctx, p.AccountID, billing.Applications)
	case rbac.KindClusters:
		rt, err := s.runtimes.Get(ctx, p, rtName)
		if err != nil {
			return err
		}
		n := int64(0)
		for _, c := range rt.Clusters {
			if c.Name != inClusterName {
				n++
			}
		}
		return s.billing.CheckReported(ctx, p.AccountID, billing.ClustersPerRuntime, "runtime "+rtName, n)
	}
	return nil
}
