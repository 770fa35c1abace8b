package appproxyv1

import (
	"encoding/json"
	"time"
)

// Workflow is one Argo Workflows Workflow as `GET workflows` lists it (and `freshet workflow
// list -o json` prints it).
type Workflow struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
	// Phase is status.phase: Pending (not picked up yet), Running, Succeeded, Failed or Error.
	Phase string `json:"phase"`
	// Message is status.message (why it failed, "invalid spec: …", Argo's stop messages).
	Message    string     `json:"message"`
	StartedAt  *time.Time `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	// Progress is status.progress: finished pods / pods.
	Progress string `json:"progress"`
	// Template is the WorkflowTemplate it runs (spec.workflowTemplateRef, "cluster/NAME" for a
	// ClusterWorkflowTemplate), empty for a Workflow with its own templates.
	Template string `json:"template"`
	// Suspended is spec.suspend; Shutdown is spec.shutdown (Stop or Terminate) once asked.
	Suspended bool   `json:"suspended"`
	Shutdown  string `json:"shutdown"`
	// Creator is who submitted it through the app-proxy (its creator labels), empty otherwise.
	Creator string `json:"creator"`
	// ResubmittedFrom is the Workflow this one was resubmitted from.
	ResubmittedFrom string `json:"resubmittedFrom"`
	// Sensor is the Sensor that submitted it (its events.argoproj.io/sensor label): the Delivery
	// Pipeline it is a run of.
	Sensor string `json:"sensor"`
	// CronWorkflow is the CronWorkflow that created it (its workflows.argoproj.io/cron-workflow
	// label): the CronWorkflow it is a run of.
	CronWorkflow string    `json:"cronWorkflow"`
	CreatedAt    time.Time `json:"createdAt"`
}

// WorkflowDetail is one Workflow with its node tree (`GET workflows/{namespace}/{name}` and the
// answer of submit and every operation).
type WorkflowDetail struct {
	Workflow
	Entrypoint string `json:"entrypoint"`
	// Parameters are the workflow's arguments (spec.arguments.parameters), by name.
	Parameters []WorkflowParameter `json:"parameters"`
	// Nodes is status.nodes, ordered by start time then ID; Children link them into the graph.
	Nodes []WorkflowNode `json:"nodes"`
}

// WorkflowParameter is a named parameter value.
type WorkflowParameter struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// WorkflowNode is one node of a Workflow (Argo's NodeStatus).
type WorkflowNode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	// Type is Pod, Steps, StepGroup, DAG, TaskGroup, Retry, Skipped or Suspend.
	Type string `json:"type"`
	// TemplateName is the template it runs ("WorkflowTemplate/template" for a templateRef).
	TemplateName string     `json:"templateName"`
	Phase        string     `json:"phase"`
	Message      string     `json:"message"`
	BoundaryID   string     `json:"boundaryID"`
	StartedAt    *time.Time `json:"startedAt"`
	FinishedAt   *time.Time `json:"finishedAt"`
	Children     []string   `json:"children"`
	// PodName is the pod a Pod node runs in (its logs: `GET …/log?node=ID`).
	PodName string              `json:"podName"`
	Inputs  []WorkflowParameter `json:"inputs"`
	Outputs []WorkflowParameter `json:"outputs"`
	// Result is outputs.result, ExitCode outputs.exitCode.
	Result   *string `json:"result"`
	ExitCode *string `json:"exitCode"`
	// InputArtifacts and OutputArtifacts are the node's artifacts and where they are.
	InputArtifacts  []WorkflowArtifact `json:"inputArtifacts"`
	OutputArtifacts []WorkflowArtifact `json:"outputArtifacts"`
	// Supplied are, for a Suspend node waiting to be resumed (an approval gate), its template's
	// output parameters that say `valueFrom: {supplied: {}}`: what a resume may give values for
	// (WorkflowResumeRequest.Parameters). Empty for every other node.
	Supplied []WorkflowSuppliedParameter `json:"supplied"`
}

// WorkflowSuppliedParameter is an output parameter of a waiting suspend node whose value is
// supplied when the node is resumed: its default (valueFrom.default; nil: a value is required),
// the values it allows (enum; empty: any) and its description.
type WorkflowSuppliedParameter struct {
	Name        string   `json:"name"`
	Default     *string  `json:"default"`
	Enum        []string `json:"enum"`
	Description string   `json:"description"`
}

// WorkflowArtifact is an input or output artifact of a node: its name, its path in the
// container, and its location (no credentials).
type WorkflowArtifact struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Location is s3, git, http or raw ("" when it has none, as an optional artifact not
	// produced).
	Location string `json:"location"`
	// Bucket and Key locate an s3 artifact (Endpoint its server); URL an http artifact or a git
	// repository (Revision its revision).
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	URL      string `json:"url"`
	Revision string `json:"revision"`
	// Deleted says artifactGC deleted it.
	Deleted bool `json:"deleted"`
}

// WorkflowSubmitRequest is the body of `POST workflows`: a Workflow manifest, or From a
// WorkflowTemplate or ClusterWorkflowTemplate, with Parameters (KEY=VALUE) over its arguments.
type WorkflowSubmitRequest struct {
	// Namespace is where it runs (default: the manifest's namespace, else "default").
	Namespace string `json:"namespace,omitempty"`
	// Workflow is the manifest (argoproj.io/v1alpha1 Workflow) as JSON.
	Workflow json.RawMessage `json:"workflow,omitempty"`
	// From is workflowtemplate/NAME, clusterworkflowtemplate/NAME or cronworkflow/NAME.
	From string `json:"from,omitempty"`
	// Parameters replace the arguments of the same name (Argo's `-p KEY=VALUE`).
	Parameters []string `json:"parameters,omitempty"`
	// Entrypoint overrides spec.entrypoint.
	Entrypoint string `json:"entrypoint,omitempty"`
	// GenerateName names a Workflow submitted From a template (default: the template's name and
	// a dash).
	GenerateName string `json:"generateName,omitempty"`
}

// The workflow operations (POST workflows/{namespace}/{name}/{op}).
const (
	WorkflowResubmit  = "resubmit"
	WorkflowRetry     = "retry"
	WorkflowStop      = "stop"
	WorkflowTerminate = "terminate"
	WorkflowSuspend   = "suspend"
	WorkflowResume    = "resume"
)

// WorkflowResumeRequest is the optional body of `POST workflows/{namespace}/{name}/resume`: which
// waiting suspend node to resume (its display name; empty: every one), the values of its output
// parameters that say `valueFrom: {supplied: {}}` (an approval's answer), and the message the
// node keeps.
type WorkflowResumeRequest struct {
	Node       string            `json:"node,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	Message    string            `json:"message,omitempty"`
}

