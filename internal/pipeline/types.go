package pipeline

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/version"
)

// The types the Service returns. They are decoded (no JSON in strings), masked where secrets
// would show, and carry the names callers display, so an API needs no query of its own to show
// them. The store's rows are their storage form; the conversions below are the only place
// that turns one into the other.

// Project groups pipelines.
type Project struct {
	ID, AccountID, Name string
	Tags                []string // what attribute-based rules match the project by
	CreatedAt           time.Time
	// OwnerTeam is the name of the team that owns the project (and its pipelines and builds);
	// empty when none does.
	OwnerTeam string
}

// Pipeline is a CI pipeline. Its Config is decoded, with the values of encrypted variables
// replaced by MaskedValue.
type Pipeline struct {
	ID, AccountID, ProjectID string
	Project                  string // the project's name
	Name                     string
	SpecYAML                 string // inline spec; empty when the spec is kept in git
	SpecRepo, SpecPath       string // the spec's repository and path, read at each build's revision
	Config                   Config
	CreatedAt, UpdatedAt     time.Time
}

// FullName is "project/name", how users name a pipeline.
func (p Pipeline) FullName() string { return p.Project + "/" + p.Name }

// Trigger starts builds of a pipeline. Its webhook secret is not part of it: it is shown once,
// when the trigger is created.
type Trigger struct {
	ID, AccountID, PipelineID string
	Type                      string // TriggerGit or TriggerCron
	Config                    TriggerConfig
	CreatedAt                 time.Time
}

// Build is one run of a pipeline.
type Build struct {
	ID, AccountID, PipelineID string
	Pipeline                  string // the pipeline's full name, project/name; empty if it was deleted meanwhile
	Number                    int64
	Status, Reason            string
	TriggerType, TriggerID    string
	TriggeredBy               string
	Repo, Branch, SHA         string
	CommitMessage             string
	CommitAuthor              string
	Variables                 map[string]string // the run's own variables
	RunnerLabels              map[string]string // the labels a runner needs to take it
	RunnerID                  string
	Attempt                   int
	RestartOf                 string
	LogSize                   int64
	CreatedAt                 time.Time
	StartedAt, FinishedAt     time.Time // zero until then
	Steps                     []Step    // set by GetBuild only
	Images                    []Image   // the images its steps pushed; set by GetBuild only
}

// Image is an image a build step pushed, as its runner reported it, with the build's commit.
type Image struct {
	ID, BuildID, Step string
	Registry          string // the registry context's name
	Repository        string // the full repository, e.g. ghcr.io/acme/app
	Tags              []string
	Digest            string // the manifest digest, sha256:…
	Size              int64  // bytes: the config and every layer, compressed
	SHA, Branch       string // the build's commit and branch
	CreatedAt         time.Time
}

// Step is the state of one step of a build.
type Step struct {
	Name, Stage, Status, Message string
	Position, ExitCode, Attempts int
	StartedAt, FinishedAt        time.Time // zero until then
}

// Runner is a registered runner. Its token is not part of it: only a hash is kept, and the
// token is shown once, when the runner is registered.
type Runner struct {
	ID, AccountID, Name string
	Labels              map[string]string
	Info                map[string]any // what the runner announced when it last connected
	LastSeen, CreatedAt time.Time      // LastSeen is zero until it connects
	// Skew is how the version it announced stands to the control plane's
	// (version.CheckSkew); zero before it connected.
	Skew version.Skew
}

// Context is shared configuration: key/value pairs a pipeline can reference, or a container
// registry its builds may use. Secret contexts' values and registry passwords are encrypted at
// rest and come back masked unless decrypted explicitly.
type Context struct {
	ID, AccountID, Name  string
	Type                 string            // ContextConfig, ContextSecret, ContextRegistry or ContextGit
	Values               map[string]string // config and secret contexts; empty for a registry or git context
	Registry             *Registry         // registry contexts only
	Git                  *GitProvider      // git contexts only
	CreatedAt, UpdatedAt time.Time
}

// Registry is a registry context's container registry.
type Registry struct {
	// URL is host[:port] and an optional path prefix, as image references name the registry:
	// ghcr.io/acme, 127.0.0.1:5000.
	URL      string
	Username string // empty: anonymous, or a token in Password
	Password string // a password or token; MaskedValue when set and not decrypted, empty when none
	CA       string // PEM certificates to trust, for a registry with a private CA
	Default  bool   // the account's default registry: build steps push there unless told otherwise
}

// BuildFilter narrows a build listing; empty fields match every build.
type BuildFilter struct {
	Pipeline string // ID or project/name
	Status   string
	Branch   string
}

func toProject(r store.Project) Project {
	return Project{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Tags: r.Tags, CreatedAt: r.CreatedAt, OwnerTeam: r.OwnerTeam}
}

