package rest

import (
	"net/http"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/runtimes"
)

// ToHelmRelease converts a Helm release to its API form.
func ToHelmRelease(h runtimes.HelmRelease) client.HelmRelease {
	out := client.HelmRelease{ID: h.ID, Runtime: h.Runtime, RuntimeID: h.RuntimeID, Cluster: h.Cluster, Namespace: h.Namespace, Name: h.Name,
		Chart: h.Chart, ChartVersion: h.ChartVersion, AppVersion: h.AppVersion, Status: h.Status, Revision: h.Revision,
		Updated: timePtr(h.Updated), Description: h.Description, ReportedAt: h.ReportedAt}
	for _, r := range h.History {
		out.History = append(out.History, client.HelmRevision{Revision: r.Revision, Status: r.Status, Chart: r.Chart, ChartVersion: r.ChartVersion,
			AppVersion: r.AppVersion, Updated: timePtr(r.Updated), Description: r.Description})
	}
	return out
}

func helmFilter(r *http.Request) runtimes.HelmReleaseFilter {
	q := r.URL.Query()
	return runtimes.HelmReleaseFilter{Runtime: q.Get("runtime"), Cluster: q.Get("cluster"), Namespace: q.Get("namespace")}
}

func (a *API) listHelmReleases(w http.ResponseWriter, r *http.Request) error {
	hs, err := a.runtimes.ListHelmReleases(r.Context(), principal(r), helmFilter(r))
	if err != nil {
		return err
	}
	out := client.List[client.HelmRelease]{Items: make([]client.HelmRelease, 0, len(hs))}
	for _, h := range hs {
		out.Items = append(out.Items, ToHelmRelease(h))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) getHelmRelease(w http.ResponseWriter, r *http.Request) error {
	h, err := a.runtimes.GetHelmRelease(r.Context(), principal(r), r.PathValue("namespace"), r.PathValue("name"), helmFilter(r))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToHelmRelease(h))
	return nil
}
