package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// gqlWorkflow is a Workflow of the GraphQL schema; detail is read when asked for.
type gqlWorkflow struct {
	h *Host
	w appproxyv1.Workflow
}

func (g *gqlWorkflow) Name() string      { return g.w.Name }
func (g *gqlWorkflow) Namespace() string { return g.w.Namespace }
func (g *gqlWorkflow) Phase() string     { return g.w.Phase }
func (g *gqlWorkflow) Message() string   { return g.w.Message }
func (g *gqlWorkflow) Progress() string  { return g.w.Progress }
func (g *gqlWorkflow) StartedAt() *string {
	return rfc3339(g.w.StartedAt)
}
func (g *gqlWorkflow) FinishedAt() *string {
	return rfc3339(g.w.FinishedAt)
}

func rfc3339(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

func (g *gqlWorkflow) Detail(ctx context.Context) (JSON, error) {
	wc, err := g.h.workflowsCtl()
	if err != nil {
		return JSON{}, err
	}
	d, err := wc.Get(ctx, g.w.Namespace, g.w.Name)
	return JSON{d}, err
}

func (q *gqlRoot) Workflows(ctx context.Context, args struct{ Namespace *string }) ([]*gqlWorkflow, error) {
	wc, err := q.h.workflowsCtl()
	if err != nil {
		return nil, err
	}
	l, err := wc.List(ctx, derefS(args.Namespace))
	if err != nil {
		return nil, err
	}
	out := make([]*gqlWorkflow, 0, len(l))
	for _, w := range l {
		out = append(out, &gqlWorkflow{h: q.h, w: w})
	}
	return out, nil
}

func (q *gqlRoot) Workflow(ctx context.Context, args struct{ Namespace, Name string }) (*gqlWorkflow, error) {
	wc, err := q.h.workflowsCtl()
	if err != nil {
		return nil, err
	}
	d, err := wc.Get(ctx, args.Namespace, args.Name)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &gqlWorkflow{h: q.h, w: d.Workflow}, nil
}

func (q *gqlRoot) WorkflowTemplates(ctx context.Context, args struct{ Namespace *string }) ([]JSON, error) {
	wc, err := q.h.workflowsCtl()
	if err != nil {
		return nil, err
	}
	l, err := wc.ListTemplates(ctx, derefS(args.Namespace))
	return jsonList(l), err
}

func (q *gqlRoot) SubmitWorkflow(ctx context.Context, args struct {
	Namespace, Manifest, From, Entrypoint *string
	Parameters                            *[]string
}) (JSON, error) {
	req := appproxyv1.WorkflowSubmitRequest{Namespace: derefS(args.Namespace), From: derefS(args.From), Entrypoint: derefS(args.Entrypoint)}
	if args.Parameters != nil {
		req.Parameters = *args.Parameters
	}
	if m := derefS(args.Manifest); m != "" {
		j, err := manifestJSON(m)
		if err != nil {
			return JSON{}, err
		}
		req.Workflow = j
	}
	d, err := q.h.SubmitWorkflow(ctx, callerFrom(ctx), req)
	if err != nil {
		return JSON{}, err
	}
	return JSON{d}, nil
}

type workflowRef struct{ Namespace, Name string }

func (q *gqlRoot) workflowOp(ctx context.Context, ref workflowRef, op string) (JSON, error) {
	d, err := q.h.WorkflowOp(ctx, callerFrom(ctx), ref.Namespace, ref.Name, op)
	if err != nil {
		return JSON{}, err
	}
	return JSON{d}, nil
}

func (q *gqlRoot) ResubmitWorkflow(ctx context.Context, args workflowRef) (JSON, error) {
	return q.workflowOp(ctx, args, appproxyv1.WorkflowResubmit)
}

func (q *gqlRoot) RetryWorkflow(ctx context.Context, args workflowRef) (JSON, error) {
	return q.workflowOp(ctx, args, appproxyv1.WorkflowRetry)
}

func (q *gqlRoot) StopWorkflow(ctx context.Context, args workflowRef) (JSON, error) {
	return q.workflowOp(ctx, args, appproxyv1.WorkflowStop)
}

func (q *gqlRoot) TerminateWorkflow(ctx context.Context, args workflowRef) (JSON, error) {
	return q.workflowOp(ctx, args, appproxyv1.WorkflowTerminate)
}

func (q *gqlRoot) SuspendWorkflow(ctx context.Context, args workflowRef) (JSON, error) {
	return q.workflowOp(ctx, args, appproxyv1.WorkflowSuspend)
}

// ResumeWorkflow resumes as POST workflows/{namespace}/{name}/resume does: node, parameters
// (an object of names to string values, the REST body's) and message are optional.
func (q *gqlRoot) ResumeWorkflow(ctx context.Context, args struct {
	Namespace, Name string
	Node            *string
	Parameters      *JSON
	Message         *string
}) (JSON, error) {
	req := appproxyv1.WorkflowResumeRequest{Node: derefS(args.Node), Message: derefS(args.Message)}
	if args.Parameters != nil && args.Parameters.V != nil {
		p, err := resumeParameters(args.Parameters.V)
		if err != nil {
			return JSON{}, err
		}
		req.Parameters = p
	}
	d, err := q.h.ResumeWorkflow(ctx, callerFrom(ctx), args.Namespace, args.Name, req)
	if err != nil {
		return JSON{}, err
	}
	return JSON{d}, nil
}

// resumeParameters reads resumeWorkflow's parameters: an object whose values are strings.
func resumeParameters(v any) (map[string]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errdefs.Invalid("parameters", fmt.Sprint(v), `is not an object: give {"NAME": "VALUE"}`)
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, errdefs.Invalid("parameters."+k, fmt.Sprint(x), "is not a string: give the value in quotes")
		}
		out[k] = s
	}
	return out, nil
}

// manifestJSON reads a GraphQL manifest argument: YAML or JSON, at most 1 MiB.
func manifestJSON(m string) ([]byte, error) {
	if len(m) > maxBody {
		return nil, errdefs.Invalid("manifest", "", "is larger than 1 MiB")
	}
	j, err := yaml.YAMLToJSON([]byte(m))
	if err != nil {
		return nil, errdefs.Invalid("manifest", "", "is not YAML or JSON: "+err.Error())
	}
	return j, nil
}
