package workflows

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The API group and version of Argo Workflows' kinds, and the labels and annotations Argo
// Workflows puts on the pods it makes (the same names, so tools written for Argo read them).
const (
	Group   = "argoproj.io"
	Version = "v1alpha1"

	// LabelWorkflow on a pod names its Workflow.
	LabelWorkflow = "workflows.argoproj.io/workflow"
	// LabelCompleted on a Workflow is "true" once it has finished.
	LabelCompleted = "workflows.argoproj.io/completed"
	// AnnotationNodeName on a pod is the full name of its node.
	AnnotationNodeName = "workflows.argoproj.io/node-name"
	// AnnotationNodeID on a pod is its node's ID.
	AnnotationNodeID = "workflows.argoproj.io/node-id"
	// annotationScript holds a script template's source; a downwardAPI volume makes it a file.
	annotationScript = "workflows.freshet.dev/script"
)

// Workflow is Argo Workflows' Workflow: the fields this controller reads and writes. Fields it
// does not know are kept in the object (the CRD preserves them) and left alone.
type Workflow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WorkflowSpec   `json:"spec"`
	Status            WorkflowStatus `json:"status,omitempty"`
}

// WorkflowTemplate is a namespaced, reusable WorkflowSpec; ClusterWorkflowTemplate has the same
// shape, cluster-wide.
type WorkflowTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WorkflowSpec `json:"spec"`
}

// CronWorkflow runs a Workflow on a schedule (cron.go).
type CronWorkflow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CronWorkflowSpec `json:"spec"`
}

// CronWorkflowSpec is a CronWorkflow's spec.
type CronWorkflowSpec struct {
	WorkflowSpec               WorkflowSpec `json:"workflowSpec"`
	Schedule                   string       `json:"schedule,omitempty"`
	Schedules                  []string     `json:"schedules,omitempty"`
	Timezone                   string       `json:"timezone,omitempty"`
	ConcurrencyPolicy          string       `json:"concurrencyPolicy,omitempty"`
	Suspend                    bool         `json:"suspend,omitempty"`
	StartingDeadlineSeconds    *int64       `json:"startingDeadlineSeconds,omitempty"`
	SuccessfulJobsHistoryLimit *int32       `json:"successfulJobsHistoryLimit,omitempty"`
	FailedJobsHistoryLimit     *int32       `json:"failedJobsHistoryLimit,omitempty"`
	// StopStrategy stops the CronWorkflow for good once its expression holds (Argo 3.6).
	StopStrategy *StopStrategy `json:"stopStrategy,omitempty"`
	// When is checked before each scheduled run (Argo 3.6: expr-lang, {{= }} tags and the
	// cronworkflow variables); a run it is false for is skipped.
	When string `json:"when,omitempty"`
}

// StopStrategy is a CronWorkflow's spec.stopStrategy: Expression (expr-lang over
// cronworkflow.succeeded, cronworkflow.failed and the CronWorkflow's name, namespace, labels,
// annotations and lastScheduledTime) stops it when true.
type StopStrategy struct {
	Expression string `json:"expression"`
}

