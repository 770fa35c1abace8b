package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
)

// Workflows is what the app-proxy's workflows API needs of the runtime's Argo Workflows
// controller (internal/gitops/workflows). Errors wrap errdefs' sentinels: not found, conflict
// (nothing to do in the Workflow's state), invalid (a manifest that does not validate, the field
// named).
type Workflows interface {
	Submit(ctx context.Context, o workflows.SubmitOptions) (appproxyv1.WorkflowDetail, error)
	List(ctx context.Context, namespace string) ([]appproxyv1.Workflow, error)
	Get(ctx context.Context, namespace, name string) (appproxyv1.WorkflowDetail, error)
	Logs(ctx context.Context, namespace, name string, o workflows.LogOptions, w io.Writer) error
	Resubmit(ctx context.Context, namespace, name string, by workflows.Submitter) (appproxyv1.WorkflowDetail, error)
	Retry(ctx context.Context, namespace, name string) error
	Shutdown(ctx context.Context, namespace, name, strategy string) error
	Suspend(ctx context.Context, namespace, name string) error
	Resume(ctx context.Context, namespace, name string) error
	ResumeWith(ctx context.Context, namespace, name string, o workflows.ResumeOptions) error
	ListTemplates(ctx context.Context, namespace string) ([]appproxyv1.WorkflowTemplate, error)
	Template(ctx context.Context, namespace, name string, cluster bool) (appproxyv1.WorkflowTemplate, error)
	CronWorkflows
}

var _ Workflows = (*workflows.Controller)(nil)

func (h *Host) workflowsCtl() (Workflows, error) {
	if h.opts.Workflows == nil {
		return nil, fmt.Errorf("this runtime runs no workflow controller (Delivery Pipelines run on hybrid runtimes with a cluster, not started with --no-workflows): %w", errdefs.ErrUnavailable)
	}
	return h.opts.Workflows, nil
}

func submitter(c Caller) workflows.Submitter {
	return workflows.Submitter{User: c.User, Email: c.Email}
}

