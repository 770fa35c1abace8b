package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// HelmRelease is a Helm release of one of a runtime's clusters, as the runtime last read it
// from Helm's release storage (GET /api/v1/helm-releases).
type HelmRelease struct {
	ID           string `json:"id"`
	Runtime      string `json:"runtime"`
	RuntimeID    string `json:"runtimeId"`
	Cluster      string `json:"cluster"`
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	Chart        string `json:"chart"`
	ChartVersion string `json:"chartVersion"`
	AppVersion   string `json:"appVersion"`
	// Status is the latest revision's: deployed, failed, pending-upgrade, ...
	Status      string     `json:"status"`
	Revision    int        `json:"revision"`
	Updated     *time.Time `json:"updated"`
	Description string     `json:"description"`
	ReportedAt  time.Time  `json:"reportedAt"`
	// History is answered by GetHelmRelease only: every revision Helm keeps, newest first.
	History []HelmRevision `json:"history,omitempty"`
}

// HelmRevision is one revision of a Helm release.
type HelmRevision struct {
	Revision     int        `json:"revision"`
	Status       string     `json:"status"`
	Chart        string     `json:"chart"`
	ChartVersion string     `json:"chartVersion"`
	AppVersion   string     `json:"appVersion"`
	Updated      *time.Time `json:"updated"`
	Description  string     `json:"description"`
}

// HelmReleaseFilter narrows ListHelmReleases and, with Runtime and Cluster, GetHelmRelease;
// empty fields match anything.
type HelmReleaseFilter struct {
	Runtime, Cluster, Namespace string
}

func (f HelmReleaseFilter) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"runtime": f.Runtime, "cluster": f.Cluster, "namespace": f.Namespace} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// ListHelmReleases lists the Helm releases the account's runtimes reported, by cluster,
// namespace and name, without their history.
func (c *Client) ListHelmReleases(ctx context.Context, f HelmReleaseFilter) (List[HelmRelease], error) {
	var out List[HelmRelease]
	err := c.do(ctx, http.MethodGet, "/api/v1/helm-releases", f.query(), nil, &out)
	return out, err
}

// GetHelmRelease returns the release name of namespace with its history; f's Runtime and
// Cluster choose when more than one runtime or cluster has it.
func (c *Client) GetHelmRelease(ctx context.Context, namespace, name string, f HelmReleaseFilter) (HelmRelease, error) {
	var out HelmRelease
	f.Namespace = ""
	err := c.do(ctx, http.MethodGet, "/api/v1/helm-releases/"+url.PathEscape(namespace)+"/"+url.PathEscape(name), f.query(), nil, &out)
	return out, err
}