// toPipeline decodes a stored pipeline and masks its encrypted variables.
func toPipeline(r store.Pipeline) (Pipeline, error) {
	cfg, err := decodeConfig(r)
	if err != nil {
		return Pipeline{}, err
	}
	for i, v := range cfg.Variables {
		if v.Encrypted {
			cfg.Variables[i].Value = MaskedValue
		}
	}
	return Pipeline{ID: r.ID, AccountID: r.AccountID, ProjectID: r.ProjectID, Project: r.ProjectName, Name: r.Name,
		SpecYAML: r.SpecYAML, SpecRepo: r.SpecRepo, SpecPath: r.SpecPath, Config: cfg, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

func toPipelines(rows []store.Pipeline) ([]Pipeline, error) {
	out := make([]Pipeline, len(rows))
	for i, r := range rows {
		p, err := toPipeline(r)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// fullName is a stored pipeline's "project/name".
func fullName(r store.Pipeline) string { return r.ProjectName + "/" + r.Name }

// decodeConfig returns a stored pipeline's config, encrypted values as ciphertext.
func decodeConfig(r store.Pipeline) (Config, error) {
	var c Config
	if err := json.Unmarshal([]byte(r.Config), &c); err != nil {
		return Config{}, fmt.Errorf("pipeline %s: decode config: %w", r.ID, err)
	}
	return c, nil
}

func toTrigger(r store.Trigger) (Trigger, error) {
	cfg, err := decodeTriggerConfig(r)
	if err != nil {
		return Trigger{}, err
	}
	return Trigger{ID: r.ID, AccountID: r.AccountID, PipelineID: r.PipelineID, Type: r.Type, Config: cfg, CreatedAt: r.CreatedAt}, nil
}

// decodeTriggerConfig returns a stored trigger's settings.
func decodeTriggerConfig(r store.Trigger) (TriggerConfig, error) {
	var c TriggerConfig
	if err := json.Unmarshal([]byte(r.Config), &c); err != nil {
		return TriggerConfig{}, fmt.Errorf("trigger %s: decode config: %w", r.ID, err)
	}
	return c, nil
}

// toBuild decodes a stored build; pipeline is its pipeline's full name.
func toBuild(r store.Build, pipeline string, steps []store.BuildStep) (Build, error) {
	vars, err := decodeMap(r.Variables)
	if err != nil {
		return Build{}, fmt.Errorf("build %s: decode variables: %w", r.ID, err)
	}
	labels, err := decodeMap(r.Labels)
	if err != nil {
		return Build{}, fmt.Errorf("build %s: decode runner labels: %w", r.ID, err)
	}
	b := Build{ID: r.ID, AccountID: r.AccountID, PipelineID: r.PipelineID, Pipeline: pipeline, Number: r.Number, Status: r.Status,
		Reason: r.Reason, TriggerType: r.TriggerType, TriggerID: r.TriggerID, TriggeredBy: r.TriggeredBy, Repo: r.Repo, Branch: r.Branch,
		SHA: r.SHA, CommitMessage: r.CommitMessage, CommitAuthor: r.CommitAuthor, Variables: vars, RunnerLabels: labels,
		RunnerID: r.RunnerID, Attempt: r.Attempt, RestartOf: r.RestartOf, LogSize: r.LogSize, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	for _, s := range steps {
		b.Steps = append(b.Steps, Step{Name: s.Name, Stage: s.Stage, Status: s.Status, Message: s.Message, Position: s.Position,
			ExitCode: s.ExitCode, Attempts: s.Attempts, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt})
	}
	return b, nil
}

func toImage(r store.BuildImage) Image {
	tags := r.Tags
	if tags == nil {
		tags = []string{}
	}
	return Image{ID: r.ID, BuildID: r.BuildID, Step: r.Step, Registry: r.Registry, Repository: r.Repository, Tags: tags, Digest: r.Digest,
		Size: r.Size, SHA: r.SHA, Branch: r.Branch, CreatedAt: r.CreatedAt}
}

// decodeMap decodes a stored JSON object of strings; an empty column or null is an empty map.
func decodeMap(s string) (map[string]string, error) {
	var m map[string]string
	if s != "" {
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return nil, err
		}
	}
	if m == nil {
		m = map[string]string{}
	}
	return m, nil
}

func toRunner(r store.Runner) (Runner, error) {
	labels, err := decodeMap(r.Labels)
	if err != nil {
		return Runner{}, fmt.Errorf("runner %s: decode labels: %w", r.ID, err)
	}
	var info map[string]any
	if r.Info != "" {
		if err := json.Unmarshal([]byte(r.Info), &info); err != nil {
			return Runner{}, fmt.Errorf("runner %s: decode info: %w", r.ID, err)
		}
	}
	if info == nil {
		info = map[string]any{}
	}
	rn := Runner{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Labels: labels, Info: info, LastSeen: r.LastSeen, CreatedAt: r.CreatedAt}
	if v, ok := info["version"].(string); ok && v != "" {
		rn.Skew = version.CheckSkew("runner", v, version.Current())
	}
	return rn, nil
}

// toContext returns a stored context with the given values (masked or decrypted by the caller).
// A registry context's values are its registry's fields.
func toContext(r store.ConfigContext, values map[string]string) Context {
	c := Context{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Type: r.Type, Values: values, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.Type == ContextRegistry {
		c.Registry = &Registry{URL: values[registryURL], Username: values[registryUsername], Password: values[registryPassword],
			CA: values[registryCA], Default: r.Default}
		c.Values = map[string]string{}
	}
	if r.Type == ContextGit {
		c.Git, c.Values = toGitProvider(values), map[string]string{}
	}
	return c
}

// contextData decodes a stored context's values, secret ones as ciphertext.
func contextData(r store.ConfigContext) (map[string]string, error) {
	vals, err := decodeMap(r.Data)
	if err != nil {
		return nil, fmt.Errorf("context %s: decode values: %w", r.Name, err)
	}
	return vals, nil
}

// maskedContext returns a stored context with its secret values masked.
func maskedContext(r store.ConfigContext) (Context, error) {
	vals, err := contextData(r)
	if err != nil {
		return Context{}, err
	}
	for k := range vals {
		if sealed(r.Type, k) {
			vals[k] = MaskedValue
		}
	}
	return toContext(r, vals), nil
}

func encodeJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
