// Package pipeline is the CI half of the control plane: projects, pipelines and their
// triggers, builds with their steps, logs and the images they pushed, shared configuration,
// secrets and container registries (contexts), and runners. It queues builds; the Dispatcher
// hands them to runners under leases over the runner protocol (api/runnerv1).
//
// The Service returns the package's own types (types.go): decoded, with secret values masked,
// carrying the names they are shown by. The store's rows are their storage form and are
// converted in one place. The package declares the Store it uses (store.go).
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/webhook"
)

// Build statuses.
const (
	StatusQueued          = "queued"
	StatusPendingApproval = "pending-approval"
	StatusRunning         = "running"
	StatusTerminating     = "terminating"
	StatusSuccess         = "success"
	StatusFailed          = "failed"
	StatusTerminated      = "terminated"
)

// Active reports whether a build status is not final.
func Active(status string) bool {
	switch status {
	case StatusQueued, StatusPendingApproval, StatusRunning, StatusTerminating:
		return true
	}
	return false
}

// Defaults.
const (
	DefaultMaxAttempts = 2 // a build whose runner vanished is requeued once, then failed
	maxSpecBytes       = 1 << 20
)

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)

// Keyring encrypts secret values at rest. internal/secrets implements it.
type Keyring interface {
	Encrypt(plaintext, aad []byte) (string, error)
	Decrypt(ciphertext string, aad []byte) ([]byte, error)
}

// Service is the pipeline service.
type Service struct {
	db    Store
	audit *audit.Log
	keys  Keyring
	log   *slog.Logger
	now   func() time.Time
	// policy checks the servers of kubernetes and helm-repository contexts; nil: no check.
	policy *netpolicy.Policy
	// queued is called after a build is queued or a build's state changes in a way the
	// dispatcher must see: the Wake of the Dispatcher made for this Service.
	queued func()
	// baseURL is the server's public URL, for CF_BUILD_URL.
	baseURL string
	// onCronChange is called when cron triggers are created or deleted.
	onCronChange func()
	// onPush is called with the events of every verified webhook delivery.
	onPush func(ctx context.Context, accountID string, evs []webhook.Event)
	// specs reads pipeline specs kept in git; nil when not configured.
	specs SpecSource
	// steps reads typed plugin step definitions; nil when no step catalogue is configured.
	steps StepCatalog
	// decoy verifies deliveries to triggers that do not exist (HandleWebhook).
	decoy webhook.Decoy
	// recentPushes are the payloads of deliveries already passed to onPush.
	recentPushes *webhook.Recent
	// net checks git contexts' provider URLs.
	net *netpolicy.Policy
	// onEvents is called after a transaction queued events in the outbox.
	onEvents func()
	// onOwnerChange is called after a project changed owner team (see Deps).
	onOwnerChange func(accountID string)
	// limits admits runners, builds and build minutes under the account's plan; nil: none.
	limits Limits
}

// Deps is what a Service is built from.
type Deps struct {
	Store Store      // the *store.DB
	Audit *audit.Log // records every change
	Keys  Keyring    // encrypts secret values at rest
	Log   *slog.Logger
	// Specs reads pipelines' specs kept in git; nil: a pipeline's specRepo is refused.
	Specs SpecSource
	// Steps reads the operator's step catalogue; nil: typed plugin steps are refused.
	Steps StepCatalog
	// BaseURL is the URL users reach the server at, for links in builds (CF_BUILD_URL).
	BaseURL string
	// OnCronChange is called when cron triggers are created or deleted (the cron executor's
	// Reload); it must not block.
	OnCronChange func()
	// OnPush is called with the events of every verified webhook delivery (whether or not a
	// trigger fires), before builds are queued, so that pushes also reach the account's GitOps
	// runtimes; it must not block.
	OnPush func(ctx context.Context, accountID string, evs []webhook.Event)
	// Net is the operator's policy for URLs from tenants (git contexts' provider URLs); nil:
	// every provider and address.
	Net *netpolicy.Policy
	// OnEvents is called after a change queued build events in the outbox (the outbox relay's
	// Kick); it must not block.
	OnEvents func()
	// Limits admits runners, builds and build minutes under the account's plan (a
	// *billing.Service); nil: no limits.
	Limits Limits
	// OnOwnerChange is called after a project changed owner team, which may take away what rules
	// gave some of the account's members: streams held open there are checked again at once.
	OnOwnerChange func(accountID string)
}

