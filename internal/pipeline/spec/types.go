package spec

import (
	"encoding/json"
	"fmt"
	"time"
)

// Version is the only pipeline version the dialect has.
const Version = "1.0"

// DefaultStage is the stage of steps that name none, in a pipeline that declares stages.
const DefaultStage = "default"

// Mode says how the steps of a pipeline (or of a hook) are scheduled.
type Mode string

// Modes.
const (
	// Sequential runs steps one after the other in the order they are written; each step's
	// when is evaluated once, just before it would run.
	Sequential Mode = "sequential"
	// Parallel starts every step whose when is satisfied, re-evaluating the conditions of the
	// remaining steps as steps finish, until nothing more can start.
	Parallel Mode = "parallel"
)

// StepType is the kind of a step.
type StepType string

// Step types.
const (
	TypeFreestyle       StepType = "freestyle"
	TypeGitClone        StepType = "git-clone"
	TypeBuild           StepType = "build"
	TypePush            StepType = "push"
	TypeParallel        StepType = "parallel"
	TypePendingApproval StepType = "pending-approval"
	TypeDeploy          StepType = "deploy" // deploy.go
	TypeHelm            StepType = "helm"   // deploy.go
)

// stepTypes lists the step types, in the order messages present them.
var stepTypes = []StepType{TypeFreestyle, TypeGitClone, TypeBuild, TypePush, TypeParallel, TypePendingApproval, TypeComposition, TypeLaunchComposition, TypeDeploy, TypeHelm}

// Pipeline is a compiled, validated pipeline.
type Pipeline struct {
	Version string `json:"version"`
	Mode    Mode   `json:"mode"`
	// Stages in display order. Stages group steps for display only; they do not change the
	// order of execution. When stages are declared and some step names none, DefaultStage is
	// added first.
	Stages []string `json:"stages,omitempty"`
	// FailFast is the root fail_fast (default true): the default of every step's FailFast.
	FailFast bool `json:"failFast"`
	// StrictFailFast, when true, makes the build fail if any step failed, even a step with
	// fail_fast: false (which then only lets the following steps run).
	StrictFailFast bool `json:"strictFailFast,omitempty"`
	// SuccessCriteria, when set, decides the build's result instead of "no step failed".
	SuccessCriteria *SuccessCriteria `json:"successCriteria,omitempty"`
	Steps           []*Step          `json:"steps"`
	Hooks           Hooks            `json:"hooks,omitzero"`
	// Services run beside every step of the build (the root's services).
	Services *Services `json:"services,omitempty"`
	// Warnings are the non-fatal problems Lint reports, kept so an API can show them.
	Warnings []Issue `json:"warnings,omitempty"`
}

