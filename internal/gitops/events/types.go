package events

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Argo Events' API group and version.
const (
	Group   = "argoproj.io"
	Version = "v1alpha1"
)

// DefaultEventBus is the EventBus an EventSource or Sensor without eventBusName uses.
const DefaultEventBus = "default"

// SecretKeySelector names a key of a Secret in the resource's namespace.
type SecretKeySelector struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Condition is one of a resource's status conditions, as Argo Events writes them.
type Condition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
}

// Status is the status of the three kinds: their conditions.
type Status struct {
	Conditions []Condition `json:"conditions,omitempty"`
}

// EventBus is Argo Events' EventBus.
type EventBus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              EventBusSpec `json:"spec"`
	Status            Status       `json:"status,omitempty"`
}

// EventBusSpec: one of the bus kinds. Only JetStream runs.
type EventBusSpec struct {
	JetStream       *JetStreamBus       `json:"jetstream,omitempty"`
	JetStreamExotic *JetStreamExoticBus `json:"jetstreamExotic,omitempty"`
	NATS            json.RawMessage     `json:"nats,omitempty"`
	Kafka           json.RawMessage     `json:"kafka,omitempty"`
}

// JetStreamBus is a JetStream bus Argo would deploy; here it is the runtime's own NATS.
type JetStreamBus struct {
	Version string `json:"version,omitempty"`
	// StreamConfig and the rest of Argo's deployment fields are read and not used.
	StreamConfig string `json:"streamConfig,omitempty"`
}

// JetStreamExoticBus is a JetStream server that runs elsewhere, at URL.
type JetStreamExoticBus struct {
	URL          string             `json:"url"`
	AccessSecret *SecretKeySelector `json:"accessSecret,omitempty"`
	StreamConfig string             `json:"streamConfig,omitempty"`
}

// EventSource is Argo Events' EventSource.
type EventSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              EventSourceSpec `json:"spec"`
	Status            Status          `json:"status,omitempty"`
}

// EventSourceSpec holds the event sources by type, each a map of event names.
type EventSourceSpec struct {
	EventBusName string                       `json:"eventBusName,omitempty"`
	Webhook      map[string]WebhookSource     `json:"webhook,omitempty"`
	Calendar     map[string]CalendarSource    `json:"calendar,omitempty"`
	GitHub       map[string]GitHubSource      `json:"github,omitempty"`
	GitLab       map[string]GitLabSource      `json:"gitlab,omitempty"`
	Gitea        map[string]GitHubSource      `json:"gitea,omitempty"`
	Bitbucket    map[string]BitbucketSource   `json:"bitbucket,omitempty"`
	Resource     map[string]ResourceSource    `json:"resource,omitempty"`
	NATS         map[string]NATSSource        `json:"nats,omitempty"`
	Minio        map[string]MinioSource       `json:"minio,omitempty"`
	Redis        map[string]RedisSource       `json:"redis,omitempty"`
	MQTT         map[string]MQTTSource        `json:"mqtt,omitempty"`
	AMQP         map[string]AMQPSource        `json:"amqp,omitempty"`        // listen_amqp.go
	RedisStream  map[string]RedisStreamSource `json:"redisStream,omitempty"` // listen_redisstream.go
	Other        map[string]json.RawMessage   `json:"-"`
	Template     json.RawMessage              `json:"template,omitempty"`
	Service      json.RawMessage              `json:"service,omitempty"`
	Replicas     *int32                       `json:"replicas,omitempty"`
}

// WebhookContext is where a webhook event is served.
type WebhookContext struct {
	Endpoint         string             `json:"endpoint"`
	Method           string             `json:"method"`
	Port             string             `json:"port,omitempty"`
	URL              string             `json:"url,omitempty"`
	AuthSecret       *SecretKeySelector `json:"authSecret,omitempty"`
	MaxPayloadSize   *int64             `json:"maxPayloadSize,omitempty"`
	Metadata         map[string]string  `json:"metadata,omitempty"`
	ServerCertSecret json.RawMessage    `json:"serverCertSecret,omitempty"`
	ServerKeySecret  json.RawMessage    `json:"serverKeySecret,omitempty"`
}