// Limits is the account's plan as the CI service asks it: Admit refuses, in the transaction
// that creates the resource, one more than the plan allows (a *billing.LimitError); Free is how
// many more the plan allows now (billing.Unlimited: no bound), for skipping work Admit would
// refuse.
type Limits interface {
	Admit(ctx context.Context, tx *store.Tx, accountID string, r billing.Resource) error
	Free(ctx context.Context, accountID string, r billing.Resource) (int64, error)
}

// admit is Limits.Admit, or nothing without limits.
func (s *Service) admit(ctx context.Context, tx *store.Tx, accountID string, r billing.Resource) error {
	if s.limits == nil {
		return nil
	}
	return s.limits.Admit(ctx, tx, accountID, r)
}

// New returns a Service built from d. Its dispatcher is made with NewDispatcher.
func New(d Deps) *Service {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{db: d.Store, audit: d.Audit, keys: d.Keys, log: log, now: time.Now, queued: func() {},
		baseURL: strings.TrimRight(d.BaseURL, "/"), specs: d.Specs, steps: d.Steps, onCronChange: d.OnCronChange, onPush: d.OnPush,
		decoy: webhook.NewDecoy(d.Keys), recentPushes: webhook.NewRecent(webhook.ReplayWindow, 0),
		net: netPolicy(d.Net), onEvents: d.OnEvents, limits: d.Limits, onOwnerChange: d.OnOwnerChange}
	if s.onEvents == nil {
		s.onEvents = func() {}
	}
	return s
}

// SpecSource reads a file from a git repository at a revision (a branch, tag or SHA; empty
// means the default branch) and says which commit it read. CheckRepoURL refuses, naming
// field, a URL that is not a clone URL or that the operator's policy does not allow (a local
// path, a private address); ReadSpec applies the same policy.
type SpecSource interface {
	CheckRepoURL(field, repoURL string) error
	ReadSpec(ctx context.Context, repoURL string, creds map[string]string, revision, path string) (data []byte, sha string, err error)
}

