package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
)

// CronWorkflows is what the app-proxy's cron-workflows API needs of the runtime's workflow
// controller (internal/gitops/workflows), as `argo cron` does it.
type CronWorkflows interface {
	ListCrons(ctx context.Context, namespace string) ([]appproxyv1.CronWorkflow, error)
	GetCron(ctx context.Context, namespace, name string) (appproxyv1.CronWorkflow, error)
	CreateCron(ctx context.Context, o workflows.CronOptions) (appproxyv1.CronWorkflow, error)
	LintCron(ctx context.Context, o workflows.CronOptions) (appproxyv1.CronWorkflow, error)
	UpdateCron(ctx context.Context, namespace, name string, o workflows.CronOptions) (appproxyv1.CronWorkflow, error)
	DeleteCron(ctx context.Context, namespace, name string) error
	SuspendCron(ctx context.Context, namespace, name string, suspend bool) (appproxyv1.CronWorkflow, error)
}

var _ CronWorkflows = (*workflows.Controller)(nil)

// DecodeCronWorkflowCreate reads the body of POST cron-workflows, POST cron-workflows/lint and
// PUT cron-workflows/{namespace}/{name}: a
// CronWorkflowCreateRequest whose cronWorkflow is an object; unknown fields are refused, naming
// them.
func DecodeCronWorkflowCreate(r io.Reader) (appproxyv1.CronWorkflowCreateRequest, error) {
	var req appproxyv1.CronWorkflowCreateRequest
	if err := decodeStrict(io.LimitReader(r, maxBody), &req); err != nil {
		return req, errdefs.Invalid("body", "", "is not valid JSON for this call: "+err.Error()+` (give {"cronWorkflow": {...}, "namespace": "…"})`)
	}
	return req, checkCronManifest(req.CronWorkflow)
}

// checkCronManifest refuses a cronWorkflow that is not an object; a missing one is the
// controller's to refuse (after the runtime says whether it runs one).
func checkCronManifest(m []byte) error {
	switch {
	case len(m) == 0 || string(m) == "null":
		return nil
	case m[0] != '{':
		return errdefs.Invalid("cronWorkflow", clipBody(m), "is not an object: give the CronWorkflow manifest as JSON")
	}
	return nil
}