// Step is one compiled step. Fields that do not apply to a step's Type are empty.
// String fields keep ${{VAR}} references as written: the runner interpolates them when the
// step starts (see Interpolate).
type Step struct {
	Name        string   `json:"name"`
	Path        string   `json:"path"` // unique field path: steps.tests.steps.unit, hooks.on_finish.steps.notify
	Type        StepType `json:"type"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Stage       string   `json:"stage,omitempty"`
	Line        int      `json:"line"`
	// FailFast is resolved: the step's own fail_fast, else the pipeline's. When false, the
	// step's failure does not stop the pipeline (or its parallel group). Hook steps other than
	// on_elected ones always have FailFast false: they never change the build's result.
	FailFast bool `json:"failFast"`
	// StrictFailFast, when true, marks the build failed if this step fails even though its
	// FailFast is false (nil: the pipeline's StrictFailFast decides).
	StrictFailFast *bool    `json:"strictFailFast,omitempty"`
	When           When     `json:"when,omitzero"`
	Retry          Retry    `json:"retry,omitzero"`
	Timeout        Duration `json:"timeout,omitzero"` // zero: no limit
	Hooks          Hooks    `json:"hooks,omitzero"`

	// freestyle (and the image/commands part of hook steps)
	Image      string    `json:"image,omitempty"`
	Commands   []string  `json:"commands,omitempty"`   // shell lines, run with `set -e` in Shell
	Cmd        []string  `json:"cmd,omitempty"`        // arguments to the image's entry point
	EntryPoint []string  `json:"entryPoint,omitempty"` // replaces the image's entry point
	Shell      string    `json:"shell,omitempty"`      // sh or bash; set when Commands is
	WorkingDir string    `json:"workingDirectory,omitempty"`
	Env        []EnvVar  `json:"environment,omitempty"`
	PullPolicy string    `json:"pullPolicy,omitempty"` // Always, IfNotPresent or Never; empty: the executor's default
	Services   *Services `json:"services,omitempty"`   // service containers beside this step

	// git-clone (WorkingDir above is the parent directory of the clone)
	Repo        string       `json:"repo,omitempty"`
	Revision    string       `json:"revision,omitempty"`   // empty: the build's revision
	GitContext  string       `json:"gitContext,omitempty"` // name of a git context for credentials
	Depth       int          `json:"depth,omitempty"`      // 0: full history
	Credentials *Credentials `json:"credentials,omitempty"`

	// parallel
	Parallel        []*Step          `json:"parallel,omitempty"`
	SuccessCriteria *SuccessCriteria `json:"successCriteria,omitempty"`

	// pending-approval
	Approval *Approval `json:"approval,omitempty"`

	// build and push: compiled so a runner with an image builder can run them; a runner
	// without one fails the step with a clear message.
	Build *Build `json:"build,omitempty"`
	Push  *Push  `json:"push,omitempty"`

	// composition and launch-composition
	Composition *Composition `json:"composition,omitempty"`

	// a typed plugin step (TypePlugin)
	Plugin *PluginStep `json:"plugin,omitempty"`
	// deploy and helm (deploy.go)
	Deploy *Deploy `json:"deploy,omitempty"`
	Helm   *Helm   `json:"helm,omitempty"`
}

// EnvVar is one environment variable of a step, in the order written.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Credentials are explicit git credentials of a git-clone step.
type Credentials struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// Approval is the configuration of a pending-approval step.
type Approval struct {
	// Timeout after which FinalState is applied. DefaultApprovalTimeout when not written.
	Timeout Duration `json:"timeout"`
	// FinalState is what happens at the timeout: approved, denied or terminated.
	FinalState string `json:"finalState"`
}

// Approval defaults and final states.
const (
	DefaultApprovalTimeout = 168 * time.Hour // 7 days, as in Codefresh
	ApprovalApproved       = "approved"
	ApprovalDenied         = "denied"
	ApprovalTerminated     = "terminated"
)

// Build is what a build step asks for.
type Build struct {
	ImageName  string   `json:"imageName"`
	Tags       []string `json:"tags,omitempty"`
	Dockerfile string   `json:"dockerfile,omitempty"`
	// DockerfileContent is an inline Dockerfile (`dockerfile: {content: …}`), used instead of
	// a file of the build context.
	DockerfileContent string   `json:"dockerfileContent,omitempty"`
	BuildArgs         []EnvVar `json:"buildArguments,omitempty"`
	// CacheFrom are images whose layers the build may reuse (`cache_from`).
	CacheFrom []string `json:"cacheFrom,omitempty"`
	// TagPolicy is "original" (tags as written, the default) or "lowercase".
	TagPolicy   string `json:"tagPolicy,omitempty"`
	Target      string `json:"target,omitempty"`
	NoCache     bool   `json:"noCache,omitempty"`
	Registry    string `json:"registry,omitempty"`
	DisablePush bool   `json:"disablePush,omitempty"`
	Platform    string `json:"platform,omitempty"`
	// Buildx is set when the step has `buildx: true` or a buildx mapping.
	Buildx *Buildx `json:"buildx,omitempty"`
	// CacheTo is the repository the build exports its layer cache to (`cache_to`).
	CacheTo string `json:"cacheTo,omitempty"`
	// Cosign, when set, signs the pushed image (`cosign: {sign: true, options: …}`).
	Cosign *Cosign `json:"cosign,omitempty"`
}

// Buildx is a build's `buildx` configuration as written. Freshet's builders (Podman, buildah)
// build several platforms without a BuildKit builder: the builder and qemu settings are kept
// for the record and are not used (docs/pipelines-spec.md, "Multi-platform builds").
type Buildx struct {
	QEMUImage     string `json:"qemuImage,omitempty"`
	QEMUPlatforms string `json:"qemuPlatforms,omitempty"`
	Driver        string `json:"driver,omitempty"`
	DriverOpts    string `json:"driverOpts,omitempty"`
}

// Cosign is a build's signing configuration: the pushed image is signed with a cosign private
// key, and the signature stored in the registry as cosign stores it.
type Cosign struct {
	// Key is the PEM private key, normally a variable from a secret context
	// (${{COSIGN_PRIVATE_KEY}}); an encrypted cosign key is opened with COSIGN_PASSWORD.
	Key string `json:"key"`
}

// Tag policies of a build step (`tag_policy`).
const (
	TagPolicyOriginal  = "original"
	TagPolicyLowercase = "lowercase"
)

// Push is what a push step asks for.
type Push struct {
	Candidate string   `json:"candidate"`
	ImageName string   `json:"imageName,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	Registry  string   `json:"registry,omitempty"`
}