// EventSourceFilter is an event source's own filter: an expression over the event's data.
type EventSourceFilter struct {
	Expression string `json:"expression,omitempty"`
}

// WebhookSource is a plain webhook event.
type WebhookSource struct {
	WebhookContext `json:",inline"`
	Filter         *EventSourceFilter `json:"filter,omitempty"`
}

// CalendarSource fires on a schedule or an interval.
type CalendarSource struct {
	Schedule       string             `json:"schedule,omitempty"`
	Interval       string             `json:"interval,omitempty"`
	ExclusionDates []string           `json:"exclusionDates,omitempty"`
	Timezone       string             `json:"timezone,omitempty"`
	Metadata       map[string]string  `json:"metadata,omitempty"`
	Persistence    *EventPersistence  `json:"persistence,omitempty"`
	Filter         *EventSourceFilter `json:"filter,omitempty"`
}

// EventPersistence keeps a calendar's last tick in a ConfigMap of the EventSource's namespace
// (key "<eventSource>.<event>", the tick's event data) and, with catchup, publishes the ticks
// missed while nothing ran.
type EventPersistence struct {
	Catchup   *CatchupConfiguration `json:"catchup,omitempty"`
	ConfigMap *ConfigMapPersistence `json:"configMap,omitempty"`
}

// CatchupConfiguration: on start, publish the ticks since the last persisted one, going back
// at most MaxDuration (a Go duration; no limit when empty).
type CatchupConfiguration struct {
	Enabled     bool   `json:"enabled,omitempty"`
	MaxDuration string `json:"maxDuration,omitempty"`
}

// ConfigMapPersistence names the ConfigMap the last tick is kept in.
type ConfigMapPersistence struct {
	Name             string `json:"name,omitempty"`
	CreateIfNotExist bool   `json:"createIfNotExist,omitempty"`
}

// OwnedRepositories names repositories of one owner (GitHub, Gitea).
type OwnedRepositories struct {
	Owner string   `json:"owner"`
	Names []string `json:"names"`
}

// GitHubSource is a GitHub (or Gitea) webhook event.
type GitHubSource struct {
	Webhook            *WebhookContext     `json:"webhook"`
	Repositories       []OwnedRepositories `json:"repositories,omitempty"`
	Owner              string              `json:"owner,omitempty"`
	Repository         string              `json:"repository,omitempty"`
	Organizations      []string            `json:"organizations,omitempty"`
	Events             []string            `json:"events,omitempty"`
	WebhookSecret      *SecretKeySelector  `json:"webhookSecret,omitempty"`
	APIToken           *SecretKeySelector  `json:"apiToken,omitempty"`
	Active             bool                `json:"active,omitempty"`
	ContentType        string              `json:"contentType,omitempty"`
	Insecure           bool                `json:"insecure,omitempty"`
	DeleteHookOnFinish bool                `json:"deleteHookOnFinish,omitempty"`
	GithubBaseURL      string              `json:"githubBaseURL,omitempty"`
	GithubUploadURL    string              `json:"githubUploadURL,omitempty"`
	Metadata           map[string]string   `json:"metadata,omitempty"`
	Filter             *EventSourceFilter  `json:"filter,omitempty"`
}

// GitLabSource is a GitLab webhook event.
type GitLabSource struct {
	Webhook               *WebhookContext    `json:"webhook"`
	ProjectID             string             `json:"projectID,omitempty"`
	Projects              []string           `json:"projects,omitempty"`
	Groups                []string           `json:"groups,omitempty"`
	Events                []string           `json:"events,omitempty"`
	AccessToken           *SecretKeySelector `json:"accessToken,omitempty"`
	SecretToken           *SecretKeySelector `json:"secretToken,omitempty"`
	EnableSSLVerification bool               `json:"enableSSLVerification,omitempty"`
	GitlabBaseURL         string             `json:"gitlabBaseURL,omitempty"`
	DeleteHookOnFinish    bool               `json:"deleteHookOnFinish,omitempty"`
	Metadata              map[string]string  `json:"metadata,omitempty"`
	Filter                *EventSourceFilter `json:"filter,omitempty"`
}

