package app

import (
	"fmt"
	"reflect"
	"strings"
)

// Operation is the top-level `operation` field of an Application resource: what `argocd app
// sync` (and any tool writing the resource) asks the controller to do once. The field names
// and JSON shape are Argo CD's.
type Operation struct {
	Sync        *SyncOperation     `json:"sync,omitempty"`
	InitiatedBy OperationInitiator `json:"initiatedBy,omitzero"`
	Info        []Info             `json:"info,omitempty"`

	// Warnings are the fields accepted and ignored.
	Warnings []string `json:"-"`
}

// SyncOperation is a requested sync.
type SyncOperation struct {
	// Revision to sync to ("" for the app's target revision); Revisions is the same for a
	// multi-source app, one per entry of spec.sources.
	Revision     string                  `json:"revision,omitempty"`
	Revisions    []string                `json:"revisions,omitempty"`
	Prune        bool                    `json:"prune,omitempty"`
	DryRun       bool                    `json:"dryRun,omitempty"`
	SyncStrategy *SyncStrategy           `json:"syncStrategy,omitempty"`
	Resources    []SyncOperationResource `json:"resources,omitempty"`
	SyncOptions  SyncOptions             `json:"syncOptions,omitempty"`
}

// SyncStrategy is how a requested sync applies: apply (objects only, no hooks) or hook (the
// default: objects, waves and hooks).
type SyncStrategy struct {
	Apply *SyncStrategyApply `json:"apply,omitempty"`
	Hook  *SyncStrategyApply `json:"hook,omitempty"`
}

// SyncStrategyApply is the options of a strategy.
type SyncStrategyApply struct {
	Force bool `json:"force,omitempty"`
}

// SyncOperationResource selects one resource of a selective sync.
type SyncOperationResource struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// OperationInitiator is who asked: a user's name or the automation.
type OperationInitiator struct {
	Username  string `json:"username,omitempty"`
	Automated bool   `json:"automated,omitempty"`
}

// operationDoc is what DecodeOperation reads: a document whose `operation` field is the
// request (an Application resource reduced to that field).
type operationDoc struct {
	Operation *Operation `json:"operation"`
}

func init() {
	recognised[reflect.TypeFor[Operation]()] = map[string]recognition{
		"retry": {false, "a retry strategy per operation is ignored: the sync runs once (the app's spec.syncPolicy.retry applies to automated syncs)"},
	}
	recognised[reflect.TypeFor[SyncOperation]()] = map[string]recognition{
		"source":                {true, "syncing to a source other than the app's is not supported; change spec.source"},
		"sources":               {true, "syncing to sources other than the app's is not supported; change spec.sources"},
		"manifests":             {true, "syncing local manifests (argocd app sync --local) is not supported; commit them"},
		"autoHealAttemptsCount": {false, "is the controller's own counter; ignored"},
		"selfHealAttemptsCount": {false, "is the controller's own counter; ignored"},
	}
}

// DecodeOperation decodes and validates a document holding an Application's `operation`
// field (`{"operation": {...}}`, JSON or YAML). Every problem is reported, each naming the
// field path (operation.sync.syncOptions[0], ...), the value and what is valid.
func DecodeOperation(data []byte) (*Operation, error) {
	var doc operationDoc
	d, err := parse(data, "operation", &doc)
	if err != nil {
		return nil, err
	}
	fail := func(p, value, reason string) { d.fail(p, d.line(p), value, reason) }
	op := doc.Operation
	if op == nil {
		fail("operation", "", "is required")
		return nil, d.errs
	}
	s := op.Sync
	if s == nil {
		fail("operation.sync", "", "is required: sync is the only operation Argo CD defines")
	} else {
		if s.Revision != "" && len(s.Revisions) > 0 {
			fail("operation.sync.revisions", "", "cannot be used together with operation.sync.revision; give revisions for a multi-source app, revision otherwise")
		}
		for i, r := range s.Revisions {
			if strings.Contains(r, ",") {
				fail(fmt.Sprintf("operation.sync.revisions[%d]", i), r, "want one revision (a branch, tag or commit), without commas")
			}
		}
		if strings.Contains(s.Revision, ",") {
			fail("operation.sync.revision", s.Revision, "want one revision (a branch, tag or commit), without commas; a multi-source app takes revisions")
		}
		for i, opt := range s.SyncOptions {
			validateSyncOption(d, fmt.Sprintf("operation.sync.syncOptions[%d]", i), opt)
		}
		for i, r := range s.Resources {
			p := fmt.Sprintf("operation.sync.resources[%d]", i)
			if r.Kind == "" {
				fail(p+".kind", "", "is required")
			}
			if r.Name == "" {
				fail(p+".name", "", "is required")
			}
		}
		if st := s.SyncStrategy; st != nil && st.Apply != nil && st.Hook != nil {
			fail("operation.sync.syncStrategy", "", "give one of apply and hook, not both")
		}
		if st := s.SyncStrategy; st != nil && ((st.Apply != nil && st.Apply.Force) || (st.Hook != nil && st.Hook.Force)) {
			d.warnings = append(d.warnings, "operation.sync.syncStrategy force is ignored: Force=true is not implemented (Replace=true replaces without deleting first)")
		}
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	op.Warnings = d.warnings
	return op, nil
}

// RevisionSpec is the revision the sync asks for, in the engine's form: "" for the app's target
// revision, one revision, or a multi-source app's revisions comma-separated.
func (s *SyncOperation) RevisionSpec() string {
	if len(s.Revisions) > 0 {
		return strings.Join(s.Revisions, ",")
	}
	return s.Revision
}

// SkipHooks reports whether the sync asks for the apply strategy (objects only, no hooks).
func (s *SyncOperation) SkipHooks() bool {
	return s.SyncStrategy != nil && s.SyncStrategy.Apply != nil
}
