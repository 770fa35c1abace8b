package client

import (
	"context"
	"net/http"
	"net/url"
)

// Cluster is a cluster a runtime deploys to: its own ("in-cluster") or a managed one. Its
// credentials stay in the runtime.
type Cluster struct {
	Name   string `json:"name"`
	Server string `json:"server"`
}

// ClusterCredential hands a managed cluster's access to a runtime (AddCluster). The control
// plane only passes it through its tunnel; it never stores it.
type ClusterCredential struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	CAData []byte `json:"caData,omitempty"`
	Token  string `json:"token"`
}

// AddedCluster is what a runtime answers to AddCluster.
type AddedCluster struct {
	Name    string `json:"name"`
	Server  string `json:"server"`
	Version string `json:"version"` // the cluster's Kubernetes version, as the runtime reached it
}

func clustersPath(runtime string) string {
	return "/runtimes/" + url.PathEscape(runtime) + "/app-proxy/api/v1/clusters"
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