func validName(field, v string) error {
	if !nameRE.MatchString(v) {
		return errdefs.Invalid(field, v, "is not a valid name: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	return nil
}

// Config is a pipeline's settings besides its spec.
type Config struct {
	Contexts          []string          `json:"contexts,omitempty"`
	Variables         []Variable        `json:"variables,omitempty"`
	RunnerLabels      map[string]string `json:"runnerLabels,omitempty"`
	Concurrency       int               `json:"concurrency,omitempty"`       // builds of the pipeline at once (0: unlimited)
	BranchConcurrency int               `json:"branchConcurrency,omitempty"` // builds of one branch at once (0: unlimited)
	TerminateOlder    bool              `json:"terminateOlder,omitempty"`    // a new build of a branch terminates older ones
	MaxAttempts       int               `json:"maxAttempts,omitempty"`       // runs of a build whose runner vanished (default 2)
	// SpecContext names a context holding credentials for the spec's repository:
	// GIT_TOKEN, or GIT_USERNAME and GIT_PASSWORD.
	SpecContext   string `json:"specContext,omitempty"`
	OnLeaseExpiry string `json:"onLeaseExpiry,omitempty"` // requeue (default) or fail
	// Tags describe the pipeline to attribute-based rules (and its builds, which carry them).
	Tags []string `json:"tags,omitempty"`
}

// maxTags bounds a pipeline's tags.
const maxTags = 32

// Variable is a pipeline variable.
type Variable struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	Encrypted bool   `json:"encrypted,omitempty"` // Value holds ciphertext
}

var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks c, naming the first bad field by its path in a pipeline request (config.…).
func (c *Config) Validate() error {
	for i, v := range c.Variables {
		if !varNameRE.MatchString(v.Key) {
			return errdefs.Invalid(fmt.Sprintf("config.variables[%d].key", i), v.Key, "is not a variable name: use letters, digits and '_', not starting with a digit")
		}
	}
	for i, n := range c.Contexts {
		if err := validName(fmt.Sprintf("config.contexts[%d]", i), n); err != nil {
			return err
		}
	}
	for k, v := range c.RunnerLabels {
		if err := validLabel("config.runnerLabels", k, v); err != nil {
			return err
		}
	}
	if c.Concurrency < 0 {
		return errdefs.Invalid("config.concurrency", fmt.Sprint(c.Concurrency), "must be 0 (unlimited) or more")
	}
	if c.BranchConcurrency < 0 {
		return errdefs.Invalid("config.branchConcurrency", fmt.Sprint(c.BranchConcurrency), "must be 0 (unlimited) or more")
	}
	if len(c.Tags) > maxTags {
		return errdefs.Invalid("config.tags", fmt.Sprint(len(c.Tags)), fmt.Sprintf("are more than %d tags", maxTags))
	}
	for i, t := range c.Tags {
		if err := rbac.ValidateTag(fmt.Sprintf("config.tags[%d]", i), t); err != nil {
			return err
		}
	}
	if c.MaxAttempts < 0 || c.MaxAttempts > 10 {
		return errdefs.Invalid("config.maxAttempts", fmt.Sprint(c.MaxAttempts), "must be from 1 to 10 (0: the default, 2)")
	}
	switch c.OnLeaseExpiry {
	case "", "requeue", "fail":
	default:
		return errdefs.Invalid("config.onLeaseExpiry", c.OnLeaseExpiry, "is not requeue or fail")
	}
	return nil
}

func (c *Config) maxAttempts() int {
	if c.MaxAttempts == 0 {
		return DefaultMaxAttempts
	}
	return c.MaxAttempts
}

func variableAAD(accountID, key string) []byte {
	return secrets.AAD(accountID, "pipeline-variable", key)
}

// CreateProject creates a project in p's account, with tags for attribute-based rules.
func (s *Service) CreateProject(ctx context.Context, p rbac.Principal, name string, tags ...string) (_ Project, err error) {
	return s.CreateOwnedProject(ctx, p, name, "", tags...)
}

// CreateOwnedProject creates a project in p's account owned by team (name or ID; empty: none),
// of which p must be a member unless an admin.
func (s *Service) CreateOwnedProject(ctx context.Context, p rbac.Principal, name, team string, tags ...string) (_ Project, err error) {
	e := audit.Start(ctx, p, "project.create", "project", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePipelines); err != nil {
		return Project{}, err
	}
	if err := validName("name", name); err != nil {
		return Project{}, err
	}
	if len(tags) > maxTags {
		return Project{}, errdefs.Invalid("tags", fmt.Sprint(len(tags)), fmt.Sprintf("are more than %d tags", maxTags))
	}
	for i, t := range tags {
		if err := rbac.ValidateTag(fmt.Sprintf("tags[%d]", i), t); err != nil {
			return Project{}, err
		}
	}
	t, err := identity.OwnerTeam(ctx, s.db, p, "team", team, "")
	if err != nil {
		return Project{}, err
	}
	pr := store.Project{ID: store.NewID(store.PrefixProject), AccountID: p.AccountID, Name: name, Tags: tags, CreatedAt: s.now(),
		OwnerTeamID: t.ID, OwnerTeam: t.Name}
	if err := rbac.Authorize(p, rbac.ActCreate, projectResource(pr)); err != nil {
		return Project{}, err
	}
	e.Resource(pr.ID)
	if t.Name != "" {
		e.Detail("%q owned by team %s", name, t.Name)
	} else {
		e.Detail("%q", name)
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateProject(ctx, pr); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Project{}, err
	}
	return toProject(pr), nil
}

// ListProjects lists p's account's projects.
func (s *Service) ListProjects(ctx context.Context, p rbac.Principal, page paging.Page) ([]Project, error) {
	return s.ListProjectsOwnedBy(ctx, p, "", page)
}

// ListProjectsOwnedBy lists p's account's projects team (name or ID; empty: any or none) owns.
func (s *Service) ListProjectsOwnedBy(ctx context.Context, p rbac.Principal, team string, page paging.Page) ([]Project, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return nil, err
	}
	var owner string
	if team != "" {
		t, err := s.db.GetTeam(ctx, p.AccountID, team)
		if errors.Is(err, errdefs.ErrNotFound) {
			return nil, errdefs.Invalid("owner", team, "is not a team of this account (see 'freshet team list')")
		} else if err != nil {
			return nil, err
		}
		owner = t.ID
	}
	rows, err := visiblePage(page, func(pg paging.Page) ([]store.Project, error) { return s.db.ListProjects(ctx, p.AccountID, owner, pg) },
		func(r store.Project) string { return r.ID },
		func(rows []store.Project) ([]store.Project, error) {
			return slices.DeleteFunc(rows, func(r store.Project) bool { return !rbac.Visible(p, projectResource(r)) }), nil
		})
	if err != nil {
		return nil, err
	}
	out := make([]Project, len(rows))
	for i, r := range rows {
		out[i] = toProject(r)
	}
	return out, nil
}

