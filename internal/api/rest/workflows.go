package rest

import (
	"net/http"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/runtimes"
)

// ToArchivedWorkflow converts an archived workflow to its API form.
func ToArchivedWorkflow(w runtimes.ArchivedWorkflow) client.ArchivedWorkflow {
	out := client.ArchivedWorkflow{ID: w.ID, Runtime: w.Runtime, RuntimeID: w.RuntimeID, Namespace: w.Namespace, Name: w.Name, UID: w.UID,
		Phase: w.Phase, Message: w.Message, Template: w.Template, Trigger: w.Trigger, TriggeredBy: w.TriggeredBy, Progress: w.Progress,
		NodeCount: w.NodeCount, StartedAt: timePtr(w.StartedAt), FinishedAt: w.FinishedAt, DurationSeconds: w.Duration().Seconds(),
		ArchivedAt: w.ArchivedAt}
	for _, n := range w.Nodes {
		out.Nodes = append(out.Nodes, client.ArchivedWorkflowNode{ID: n.ID, Name: n.Name, DisplayName: n.DisplayName, Type: n.Type,
			TemplateName: n.TemplateName, Phase: n.Phase, Message: n.Message, StartedAt: timePtr(n.StartedAt), FinishedAt: timePtr(n.FinishedAt),
			Children: append([]string{}, n.Children...)})
	}
	return out
}

func (a *API) listArchivedWorkflows(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	ws, err := a.runtimes.ListArchivedWorkflows(r.Context(), principal(r),
		runtimes.ArchiveFilter{Runtime: q.Get("runtime"), Namespace: q.Get("namespace"), Name: q.Get("name"), Phase: q.Get("phase")}, page)
	if err != nil {
		return err
	}
	out := client.List[client.ArchivedWorkflow]{Items: make([]client.ArchivedWorkflow, 0, len(ws))}
	for _, x := range ws {
		out.Items = append(out.Items, ToArchivedWorkflow(x))
	}
	if len(ws) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(ws), ws[len(ws)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// workflowRunStats is GET /api/v1/archived-workflows/stats?days=14.
func (a *API) workflowRunStats(w http.ResponseWriter, r *http.Request) error {
	days, err := runtimes.ParseWorkflowStatsDays(r.URL.Query().Get("days"))
	if err != nil {
		return err
	}
	st, err := a.runtimes.WorkflowRunStats(r.Context(), principal(r), days)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToWorkflowRunStats(st))
	return nil
}

// ToWorkflowRunStats is the API's form of st.
func ToWorkflowRunStats(st runtimes.WorkflowRunStats) client.WorkflowRunStats {
	out := client.WorkflowRunStats{Since: st.Since, Until: st.Until, Days: make([]client.WorkflowRunDay, len(st.Days))}
	for i, d := range st.Days {
		out.Days[i] = client.WorkflowRunDay{Date: d.Day.Format(time.DateOnly), Succeeded: d.Succeeded, Failed: d.Failed, Error: d.Errored}
	}
	return out
}

func (a *API) getArchivedWorkflow(w http.ResponseWriter, r *http.Request) error {
	x, err := a.runtimes.GetArchivedWorkflow(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToArchivedWorkflow(x))
	return nil
}
