// Package runnerv1 is the runner protocol, version 1: the contract between the control plane
// and `freshet runner`. Both sides import it; the runner imports nothing else of the control
// plane.
//
// Transport: ConnectRPC (connectrpc.com/connect) over HTTP/2 (HTTP/1.1 works too), with JSON
// messages encoded by Codec. The runner authenticates every call with its runner token as
// "Authorization: Bearer frn_…". The runner always dials; the control plane never does.
//
//   - Connect opens a server stream on which the control plane pushes Offer, Cancel, Drain and
//     Ping messages. Offers are hints: nothing is assigned until the runner calls Accept.
//   - Accept claims a queued build under a lease and returns the whole job. Exactly one Accept
//     of a build succeeds.
//   - Heartbeat renews the runner's leases (every LeaseTTL/3); an answer that a lease is lost
//     means: stop that job now. A runner that cannot renew a lease before it expires stops the
//     job by itself, so a requeued build never runs twice at once.
//   - UpdateStep, AppendLog and Complete report progress under the lease. AppendLog carries the
//     byte offset of the chunk, so a retried upload is stored once.
//   - Poll is the long-poll fallback for proxies that break streaming: it holds the request up
//     to PollWait and answers with the next message.
package runnerv1

import (
	"encoding/json"
	"time"
)

// ProtocolVersion is this package's protocol version. The control plane accepts runners whose
// version is between MinProtocolVersion and ProtocolVersion.
const (
	ProtocolVersion    = 1
	MinProtocolVersion = 1
)

// Service and procedure paths.
const (
	ServiceName         = "freshet.runner.v1.RunnerService"
	ProcedureConnect    = "/" + ServiceName + "/Connect"
	ProcedurePoll       = "/" + ServiceName + "/Poll"
	ProcedureAccept     = "/" + ServiceName + "/Accept"
	ProcedureHeartbeat  = "/" + ServiceName + "/Heartbeat"
	ProcedureUpdateStep = "/" + ServiceName + "/UpdateStep"
	ProcedureAppendLog  = "/" + ServiceName + "/AppendLog"
	ProcedureComplete   = "/" + ServiceName + "/Complete"
)

// Timing defaults.
const (
	LeaseTTL     = 30 * time.Second
	PingInterval = 15 * time.Second
	PollWait     = 25 * time.Second
)

// Codec encodes protocol messages as JSON for connect (registered under the name "json").
type Codec struct{}

// Name implements connect.Codec.
func (Codec) Name() string { return "json" }