// WorkflowOps are the operations, in the order the API documents them.
var WorkflowOps = []string{WorkflowResubmit, WorkflowRetry, WorkflowStop, WorkflowTerminate, WorkflowSuspend, WorkflowResume}

// WorkflowTemplate is a WorkflowTemplate or ClusterWorkflowTemplate (`GET workflow-templates`).
type WorkflowTemplate struct {
	Name string `json:"name"`
	// Namespace is empty for a ClusterWorkflowTemplate.
	Namespace string `json:"namespace"`
	// Kind is WorkflowTemplate or ClusterWorkflowTemplate.
	Kind       string `json:"kind"`
	Entrypoint string `json:"entrypoint"`
	// Parameters are spec.arguments.parameters: what `submit --from` takes with -p.
	Parameters []WorkflowTemplateParameter `json:"parameters"`
	// Templates are the names of its templates.
	Templates []string  `json:"templates"`
	CreatedAt time.Time `json:"createdAt"`
}

// WorkflowTemplateParameter is an argument a template declares.
type WorkflowTemplateParameter struct {
	Name        string   `json:"name"`
	Value       *string  `json:"value"`
	Enum        []string `json:"enum"`
	Description string   `json:"description"`
}

// WorkflowTemplateCommitRequest is the body of `POST git-sources/{name}/workflow-templates`:
// a WorkflowTemplate committed to the Git Source's repository (with the Application that
// deploys the directory it is in, when the Git Source has none yet).
type WorkflowTemplateCommitRequest struct {
	// Manifest is the WorkflowTemplate, YAML or JSON; it must pass the engine's lint.
	Manifest string `json:"manifest"`
	// Dir is the directory of the Git Source's repository the template is written to
	// (default workflow-templates); it must lie outside the Git Source's own path.
	Dir string `json:"dir,omitempty"`
	// Namespace is where the templates are deployed (default: the Git Source's destination
	// namespace).
	Namespace string `json:"namespace,omitempty"`
	// Upsert replaces a template file that exists.
	Upsert bool `json:"upsert,omitempty"`
	// Message is the commit message (default: "add workflow template NAME").
	Message string `json:"message,omitempty"`
}