// WorkflowSpec is the desired run. The fields this controller does not run yet are kept as
// raw values so that a spec using them is refused by name rather than run without them.
type WorkflowSpec struct {
	Templates             []Template `json:"templates,omitempty"`
	Entrypoint            string     `json:"entrypoint,omitempty"`
	Arguments             Arguments  `json:"arguments,omitempty"`
	ServiceAccountName    string     `json:"serviceAccountName,omitempty"`
	ActiveDeadlineSeconds *int64     `json:"activeDeadlineSeconds,omitempty"`
	OnExit                string     `json:"onExit,omitempty"`
	Parallelism           *int64     `json:"parallelism,omitempty"`
	// Priority orders the Workflows waiting for a synchronization lock: higher first (Argo's).
	Priority              *int32                        `json:"priority,omitempty"`
	WorkflowTemplateRef   *WorkflowTemplateRef          `json:"workflowTemplateRef,omitempty"`
	PodMetadata           *Metadata                     `json:"podMetadata,omitempty"`
	Suspend               *bool                         `json:"suspend,omitempty"`
	Shutdown              string                        `json:"shutdown,omitempty"`
	NodeSelector          map[string]string             `json:"nodeSelector,omitempty"`
	Tolerations           []corev1.Toleration           `json:"tolerations,omitempty"`
	ImagePullSecrets      []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	PodGC                 *PodGC                        `json:"podGC,omitempty"`
	TTLStrategy           *TTLStrategy                  `json:"ttlStrategy,omitempty"`
	ArtifactRepositoryRef *ArtifactRepositoryRef        `json:"artifactRepositoryRef,omitempty"`
	ArtifactGC            *WorkflowArtifactGC           `json:"artifactGC,omitempty"`
	// Volumes may be mounted by any container or script template (volumeMounts).
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// VolumeClaimTemplates become one PersistentVolumeClaim each per run, named
	// <workflow>-<claim>, owned by the Workflow and mounted by the claim's name.
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// VolumeClaimGC says when those claims are deleted (OnWorkflowSuccess when unset, as Argo).
	VolumeClaimGC *VolumeClaimGC `json:"volumeClaimGC,omitempty"`
	// Synchronization holds the whole run behind mutexes and semaphores (sync.go).
	Synchronization *Synchronization `json:"synchronization,omitempty"`
	// Hooks are the workflow's lifecycle hooks (hooks.go): "exit" is its exit handler (as
	// onExit), any other runs its template once its expression is true.
	Hooks LifecycleHooks `json:"hooks,omitempty"`

	// Recognised, not built yet: refused by name.
	Metrics      json.RawMessage `json:"metrics,omitempty"`
	PodSpecPatch json.RawMessage `json:"podSpecPatch,omitempty"`
	Executor     json.RawMessage `json:"executor,omitempty"`
	Memoize      json.RawMessage `json:"memoize,omitempty"`
}

// WorkflowTemplateRef runs a WorkflowTemplate (or, with ClusterScope, a
// ClusterWorkflowTemplate) as the Workflow's spec.
type WorkflowTemplateRef struct {
	Name         string `json:"name"`
	ClusterScope bool   `json:"clusterScope,omitempty"`
}