// GetProject returns a project by ID or name.
func (s *Service) GetProject(ctx context.Context, p rbac.Principal, ref string) (Project, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return Project{}, err
	}
	pr, err := s.db.GetProject(ctx, p.AccountID, ref)
	if err != nil {
		return Project{}, err
	}
	if err := rbac.Authorize(p, rbac.ActRead, projectResource(pr)); err != nil {
		return Project{}, err
	}
	return toProject(pr), nil
}

// SetProjectOwner makes team (name or ID; empty: none) the owner of p's account's project ref,
// and so of its pipelines and builds. It takes the right to update the project and, unless p is
// an admin, membership of both the team that owns it now and the new one.
func (s *Service) SetProjectOwner(ctx context.Context, p rbac.Principal, ref, team string) (_ Project, err error) {
	e := audit.Start(ctx, p, "project.set-owner", "project", ref)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePipelines); err != nil {
		return Project{}, err
	}
	var pr store.Project
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		pr, err = tx.GetProject(ctx, p.AccountID, ref)
		if err != nil {
			return err
		}
		e.Resource(pr.ID)
		if err := rbac.Authorize(p, rbac.ActUpdate, projectResource(pr)); err != nil {
			return err
		}
		t, err := identity.OwnerTeam(ctx, tx, p, "team", team, pr.OwnerTeamID)
		if err != nil {
			return err
		}
		e.Detail("%q: owner %s → %s", pr.Name, identity.OwnerLabel(pr.OwnerTeam), identity.OwnerLabel(t.Name))
		if err := tx.SetProjectOwner(ctx, p.AccountID, pr.ID, t.ID); err != nil {
			return err
		}
		pr.OwnerTeamID, pr.OwnerTeam = t.ID, t.Name
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Project{}, err
	}
	if s.onOwnerChange != nil {
		s.onOwnerChange(p.AccountID)
	}
	return toProject(pr), nil
}

