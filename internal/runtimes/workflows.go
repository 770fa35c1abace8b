package runtimes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/events"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// EventWorkflowFinished: a runtime's Argo Workflow finished (WorkflowFinished), published on
// freshet.<account>.gitops.workflow-finished once per finish.
const EventWorkflowFinished = "workflow-finished"

// WorkflowFinished is the bus event of a finished workflow: the archive row without its nodes.
type WorkflowFinished struct {
	AccountID   string    `json:"accountId"`
	RuntimeID   string    `json:"runtimeId"`
	Runtime     string    `json:"runtime"`
	ArchiveID   string    `json:"archiveId"`
	Namespace   string    `json:"namespace"`
	Name        string    `json:"name"`
	UID         string    `json:"uid"`
	Phase       string    `json:"phase"`
	Message     string    `json:"message,omitempty"`
	Template    string    `json:"template,omitempty"`
	Trigger     string    `json:"trigger"`
	TriggeredBy string    `json:"triggeredBy,omitempty"`
	Nodes       int       `json:"nodes"`
	StartedAt   time.Time `json:"startedAt"`
	FinishedAt  time.Time `json:"finishedAt"`
}

// ArchivedWorkflow is a finished workflow as the control plane keeps it.
type ArchivedWorkflow struct {
	ID          string
	RuntimeID   string
	Runtime     string
	Namespace   string
	Name        string
	UID         string
	Phase       string
	Message     string
	Template    string
	Trigger     string
	TriggeredBy string
	NodeCount   int
	StartedAt   time.Time
	FinishedAt  time.Time
	ArchivedAt  time.Time
	Progress    string
	// Nodes are read by GetArchivedWorkflow only.
	Nodes []runtimev1.WorkflowNodeRecord
}

// Duration is how long it ran.
func (w ArchivedWorkflow) Duration() time.Duration {
	if w.StartedAt.IsZero() || w.FinishedAt.Before(w.StartedAt) {
		return 0
	}
	return w.FinishedAt.Sub(w.StartedAt)
}

var (
	workflowPhases   = []string{"Succeeded", "Failed", "Error"}
	workflowTriggers = []string{runtimev1.WorkflowTriggerSubmit, runtimev1.WorkflowTriggerResubmit, runtimev1.WorkflowTriggerCron,
		runtimev1.WorkflowTriggerSensor, runtimev1.WorkflowTriggerCluster}
)

// Bounds of a reported workflow's strings.
const (
	maxWorkflowText  = 4096 // message
	maxWorkflowShort = 256  // template, triggeredBy, progress, a node's names and type
	maxNodeMessage   = 1024
)