// Metadata is extra labels and annotations for a template's pods.
type Metadata struct {
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// Template is one template; exactly one of Container, Script, Resource, Suspend, Steps and DAG
// is set.
type Template struct {
	Name                  string              `json:"name"`
	Inputs                Inputs              `json:"inputs,omitempty"`
	Outputs               Outputs             `json:"outputs,omitempty"`
	Metadata              Metadata            `json:"metadata,omitempty"`
	Container             *corev1.Container   `json:"container,omitempty"`
	Script                *ScriptTemplate     `json:"script,omitempty"`
	Resource              *ResourceTemplate   `json:"resource,omitempty"`
	Suspend               *SuspendTemplate    `json:"suspend,omitempty"`
	Steps                 [][]WorkflowStep    `json:"steps,omitempty"`
	DAG                   *DAGTemplate        `json:"dag,omitempty"`
	RetryStrategy         *RetryStrategy      `json:"retryStrategy,omitempty"`
	ActiveDeadlineSeconds *intstr.IntOrString `json:"activeDeadlineSeconds,omitempty"`
	Parallelism           *int64              `json:"parallelism,omitempty"`
	ServiceAccountName    string              `json:"serviceAccountName,omitempty"`
	NodeSelector          map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations           []corev1.Toleration `json:"tolerations,omitempty"`
	// Timeout bounds a container or script node from its start, its time Pending included.
	Timeout string `json:"timeout,omitempty"`
	// Volumes are this template's own (its pods have all of them).
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// Synchronization holds this template's node behind mutexes and semaphores (sync.go).
	Synchronization *Synchronization `json:"synchronization,omitempty"`

	// Recognised, not built yet: refused by name.
	Data            json.RawMessage `json:"data,omitempty"`
	HTTP            json.RawMessage `json:"http,omitempty"`
	Plugin          json.RawMessage `json:"plugin,omitempty"`
	ContainerSet    json.RawMessage `json:"containerSet,omitempty"`
	Memoize         json.RawMessage `json:"memoize,omitempty"`
	Sidecars        json.RawMessage `json:"sidecars,omitempty"`
	InitContainers  json.RawMessage `json:"initContainers,omitempty"`
	Daemon          json.RawMessage `json:"daemon,omitempty"`
	ArchiveLocation json.RawMessage `json:"archiveLocation,omitempty"`
	Metrics         json.RawMessage `json:"metrics,omitempty"`
	PodSpecPatch    json.RawMessage `json:"podSpecPatch,omitempty"`
	Hooks           json.RawMessage `json:"hooks,omitempty"`
}

// ScriptTemplate is a container whose Source is written to a file and passed to its command.
type ScriptTemplate struct {
	corev1.Container `json:",inline"`
	Source           string `json:"source"`
}

// ResourceTemplate gets, creates, applies, patches, replaces or deletes one Kubernetes object,
// and may wait for a condition over its fields (resource.go).
type ResourceTemplate struct {
	Action            string   `json:"action"`
	Manifest          string   `json:"manifest,omitempty"`
	SetOwnerReference bool     `json:"setOwnerReference,omitempty"`
	SuccessCondition  string   `json:"successCondition,omitempty"`
	FailureCondition  string   `json:"failureCondition,omitempty"`
	MergeStrategy     string   `json:"mergeStrategy,omitempty"`
	Flags             []string `json:"flags,omitempty"`
	// ManifestFrom takes the manifest from one of the template's input artifacts instead.
	ManifestFrom *ManifestFrom `json:"manifestFrom,omitempty"`
}

// ManifestFrom names the input artifact a resource template's manifest is read from (only its
// name counts, as in Argo).
type ManifestFrom struct {
	Artifact *Artifact `json:"artifact,omitempty"`
}

// SuspendTemplate holds the workflow for Duration (seconds, or "30s", "5m", "1h"), or until it
// is resumed when Duration is empty.
type SuspendTemplate struct {
	Duration *intstr.IntOrString `json:"duration,omitempty"`
}

// WorkflowStep is one step of a steps template.
type WorkflowStep struct {
	Name         string       `json:"name,omitempty"`
	Template     string       `json:"template,omitempty"`
	Arguments    Arguments    `json:"arguments,omitempty"`
	TemplateRef  *TemplateRef `json:"templateRef,omitempty"`
	WithItems    []Item       `json:"withItems,omitempty"`
	WithParam    string       `json:"withParam,omitempty"`
	WithSequence *Sequence    `json:"withSequence,omitempty"`
	When         string       `json:"when,omitempty"`
	ContinueOn   *ContinueOn  `json:"continueOn,omitempty"`
	// OnExit runs a template once the step or task has completed (hooks.go).
	OnExit string `json:"onExit,omitempty"`
	// Hooks are its lifecycle hooks (hooks.go).
	Hooks  LifecycleHooks  `json:"hooks,omitempty"`
	Inline json.RawMessage `json:"inline,omitempty"`
}

// DAGTemplate is a graph of tasks.
type DAGTemplate struct {
	Target   string    `json:"target,omitempty"`
	Tasks    []DAGTask `json:"tasks"`
	FailFast *bool     `json:"failFast,omitempty"`
}

// DAGTask is one task of a DAG.
type DAGTask struct {
	Name         string       `json:"name"`
	Template     string       `json:"template,omitempty"`
	Arguments    Arguments    `json:"arguments,omitempty"`
	TemplateRef  *TemplateRef `json:"templateRef,omitempty"`
	Dependencies []string     `json:"dependencies,omitempty"`
	Depends      string       `json:"depends,omitempty"`
	WithItems    []Item       `json:"withItems,omitempty"`
	WithParam    string       `json:"withParam,omitempty"`
	WithSequence *Sequence    `json:"withSequence,omitempty"`
	When         string       `json:"when,omitempty"`
	ContinueOn   *ContinueOn  `json:"continueOn,omitempty"`
	// OnExit runs a template once the step or task has completed (hooks.go).
	OnExit string `json:"onExit,omitempty"`
	// Hooks are its lifecycle hooks (hooks.go).
	Hooks  LifecycleHooks  `json:"hooks,omitempty"`
	Inline json.RawMessage `json:"inline,omitempty"`
}

// TemplateRef names a template of a WorkflowTemplate (or, with ClusterScope, of a
// ClusterWorkflowTemplate).
type TemplateRef struct {
	Name         string `json:"name"`
	Template     string `json:"template"`
	ClusterScope bool   `json:"clusterScope,omitempty"`
}

// ContinueOn lets a workflow go on past a step that failed or errored.
type ContinueOn struct {
	Error  bool `json:"error,omitempty"`
	Failed bool `json:"failed,omitempty"`
}

// Sequence is withSequence: Count numbers from Start, or Start to End (either direction), each
// formatted with Format (a printf verb such as "%02d").
type Sequence struct {
	Count  *intstr.IntOrString `json:"count,omitempty"`
	Start  *intstr.IntOrString `json:"start,omitempty"`
	End    *intstr.IntOrString `json:"end,omitempty"`
	Format string              `json:"format,omitempty"`
}

// Item is one withItems entry: any JSON value. A string renders as itself, anything else as
// its JSON; a map's keys are {{item.KEY}}.
type Item struct{ json.RawMessage }

// MarshalJSON keeps the raw value.
func (i Item) MarshalJSON() ([]byte, error) {
	if len(i.RawMessage) == 0 {
		return []byte("null"), nil
	}
	return i.RawMessage, nil
}

// UnmarshalJSON keeps the raw value.
func (i *Item) UnmarshalJSON(b []byte) error {
	i.RawMessage = append(json.RawMessage(nil), b...)
	return nil
}

// String is how {{item}} renders.
func (i Item) String() string { return renderJSON(i.RawMessage) }

// renderJSON renders a JSON value as Argo renders an item: a string as itself, anything else as
// its compact JSON.
func renderJSON(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// Arguments are the parameters a step, task or Workflow passes.
type Arguments struct {
	Parameters []Parameter `json:"parameters,omitempty"`
	Artifacts  []Artifact  `json:"artifacts,omitempty"`
}

// Inputs are a template's declared parameters.
type Inputs struct {
	Parameters []Parameter `json:"parameters,omitempty"`
	Artifacts  []Artifact  `json:"artifacts,omitempty"`
}

// Outputs are a template's declared outputs and, in a node's status, their values.
type Outputs struct {
	Parameters []Parameter `json:"parameters,omitempty"`
	Artifacts  []Artifact  `json:"artifacts,omitempty"`
	Result     *string     `json:"result,omitempty"`
	ExitCode   *string     `json:"exitCode,omitempty"`
}

// Parameter is a named string value.
type Parameter struct {
	Name        string      `json:"name"`
	Value       *AnyString  `json:"value,omitempty"`
	Default     *AnyString  `json:"default,omitempty"`
	ValueFrom   *ValueFrom  `json:"valueFrom,omitempty"`
	Enum        []AnyString `json:"enum,omitempty"`
	Description string      `json:"description,omitempty"`
	GlobalName  string      `json:"globalName,omitempty"`
}

// ValueFrom says where an output parameter's value comes from.
type ValueFrom struct {
	Path       string     `json:"path,omitempty"`
	Parameter  string     `json:"parameter,omitempty"`
	Default    *AnyString `json:"default,omitempty"`
	Supplied   *struct{}  `json:"supplied,omitempty"`
	Expression string     `json:"expression,omitempty"`
	JSONPath   string     `json:"jsonPath,omitempty"`
	JQFilter   string     `json:"jqFilter,omitempty"`

	// Recognised, not built yet: refused by name.
	Event           string          `json:"event,omitempty"`
	ConfigMapKeyRef json.RawMessage `json:"configMapKeyRef,omitempty"`
}

// AnyString is a parameter value: Argo accepts a string, a number or a boolean and uses its
// text.
type AnyString string

// UnmarshalJSON takes a string, number or boolean.
func (a *AnyString) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = AnyString(s)
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		*a = AnyString(string(b))
	case bool:
		*a = AnyString(strconv.FormatBool(x))
	default:
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeOf("")}
	}
	return nil
}