// DeleteProject deletes a project with its pipelines and builds.
func (s *Service) DeleteProject(ctx context.Context, p rbac.Principal, ref string) (err error) {
	e := audit.Start(ctx, p, "project.delete", "project", ref)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePipelines); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		pr, err := tx.GetProject(ctx, p.AccountID, ref)
		if err != nil {
			return err
		}
		e.Resource(pr.ID)
		e.Detail("%q", pr.Name)
		if err := rbac.Authorize(p, rbac.ActDelete, projectResource(pr)); err != nil {
			return err
		}
		if err := tx.DeleteProject(ctx, p.AccountID, pr.ID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

// PipelineInput creates or updates a pipeline. Its spec is SpecYAML, or the file SpecPath in
// the git repository SpecRepo, read at each build's revision.
type PipelineInput struct {
	Project  string // ID or name
	Name     string
	SpecYAML string
	SpecRepo string
	SpecPath string
	Config   Config

	keepEncrypted []string // variables whose Value is already ciphertext
}

// CreatePipeline creates a pipeline; its spec must parse.
func (s *Service) CreatePipeline(ctx context.Context, p rbac.Principal, in PipelineInput) (_ Pipeline, err error) {
	e := audit.Start(ctx, p, "pipeline.create", "pipeline", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePipelines); err != nil {
		return Pipeline{}, err
	}
	if err := s.checkPipelineInput(ctx, p, &in); err != nil {
		return Pipeline{}, err
	}
	pr, err := s.db.GetProject(ctx, p.AccountID, in.Project)
	if err != nil {
		return Pipeline{}, fmt.Errorf("project: %w", err)
	}
	if err := rbac.Authorize(p, rbac.ActCreate, rbac.Resource{Kind: rbac.KindPipelines, Name: pr.Name + "/" + in.Name,
		Attrs: rbac.Attributes{Tags: in.Config.Tags, Owner: pr.OwnerTeamID}}); err != nil {
		return Pipeline{}, err
	}
	now := s.now()
	pl := store.Pipeline{ID: store.NewID(store.PrefixPipeline), AccountID: p.AccountID, ProjectID: pr.ID, ProjectName: pr.Name, Name: in.Name,
		SpecYAML: in.SpecYAML, SpecRepo: in.SpecRepo, SpecPath: in.SpecPath, Config: encodeJSON(in.Config), CreatedAt: now, UpdatedAt: now}
	e.Resource(pl.ID)
	e.Detail("%s/%s", pr.Name, in.Name)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreatePipeline(ctx, pl); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Pipeline{}, err
	}
	return toPipeline(pl)
}

// UpdatePipeline replaces a pipeline's spec and config.
func (s *Service) UpdatePipeline(ctx context.Context, p rbac.Principal, ref string, in PipelineInput) (_ Pipeline, err error) {
	e := audit.Start(ctx, p, "pipeline.update", "pipeline", ref)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePipelines); err != nil {
		return Pipeline{}, err
	}
	pl, err := s.resolvePipeline(ctx, p.AccountID, ref)
	if err != nil {
		return Pipeline{}, err
	}
	if err := rbac.Authorize(p, rbac.ActUpdate, pipelineResource(pl)); err != nil {
		return Pipeline{}, err
	}
	in.Name = pl.Name
	// A client that read the pipeline got encrypted values masked; sending them back keeps them.
	old, err := decodeConfig(pl)
	if err != nil {
		return Pipeline{}, err
	}
	for i, v := range in.Config.Variables {
		if v.Encrypted && v.Value == MaskedValue {
			for _, ov := range old.Variables {
				if ov.Key == v.Key && ov.Encrypted {
					in.Config.Variables[i].Value, in.Config.Variables[i].Encrypted = ov.Value, false
					in.keepEncrypted = append(in.keepEncrypted, v.Key)
				}
			}
		}
	}
	if err := s.checkPipelineInput(ctx, p, &in); err != nil {
		return Pipeline{}, err
	}
	// Nor may it be tagged into what the caller could not change.
	if err := rbac.Authorize(p, rbac.ActUpdate, rbac.Resource{Kind: rbac.KindPipelines, Name: fullName(pl), Attrs: rbac.Attributes{Tags: in.Config.Tags, Owner: pl.ProjectOwner}}); err != nil {
		return Pipeline{}, err
	}
	e.Resource(pl.ID)
	pl.SpecYAML, pl.SpecRepo, pl.SpecPath, pl.Config, pl.UpdatedAt = in.SpecYAML, in.SpecRepo, in.SpecPath, encodeJSON(in.Config), s.now()
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.UpdatePipeline(ctx, pl); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Pipeline{}, err
	}
	return toPipeline(pl)
}