// BitbucketRepository names a Bitbucket Cloud repository.
type BitbucketRepository struct {
	Owner          string `json:"owner"`
	RepositorySlug string `json:"repositorySlug"`
}

// BitbucketSource is a Bitbucket Cloud webhook event. Argo's has no secret (Bitbucket Cloud
// signed no webhooks then); Freshet requires webhookSecret, as X-Hub-Signature is verified.
type BitbucketSource struct {
	Webhook            *WebhookContext       `json:"webhook"`
	Owner              string                `json:"owner,omitempty"`
	ProjectKey         string                `json:"projectKey,omitempty"`
	RepositorySlug     string                `json:"repositorySlug,omitempty"`
	Repositories       []BitbucketRepository `json:"repositories,omitempty"`
	Events             []string              `json:"events,omitempty"`
	WebhookSecret      *SecretKeySelector    `json:"webhookSecret,omitempty"`
	Auth               json.RawMessage       `json:"auth,omitempty"`
	DeleteHookOnFinish bool                  `json:"deleteHookOnFinish,omitempty"`
	Metadata           map[string]string     `json:"metadata,omitempty"`
	Filter             *EventSourceFilter    `json:"filter,omitempty"`
}

// ResourceSource watches a Kubernetes resource (Argo's ResourceEventSource): the runtime's
// connection to its cluster, acting as the EventSource's service account.
type ResourceSource struct {
	// Namespace is where the objects are watched; empty: every namespace.
	Namespace  string            `json:"namespace,omitempty"`
	Group      string            `json:"group,omitempty"`
	Version    string            `json:"version"`
	Resource   string            `json:"resource"`
	EventTypes []string          `json:"eventTypes"`
	Filter     *ResourceFilter   `json:"filter,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// ResourceFilter narrows a resource source's objects.
type ResourceFilter struct {
	// Prefix: the object's name starts with it.
	Prefix string `json:"prefix,omitempty"`
	// Labels: a label selector, one requirement per item.
	Labels []Selector `json:"labels,omitempty"`
	// Fields: each key a gjson path into the object, its value a regular expression.
	Fields []Selector `json:"fields,omitempty"`
	// CreatedBy: objects created after this time (RFC 3339) are left out.
	CreatedBy string `json:"createdBy,omitempty"`
	// AfterStart: events that happened before the source started are left out.
	AfterStart bool `json:"afterStart,omitempty"`
}

// Selector is one requirement of a resource filter.
type Selector struct {
	Key       string `json:"key"`
	Operation string `json:"operation,omitempty"`
	Value     string `json:"value"`
}

// TLSConfig is how a source's or a trigger's connection is secured: the CA to trust, a client
// certificate, or no verification, its certificates in Secrets.
type TLSConfig struct {
	CACertSecret       *SecretKeySelector `json:"caCertSecret,omitempty"`
	ClientCertSecret   *SecretKeySelector `json:"clientCertSecret,omitempty"`
	ClientKeySecret    *SecretKeySelector `json:"clientKeySecret,omitempty"`
	InsecureSkipVerify bool               `json:"insecureSkipVerify,omitempty"`
	Enabled            bool               `json:"enabled,omitempty"`
}

// BasicAuth is a user name and password in Secrets.
type BasicAuth struct {
	Username *SecretKeySelector `json:"username,omitempty"`
	Password *SecretKeySelector `json:"password,omitempty"`
}

// NATSAuth is how a NATS source or trigger authenticates: one of a user and password, a token,
// an NKey seed or a credentials file, each from a Secret.
type NATSAuth struct {
	Basic      *BasicAuth         `json:"basic,omitempty"`
	Token      *SecretKeySelector `json:"token,omitempty"`
	NKey       *SecretKeySelector `json:"nkey,omitempty"`
	Credential *SecretKeySelector `json:"credential,omitempty"`
}

// NATSSource subscribes to a subject of a NATS server (core NATS, not JetStream).
type NATSSource struct {
	URL     string `json:"url"`
	Subject string `json:"subject"`
	// ConnectionBackoff paces the first connection's attempts and gives up after its steps;
	// once connected, the client reconnects by itself, forever.
	ConnectionBackoff *Backoff           `json:"connectionBackoff,omitempty"`
	JSONBody          bool               `json:"jsonBody,omitempty"`
	TLS               *TLSConfig         `json:"tls,omitempty"`
	Metadata          map[string]string  `json:"metadata,omitempty"`
	Auth              *NATSAuth          `json:"auth,omitempty"`
	Filter            *EventSourceFilter `json:"filter,omitempty"`
	Queue             *string            `json:"queue,omitempty"`
}

// S3Bucket names a bucket (Key is read and not used by the minio source).
type S3Bucket struct {
	Key  string `json:"key,omitempty"`
	Name string `json:"name"`
}

// S3Filter narrows bucket notifications by object key.
type S3Filter struct {
	Prefix string `json:"prefix"`
	Suffix string `json:"suffix"`
}

// MinioSource listens to an S3-compatible server's bucket notifications (Argo's S3Artifact).
type MinioSource struct {
	Endpoint      string             `json:"endpoint"`
	Bucket        *S3Bucket          `json:"bucket"`
	Region        string             `json:"region,omitempty"`
	Insecure      bool               `json:"insecure,omitempty"`
	AccessKey     *SecretKeySelector `json:"accessKey"`
	SecretKey     *SecretKeySelector `json:"secretKey"`
	Events        []string           `json:"events,omitempty"`
	Filter        *S3Filter          `json:"filter,omitempty"`
	Metadata      map[string]string  `json:"metadata,omitempty"`
	CACertificate *SecretKeySelector `json:"caCertificate,omitempty"`
}

// RedisSource subscribes to channels of a Redis server (pub/sub).
type RedisSource struct {
	HostAddress string             `json:"hostAddress"`
	Password    *SecretKeySelector `json:"password,omitempty"`
	Username    string             `json:"username,omitempty"`
	// Namespace is read and not used (Argo's is deprecated too).
	Namespace string             `json:"namespace,omitempty"`
	DB        int32              `json:"db,omitempty"`
	Channels  []string           `json:"channels"`
	TLS       *TLSConfig         `json:"tls,omitempty"`
	Metadata  map[string]string  `json:"metadata,omitempty"`
	Filter    *EventSourceFilter `json:"filter,omitempty"`
	JSONBody  bool               `json:"jsonBody,omitempty"`
}

// MQTTSource subscribes to a topic of an MQTT broker.
type MQTTSource struct {
	URL      string `json:"url"`
	Topic    string `json:"topic"`
	ClientID string `json:"clientId"`
	// ConnectionBackoff paces the first connection's attempts and gives up after its steps;
	// once connected, the client reconnects by itself, forever.
	ConnectionBackoff *Backoff           `json:"connectionBackoff,omitempty"`
	JSONBody          bool               `json:"jsonBody,omitempty"`
	TLS               *TLSConfig         `json:"tls,omitempty"`
	Metadata          map[string]string  `json:"metadata,omitempty"`
	Filter            *EventSourceFilter `json:"filter,omitempty"`
	Auth              *BasicAuth         `json:"auth,omitempty"`
}

// Sensor is Argo Events' Sensor.
type Sensor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              SensorSpec `json:"spec"`
	Status            Status     `json:"status,omitempty"`
}

// SensorSpec: the events a Sensor waits for and what it then does.
type SensorSpec struct {
	Dependencies         []Dependency      `json:"dependencies"`
	Triggers             []Trigger         `json:"triggers"`
	Template             *SensorTemplate   `json:"template,omitempty"`
	EventBusName         string            `json:"eventBusName,omitempty"`
	Replicas             *int32            `json:"replicas,omitempty"`
	ErrorOnFailedRound   bool              `json:"errorOnFailedRound,omitempty"`
	RevisionHistoryLimit *int32            `json:"revisionHistoryLimit,omitempty"`
	LoggingFields        map[string]string `json:"loggingFields,omitempty"`
}

// SensorTemplate is the Sensor's pod template in Argo; here its service account is who the
// triggers act as.
type SensorTemplate struct {
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// Dependency is one event a Sensor waits for.
type Dependency struct {
	Name                   string          `json:"name"`
	EventSourceName        string          `json:"eventSourceName"`
	EventName              string          `json:"eventName"`
	Filters                *EventFilters   `json:"filters,omitempty"`
	FiltersLogicalOperator string          `json:"filtersLogicalOperator,omitempty"`
	Transform              json.RawMessage `json:"transform,omitempty"`
}

// EventFilters are a dependency's filters.
type EventFilters struct {
	Time                *TimeFilter   `json:"time,omitempty"`
	Context             *EventContext `json:"context,omitempty"`
	Data                []DataFilter  `json:"data,omitempty"`
	Exprs               []ExprFilter  `json:"exprs,omitempty"`
	DataLogicalOperator string        `json:"dataLogicalOperator,omitempty"`
	ExprLogicalOperator string        `json:"exprLogicalOperator,omitempty"`
	Script              string        `json:"script,omitempty"`
}

// TimeFilter passes events whose time of day (UTC) is in [Start, Stop).
type TimeFilter struct {
	Start string `json:"start"`
	Stop  string `json:"stop"`
}

// DataFilter compares a value of the event's data.
type DataFilter struct {
	Path       string   `json:"path"`
	Type       string   `json:"type"`
	Value      []string `json:"value"`
	Comparator string   `json:"comparator,omitempty"`
	Template   string   `json:"template,omitempty"`
}

// ExprFilter is a boolean expression over fields of the event's data.
type ExprFilter struct {
	Expr   string         `json:"expr"`
	Fields []PayloadField `json:"fields"`
}

// PayloadField names a value of the event's data for an ExprFilter.
type PayloadField struct {
	Path string `json:"path"`
	Name string `json:"name"`
}

// Trigger is what a Sensor does once its conditions hold.
type Trigger struct {
	Template   *TriggerTemplate   `json:"template"`
	Parameters []TriggerParameter `json:"parameters,omitempty"`
	// Policy, RetryStrategy and RateLimit are kept as written and read by compileTriggerRun
	// (which names the field of a bad value).
	Policy        json.RawMessage `json:"policy,omitempty"`
	RetryStrategy json.RawMessage `json:"retryStrategy,omitempty"`
	RateLimit     json.RawMessage `json:"rateLimit,omitempty"`
	AtLeastOnce   bool            `json:"atLeastOnce,omitempty"`
	// DlqTrigger runs, with the same events, when the trigger still fails after its
	// retryStrategy and AtLeastOnce is set (trigdlq.go).
	DlqTrigger *Trigger `json:"dlqTrigger,omitempty"`
}

// TriggerTemplate: the trigger's name, conditions and kind.
type TriggerTemplate struct {
	Name            string               `json:"name"`
	Conditions      string               `json:"conditions,omitempty"`
	ConditionsReset json.RawMessage      `json:"conditionsReset,omitempty"`
	K8s             *StandardK8sTrigger  `json:"k8s,omitempty"`
	ArgoWorkflow    *ArgoWorkflowTrigger `json:"argoWorkflow,omitempty"`
	HTTP            *HTTPTrigger         `json:"http,omitempty"`
	Log             *LogTrigger          `json:"log,omitempty"`
	NATS            *NATSTrigger         `json:"nats,omitempty"`
	Slack           *SlackTrigger        `json:"slack,omitempty"`
	// Other kinds (awsLambda, kafka, slack, …) are refused by name.
	Other map[string]json.RawMessage `json:"-"`
}

// ArtifactLocation is where a trigger's resource comes from. Only an inline resource is built.
type ArtifactLocation struct {
	Resource  json.RawMessage `json:"resource,omitempty"`
	S3        json.RawMessage `json:"s3,omitempty"`
	Inline    *string         `json:"inline,omitempty"`
	File      json.RawMessage `json:"file,omitempty"`
	URL       json.RawMessage `json:"url,omitempty"`
	ConfigMap json.RawMessage `json:"configmap,omitempty"`
	Git       json.RawMessage `json:"git,omitempty"`
}

// StandardK8sTrigger creates (or updates, deletes) a Kubernetes object.
type StandardK8sTrigger struct {
	Source        *ArtifactLocation  `json:"source"`
	Operation     string             `json:"operation,omitempty"`
	Parameters    []TriggerParameter `json:"parameters,omitempty"`
	PatchStrategy string             `json:"patchStrategy,omitempty"`
	LiveObject    bool               `json:"liveObject,omitempty"`
}

// ArgoWorkflowTrigger submits a Workflow (operation submit), one from a CronWorkflow or a
// WorkflowTemplate (submit-from), or acts on the Workflow its source names (resubmit, retry,
// resume, suspend, terminate, stop).
type ArgoWorkflowTrigger struct {
	Source     *ArtifactLocation  `json:"source"`
	Operation  string             `json:"operation,omitempty"`
	Parameters []TriggerParameter `json:"parameters,omitempty"`
	Args       []string           `json:"args,omitempty"`
}

// HTTPTrigger sends an HTTP request.
type HTTPTrigger struct {
	URL string `json:"url"`
	// Payload builds the request's JSON body from the events (a parameter without dest is the
	// whole body).
	Payload        []TriggerParameter `json:"payload,omitempty"`
	TLS            *TLSConfig         `json:"tls,omitempty"`
	Method         string             `json:"method,omitempty"`
	Parameters     []TriggerParameter `json:"parameters,omitempty"`
	Timeout        int64              `json:"timeout,omitempty"`
	BasicAuth      *BasicAuth         `json:"basicAuth,omitempty"`
	Headers        map[string]string  `json:"headers,omitempty"`
	SecureHeaders  []*SecureHeader    `json:"secureHeaders,omitempty"`
	DynamicHeaders []TriggerParameter `json:"dynamicHeaders,omitempty"`
	Host           string             `json:"host,omitempty"`
}

// SecureHeader is a request header whose value is in a Secret or a ConfigMap.
type SecureHeader struct {
	Name      string           `json:"name,omitempty"`
	ValueFrom *ValueFromSource `json:"valueFrom,omitempty"`
}

// ValueFromSource names a Secret's or a ConfigMap's key.
type ValueFromSource struct {
	SecretKeyRef    *SecretKeySelector    `json:"secretKeyRef,omitempty"`
	ConfigMapKeyRef *ConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
}

// ConfigMapKeySelector names a key of a ConfigMap in the resource's namespace.
type ConfigMapKeySelector struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// LogTrigger writes the events in the runtime's log, at most once per IntervalSeconds.
type LogTrigger struct {
	IntervalSeconds uint64 `json:"intervalSeconds,omitempty"`
}

// NATSTrigger publishes a message built from the events on a NATS subject.
type NATSTrigger struct {
	URL        string             `json:"url"`
	Subject    string             `json:"subject"`
	Payload    []TriggerParameter `json:"payload,omitempty"`
	Parameters []TriggerParameter `json:"parameters,omitempty"`
	TLS        *TLSConfig         `json:"tls,omitempty"`
	Auth       *NATSAuth          `json:"auth,omitempty"`
}

// TriggerParameter sets Dest of the resource (or of the trigger template) from an event.
type TriggerParameter struct {
	Src       *TriggerParameterSource `json:"src"`
	Dest      string                  `json:"dest"`
	Operation string                  `json:"operation,omitempty"`
}

// TriggerParameterSource is where a parameter's value comes from.
type TriggerParameterSource struct {
	DependencyName  string  `json:"dependencyName"`
	ContextKey      string  `json:"contextKey,omitempty"`
	ContextTemplate string  `json:"contextTemplate,omitempty"`
	DataKey         string  `json:"dataKey,omitempty"`
	DataTemplate    string  `json:"dataTemplate,omitempty"`
	Value           *string `json:"value,omitempty"`
	UseRawData      bool    `json:"useRawData,omitempty"`
}

// EventContext is the CloudEvents context of an event, as Argo Events gives it to Sensors.
type EventContext struct {
	ID              string      `json:"id,omitempty"`
	Source          string      `json:"source,omitempty"`
	SpecVersion     string      `json:"specversion,omitempty"`
	Type            string      `json:"type,omitempty"`
	DataContentType string      `json:"datacontenttype,omitempty"`
	Subject         string      `json:"subject,omitempty"`
	Time            metav1.Time `json:"time,omitempty"`
}

// Event is what goes over the bus: Argo's CloudEvent, its data JSON.
type Event struct {
	Context EventContext    `json:"context"`
	Data    json.RawMessage `json:"data"`
}