// RetryStrategy retries a failed node.
type RetryStrategy struct {
	Limit       *intstr.IntOrString `json:"limit,omitempty"`
	RetryPolicy string              `json:"retryPolicy,omitempty"`
	Backoff     *Backoff            `json:"backoff,omitempty"`

	// Recognised, not built yet: refused by name.
	Expression string          `json:"expression,omitempty"`
	Affinity   json.RawMessage `json:"affinity,omitempty"`
}

// Backoff spaces retries: Duration, times Factor after each, capped by MaxDuration (counted
// from the first attempt's start).
type Backoff struct {
	Duration    *intstr.IntOrString `json:"duration,omitempty"`
	Factor      *intstr.IntOrString `json:"factor,omitempty"`
	MaxDuration *intstr.IntOrString `json:"maxDuration,omitempty"`
}

// The retry policies.
const (
	RetryAlways           = "Always"
	RetryOnFailure        = "OnFailure"
	RetryOnError          = "OnError"
	RetryOnTransientError = "OnTransientError"
)

// WorkflowPhase is status.phase.
type WorkflowPhase string

// The workflow phases.
const (
	WorkflowUnknown   WorkflowPhase = ""
	WorkflowPending   WorkflowPhase = "Pending"
	WorkflowRunning   WorkflowPhase = "Running"
	WorkflowSucceeded WorkflowPhase = "Succeeded"
	WorkflowFailed    WorkflowPhase = "Failed"
	WorkflowError     WorkflowPhase = "Error"
)