// archiveRow validates a reported finished workflow and makes its row (without account,
// runtime and archive time).
func archiveRow(field string, w *runtimev1.WorkflowRecord) (store.ArchivedWorkflow, error) {
	switch {
	case w == nil:
		return store.ArchivedWorkflow{}, errdefs.Invalid(field, "", "is required for "+runtimev1.WorkflowFinished+": the finished workflow")
	case len(validation.IsDNS1123Label(w.Namespace)) > 0:
		return store.ArchivedWorkflow{}, errdefs.Invalid(field+".namespace", w.Namespace, "is not a namespace name (a DNS-1123 label)")
	case len(validation.IsDNS1123Subdomain(w.Name)) > 0:
		return store.ArchivedWorkflow{}, errdefs.Invalid(field+".name", w.Name, "is not a Workflow name (a DNS-1123 subdomain)")
	case w.UID == "" || len(w.UID) > 64 || hasSpaceOrControl(w.UID):
		return store.ArchivedWorkflow{}, errdefs.Invalid(field+".uid", w.UID, "is not a Kubernetes UID")
	case !slices.Contains(workflowPhases, w.Phase):
		return store.ArchivedWorkflow{}, errdefs.Invalid(field+".phase", w.Phase, "is not a finished workflow's phase: "+strings.Join(workflowPhases, ", "))
	case !slices.Contains(workflowTriggers, w.Trigger):
		return store.ArchivedWorkflow{}, errdefs.Invalid(field+".trigger", w.Trigger, "is not a trigger: "+strings.Join(workflowTriggers, ", "))
	case w.FinishedAt.IsZero():
		return store.ArchivedWorkflow{}, errdefs.Invalid(field+".finishedAt", "", "is required: when the workflow finished")
	case len(w.Message) > maxWorkflowText:
		return store.ArchivedWorkflow{}, errdefs.Invalid(field+".message", fmt.Sprintf("%d bytes", len(w.Message)), fmt.Sprintf("is too long: at most %d bytes", maxWorkflowText))
	case len(w.Template) > maxWorkflowShort || len(w.TriggeredBy) > maxWorkflowShort || len(w.Progress) > maxWorkflowShort ||
		hasControl(w.Template) || hasControl(w.TriggeredBy) || hasControl(w.Progress):
		return store.ArchivedWorkflow{}, errdefs.Invalid(field+".template", w.Template+" "+w.TriggeredBy, fmt.Sprintf("template, triggeredBy and progress are at most %d bytes without control characters", maxWorkflowShort))
	case len(w.Nodes) > runtimev1.MaxWorkflowNodes:
		return store.ArchivedWorkflow{}, errdefs.Invalid(field+".nodes", fmt.Sprintf("%d nodes", len(w.Nodes)), fmt.Sprintf("are too many: at most %d", runtimev1.MaxWorkflowNodes))
	}
	for i, n := range w.Nodes {
		nf := fmt.Sprintf("%s.nodes[%d]", field, i)
		switch {
		case n.ID == "" || len(n.ID) > maxWorkflowShort || len(n.Name) > maxWorkflowShort || len(n.DisplayName) > maxWorkflowShort ||
			len(n.Type) > 64 || len(n.Phase) > 64 || len(n.TemplateName) > maxWorkflowShort:
			return store.ArchivedWorkflow{}, errdefs.Invalid(nf+".id", n.ID, fmt.Sprintf("a node has an ID, and its names are at most %d bytes", maxWorkflowShort))
		case len(n.Message) > maxNodeMessage:
			return store.ArchivedWorkflow{}, errdefs.Invalid(nf+".message", fmt.Sprintf("%d bytes", len(n.Message)), fmt.Sprintf("is too long: at most %d bytes", maxNodeMessage))
		case len(n.Children) > runtimev1.MaxWorkflowNodes:
			return store.ArchivedWorkflow{}, errdefs.Invalid(nf+".children", fmt.Sprintf("%d children", len(n.Children)), "are more than a workflow's nodes")
		}
	}
	detail, err := json.Marshal(w)
	if err != nil {
		return store.ArchivedWorkflow{}, errdefs.Invalid(field, w.Name, "cannot be encoded: "+err.Error())
	}
	return store.ArchivedWorkflow{Namespace: w.Namespace, Name: w.Name, UID: w.UID, Phase: w.Phase, Message: noNUL(w.Message), Template: noNUL(w.Template),
		Trigger: w.Trigger, TriggeredBy: noNUL(w.TriggeredBy), NodeCount: len(w.Nodes), StartedAt: w.StartedAt, FinishedAt: w.FinishedAt,
		Detail: string(detail)}, nil
}

// queueWorkflowFinished writes a finished workflow's bus event to the outbox, in the report's
// transaction. Its key (runtime, UID, finish time, phase) makes a re-sent report publish nothing twice.
func queueWorkflowFinished(ctx context.Context, tx *store.Tx, rt Runtime, row store.ArchivedWorkflow, now time.Time) error {
	ev := WorkflowFinished{AccountID: rt.AccountID, RuntimeID: rt.ID, Runtime: rt.Name, ArchiveID: row.ID, Namespace: row.Namespace, Name: row.Name,
		UID: row.UID, Phase: row.Phase, Message: row.Message, Template: row.Template, Trigger: row.Trigger, TriggeredBy: row.TriggeredBy,
		Nodes: row.NodeCount, StartedAt: row.StartedAt, FinishedAt: row.FinishedAt}
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return tx.InsertOutbox(ctx, store.OutboxMessage{
		AccountID: rt.AccountID,
		Subject:   events.DomainSubject(rt.AccountID, EventDomain, EventWorkflowFinished),
		Key:       fmt.Sprintf("%s-%s/%s/%s/%d/%s", EventDomain, EventWorkflowFinished, rt.ID, row.UID, row.FinishedAt.UnixMicro(), row.Phase),
		Payload:   string(payload),
		CreatedAt: now,
	})
}