// SuccessCriteria decide the result of a parallel step (or of the pipeline): only the listed
// steps count, or the listed steps are ignored, and/or the conditions must hold.
type SuccessCriteria struct {
	Only      []string  `json:"only,omitempty"`
	Ignore    []string  `json:"ignore,omitempty"`
	Condition Condition `json:"condition,omitzero"`
}

// Hooks are the steps run around a pipeline or a step.
type Hooks struct {
	OnElected *Hook `json:"onElected,omitempty"` // before; its failure fails the build unless fail_fast: false
	OnSuccess *Hook `json:"onSuccess,omitempty"` // after, when it succeeded
	OnFail    *Hook `json:"onFail,omitempty"`    // after, when it failed
	OnFinish  *Hook `json:"onFinish,omitempty"`  // after, always; runs after on_success/on_fail
}

// IsZero reports whether no hook is set.
func (h Hooks) IsZero() bool {
	return h.OnElected == nil && h.OnSuccess == nil && h.OnFail == nil && h.OnFinish == nil
}

// Hook is one hook: steps run in Mode.
type Hook struct {
	Mode  Mode    `json:"mode"`
	Steps []*Step `json:"steps"`
}

// Duration is a time.Duration that encodes to JSON as a Go duration string ("10m0s").
type Duration struct{ time.Duration }

// MarshalJSON encodes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// UnmarshalJSON decodes a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	d.Duration = v
	return nil
}

// Walk calls fn for every step of the pipeline, depth first in written order, including the
// steps nested in parallel steps and the steps of every hook (pipeline hooks last). It stops
// when fn returns false.
func (p *Pipeline) Walk(fn func(*Step) bool) {
	var walk func(steps []*Step) bool
	walkHooks := func(h Hooks) bool {
		for _, hk := range []*Hook{h.OnElected, h.OnSuccess, h.OnFail, h.OnFinish} {
			if hk != nil && !walk(hk.Steps) {
				return false
			}
		}
		return true
	}
	walk = func(steps []*Step) bool {
		for _, s := range steps {
			if !fn(s) || !walk(s.Parallel) || !walkHooks(s.Hooks) {
				return false
			}
		}
		return true
	}
	if walk(p.Steps) {
		walkHooks(p.Hooks)
	}
}

// Step returns the step named name (top level or nested in a parallel step; not hook steps),
// or nil.
func (p *Pipeline) Step(name string) *Step {
	var find func([]*Step) *Step
	find = func(steps []*Step) *Step {
		for _, s := range steps {
			if s.Name == name {
				return s
			}
			if f := find(s.Parallel); f != nil {
				return f
			}
		}
		return nil
	}
	return find(p.Steps)
}