// Completed reports whether the phase is final.
func (p WorkflowPhase) Completed() bool {
	return p == WorkflowSucceeded || p == WorkflowFailed || p == WorkflowError
}

// NodePhase is a node's phase.
type NodePhase string

// The node phases.
const (
	NodePending   NodePhase = "Pending"
	NodeRunning   NodePhase = "Running"
	NodeSucceeded NodePhase = "Succeeded"
	NodeSkipped   NodePhase = "Skipped"
	NodeFailed    NodePhase = "Failed"
	NodeError     NodePhase = "Error"
	NodeOmitted   NodePhase = "Omitted"
)

// Fulfilled reports whether the node has finished.
func (p NodePhase) Fulfilled() bool {
	switch p {
	case NodeSucceeded, NodeSkipped, NodeFailed, NodeError, NodeOmitted:
		return true
	}
	return false
}

// NodeType is a node's type.
type NodeType string

// The node types.
const (
	NodeTypePod       NodeType = "Pod"
	NodeTypeSteps     NodeType = "Steps"
	NodeTypeStepGroup NodeType = "StepGroup"
	NodeTypeDAG       NodeType = "DAG"
	NodeTypeTaskGroup NodeType = "TaskGroup"
	NodeTypeRetry     NodeType = "Retry"
	NodeTypeSkipped   NodeType = "Skipped"
	NodeTypeSuspend   NodeType = "Suspend"
)