func clipBody(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

func cronOptions(c Caller, req appproxyv1.CronWorkflowCreateRequest) workflows.CronOptions {
	return workflows.CronOptions{Namespace: req.Namespace, Manifest: req.CronWorkflow, By: submitter(c)}
}

// CreateCronWorkflow creates a CronWorkflow for c (member or admin).
func (h *Host) CreateCronWorkflow(ctx context.Context, c Caller, req appproxyv1.CronWorkflowCreateRequest) (appproxyv1.CronWorkflow, error) {
	if err := c.mayWrite(); err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	wc, err := h.workflowsCtl()
	if err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	cw, err := wc.CreateCron(ctx, cronOptions(c, req))
	if err != nil {
		return cw, err
	}
	h.log.Info("cron workflow operation", "op", "create", "cronWorkflow", cw.Namespace+"/"+cw.Name, "user", c.Email, "account", c.Account)
	return cw, nil
}

// UpdateCronWorkflow replaces the spec of CronWorkflow namespace/name with the request's
// manifest's for c (member or admin).
func (h *Host) UpdateCronWorkflow(ctx context.Context, c Caller, namespace, name string, req appproxyv1.CronWorkflowCreateRequest) (appproxyv1.CronWorkflow, error) {
	if err := c.mayWrite(); err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	wc, err := h.workflowsCtl()
	if err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	cw, err := wc.UpdateCron(ctx, namespace, name, cronOptions(c, req))
	if err != nil {
		return cw, err
	}
	h.log.Info("cron workflow operation", "op", "update", "cronWorkflow", namespace+"/"+name, "user", c.Email, "account", c.Account)
	return cw, nil
}

// LintCronWorkflow checks a CronWorkflow as a create would, creating nothing (any role: it
// reads).
func (h *Host) LintCronWorkflow(ctx context.Context, c Caller, req appproxyv1.CronWorkflowCreateRequest) (appproxyv1.CronWorkflow, error) {
	wc, err := h.workflowsCtl()
	if err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	return wc.LintCron(ctx, cronOptions(c, req))
}

// DeleteCronWorkflow deletes a CronWorkflow (and its Workflows) for c (member or admin).
func (h *Host) DeleteCronWorkflow(ctx context.Context, c Caller, namespace, name string) error {
	if err := c.mayWrite(); err != nil {
		return err
	}
	wc, err := h.workflowsCtl()
	if err != nil {
		return err
	}
	if err := wc.DeleteCron(ctx, namespace, name); err != nil {
		return err
	}
	h.log.Info("cron workflow operation", "op", "delete", "cronWorkflow", namespace+"/"+name, "user", c.Email, "account", c.Account)
	return nil
}

// CronWorkflowOp suspends or resumes a CronWorkflow for c (member or admin) and answers it as
// it is after it.
func (h *Host) CronWorkflowOp(ctx context.Context, c Caller, namespace, name, op string) (appproxyv1.CronWorkflow, error) {
	if err := c.mayWrite(); err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	wc, err := h.workflowsCtl()
	if err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	var cw appproxyv1.CronWorkflow
	switch op {
	case appproxyv1.CronWorkflowSuspend:
		cw, err = wc.SuspendCron(ctx, namespace, name, true)
	case appproxyv1.CronWorkflowResume:
		cw, err = wc.SuspendCron(ctx, namespace, name, false)
	default:
		return cw, errdefs.Invalid("operation", op, fmt.Sprintf("is not a cron workflow operation (use one of %v)", appproxyv1.CronWorkflowOps))
	}
	if err != nil {
		return cw, err
	}
	h.log.Info("cron workflow operation", "op", op, "cronWorkflow", namespace+"/"+name, "user", c.Email, "account", c.Account)
	return cw, nil
}

// cronWorkflowRoutes serves cron-workflows/….
func (h *Host) cronWorkflowRoutes(handle func(string, func(*http.Request) (int, any, error))) {
	handle("GET "+APIPrefix+"cron-workflows", func(r *http.Request) (int, any, error) {
		wc, err := h.workflowsCtl()
		if err != nil {
			return 0, nil, err
		}
		l, err := wc.ListCrons(r.Context(), r.URL.Query().Get("namespace"))
		return http.StatusOK, items(l), err
	})
	handle("POST "+APIPrefix+"cron-workflows", func(r *http.Request) (int, any, error) {
		req, err := DecodeCronWorkflowCreate(r.Body)
		if err != nil {
			return 0, nil, err
		}
		cw, err := h.CreateCronWorkflow(r.Context(), callerOf(r), req)
		return http.StatusCreated, cw, err
	})
	handle("POST "+APIPrefix+"cron-workflows/lint", func(r *http.Request) (int, any, error) {
		req, err := DecodeCronWorkflowCreate(r.Body)
		if err != nil {
			return 0, nil, err
		}
		cw, err := h.LintCronWorkflow(r.Context(), callerOf(r), req)
		return http.StatusOK, cw, err
	})
	handle("GET "+APIPrefix+"cron-workflows/{namespace}/{name}", func(r *http.Request) (int, any, error) {
		wc, err := h.workflowsCtl()
		if err != nil {
			return 0, nil, err
		}
		cw, err := wc.GetCron(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
		return http.StatusOK, cw, err
	})
	handle("PUT "+APIPrefix+"cron-workflows/{namespace}/{name}", func(r *http.Request) (int, any, error) {
		req, err := DecodeCronWorkflowCreate(r.Body)
		if err != nil {
			return 0, nil, err
		}
		cw, err := h.UpdateCronWorkflow(r.Context(), callerOf(r), r.PathValue("namespace"), r.PathValue("name"), req)
		return http.StatusOK, cw, err
	})
	handle("DELETE "+APIPrefix+"cron-workflows/{namespace}/{name}", func(r *http.Request) (int, any, error) {
		return http.StatusNoContent, nil, h.DeleteCronWorkflow(r.Context(), callerOf(r), r.PathValue("namespace"), r.PathValue("name"))
	})
	handle("POST "+APIPrefix+"cron-workflows/{namespace}/{name}/{op}", func(r *http.Request) (int, any, error) {
		if err := decodeBody(r, &struct{}{}); err != nil {
			return 0, nil, err
		}
		cw, err := h.CronWorkflowOp(r.Context(), callerOf(r), r.PathValue("namespace"), r.PathValue("name"), r.PathValue("op"))
		return http.StatusOK, cw, err
	})
}

// gqlCronWorkflows is the GraphQL side: the same calls, manifests as YAML or JSON text.
func (q *gqlRoot) CronWorkflows(ctx context.Context, args struct{ Namespace *string }) ([]JSON, error) {
	wc, err := q.h.workflowsCtl()
	if err != nil {
		return nil, err
	}
	l, err := wc.ListCrons(ctx, derefS(args.Namespace))
	return jsonList(l), err
}

func (q *gqlRoot) CronWorkflow(ctx context.Context, args struct{ Namespace, Name string }) (*JSON, error) {
	wc, err := q.h.workflowsCtl()
	if err != nil {
		return nil, err
	}
	cw, err := wc.GetCron(ctx, args.Namespace, args.Name)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &JSON{cw}, nil
}

type cronManifestArgs struct {
	Namespace *string
	Manifest  string
}

func (a cronManifestArgs) request() (appproxyv1.CronWorkflowCreateRequest, error) {
	req := appproxyv1.CronWorkflowCreateRequest{Namespace: derefS(a.Namespace)}
	j, err := manifestJSON(a.Manifest)
	if err != nil {
		return req, err
	}
	req.CronWorkflow = j
	return req, checkCronManifest(j)
}

func (q *gqlRoot) CreateCronWorkflow(ctx context.Context, args cronManifestArgs) (JSON, error) {
	req, err := args.request()
	if err != nil {
		return JSON{}, err
	}
	cw, err := q.h.CreateCronWorkflow(ctx, callerFrom(ctx), req)
	if err != nil {
		return JSON{}, err
	}
	return JSON{cw}, nil
}

func (q *gqlRoot) LintCronWorkflow(ctx context.Context, args cronManifestArgs) (JSON, error) {
	req, err := args.request()
	if err != nil {
		return JSON{}, err
	}
	cw, err := q.h.LintCronWorkflow(ctx, callerFrom(ctx), req)
	if err != nil {
		return JSON{}, err
	}
	return JSON{cw}, nil
}

func (q *gqlRoot) UpdateCronWorkflow(ctx context.Context, args struct {
	Namespace, Name string
	Manifest        string
}) (JSON, error) {
	req, err := cronManifestArgs{Manifest: args.Manifest}.request()
	if err != nil {
		return JSON{}, err
	}
	cw, err := q.h.UpdateCronWorkflow(ctx, callerFrom(ctx), args.Namespace, args.Name, req)
	if err != nil {
		return JSON{}, err
	}
	return JSON{cw}, nil
}

func (q *gqlRoot) DeleteCronWorkflow(ctx context.Context, args workflowRef) (bool, error) {
	if err := q.h.DeleteCronWorkflow(ctx, callerFrom(ctx), args.Namespace, args.Name); err != nil {
		return false, err
	}
	return true, nil
}

func (q *gqlRoot) SuspendCronWorkflow(ctx context.Context, args workflowRef) (JSON, error) {
	cw, err := q.h.CronWorkflowOp(ctx, callerFrom(ctx), args.Namespace, args.Name, appproxyv1.CronWorkflowSuspend)
	if err != nil {
		return JSON{}, err
	}
	return JSON{cw}, nil
}

func (q *gqlRoot) ResumeCronWorkflow(ctx context.Context, args workflowRef) (JSON, error) {
	cw, err := q.h.CronWorkflowOp(ctx, callerFrom(ctx), args.Namespace, args.Name, appproxyv1.CronWorkflowResume)
	if err != nil {
		return JSON{}, err
	}
	return JSON{cw}, nil
}