// WorkflowTemplateCommit is what committing a WorkflowTemplate to a Git Source did.
type WorkflowTemplateCommit struct {
	Name      string `json:"name"`
	GitSource string `json:"gitSource"`
	RepoURL   string `json:"repoURL"`
	Branch    string `json:"branch"`
	// File is the template's path in the repository.
	File string `json:"file"`
	// Application is the application that deploys Dir (created by this commit or before).
	Application string `json:"application"`
	// ApplicationCreated says whether this commit created it.
	ApplicationCreated bool   `json:"applicationCreated"`
	Commit             string `json:"commit"`
	Namespace          string `json:"namespace"`
}

// CronWorkflow is one Argo Workflows CronWorkflow (`GET cron-workflows`, `GET
// cron-workflows/{namespace}/{name}`, and the answer of create, lint, update, suspend and resume; `freshet
// cron-workflow list|get -o json` prints it).
type CronWorkflow struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
	// Schedules are spec.schedule or spec.schedules, evaluated in Timezone (empty: UTC).
	Schedules               []string `json:"schedules"`
	Timezone                string   `json:"timezone"`
	ConcurrencyPolicy       string   `json:"concurrencyPolicy"`
	StartingDeadlineSeconds *int64   `json:"startingDeadlineSeconds"`
	// Suspended is spec.suspend (`suspend`, `resume`).
	Suspended bool `json:"suspended"`
	// StopExpression is spec.stopStrategy.expression: once it holds, Phase is Stopped for good.
	StopExpression string `json:"stopExpression"`
	// When is spec.when: an expression checked before each scheduled run; a run it holds false
	// for is skipped (an Event WorkflowSkipped on the CronWorkflow).
	When string `json:"when"`
	// Phase is status.phase: Active, or Stopped by the stop strategy ("" before the controller
	// has seen it).
	Phase string `json:"phase"`
	// Succeeded and Failed are status.succeeded and status.failed: its finished Workflows, each
	// counted once (Failed also counts schedules whose Workflow was refused).
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	// LastScheduledTime is status.lastScheduledTime; NextScheduledTime when it runs next (nil
	// when suspended, stopped, or its schedule is invalid).
	LastScheduledTime *time.Time `json:"lastScheduledTime"`
	NextScheduledTime *time.Time `json:"nextScheduledTime"`
	// Active are the names of its running Workflows (status.active).
	Active []string `json:"active"`
	// Conditions are status.conditions: SpecError (what is wrong, naming the field),
	// SubmissionError (a Workflow the API server refused).
	Conditions []CronWorkflowCondition `json:"conditions"`
	// Template is the WorkflowTemplate its workflowSpec runs ("cluster/NAME" for a
	// ClusterWorkflowTemplate), Entrypoint its workflowSpec's.
	Template   string `json:"template"`
	Entrypoint string `json:"entrypoint"`
	// Creator is who created it through the app-proxy, empty otherwise.
	Creator   string    `json:"creator"`
	CreatedAt time.Time `json:"createdAt"`
}

// CronWorkflowCondition is one of a CronWorkflow's status.conditions.
type CronWorkflowCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// CronWorkflowCreateRequest is the body of `POST cron-workflows`, `POST cron-workflows/lint` and
// `PUT cron-workflows/{namespace}/{name}` (update: the manifest's spec replaces the CronWorkflow's):
// a CronWorkflow manifest (argoproj.io/v1alpha1 CronWorkflow, as JSON) and the namespace it goes
// to (default: the manifest's, else "default").
type CronWorkflowCreateRequest struct {
	Namespace    string          `json:"namespace,omitempty"`
	CronWorkflow json.RawMessage `json:"cronWorkflow"`
}

// The CronWorkflow operations (POST cron-workflows/{namespace}/{name}/{op}).
const (
	CronWorkflowSuspend = "suspend"
	CronWorkflowResume  = "resume"
)

// CronWorkflowOps are the CronWorkflow operations.
var CronWorkflowOps = []string{CronWorkflowSuspend, CronWorkflowResume}
