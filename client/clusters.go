package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/freshet-dev/freshet/api/appproxyv1"
)

// Clusters (docs/appproxy.md) are api/appproxyv1's.
type (
	// Cluster is a cluster a runtime deploys to: its own ("in-cluster") or a managed one. Its
	// credentials stay in the runtime.
	Cluster = appproxyv1.Cluster
	// ClusterCredential hands a managed cluster's access to a runtime (AddCluster). The control
	// plane only passes it through its tunnel; it never stores it.
	ClusterCredential = appproxyv1.ClusterCredential
	// AddedCluster is what a runtime answers to AddCluster.
	AddedCluster = appproxyv1.AddedCluster
)

func clustersPath(runtime string) string {
	return proxyPath(runtime) + "clusters"
}

// ListClusters lists the clusters of a runtime.
func (c *Client) ListClusters(ctx context.Context, runtime string) (List[Cluster], error) {
	var out List[Cluster]
	err := c.do(ctx, http.MethodGet, clustersPath(runtime), nil, nil, &out)
	return out, err
}

// AddCluster gives a runtime a managed cluster (admins); the runtime checks the credential
// reaches the cluster before it keeps it.
func (c *Client) AddCluster(ctx context.Context, runtime string, cred ClusterCredential) (AddedCluster, error) {
	var out AddedCluster
	err := c.do(ctx, http.MethodPost, clustersPath(runtime), nil, cred, &out)
	return out, err
}

// RemoveCluster makes a runtime forget a managed cluster (admins).
func (c *Client) RemoveCluster(ctx context.Context, runtime, name string) error {
	return c.do(ctx, http.MethodDelete, clustersPath(runtime)+"/"+url.PathEscape(name), nil, nil, nil)
}