// Marshal implements connect.Codec.
func (Codec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal implements connect.Codec.
func (Codec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// ConnectRequest opens the push stream.
type ConnectRequest struct {
	Protocol    int               `json:"protocol"`
	Version     string            `json:"version"`
	Hostname    string            `json:"hostname"`
	Labels      map[string]string `json:"labels,omitempty"`
	Executors   []string          `json:"executors"`
	Concurrency int               `json:"concurrency"`
	Running     []string          `json:"running,omitempty"` // builds the runner still runs (after a reconnect)
}

// MessageKind says what a ServerMessage carries.
type MessageKind string

// Message kinds.
const (
	KindOffer  MessageKind = "offer"
	KindCancel MessageKind = "cancel"
	KindDrain  MessageKind = "drain"
	KindPing   MessageKind = "ping"
	KindNone   MessageKind = "none" // Poll timed out with nothing to say
)

// ServerMessage is one message from the control plane.
type ServerMessage struct {
	Kind    MessageKind `json:"kind"`
	BuildID string      `json:"buildId,omitempty"`
	Reason  string      `json:"reason,omitempty"`
}

// PollRequest asks for the next message without a stream.
type PollRequest struct {
	ConnectRequest
	// NoWait answers at once (KindNone when there is nothing), for runners that poll on an
	// interval instead of long-polling.
	NoWait bool `json:"noWait,omitempty"`
}

// AcceptRequest claims an offered build.
type AcceptRequest struct {
	BuildID string `json:"buildId"`
}

// Job is everything a runner needs to run a build.
type Job struct {
	BuildID     string            `json:"buildId"`
	LeaseID     string            `json:"leaseId"`
	LeaseExpiry time.Time         `json:"leaseExpiry"`
	Number      int64             `json:"number"`
	Pipeline    string            `json:"pipeline"` // project/name
	SpecYAML    string            `json:"specYaml"`
	Variables   map[string]string `json:"variables"` // CF_* and user variables, already resolved
	Secrets     []string          `json:"secrets"`   // values to mask in the log
	Attempt     int               `json:"attempt"`
	LogOffset   int64             `json:"logOffset"` // where the log continues
	Steps       []StepState       `json:"steps,omitempty"`
	// Registries are the container registries the build may pull from and push to: the
	// registry contexts its pipeline uses and the account's default registry. Their passwords
	// are among Secrets.
	Registries []Registry `json:"registries,omitempty"`
	// StepTypes are the definitions (step.yaml texts) of the typed plugin steps SpecYAML names,
	// keyed by the type as written (NAME or NAME:VERSION), as the control plane read them from
	// its step catalogue; the runner compiles SpecYAML with them (spec.ParseStepTypeSet).
	StepTypes map[string]string `json:"stepTypes,omitempty"`
	// GitContexts are the git providers git-clone steps may clone through (git: NAME): the
	// git contexts its pipeline uses. Their tokens are among Secrets.
	GitContexts []GitContext `json:"gitContexts,omitempty"`
	// Clusters are the kubernetes contexts the build's deploy and helm steps name (checked
	// before the build started to be ones its pipeline may use), and HelmRepos the pipeline's
	// helm-repository contexts. Their tokens, kubeconfigs and passwords are among Secrets.
	Clusters  []Cluster  `json:"clusters,omitempty"`
	HelmRepos []HelmRepo `json:"helmRepos,omitempty"`
}

// GitContext is a git provider a build may clone from with a token: a git context of its
// account.
type GitContext struct {
	Name     string `json:"name"`     // the context's name, as git-clone steps name it (git: NAME)
	Provider string `json:"provider"` // github, gitlab, gitea or bitbucket
	// CloneURL is what a repository's owner/name is appended to, with ".git", to clone it:
	// https://github.com, https://gitlab.example.com.
	CloneURL string `json:"cloneUrl"`
	Username string `json:"username"` // who git authenticates as; the token is the password
	Token    string `json:"token"`
}

// Cluster is a Kubernetes cluster a build deploys to: a kubernetes context of its account.
type Cluster struct {
	Name       string `json:"name"`                 // the context's name, as steps name it (cluster: NAME)
	Kubeconfig string `json:"kubeconfig,omitempty"` // a kubeconfig (its current context), or:
	Server     string `json:"server,omitempty"`     // the API server's URL
	Token      string `json:"token,omitempty"`      // a bearer token
	CA         string `json:"ca,omitempty"`         // PEM certificates to trust for Server
}

// HelmRepo is a Helm chart repository a build may read charts from.
type HelmRepo struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	CA       string `json:"ca,omitempty"`
}

// Registry is a container registry a build may use: a registry context of its account.
type Registry struct {
	Name     string `json:"name"`               // the context's name, as steps name it (registry: NAME)
	URL      string `json:"url"`                // host[:port] and an optional path prefix, e.g. ghcr.io/acme
	Username string `json:"username,omitempty"` // empty: anonymous, or a token in Password
	Password string `json:"password,omitempty"` // a password or token
	CA       string `json:"ca,omitempty"`       // PEM certificates to trust, for a registry with a private CA
	Default  bool   `json:"default,omitempty"`  // the account's default registry: where build steps push unless told otherwise
}

// Image is an image a step pushed, as the registry stored it.
type Image struct {
	Registry   string   `json:"registry"`   // the registry context's name
	Repository string   `json:"repository"` // the full repository, e.g. ghcr.io/acme/app
	Tags       []string `json:"tags"`
	Digest     string   `json:"digest"` // the manifest digest, sha256:…
	Size       int64    `json:"size"`   // bytes: the config and every layer, compressed
}

// StepState is a step's state as the control plane knows it.
type StepState struct {
	Name       string    `json:"name"`
	Stage      string    `json:"stage,omitempty"`
	Position   int       `json:"position"`
	Status     string    `json:"status"` // pending, running, success, failed, skipped, terminated, pending-approval
	ExitCode   int       `json:"exitCode"`
	Attempts   int       `json:"attempts"`
	Message    string    `json:"message,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// HeartbeatRequest renews leases.
type HeartbeatRequest struct {
	Leases []Lease `json:"leases"`
}

// Lease names a build and the lease the runner holds on it.
type Lease struct {
	BuildID string `json:"buildId"`
	LeaseID string `json:"leaseId"`
}

// HeartbeatResponse says which leases were renewed until when, and which builds to stop.
type HeartbeatResponse struct {
	Expiry   time.Time         `json:"expiry"`
	Lost     []string          `json:"lost,omitempty"`     // builds whose lease is gone: stop them now
	Cancel   []string          `json:"cancel,omitempty"`   // builds a user cancelled: terminate them
	Approved map[string]string `json:"approved,omitempty"` // build → step approved or denied ("approved"/"denied")
}

// StepUpdate reports a step's state, with the images it pushed once it has finished.
type StepUpdate struct {
	Lease
	Step   StepState `json:"step"`
	Images []Image   `json:"images,omitempty"`
}

// LogChunk is a piece of a build's log starting at Offset.
type LogChunk struct {
	Lease
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
}

// LogAck says how long the stored log is.
type LogAck struct {
	Size int64 `json:"size"`
}

// CompleteRequest ends a build.
type CompleteRequest struct {
	Lease
	Status string `json:"status"` // success, failed, terminated
	Reason string `json:"reason,omitempty"`
}

// Empty is an empty message.
type Empty struct{}