func workflowResource(runtime, owner, namespace, name string) rbac.Resource {
	return rbac.Resource{Kind: rbac.KindWorkflows, Name: runtime + "/" + namespace + "/" + name,
		Attrs: rbac.Attributes{Runtime: runtime, Namespace: namespace, Owner: owner}}
}

// ArchiveFilter narrows ListArchivedWorkflows: a runtime (name or ID), namespace, workflow
// name and phase; empty matches anything.
type ArchiveFilter struct {
	Runtime, Namespace, Name, Phase string
}

func archivedFromRow(r store.ArchivedWorkflow, runtime string) (ArchivedWorkflow, error) {
	w := ArchivedWorkflow{ID: r.ID, RuntimeID: r.RuntimeID, Runtime: runtime, Namespace: r.Namespace, Name: r.Name, UID: r.UID, Phase: r.Phase,
		Message: r.Message, Template: r.Template, Trigger: r.Trigger, TriggeredBy: r.TriggeredBy, NodeCount: r.NodeCount,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, ArchivedAt: r.ArchivedAt}
	if r.Detail != "" {
		var rec runtimev1.WorkflowRecord
		if err := json.Unmarshal([]byte(r.Detail), &rec); err != nil {
			return w, fmt.Errorf("archived workflow %s: %w", r.ID, err)
		}
		w.Nodes, w.Progress = rec.Nodes, rec.Progress
	}
	return w, nil
}

// ListArchivedWorkflows returns the finished workflows p's account's runtimes reported, newest
// first, without their nodes; those rules keep p from reading are left out.
func (s *Service) ListArchivedWorkflows(ctx context.Context, p rbac.Principal, f ArchiveFilter, page paging.Page) ([]ArchivedWorkflow, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return nil, err
	}
	names, owners := map[string]string{}, map[string]string{}
	rts, err := s.db.ListRuntimes(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	for _, rt := range rts {
		names[rt.ID], owners[rt.ID] = rt.Name, rt.OwnerTeamID
	}
	sf := store.ArchivedWorkflowFilter{Namespace: f.Namespace, Name: f.Name, Phase: f.Phase}
	if f.Runtime != "" {
		rt, err := s.db.GetRuntime(ctx, p.AccountID, f.Runtime)
		if err != nil {
			return nil, err
		}
		sf.RuntimeID = rt.ID
	}
	if f.Phase != "" && !slices.Contains(workflowPhases, f.Phase) {
		return nil, errdefs.Invalid("phase", f.Phase, "is not a finished workflow's phase: "+strings.Join(workflowPhases, ", "))
	}
	rows, err := s.db.ListArchivedWorkflows(ctx, p.AccountID, sf, page)
	if err != nil {
		return nil, err
	}
	out := []ArchivedWorkflow{}
	for _, r := range rows {
		if !rbac.Visible(p, workflowResource(names[r.RuntimeID], owners[r.RuntimeID], r.Namespace, r.Name)) {
			continue
		}
		w, err := archivedFromRow(r, names[r.RuntimeID])
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// GetArchivedWorkflow returns one archived workflow, by its archive ID or its Workflow's UID,
// with its nodes.
func (s *Service) GetArchivedWorkflow(ctx context.Context, p rbac.Principal, idOrUID string) (ArchivedWorkflow, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return ArchivedWorkflow{}, err
	}
	r, err := s.db.GetArchivedWorkflow(ctx, p.AccountID, idOrUID)
	if err != nil {
		return ArchivedWorkflow{}, err
	}
	rt, err := s.db.GetRuntime(ctx, p.AccountID, r.RuntimeID)
	if err != nil {
		return ArchivedWorkflow{}, err
	}
	if err := rbac.Authorize(p, rbac.ActRead, workflowResource(rt.Name, rt.OwnerTeamID, r.Namespace, r.Name)); err != nil {
		return ArchivedWorkflow{}, err
	}
	return archivedFromRow(r, rt.Name)
}
