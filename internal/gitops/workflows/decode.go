package workflows

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// maxDocBytes bounds a document the decoder takes (the API server's own limit is 3 MiB).
const maxDocBytes = 3 << 20

// Decode reads a Workflow from its JSON (as the API server serves it) and validates it as
// `argo lint` does. A document that is not a Workflow, or does not decode, is an error naming
// the field; a Workflow that decodes but is invalid is returned together with a
// *errdefs.FieldError naming the field, the value and what is valid. A Workflow with a
// workflowTemplateRef is validated once the template is merged in (ValidateSpec).
func Decode(data []byte) (*Workflow, error) {
	var wf Workflow
	if err := decodeKind(data, &wf, "Workflow", &wf.TypeMeta.APIVersion, &wf.TypeMeta.Kind); err != nil {
		return nil, err
	}
	if len(wf.Name) > 63 {
		// It labels the Workflow's pods (workflows.argoproj.io/workflow), and label values are
		// at most 63 characters.
		return &wf, errdefs.Invalid("metadata.name", wf.Name, "is longer than 63 characters: it labels the workflow's pods")
	}
	if wf.Spec.WorkflowTemplateRef != nil {
		if wf.Spec.WorkflowTemplateRef.Name == "" {
			return &wf, errdefs.Invalid("spec.workflowTemplateRef.name", "", "is required")
		}
		return &wf, validateRefSpec(&wf.Spec)
	}
	return &wf, ValidateSpec(&wf.Spec, "spec")
}

// DecodeTemplate reads a WorkflowTemplate or a ClusterWorkflowTemplate (kind is the one
// expected) and validates it; an entrypoint is optional in a template.
func DecodeTemplate(data []byte, kind string) (*WorkflowTemplate, error) {
	var t WorkflowTemplate
	if err := decodeKind(data, &t, kind, &t.TypeMeta.APIVersion, &t.TypeMeta.Kind); err != nil {
		return nil, err
	}
	return &t, validateSpec(&t.Spec, "spec", false)
}

// DecodeCron reads a CronWorkflow and validates its schedule fields and workflowSpec.
func DecodeCron(data []byte) (*CronWorkflow, error) {
	var c CronWorkflow
	if err := decodeKind(data, &c, "CronWorkflow", &c.TypeMeta.APIVersion, &c.TypeMeta.Kind); err != nil {
		return nil, err
	}
	if _, err := cronSchedules(&c.Spec); err != nil {
		return &c, err
	}
	if err := checkStopStrategy(c.Spec.StopStrategy); err != nil {
		return &c, err
	}
	if err := checkCronWhen(c.Spec.When); err != nil {
		return &c, err
	}
	switch c.Spec.ConcurrencyPolicy {
	case "", "Allow", "Forbid", "Replace":
	default:
		return &c, errdefs.Invalid("spec.concurrencyPolicy", c.Spec.ConcurrencyPolicy, "must be Allow, Forbid or Replace")
	}
	if c.Spec.WorkflowSpec.WorkflowTemplateRef != nil {
		return &c, validateRefSpec(&c.Spec.WorkflowSpec)
	}
	return &c, ValidateSpec(&c.Spec.WorkflowSpec, "spec.workflowSpec")
}

func decodeKind(data []byte, v any, kind string, apiVersion, gotKind *string) error {
	if len(data) > maxDocBytes {
		return errdefs.Invalid(strings.ToLower(kind), "", "is larger than 3 MiB")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return decodeError(err, kind)
	}
	if *apiVersion != Group+"/"+Version || *gotKind != kind {
		return errdefs.Invalid("apiVersion/kind", *apiVersion+" "+*gotKind, "is not "+Group+"/"+Version+" "+kind)
	}
	return nil
}

// decodeError names the field a JSON type error is about.
func decodeError(err error, kind string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = strings.ToLower(kind)
		}
		return errdefs.Invalid(field, te.Value, "is not a valid "+te.Type.String())
	}
	return errdefs.Invalid(strings.ToLower(kind), "", "does not decode: "+err.Error())
}

// validateRefSpec checks what a Workflow running a workflowTemplateRef may set beside it.
func validateRefSpec(s *WorkflowSpec) error {
	if len(s.Templates) > 0 {
		return errdefs.Invalid("spec.templates", "", "cannot be given with spec.workflowTemplateRef (the template's are used)")
	}
	return checkUnsupportedSpec(s, "spec")
}
