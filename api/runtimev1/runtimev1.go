// Package runtimev1 is the runtime protocol, version 1: how `freshet runtime` reports to the
// control plane. Like the runner protocol it is ConnectRPC with JSON messages (see
// api/runnerv1.Codec), authenticated by the runtime's token ("Authorization: Bearer frt_…"),
// and the runtime always dials.
package runtimev1

import "time"

// ProtocolVersion is this package's protocol version.
const ProtocolVersion = 1

// Service and procedure paths.
const (
	ServiceName        = "freshet.runtime.v1.RuntimeService"
	ProcedureHeartbeat = "/" + ServiceName + "/Heartbeat"
)

// HeartbeatInterval is how often a runtime reports; the control plane marks a runtime
// disconnected after DisconnectAfter without a heartbeat (or at once when its tunnel drops).
const (
	HeartbeatInterval = 5 * time.Second
	DisconnectAfter   = 3 * HeartbeatInterval
)

// Component health values.
const (
	ComponentHealthy  = "healthy"
	ComponentDegraded = "degraded"
	ComponentDisabled = "disabled" // not configured; does not make the runtime degraded
)

// Component is one part of a runtime and its health.
type Component struct {
	Name    string `json:"name"`
	Health  string `json:"health"`
	Message string `json:"message,omitempty"`
	Version string `json:"version,omitempty"`
}

// Cluster is a cluster the runtime deploys to. Its credentials never leave the runtime.
type Cluster struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Health string `json:"health,omitempty"`
}

// HeartbeatRequest announces the runtime's state.
type HeartbeatRequest struct {
	Protocol     int         `json:"protocol"`
	Version      string      `json:"version"`
	AccessMode   string      `json:"accessMode"`
	IngressURL   string      `json:"ingressUrl,omitempty"`
	Capabilities []string    `json:"capabilities"` // "cd", "ci", "workflows"
	Components   []Component `json:"components"`
	Clusters     []Cluster   `json:"clusters,omitempty"`
	GitSources   []string    `json:"gitSources,omitempty"`
}

// HeartbeatResponse tells the runtime what the control plane knows of it.
type HeartbeatResponse struct {
	RuntimeID string `json:"runtimeId"`
	Name      string `json:"name"`
	Account   string `json:"account"`
	Type      string `json:"type"` // hybrid or hosted
	Status    string `json:"status"`
}