// DecodeWorkflowSubmit reads the body of POST workflows: a WorkflowSubmitRequest whose workflow,
// when given, is an object; unknown fields are refused, naming them.
func DecodeWorkflowSubmit(r io.Reader) (appproxyv1.WorkflowSubmitRequest, error) {
	var req appproxyv1.WorkflowSubmitRequest
	dec := json.NewDecoder(io.LimitReader(r, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if errors.Is(err, io.EOF) {
			return req, errdefs.Invalid("body", "", "is required: {\"workflow\": {...}} or {\"from\": \"workflowtemplate/NAME\"}")
		}
		return req, errdefs.Invalid("body", "", "is not valid JSON for this call: "+err.Error())
	}
	if len(req.Workflow) > 0 && (req.Workflow[0] != '{') {
		return req, errdefs.Invalid("workflow", string(req.Workflow), "is not an object: give the Workflow manifest as JSON")
	}
	if string(req.Workflow) == "null" {
		req.Workflow = nil
	}
	return req, nil
}

// SubmitWorkflow submits a Workflow for c (member or admin).
func (h *Host) SubmitWorkflow(ctx context.Context, c Caller, req appproxyv1.WorkflowSubmitRequest) (appproxyv1.WorkflowDetail, error) {
	if err := c.mayWrite(); err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	wc, err := h.workflowsCtl()
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	d, err := wc.Submit(ctx, workflows.SubmitOptions{Namespace: req.Namespace, Manifest: req.Workflow, From: req.From, Parameters: req.Parameters,
		Entrypoint: req.Entrypoint, GenerateName: req.GenerateName, By: submitter(c)})
	if err != nil {
		return d, err
	}
	h.log.Info("workflow operation", "op", "submit", "workflow", d.Namespace+"/"+d.Name, "user", c.Email, "account", c.Account)
	return d, nil
}

// WorkflowOp runs an operation on a Workflow for c (member or admin) and answers the Workflow
// as it is after it (resubmit: the new Workflow).
func (h *Host) WorkflowOp(ctx context.Context, c Caller, namespace, name, op string) (appproxyv1.WorkflowDetail, error) {
	if err := c.mayWrite(); err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	wc, err := h.workflowsCtl()
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	switch op {
	case appproxyv1.WorkflowResubmit:
		d, err := wc.Resubmit(ctx, namespace, name, submitter(c))
		if err == nil {
			h.log.Info("workflow operation", "op", op, "workflow", namespace+"/"+name, "new", d.Name, "user", c.Email, "account", c.Account)
		}
		return d, err
	case appproxyv1.WorkflowRetry:
		err = wc.Retry(ctx, namespace, name)
	case appproxyv1.WorkflowStop:
		err = wc.Shutdown(ctx, namespace, name, "Stop")
	case appproxyv1.WorkflowTerminate:
		err = wc.Shutdown(ctx, namespace, name, "Terminate")
	case appproxyv1.WorkflowSuspend:
		err = wc.Suspend(ctx, namespace, name)
	case appproxyv1.WorkflowResume:
		return h.ResumeWorkflow(ctx, c, namespace, name, appproxyv1.WorkflowResumeRequest{})
	default:
		return appproxyv1.WorkflowDetail{}, errdefs.Invalid("operation", op, fmt.Sprintf("is not a workflow operation (use one of %v)", appproxyv1.WorkflowOps))
	}
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	h.log.Info("workflow operation", "op", op, "workflow", namespace+"/"+name, "user", c.Email, "account", c.Account)
	return wc.Get(ctx, namespace, name)
}

// ResumeWorkflow resumes a Workflow's waiting suspend nodes for c (member or admin): the one
// req names, or every one, with the values req supplies for their outputs; it answers the
// Workflow as it is after it.
func (h *Host) ResumeWorkflow(ctx context.Context, c Caller, namespace, name string, req appproxyv1.WorkflowResumeRequest) (appproxyv1.WorkflowDetail, error) {
	if err := c.mayWrite(); err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	wc, err := h.workflowsCtl()
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	if err := wc.ResumeWith(ctx, namespace, name, workflows.ResumeOptions{Node: req.Node, Parameters: req.Parameters, Message: req.Message}); err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	h.log.Info("workflow operation", "op", appproxyv1.WorkflowResume, "workflow", namespace+"/"+name, "node", req.Node,
		"parameters", slices.Sorted(maps.Keys(req.Parameters)), "user", c.Email, "account", c.Account)
	return wc.Get(ctx, namespace, name)
}

// DecodeWorkflowResume reads the optional body of POST workflows/{namespace}/{name}/resume;
// unknown fields are refused, naming them.
func DecodeWorkflowResume(r io.Reader) (appproxyv1.WorkflowResumeRequest, error) {
	var req appproxyv1.WorkflowResumeRequest
	if err := decodeStrict(io.LimitReader(r, maxBody), &req); err != nil {
		return req, errdefs.Invalid("body", "", "is not valid JSON for this call: "+err.Error()+` (give {"node": "NAME", "parameters": {"NAME": "VALUE"}, "message": "…"})`)
	}
	return req, nil
}

// workflowRoutes serves workflows/… and workflow-templates/….
func (h *Host) workflowRoutes(mux *http.ServeMux, handle func(string, func(*http.Request) (int, any, error))) {
	ctl := func() (Workflows, error) { return h.workflowsCtl() }
	handle("GET "+APIPrefix+"workflows", func(r *http.Request) (int, any, error) {
		wc, err := ctl()
		if err != nil {
			return 0, nil, err
		}
		l, err := wc.List(r.Context(), r.URL.Query().Get("namespace"))
		return http.StatusOK, items(l), err
	})
	handle("POST "+APIPrefix+"workflows", func(r *http.Request) (int, any, error) {
		req, err := DecodeWorkflowSubmit(r.Body)
		if err != nil {
			return 0, nil, err
		}
		d, err := h.SubmitWorkflow(r.Context(), callerOf(r), req)
		return http.StatusCreated, d, err
	})
	handle("GET "+APIPrefix+"workflows/{namespace}/{name}", func(r *http.Request) (int, any, error) {
		wc, err := ctl()
		if err != nil {
			return 0, nil, err
		}
		d, err := wc.Get(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
		return http.StatusOK, d, err
	})
	handle("POST "+APIPrefix+"workflows/{namespace}/{name}/{op}", func(r *http.Request) (int, any, error) {
		if r.PathValue("op") == appproxyv1.WorkflowResume {
			req, err := DecodeWorkflowResume(r.Body)
			if err != nil {
				return 0, nil, err
			}
			d, err := h.ResumeWorkflow(r.Context(), callerOf(r), r.PathValue("namespace"), r.PathValue("name"), req)
			return http.StatusOK, d, err
		}
		if err := decodeBody(r, &struct{}{}); err != nil {
			return 0, nil, err
		}
		d, err := h.WorkflowOp(r.Context(), callerOf(r), r.PathValue("namespace"), r.PathValue("name"), r.PathValue("op"))
		return http.StatusOK, d, err
	})
	mux.HandleFunc("GET "+APIPrefix+"workflows/{namespace}/{name}/log", func(w http.ResponseWriter, r *http.Request) {
		wc, err := ctl()
		if err != nil {
			writeError(w, err)
			return
		}
		o := workflows.LogOptions{Node: r.URL.Query().Get("node")}
		if v := r.URL.Query().Get("follow"); v != "" {
			if o.Follow, err = strconv.ParseBool(v); err != nil {
				writeError(w, errdefs.Invalid("follow", v, "must be true or false"))
				return
			}
		}
		// Errors before the first byte get the JSON error body; after it, the stream just ends.
		// A followed log starts at once (its first line may be long in coming), once the
		// Workflow is known to exist.
		lw := &logWriter{w: w}
		if o.Follow {
			if _, err := wc.Get(r.Context(), r.PathValue("namespace"), r.PathValue("name")); err != nil {
				writeError(w, err)
				return
			}
			lw.start()
			lw.Flush()
		}
		if err := wc.Logs(r.Context(), r.PathValue("namespace"), r.PathValue("name"), o, lw); err != nil && !lw.started {
			writeError(w, err)
			return
		}
		if !lw.started {
			lw.start()
		}
	})
	handle("GET "+APIPrefix+"workflow-templates", func(r *http.Request) (int, any, error) {
		wc, err := ctl()
		if err != nil {
			return 0, nil, err
		}
		l, err := wc.ListTemplates(r.Context(), r.URL.Query().Get("namespace"))
		return http.StatusOK, items(l), err
	})
	handle("GET "+APIPrefix+"workflow-templates/{namespace}/{name}", func(r *http.Request) (int, any, error) {
		wc, err := ctl()
		if err != nil {
			return 0, nil, err
		}
		t, err := wc.Template(r.Context(), r.PathValue("namespace"), r.PathValue("name"), false)
		return http.StatusOK, t, err
	})
	handle("GET "+APIPrefix+"cluster-workflow-templates/{name}", func(r *http.Request) (int, any, error) {
		wc, err := ctl()
		if err != nil {
			return 0, nil, err
		}
		t, err := wc.Template(r.Context(), "", r.PathValue("name"), true)
		return http.StatusOK, t, err
	})
}

// logWriter streams a log as text/plain, flushing each line; the header goes out with the
// first line.
type logWriter struct {
	w       http.ResponseWriter
	started bool
}

func (l *logWriter) start() {
	l.started = true
	l.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	l.w.Header().Set("X-Content-Type-Options", "nosniff")
	l.w.WriteHeader(http.StatusOK)
}

func (l *logWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.start()
	}
	return l.w.Write(p)
}

func (l *logWriter) Flush() {
	if f, ok := l.w.(http.Flusher); ok {
		f.Flush()
	}
}

// ReportWorkflow sends a finished Workflow to the control plane, which archives it.
func (h *Host) ReportWorkflow(rec runtimev1.WorkflowRecord) {
	if h.rep.sink == nil {
		return
	}
	h.rep.enqueue(runtimev1.AppEvent{Type: runtimev1.WorkflowFinished, At: rec.FinishedAt, Workflow: &rec})
}

// WorkflowArchived reports whether the control plane has taken the record ReportWorkflow was
// given of Workflow uid's finish at finishedAt (the workflow controller's Options.Archived): a
// ttlStrategy deletes the Workflow only then. Without a control plane there is nothing to
// wait for.
func (h *Host) WorkflowArchived(uid string, finishedAt time.Time) bool {
	if h.rep.sink == nil {
		return true
	}
	return h.rep.workflowArchived(uid, finishedAt)
}

// ReportHelmRelease sends a Helm release's change (runtimev1.HelmReleaseChanged or
// HelmReleaseDeleted) to the control plane, which keeps the runtime's releases.
func (h *Host) ReportHelmRelease(ev runtimev1.AppEvent) {
	if h.rep.sink == nil {
		return
	}
	h.rep.enqueue(ev)
}