func (s *Service) checkPipelineInput(ctx context.Context, p rbac.Principal, in *PipelineInput) error {
	if err := validName("name", in.Name); err != nil {
		return err
	}
	if len(in.SpecYAML) > maxSpecBytes {
		return errdefs.Invalid("spec", "", fmt.Sprintf("is larger than %d bytes", maxSpecBytes))
	}
	switch {
	case in.SpecRepo != "" && strings.TrimSpace(in.SpecYAML) != "":
		return errdefs.Invalid("specRepo", in.SpecRepo, "and spec are both set: keep the spec inline or in git, not both")
	case in.SpecRepo != "":
		if s.specs == nil {
			return errdefs.Invalid("specRepo", in.SpecRepo, "cannot be used: this server has no git access configured")
		}
		if err := s.specs.CheckRepoURL("specRepo", in.SpecRepo); err != nil {
			return err
		}
		if in.SpecPath == "" {
			in.SpecPath = "codefresh.yml"
		}
		if in.Config.SpecContext != "" {
			c, err := s.db.GetContext(ctx, p.AccountID, in.Config.SpecContext)
			if err != nil {
				return errdefs.Invalid("config.specContext", in.Config.SpecContext, "is not a context of this account")
			}
			if c.Type != ContextConfig && c.Type != ContextSecret {
				return errdefs.Invalid("config.specContext", in.Config.SpecContext, "is a "+c.Type+" context: give a config or secret context with GIT_TOKEN, or GIT_USERNAME and GIT_PASSWORD")
			}
		}
		// Check now that the spec can be read and compiles on the default branch.
		if _, _, err := s.readSpec(ctx, p.AccountID, in.SpecRepo, in.SpecPath, in.Config.SpecContext, ""); err != nil {
			return err
		}
	case strings.TrimSpace(in.SpecYAML) == "":
		return errdefs.Invalid("spec", "", "is empty: give the pipeline's codefresh.yml, or specRepo and specPath")
	default:
		if _, _, err := s.compileSpec(ctx, in.SpecYAML); err != nil {
			return err
		}
	}
	if err := in.Config.Validate(); err != nil {
		return err
	}
	for i, name := range in.Config.Contexts {
		if _, err := s.db.GetContext(ctx, p.AccountID, name); err != nil {
			return errdefs.Invalid(fmt.Sprintf("config.contexts[%d]", i), name, "is not a context of this account")
		}
	}
	for i, v := range in.Config.Variables {
		if v.Encrypted && v.Value == MaskedValue {
			return errdefs.Invalid(fmt.Sprintf("config.variables[%d].value", i), "", "is the mask of a value, not a value: give the secret")
		}
		if v.Encrypted {
			ct, err := s.keys.Encrypt([]byte(v.Value), variableAAD(p.AccountID, v.Key))
			if err != nil {
				return err
			}
			in.Config.Variables[i].Value = ct
		}
	}
	for _, key := range in.keepEncrypted {
		for i := range in.Config.Variables {
			if in.Config.Variables[i].Key == key {
				in.Config.Variables[i].Encrypted = true
			}
		}
	}
	return nil
}