// WorkflowStatus is what the controller writes, field for field as Argo Workflows does.
type WorkflowStatus struct {
	Phase      WorkflowPhase         `json:"phase,omitempty"`
	StartedAt  metav1.Time           `json:"startedAt,omitempty"`
	FinishedAt metav1.Time           `json:"finishedAt,omitempty"`
	Progress   string                `json:"progress,omitempty"`
	Message    string                `json:"message,omitempty"`
	Nodes      map[string]NodeStatus `json:"nodes,omitempty"`
	Outputs    *Outputs              `json:"outputs,omitempty"`
	// StoredWorkflowTemplateSpec is the spec a workflowTemplateRef resolved to when the run
	// started: later changes of the template do not change a running workflow.
	StoredWorkflowTemplateSpec *WorkflowSpec `json:"storedWorkflowTemplateSpec,omitempty"`
	// ArtifactRepositoryRef is the artifact repository resolved when the run started.
	ArtifactRepositoryRef *ArtifactRepositoryRefStatus `json:"artifactRepositoryRef,omitempty"`
	// ArtifactGCStatus records the artifact garbage collection done.
	ArtifactGCStatus *ArtifactGCStatus `json:"artifactGCStatus,omitempty"`
	// PersistentVolumeClaims are the claims made from spec.volumeClaimTemplates and not
	// deleted yet, each as the volume the pods mount (named after its claim template).
	PersistentVolumeClaims []corev1.Volume `json:"persistentVolumeClaims,omitempty"`
	// Synchronization is the locks the run and its nodes hold and wait for.
	Synchronization *SynchronizationStatus `json:"synchronization,omitempty"`
}

// ArtifactGCStatus is status.artifactGCStatus: whether the objects artifactGC deletes on
// completion were deleted.
type ArtifactGCStatus struct {
	NotSpecified bool `json:"notSpecified,omitempty"`
	// Done is set once every object due on completion is deleted.
	Done bool `json:"done,omitempty"`
}

// NodeStatus is one node of the run.
type NodeStatus struct {
	ID            string       `json:"id"`
	Name          string       `json:"name"`
	DisplayName   string       `json:"displayName"`
	Type          NodeType     `json:"type"`
	TemplateName  string       `json:"templateName,omitempty"`
	TemplateRef   *TemplateRef `json:"templateRef,omitempty"`
	Phase         NodePhase    `json:"phase,omitempty"`
	BoundaryID    string       `json:"boundaryID,omitempty"`
	Message       string       `json:"message,omitempty"`
	StartedAt     metav1.Time  `json:"startedAt,omitempty"`
	FinishedAt    metav1.Time  `json:"finishedAt,omitempty"`
	Inputs        *Inputs      `json:"inputs,omitempty"`
	Outputs       *Outputs     `json:"outputs,omitempty"`
	Children      []string     `json:"children,omitempty"`
	OutboundNodes []string     `json:"outboundNodes,omitempty"`
	HostNodeName  string       `json:"hostNodeName,omitempty"`
	PodIP         string       `json:"podIP,omitempty"`
	// SynchronizationStatus names the lock a Pending node waits for.
	SynchronizationStatus *NodeSynchronizationStatus `json:"synchronizationStatus,omitempty"`
	// Resource is the object a resource node acted on (Freshet's, resource.go).
	Resource *NodeResource `json:"resource,omitempty"`
	// NodeFlag marks an exit handler's or a lifecycle hook's node, as Argo does.
	NodeFlag *NodeFlag `json:"nodeFlag,omitempty"`
}

// NodeFlag is Argo's nodeFlag: Hooked is set on the node an exit handler or a lifecycle hook
// runs.
type NodeFlag struct {
	Hooked bool `json:"hooked,omitempty"`
}

// LifecycleHooks are Argo's hooks, by name: "exit" is an exit handler, any other runs once
// its expression is true.
type LifecycleHooks map[string]LifecycleHook

// ExitHook is the name of the hook that is an exit handler.
const ExitHook = "exit"

// LifecycleHook runs Template (or TemplateRef) with Arguments; Expression says when (for the
// exit hook, whether).
type LifecycleHook struct {
	Template    string       `json:"template,omitempty"`
	Arguments   Arguments    `json:"arguments,omitempty"`
	TemplateRef *TemplateRef `json:"templateRef,omitempty"`
	Expression  string       `json:"expression,omitempty"`
}

// VolumeClaimGC is spec.volumeClaimGC.
type VolumeClaimGC struct {
	Strategy string `json:"strategy,omitempty"`
}

// The volume claim GC strategies.
const (
	VolumeClaimGCOnCompletion = "OnWorkflowCompletion"
	VolumeClaimGCOnSuccess    = "OnWorkflowSuccess"
)
