package appproxyv1

import "time"

// A Delivery Pipeline, as Codefresh shows it, is a Sensor and the WorkflowTemplate its trigger
// submits. The app-proxy lists the Sensors and EventSources (`GET sensors`, `GET
// event-sources`) and commits a new pipeline to a Git Source (`POST
// git-sources/{name}/delivery-pipelines`); the web UI pairs them with the Workflows whose
// Sensor label names them.

// Sensor is an Argo Events Sensor as `GET sensors` lists it.
type Sensor struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Dependencies are the events it waits for.
	Dependencies []SensorDependency `json:"dependencies"`
	// Triggers are what it does once they came.
	Triggers []SensorTrigger `json:"triggers"`
	// Conditions are its status conditions (Deployed, Triggered, …).
	Conditions []EventCondition `json:"conditions"`
	CreatedAt  time.Time        `json:"createdAt"`
}

// SensorDependency is one event a Sensor waits for: EventName of EventSource EventSourceName.
type SensorDependency struct {
	Name            string `json:"name"`
	EventSourceName string `json:"eventSourceName"`
	EventName       string `json:"eventName"`
}

// SensorTrigger is one trigger of a Sensor.
type SensorTrigger struct {
	Name string `json:"name"`
	// Type is argoWorkflow, k8s, http, log or nats.
	Type string `json:"type"`
	// Kind is the kind of the resource it creates (Workflow, …), when its source is inline.
	Kind string `json:"kind"`
	// WorkflowTemplate is the template the submitted Workflow runs (its workflowTemplateRef,
	// "cluster/NAME" for a ClusterWorkflowTemplate); empty for a Workflow with its own templates.
	WorkflowTemplate string `json:"workflowTemplate"`
}

// EventCondition is a status condition of a Sensor or an EventSource.
type EventCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// EventSource is an Argo Events EventSource as `GET event-sources` lists it.
type EventSource struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Events are its events, sorted by type then name.
	Events     []EventSourceEvent `json:"events"`
	Conditions []EventCondition   `json:"conditions"`
	CreatedAt  time.Time          `json:"createdAt"`
}

// EventSourceEvent is one named event of an EventSource.
type EventSourceEvent struct {
	Name string `json:"name"`
	// Type is webhook, calendar, github, gitlab, gitea, bitbucket, resource, nats, minio, redis or mqtt.
	Type string `json:"type"`
	// Endpoint is where a webhook (or git provider) event is served; Schedule a calendar
	// event's schedule or interval.
	Endpoint string `json:"endpoint"`
	Schedule string `json:"schedule"`
}

// Event types a Delivery Pipeline can be committed with.
const (
	EventWebhook   = "webhook"
	EventCalendar  = "calendar"
	EventGitHub    = "github"
	EventGitLab    = "gitlab"
	EventGitea     = "gitea"
	EventBitbucket = "bitbucket"
)

// Event types of sources that connect out (listed; a pipeline is not committed with them).
const (
	EventResource    = "resource"
	EventNATS        = "nats"
	EventMinio       = "minio"
	EventRedis       = "redis"
	EventMQTT        = "mqtt"
	EventAMQP        = "amqp"
	EventRedisStream = "redisStream"
)

// EventTypes are the event types, in the order the wizard offers them.
var EventTypes = []string{EventWebhook, EventCalendar, EventGitHub, EventGitLab, EventGitea, EventBitbucket}

// DeliveryPipelineCommitRequest is the body of `POST git-sources/{name}/delivery-pipelines`:
// a Delivery Pipeline (an EventSource, a Sensor whose trigger submits a Workflow from a
// WorkflowTemplate, and optionally that template) built by the runtime and committed to the
// Git Source's repository in one commit.
type DeliveryPipelineCommitRequest struct {
	// Name names the pipeline: its Sensor, its EventSource and the Workflows it submits
	// (generateName NAME-). A DNS-1123 label.
	Name string `json:"name"`
	// Event is what starts it.
	Event PipelineEvent `json:"event"`
	// WorkflowTemplate is the name of the WorkflowTemplate its trigger submits: one in the
	// namespace already, or the one TemplateManifest commits.
	WorkflowTemplate string `json:"workflowTemplate,omitempty"`
	// TemplateManifest is a WorkflowTemplate (YAML or JSON) committed with the pipeline (from the
	// Hub); it must pass the engine's lint, and its name is the pipeline's template.
	TemplateManifest string `json:"templateManifest,omitempty"`
	// Parameters are the arguments the submitted Workflows get.
	Parameters []WorkflowParameter `json:"parameters,omitempty"`
	// Dir is the directory of the Git Source's repository the files are written to (default
	// delivery-pipelines); it must lie outside the Git Source's own path.
	Dir string `json:"dir,omitempty"`
	// Namespace is where the pipeline is deployed (default: the Git Source's destination
	// namespace).
	Namespace string `json:"namespace,omitempty"`
	// Message is the commit message (default: "add delivery pipeline NAME").
	Message string `json:"message,omitempty"`
}

// PipelineEvent is the event that starts a Delivery Pipeline.
type PipelineEvent struct {
	// Type is one of EventTypes.
	Type string `json:"type"`
	// Endpoint is the webhook's path (webhook and git providers; default /NAME).
	Endpoint string `json:"endpoint,omitempty"`
	// Schedule is a calendar event's cron schedule; Interval its interval (as 10m) instead.
	Schedule string `json:"schedule,omitempty"`
	Interval string `json:"interval,omitempty"`
	// Owner and Repository name the repository a git provider's events come from (for GitLab
	// the project, as group/name; for Bitbucket the repository slug).
	Owner      string `json:"owner,omitempty"`
	Repository string `json:"repository,omitempty"`
	// Events are the provider's event types (default push).
	Events []string `json:"events,omitempty"`
	// SecretName and SecretKey name the Secret (in the pipeline's namespace) holding the
	// webhook's signing secret; required for git providers.
	SecretName string `json:"secretName,omitempty"`
	SecretKey  string `json:"secretKey,omitempty"`
}

// DeliveryPipelineCommit is what committing a Delivery Pipeline did.
type DeliveryPipelineCommit struct {
	Name      string `json:"name"`
	GitSource string `json:"gitSource"`
	RepoURL   string `json:"repoURL"`
	Branch    string `json:"branch"`
	// Files are the paths written: the EventSource, the Sensor and the template if given.
	Files []string `json:"files"`
	// WorkflowTemplate is the template the Sensor's trigger submits.
	WorkflowTemplate string `json:"workflowTemplate"`
	// Application deploys Dir (created by this commit or before).
	Application        string `json:"application"`
	ApplicationCreated bool   `json:"applicationCreated"`
	Commit             string `json:"commit"`
	Namespace          string `json:"namespace"`
}