// readSpec reads and compiles a pipeline spec kept in git at revision.
func (s *Service) readSpec(ctx context.Context, accountID, repo, path, credContext, revision string) (string, string, error) {
	var creds map[string]string
	if credContext != "" {
		c, err := s.db.GetContext(ctx, accountID, credContext)
		if err != nil {
			return "", "", fmt.Errorf("spec credentials: %w", err)
		}
		if creds, err = s.contextValues(c); err != nil {
			return "", "", err
		}
	}
	data, sha, err := s.specs.ReadSpec(ctx, repo, creds, revision, path)
	if err != nil {
		return "", "", errdefs.Invalid("specRepo", repo, fmt.Sprintf("cannot be read at %q (%s): %v", orDefault(revision), path, err))
	}
	if len(data) > maxSpecBytes {
		return "", "", errdefs.Invalid("specPath", path, fmt.Sprintf("is larger than %d bytes", maxSpecBytes))
	}
	if _, _, err := s.compileSpec(ctx, string(data)); err != nil {
		return "", "", fmt.Errorf("%s at %s: %w", path, shortSHA(sha), err)
	}
	return string(data), sha, nil
}

func orDefault(rev string) string {
	if rev == "" {
		return "the default branch"
	}
	return rev
}

func shortSHA(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

// ResolvePipeline finds a pipeline by ID or by "project/name".
func (s *Service) ResolvePipeline(ctx context.Context, p rbac.Principal, ref string) (Pipeline, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return Pipeline{}, err
	}
	pl, err := s.resolvePipeline(ctx, p.AccountID, ref)
	if err != nil {
		return Pipeline{}, err
	}
	if err := rbac.Authorize(p, rbac.ActRead, pipelineResource(pl)); err != nil {
		return Pipeline{}, err
	}
	return toPipeline(pl)
}

// resolvePipeline finds account's stored pipeline by ID or by "project/name".
func (s *Service) resolvePipeline(ctx context.Context, accountID, ref string) (store.Pipeline, error) {
	if project, name, ok := strings.Cut(ref, "/"); ok {
		pr, err := s.db.GetProject(ctx, accountID, project)
		if err != nil {
			return store.Pipeline{}, fmt.Errorf("pipeline %q: %w", ref, errdefs.ErrNotFound)
		}
		return s.db.GetPipelineByName(ctx, accountID, pr.ID, name)
	}
	return s.db.GetPipeline(ctx, accountID, ref)
}

// ListPipelines lists pipelines, of one project when project is set.
func (s *Service) ListPipelines(ctx context.Context, p rbac.Principal, project string, page paging.Page) ([]Pipeline, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return nil, err
	}
	projectID := ""
	if project != "" {
		pr, err := s.db.GetProject(ctx, p.AccountID, project)
		if err != nil {
			return nil, err
		}
		projectID = pr.ID
	}
	rows, err := visiblePage(page, func(pg paging.Page) ([]store.Pipeline, error) {
		return s.db.ListPipelines(ctx, p.AccountID, projectID, pg)
	},
		func(r store.Pipeline) string { return r.ID },
		func(rows []store.Pipeline) ([]store.Pipeline, error) {
			return slices.DeleteFunc(rows, func(r store.Pipeline) bool { return !rbac.Visible(p, pipelineResource(r)) }), nil
		})
	if err != nil {
		return nil, err
	}
	return toPipelines(rows)
}

// DeletePipeline deletes a pipeline with its triggers and builds.
func (s *Service) DeletePipeline(ctx context.Context, p rbac.Principal, ref string) (err error) {
	e := audit.Start(ctx, p, "pipeline.delete", "pipeline", ref)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePipelines); err != nil {
		return err
	}
	pl, err := s.resolvePipeline(ctx, p.AccountID, ref)
	if err != nil {
		return err
	}
	if err := rbac.Authorize(p, rbac.ActDelete, pipelineResource(pl)); err != nil {
		return err
	}
	e.Resource(pl.ID)
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeletePipeline(ctx, p.AccountID, pl.ID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}
