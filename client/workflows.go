package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/freshet-dev/freshet/api/appproxyv1"
)

// A runtime's Argo Workflows, through its app-proxy (docs/appproxy.md, "Workflows").
type (
	Workflow                  = appproxyv1.Workflow
	WorkflowDetail            = appproxyv1.WorkflowDetail
	WorkflowNode              = appproxyv1.WorkflowNode
	WorkflowParameter         = appproxyv1.WorkflowParameter
	WorkflowSubmitRequest     = appproxyv1.WorkflowSubmitRequest
	WorkflowResumeRequest     = appproxyv1.WorkflowResumeRequest
	WorkflowSuppliedParameter = appproxyv1.WorkflowSuppliedParameter
	WorkflowTemplate          = appproxyv1.WorkflowTemplate
	WorkflowTemplateParameter = appproxyv1.WorkflowTemplateParameter
)

func workflowsPath(runtime string) string { return proxyPath(runtime) + "workflows" }

func workflowPath(runtime, namespace, name string) string {
	return workflowsPath(runtime) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// SubmitWorkflow submits a Workflow (a manifest, or from a template) and returns it as created.
func (c *Client) SubmitWorkflow(ctx context.Context, runtime string, req WorkflowSubmitRequest) (WorkflowDetail, error) {
	var out WorkflowDetail
	err := c.do(ctx, http.MethodPost, workflowsPath(runtime), nil, req, &out)
	return out, err
}

// ListWorkflows lists a runtime's Workflows (of namespace, when set), newest first.
func (c *Client) ListWorkflows(ctx context.Context, runtime, namespace string) (List[Workflow], error) {
	var out List[Workflow]
	q := url.Values{}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	err := c.do(ctx, http.MethodGet, workflowsPath(runtime), q, nil, &out)
	return out, err
}

// GetWorkflow returns a Workflow with its node tree.
func (c *Client) GetWorkflow(ctx context.Context, runtime, namespace, name string) (WorkflowDetail, error) {
	var out WorkflowDetail
	err := c.do(ctx, http.MethodGet, workflowPath(runtime, namespace, name), nil, nil, &out)
	return out, err
}

// WorkflowOperation runs op (resubmit, retry, stop, terminate, suspend, resume) on a Workflow
// and returns it as it is afterwards (resubmit: the new Workflow).
func (c *Client) WorkflowOperation(ctx context.Context, runtime, namespace, name, op string) (WorkflowDetail, error) {
	var out WorkflowDetail
	err := c.do(ctx, http.MethodPost, workflowPath(runtime, namespace, name)+"/"+url.PathEscape(op), nil, struct{}{}, &out)
	return out, err
}

// ResumeWorkflow resumes a Workflow's waiting suspend nodes (req.Node's, or every one) with the
// values req supplies for their outputs, and returns it as it is afterwards.
func (c *Client) ResumeWorkflow(ctx context.Context, runtime, namespace, name string, req WorkflowResumeRequest) (WorkflowDetail, error) {
	var out WorkflowDetail
	err := c.do(ctx, http.MethodPost, workflowPath(runtime, namespace, name)+"/"+appproxyv1.WorkflowResume, nil, req, &out)
	return out, err
}

// WorkflowLogs copies a Workflow's pod logs ("NODE: line") to w: of one node when node is set,
// and with follow until the workflow has finished.
func (c *Client) WorkflowLogs(ctx context.Context, runtime, namespace, name, node string, follow bool, w io.Writer) error {
	q := url.Values{}
	if node != "" {
		q.Set("node", node)
	}
	if follow {
		q.Set("follow", "true")
	}
	path := workflowPath(runtime, namespace, name) + "/log"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain")
	h := c.http
	if follow {
		h = &http.Client{Transport: c.http.Transport} // no overall timeout: it lasts as long as the workflow
	}
	resp, err := h.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return readError(resp)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// ListWorkflowTemplates lists a runtime's WorkflowTemplates (of namespace, when set) and
// ClusterWorkflowTemplates.
func (c *Client) ListWorkflowTemplates(ctx context.Context, runtime, namespace string) (List[WorkflowTemplate], error) {
	var out List[WorkflowTemplate]
	q := url.Values{}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	err := c.do(ctx, http.MethodGet, proxyPath(runtime)+"workflow-templates", q, nil, &out)
	return out, err
}

// GetWorkflowTemplate returns a WorkflowTemplate, or with cluster a ClusterWorkflowTemplate.
func (c *Client) GetWorkflowTemplate(ctx context.Context, runtime, namespace, name string, cluster bool) (WorkflowTemplate, error) {
	var out WorkflowTemplate
	path := proxyPath(runtime) + "workflow-templates/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
	if cluster {
		path = proxyPath(runtime) + "cluster-workflow-templates/" + url.PathEscape(name)
	}
	err := c.do(ctx, http.MethodGet, path, nil, nil, &out)
	return out, err
}

// ArchivedWorkflow is a finished Argo Workflow a runtime reported, as the control plane keeps
// it after the runtime deleted it (GET /api/v1/archived-workflows).
type ArchivedWorkflow struct {
	ID        string `json:"id"`
	Runtime   string `json:"runtime"`
	RuntimeID string `json:"runtimeId"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Phase is Succeeded, Failed or Error.
	Phase   string `json:"phase"`
	Message string `json:"message"`
	// Template is the WorkflowTemplate it ran ("cluster/NAME" for a ClusterWorkflowTemplate).
	Template string `json:"template"`
	// Trigger is submit, resubmit, cron, sensor or cluster; TriggeredBy who or what.
	Trigger         string     `json:"trigger"`
	TriggeredBy     string     `json:"triggeredBy"`
	Progress        string     `json:"progress"`
	NodeCount       int        `json:"nodeCount"`
	StartedAt       *time.Time `json:"startedAt"`
	FinishedAt      time.Time  `json:"finishedAt"`
	DurationSeconds float64    `json:"durationSeconds"`
	ArchivedAt      time.Time  `json:"archivedAt"`
	// Nodes are answered by GetArchivedWorkflow only.
	Nodes []ArchivedWorkflowNode `json:"nodes,omitempty"`
}

// ArchivedWorkflowNode is one node of an archived workflow.
type ArchivedWorkflowNode struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	DisplayName  string     `json:"displayName"`
	Type         string     `json:"type"`
	TemplateName string     `json:"templateName"`
	Phase        string     `json:"phase"`
	Message      string     `json:"message"`
	StartedAt    *time.Time `json:"startedAt"`
	FinishedAt   *time.Time `json:"finishedAt"`
	Children     []string   `json:"children"`
}

// ArchiveFilter narrows ListArchivedWorkflows; empty fields match anything.
type ArchiveFilter struct {
	Runtime, Namespace, Name, Phase string
	ListOptions
}

// ListArchivedWorkflows lists the finished workflows the account's runtimes reported, newest
// first, without their nodes.
func (c *Client) ListArchivedWorkflows(ctx context.Context, f ArchiveFilter) (List[ArchivedWorkflow], error) {
	q := listQuery(f.ListOptions)
	for k, v := range map[string]string{"runtime": f.Runtime, "namespace": f.Namespace, "name": f.Name, "phase": f.Phase} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out List[ArchivedWorkflow]
	err := c.do(ctx, http.MethodGet, "/api/v1/archived-workflows", q, nil, &out)
	return out, err
}

// GetArchivedWorkflow returns an archived workflow (by archive ID or Workflow UID) with its
// nodes.
func (c *Client) GetArchivedWorkflow(ctx context.Context, idOrUID string) (ArchivedWorkflow, error) {
	var out ArchivedWorkflow
	err := c.do(ctx, http.MethodGet, "/api/v1/archived-workflows/"+url.PathEscape(idOrUID), nil, nil, &out)
	return out, err
}

// WorkflowRunDay is one UTC day of WorkflowRunStats: the workflows that finished that day by
// phase.
type WorkflowRunDay struct {
	Date      string `json:"date"` // YYYY-MM-DD
	Succeeded int64  `json:"succeeded"`
	Failed    int64  `json:"failed"`
	Error     int64  `json:"error"`
}

// WorkflowRunStats is GET /api/v1/archived-workflows/stats: the Delivery Pipelines runs (Argo
// Workflows) the account's runtimes reported finished, per day over a window (every day
// present, oldest first), from the workflow archive.
type WorkflowRunStats struct {
	Since time.Time        `json:"since"`
	Until time.Time        `json:"until"`
	Days  []WorkflowRunDay `json:"days"`
}

// WorkflowRunStats returns the Delivery Pipelines runs of the last days days (0: the server's
// default, 14) per day and phase.
func (c *Client) WorkflowRunStats(ctx context.Context, days int) (WorkflowRunStats, error) {
	q := url.Values{}
	if days > 0 {
		q.Set("days", strconv.Itoa(days))
	}
	var out WorkflowRunStats
	err := c.do(ctx, http.MethodGet, "/api/v1/archived-workflows/stats", q, nil, &out)
	return out, err
}

// A runtime's Argo CronWorkflows, through its app-proxy (docs/appproxy.md, "Cron workflows").
type (
	CronWorkflow              = appproxyv1.CronWorkflow
	CronWorkflowCondition     = appproxyv1.CronWorkflowCondition
	CronWorkflowCreateRequest = appproxyv1.CronWorkflowCreateRequest
)

func cronWorkflowsPath(runtime string) string { return proxyPath(runtime) + "cron-workflows" }

func cronWorkflowPath(runtime, namespace, name string) string {
	return cronWorkflowsPath(runtime) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// ListCronWorkflows lists a runtime's CronWorkflows (of namespace, when set).
func (c *Client) ListCronWorkflows(ctx context.Context, runtime, namespace string) (List[CronWorkflow], error) {
	var out List[CronWorkflow]
	q := url.Values{}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	err := c.do(ctx, http.MethodGet, cronWorkflowsPath(runtime), q, nil, &out)
	return out, err
}

// GetCronWorkflow returns a CronWorkflow.
func (c *Client) GetCronWorkflow(ctx context.Context, runtime, namespace, name string) (CronWorkflow, error) {
	var out CronWorkflow
	err := c.do(ctx, http.MethodGet, cronWorkflowPath(runtime, namespace, name), nil, nil, &out)
	return out, err
}

// CreateCronWorkflow creates a CronWorkflow from its manifest and returns it as created.
func (c *Client) CreateCronWorkflow(ctx context.Context, runtime string, req CronWorkflowCreateRequest) (CronWorkflow, error) {
	var out CronWorkflow
	err := c.do(ctx, http.MethodPost, cronWorkflowsPath(runtime), nil, req, &out)
	return out, err
}

// LintCronWorkflow checks a CronWorkflow manifest as a create would, creating nothing, and
// returns it as it would be created.
func (c *Client) LintCronWorkflow(ctx context.Context, runtime string, req CronWorkflowCreateRequest) (CronWorkflow, error) {
	var out CronWorkflow
	err := c.do(ctx, http.MethodPost, cronWorkflowsPath(runtime)+"/lint", nil, req, &out)
	return out, err
}

// UpdateCronWorkflow replaces the spec of CronWorkflow namespace/name with the manifest's
// (`argo cron update`), checked as a create is, and returns it as updated; its status is kept.
func (c *Client) UpdateCronWorkflow(ctx context.Context, runtime, namespace, name string, req CronWorkflowCreateRequest) (CronWorkflow, error) {
	var out CronWorkflow
	err := c.do(ctx, http.MethodPut, cronWorkflowPath(runtime, namespace, name), nil, req, &out)
	return out, err
}

// DeleteCronWorkflow deletes a CronWorkflow and its Workflows.
func (c *Client) DeleteCronWorkflow(ctx context.Context, runtime, namespace, name string) error {
	return c.do(ctx, http.MethodDelete, cronWorkflowPath(runtime, namespace, name), nil, nil, nil)
}

// CronWorkflowOperation runs op (suspend, resume) on a CronWorkflow and returns it as it is
// afterwards.
func (c *Client) CronWorkflowOperation(ctx context.Context, runtime, namespace, name, op string) (CronWorkflow, error) {
	var out CronWorkflow
	err := c.do(ctx, http.MethodPost, cronWorkflowPath(runtime, namespace, name)+"/"+url.PathEscape(op), nil, struct{}{}, &out)
	return out, err
}
