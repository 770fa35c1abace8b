package executor

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// ImageBuilder is implemented by executors that build and push container images (the
// container executor). The runner fails build and push steps before the build starts on an
// executor without it.
//
// Like Run, Build and Push report what went wrong with the user's input (a Dockerfile that
// fails, a registry that refuses the credentials, an image that does not exist) in the
// result's Message, and return an error only for infrastructure failures. Output (the engine's
// build and push progress) goes to out as it arrives; the one-line Message is written there too,
// as a notice.
type ImageBuilder interface {
	// Build builds b in ws and tags the result with b.Tags.
	Build(ctx context.Context, ws Workspace, b BuildSpec, out io.Writer) (BuildResult, error)
	// Push pushes the local image p.Source to p.Target with the credentials of p.Registry.
	Push(ctx context.Context, p PushSpec, out io.Writer) (PushResult, error)
}

// BuildSpec is what a build step asks the engine to build.
type BuildSpec struct {
	Name string // the step's name, for messages
	// ContextDir is the build context: a directory in the workspace as steps see it
	// (Workspace.Path or below).
	ContextDir string
	// Dockerfile is the Dockerfile's path, relative to ContextDir (default "Dockerfile").
	Dockerfile string
	// DockerfileContent, when set, is the Dockerfile itself (an inline Dockerfile), used
	// instead of a file of the context; Dockerfile is then ignored.
	DockerfileContent string
	// CacheFrom are images whose layers the build may reuse.
	CacheFrom []string
	// CacheTo is a repository the build pushes its layer cache to (buildah's --cache-to); ""
	// for none.
	CacheTo string
	// Tags are the full references the image gets (registry/repository:tag), the first one
	// being the image's name for messages.
	Tags      []string
	BuildArgs []EnvVar
	Target    string
	Platform  string // one os/arch[/variant]; empty: the engine's (the runner builds several one by one)
	NoCache   bool
	// Registries are the credentials for the base images' registries.
	Registries []Registry
	Timeout    time.Duration // 0: no limit
}

// Context checks b's build context and Dockerfile for a workspace seen by steps at volumePath:
// the context directory (cleaned) must be inside the workspace, and the Dockerfile (default
// "Dockerfile", cleaned) a relative path inside the context — unless b has an inline Dockerfile,
// in which case dockerfile is "". msg says what is wrong, for the step's one-line failure.
func (b BuildSpec) Context(volumePath string) (dir, dockerfile, msg string) {
	dir = path.Clean(b.ContextDir)
	if dir != volumePath && !strings.HasPrefix(dir, volumePath+"/") {
		return "", "", fmt.Sprintf("the build context %s is outside the workspace (%s)", b.ContextDir, volumePath)
	}
	if b.DockerfileContent != "" {
		return dir, "", ""
	}
	dockerfile = b.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	dockerfile = path.Clean(dockerfile)
	if path.IsAbs(dockerfile) || dockerfile == ".." || strings.HasPrefix(dockerfile, "../") {
		return "", "", fmt.Sprintf("dockerfile %s must be a path inside the build context %s", b.Dockerfile, dir)
	}
	return dir, dockerfile, ""
}

// InlineDockerfileName is the name an inline Dockerfile (BuildSpec.DockerfileContent) gets in a
// build's context, replacing a file of that name.
const InlineDockerfileName = ".freshet-inline.Dockerfile"

// BuildResult is how a build ended.
type BuildResult struct {
	ImageID  string // the built image's ID (sha256:…) when it succeeded
	Message  string // why it failed; empty when it succeeded
	Canceled bool
	TimedOut bool
	Duration time.Duration
}

// PushSpec is a push of a local image to a registry.
type PushSpec struct {
	Name     string // the step's name, for messages
	Source   string // a local image: ID or reference
	Target   string // registry/repository:tag to push to
	Registry Registry
}

// PushResult is how a push ended: the digest and size as the registry stored the image.
type PushResult struct {
	Digest  string // sha256:… of the manifest
	Size    int64  // the config and every layer, compressed
	Message string // why it failed; empty when it succeeded
}

// ServiceRunner is implemented by executors that run service containers beside steps (the
// container executor): Codefresh's `services` compositions.
type ServiceRunner interface {
	// StartServices starts set's containers on a network of their own, each reachable there by
	// its name, and runs the readiness check until it passes. It returns the network's name,
	// which steps join (Step.Networks). On failure (an image that cannot be pulled, a service
	// that exits, a readiness check that does not pass in time) it removes what it started and
	// returns a message naming the service, with a nil error; errors are infrastructure
	// failures.
	StartServices(ctx context.Context, ws Workspace, set ServiceSet, out io.Writer) (network, message string, err error)
	// StopServices stops and removes the services started on network, and the network.
	StopServices(ctx context.Context, ws Workspace, network string) error
}

// ServiceSet is one composition of services and its readiness check.
type ServiceSet struct {
	Name      string // what it belongs to (a step's name, or "pipeline"), for names and messages
	Services  []Service
	Readiness *Readiness
	// Registries are the credentials for the services' images.
	Registries []Registry
}

// Service is one service container.
type Service struct {
	Name       string // its host name on the network
	Image      string
	Env        []EnvVar
	EntryPoint []string
	Cmd        []string
	Ports      []int // the ports it serves (informational: services are reached on the network)
	PullPolicy string
	WorkingDir string // where its command starts; empty: the image's
	// Workspace, when set, is where the build's workspace is mounted in it (compositions'
	// add_flow_volume_to_composition); empty: it is not mounted.
	Workspace string
}

// Readiness is a check run until it succeeds before the step starts: a step of its own on the
// services' network.
type Readiness struct {
	Image        string
	Commands     []string
	Shell        string
	Env          []EnvVar
	Timeout      time.Duration // how long to keep trying (default DefaultReadinessTimeout)
	Period       time.Duration // pause between tries (default DefaultReadinessPeriod)
	InitialDelay time.Duration // before the first try
}

// Readiness defaults.
const (
	DefaultReadinessTimeout = 60 * time.Second
	DefaultReadinessPeriod  = time.Second
)
