// Package products models Codefresh GitOps products and environments: an environment is a named
// set of targets (runtime, cluster, namespace glob) with a kind (prod or non-prod) and a place
// in the promotion order; a product groups GitOps applications by their annotation
// (codefresh.io/product, or freshet.dev/product) or by app-name globs of a product definition.
// The View of a product answers what runs where — per environment, its applications with
// health, sync, revision, images and when they were deployed — and what promoting from one
// environment to the next would change. Definitions: docs/products.md.
package products

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/store"
)

// Kinds of environment.
const (
	KindProd    = "prod"
	KindNonProd = "non-prod"
)

// Annotations that assign an application to a product.
const (
	AnnotationProduct      = "codefresh.io/product"
	AnnotationProductAlias = "freshet.dev/product"
)

// Bounds of definitions.
const (
	MaxTargets  = 50
	MaxPatterns = 50
	MaxOrder    = 1000
	maxGlob     = 253
	// maxApps bounds the applications a View reads.
	maxApps = 5000
)

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Target is where an environment's applications run: globs (path.Match) of the runtime's name,
// the destination cluster (its name, else its server URL) and the destination namespace. An
// empty glob matches anything.
type Target struct {
	Runtime   string `json:"runtime,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Environment is a named set of targets, a kind and a place in the promotion order.
type Environment struct {
	Name      string
	Kind      string
	Order     int
	Targets   []Target
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Product is a product definition: applications whose names match a pattern belong to it, as
// do those annotated with its name.
type Product struct {
	Name      string
	Patterns  []string
	CreatedAt time.Time
	// Defined: there is a definition; false for a product only annotations name.
	Defined bool
	// Applications is how many applications the caller may read belong to it (in listings).
	Applications int
}

// Store is what the Service needs of the database.
type Store interface {
	Tx(ctx context.Context, fn func(*store.Tx) error) error
	ListEnvironments(ctx context.Context, accountID string) ([]store.Environment, error)
	GetEnvironment(ctx context.Context, accountID, name string) (store.Environment, error)
	ListProducts(ctx context.Context, accountID string) ([]store.Product, error)
}

var _ Store = (*store.DB)(nil)

// Apps lists the applications a principal may read (*runtimes.Service).
type Apps interface {
	ListApplications(ctx context.Context, p rbac.Principal, f runtimes.AppFilter, page paging.Page) ([]runtimes.Application, error)
}

var _ Apps = (*runtimes.Service)(nil)

// Deployments lists deployment records with their images enriched (*analytics.Service).
type Deployments interface {
	ListDeployments(ctx context.Context, p rbac.Principal, f analytics.Filter, page paging.Page) ([]analytics.Deployment, error)
}

var _ Deployments = (*analytics.Service)(nil)

// Service manages environments and products and answers product views.
type Service struct {
	db      Store
	apps    Apps
	deploys Deployments
	audit   *audit.Log
	now     func() time.Time
}

// Deps are what the Service needs.
type Deps struct {
	Store       Store
	Apps        Apps
	Deployments Deployments
	// Audit records changes; nil: a log on Store when it can hold one.
	Audit *audit.Log
	Log   *slog.Logger
	Now   func() time.Time
}

// New returns the products service.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if as, ok := d.Store.(audit.Store); ok && d.Audit == nil {
		d.Audit = audit.NewLog(as, d.Log)
	}
	return &Service{db: d.Store, apps: d.Apps, deploys: d.Deployments, audit: d.Audit, now: d.Now}
}

func (s *Service) finish(ctx context.Context, e *audit.Entry, err error) {
	if s.audit != nil {
		s.audit.Finish(ctx, e, err)
	}
}

func validName(field, v string) error {
	if !nameRE.MatchString(v) {
		return errdefs.Invalid(field, v, "is not a name: 1 to 63 lower-case letters, digits and '-', starting and ending with a letter or digit")
	}
	return nil
}

func validGlob(field, v string) error {
	if len(v) > maxGlob || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) || strings.TrimSpace(v) != v {
		return errdefs.Invalid(field, v, fmt.Sprintf("is not a glob: at most %d characters, no control characters or surrounding spaces", maxGlob))
	}
	if _, err := path.Match(v, ""); err != nil {
		return errdefs.Invalid(field, v, "is not a glob: use *, ? and [a-z] (path.Match syntax)")
	}
	return nil
}

// ValidateEnvironment checks e. Every problem is errdefs.ErrInvalid naming the field.
func ValidateEnvironment(e Environment) error {
	if err := validName("name", e.Name); err != nil {
		return err
	}
	if e.Kind != KindProd && e.Kind != KindNonProd {
		return errdefs.Invalid("kind", e.Kind, "is not an environment kind: use prod or non-prod")
	}
	if e.Order < 0 || e.Order > MaxOrder {
		return errdefs.Invalid("order", strconv.Itoa(e.Order), fmt.Sprintf("is out of range: 0 to %d (lower orders promote into higher)", MaxOrder))
	}
	if len(e.Targets) == 0 {
		return errdefs.Invalid("targets", "", "is required: one or more {runtime, cluster, namespace} globs")
	}
	if len(e.Targets) > MaxTargets {
		return errdefs.Invalid("targets", fmt.Sprintf("%d targets", len(e.Targets)), fmt.Sprintf("are too many: use at most %d", MaxTargets))
	}
	for i, t := range e.Targets {
		if t == (Target{}) {
			return errdefs.Invalid(fmt.Sprintf("targets[%d]", i), "{}", "matches every application: give a runtime, cluster or namespace")
		}
		for _, f := range []struct{ field, v string }{{"runtime", t.Runtime}, {"cluster", t.Cluster}, {"namespace", t.Namespace}} {
			if err := validGlob(fmt.Sprintf("targets[%d].%s", i, f.field), f.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidateProduct checks p. Every problem is errdefs.ErrInvalid naming the field.
func ValidateProduct(p Product) error {
	if err := validName("name", p.Name); err != nil {
		return err
	}
	if len(p.Patterns) > MaxPatterns {
		return errdefs.Invalid("patterns", fmt.Sprintf("%d patterns", len(p.Patterns)), fmt.Sprintf("are too many: use at most %d", MaxPatterns))
	}
	for i, g := range p.Patterns {
		if g == "" {
			return errdefs.Invalid(fmt.Sprintf("patterns[%d]", i), g, "is empty: give an application-name glob (shop-*)")
		}
		if err := validGlob(fmt.Sprintf("patterns[%d]", i), g); err != nil {
			return err
		}
	}
	return nil
}

func encodeJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func envFromRow(r store.Environment) (Environment, error) {
	e := Environment{Name: r.Name, Kind: r.Kind, Order: r.Order, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if err := json.Unmarshal([]byte(r.Targets), &e.Targets); err != nil {
		return Environment{}, fmt.Errorf("environment %s: stored targets: %w", r.Name, err)
	}
	return e, nil
}

// CreateEnvironment adds an environment to p's account.
func (s *Service) CreateEnvironment(ctx context.Context, p rbac.Principal, e Environment) (_ Environment, err error) {
	return s.putEnvironment(ctx, p, e, false)
}

// UpdateEnvironment replaces the kind, order and targets of p's account's environment e.Name.
func (s *Service) UpdateEnvironment(ctx context.Context, p rbac.Principal, e Environment) (_ Environment, err error) {
	return s.putEnvironment(ctx, p, e, true)
}

func (s *Service) putEnvironment(ctx context.Context, p rbac.Principal, e Environment, update bool) (_ Environment, err error) {
	action := "environment.create"
	if update {
		action = "environment.update"
	}
	ae := audit.Start(ctx, p, action, "environment", e.Name)
	defer func() { s.finish(ctx, ae, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return Environment{}, err
	}
	if err := ValidateEnvironment(e); err != nil {
		return Environment{}, err
	}
	now := s.now().UTC()
	row := store.Environment{ID: store.NewID(store.PrefixEnvironment), AccountID: p.AccountID, Name: e.Name, Kind: e.Kind, Order: e.Order,
		Targets: encodeJSON(e.Targets), CreatedAt: now, UpdatedAt: now}
	ae.Detail("%s, order %d, %d targets", e.Kind, e.Order, len(e.Targets))
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if update {
			if err := tx.UpdateEnvironment(ctx, row); err != nil {
				return err
			}
		} else if err := tx.CreateEnvironment(ctx, row); err != nil {
			return err
		}
		return ae.Commit(ctx, tx)
	})
	if err != nil {
		return Environment{}, fmt.Errorf("environment %s: %w", e.Name, err)
	}
	got, err := s.db.GetEnvironment(ctx, p.AccountID, e.Name)
	if err != nil {
		return Environment{}, err
	}
	return envFromRow(got)
}

// ListEnvironments returns p's account's environments in promotion order.
func (s *Service) ListEnvironments(ctx context.Context, p rbac.Principal) ([]Environment, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return nil, err
	}
	rows, err := s.db.ListEnvironments(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	out := make([]Environment, 0, len(rows))
	for _, r := range rows {
		e, err := envFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// GetEnvironment returns p's account's environment name.
func (s *Service) GetEnvironment(ctx context.Context, p rbac.Principal, name string) (Environment, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return Environment{}, err
	}
	r, err := s.db.GetEnvironment(ctx, p.AccountID, name)
	if err != nil {
		return Environment{}, err
	}
	return envFromRow(r)
}

// DeleteEnvironment removes p's account's environment name.
func (s *Service) DeleteEnvironment(ctx context.Context, p rbac.Principal, name string) (err error) {
	ae := audit.Start(ctx, p, "environment.delete", "environment", name)
	defer func() { s.finish(ctx, ae, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteEnvironment(ctx, p.AccountID, name); err != nil {
			return err
		}
		return ae.Commit(ctx, tx)
	})
}

// CreateProduct adds a product definition to p's account.
func (s *Service) CreateProduct(ctx context.Context, p rbac.Principal, pr Product) (_ Product, err error) {
	ae := audit.Start(ctx, p, "product.create", "product", pr.Name)
	defer func() { s.finish(ctx, ae, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return Product{}, err
	}
	if err := ValidateProduct(pr); err != nil {
		return Product{}, err
	}
	if pr.Patterns == nil {
		pr.Patterns = []string{}
	}
	row := store.Product{ID: store.NewID(store.PrefixProduct), AccountID: p.AccountID, Name: pr.Name, Patterns: encodeJSON(pr.Patterns), CreatedAt: s.now().UTC()}
	ae.Detail("%s", strings.Join(pr.Patterns, " "))
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateProduct(ctx, row); err != nil {
			return err
		}
		return ae.Commit(ctx, tx)
	})
	if err != nil {
		return Product{}, fmt.Errorf("product %s: %w", pr.Name, err)
	}
	return Product{Name: pr.Name, Patterns: pr.Patterns, CreatedAt: row.CreatedAt, Defined: true}, nil
}

// UpdateProduct replaces the patterns of p's account's product definition pr.Name; a product
// that only annotations name has no definition to replace (errdefs.ErrNotFound).
func (s *Service) UpdateProduct(ctx context.Context, p rbac.Principal, pr Product) (_ Product, err error) {
	ae := audit.Start(ctx, p, "product.update", "product", pr.Name)
	defer func() { s.finish(ctx, ae, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return Product{}, err
	}
	if err := ValidateProduct(pr); err != nil {
		return Product{}, err
	}
	if pr.Patterns == nil {
		pr.Patterns = []string{}
	}
	ae.Detail("%s", strings.Join(pr.Patterns, " "))
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.UpdateProduct(ctx, store.Product{AccountID: p.AccountID, Name: pr.Name, Patterns: encodeJSON(pr.Patterns)}); err != nil {
			return err
		}
		return ae.Commit(ctx, tx)
	})
	if err != nil {
		return Product{}, fmt.Errorf("product %s: %w", pr.Name, err)
	}
	defs, err := s.definitions(ctx, p.AccountID)
	if err != nil {
		return Product{}, err
	}
	for _, d := range defs {
		if d.Name == pr.Name {
			return d, nil
		}
	}
	return Product{}, fmt.Errorf("product %s: %w", pr.Name, errdefs.ErrNotFound)
}

// DeleteProduct removes p's account's product definition name (annotations keep naming it).
func (s *Service) DeleteProduct(ctx context.Context, p rbac.Principal, name string) (err error) {
	ae := audit.Start(ctx, p, "product.delete", "product", name)
	defer func() { s.finish(ctx, ae, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteProduct(ctx, p.AccountID, name); err != nil {
			return err
		}
		return ae.Commit(ctx, tx)
	})
}

func (s *Service) definitions(ctx context.Context, accountID string) ([]Product, error) {
	rows, err := s.db.ListProducts(ctx, accountID)
	if err != nil {
		return nil, err
	}
	out := make([]Product, 0, len(rows))
	for _, r := range rows {
		pr := Product{Name: r.Name, CreatedAt: r.CreatedAt, Defined: true}
		if err := json.Unmarshal([]byte(r.Patterns), &pr.Patterns); err != nil {
			return nil, fmt.Errorf("product %s: stored patterns: %w", r.Name, err)
		}
		out = append(out, pr)
	}
	return out, nil
}

// visibleApps returns the applications p may read (the runtimes service applies p's rules).
func (s *Service) visibleApps(ctx context.Context, p rbac.Principal) ([]runtimes.Application, error) {
	var out []runtimes.Application
	page := paging.Page{Limit: paging.MaxLimit}
	for len(out) < maxApps {
		as, err := s.apps.ListApplications(ctx, p, runtimes.AppFilter{}, page)
		if err != nil {
			return nil, err
		}
		out = append(out, as...)
		if len(as) < page.Size() {
			break
		}
		page.After = as[len(as)-1].ID
	}
	return out, nil
}

// ProductOf returns the product a's annotation names, "" when none.
func ProductOf(a runtimes.Application) string {
	if v := a.Annotations[AnnotationProduct]; v != "" {
		return v
	}
	return a.Annotations[AnnotationProductAlias]
}

// belongs reports whether a belongs to pr: its annotation names pr, or (with no annotation)
// its name matches one of pr's patterns.
func belongs(a runtimes.Application, pr Product) bool {
	if named := ProductOf(a); named != "" {
		return named == pr.Name
	}
	for _, g := range pr.Patterns {
		if ok, _ := path.Match(g, a.Name); ok {
			return true
		}
	}
	return false
}

// ListProducts returns p's account's products — the defined ones and those only annotations
// name — by name, with how many applications p may read belong to each.
func (s *Service) ListProducts(ctx context.Context, p rbac.Principal) ([]Product, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return nil, err
	}
	defs, err := s.definitions(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	apps, err := s.visibleApps(ctx, p)
	if err != nil {
		return nil, err
	}
	by := map[string]*Product{}
	for i := range defs {
		by[defs[i].Name] = &defs[i]
	}
	for _, a := range apps {
		if named := ProductOf(a); named != "" {
			if by[named] == nil {
				by[named] = &Product{Name: named, Patterns: []string{}}
			}
			by[named].Applications++
			continue
		}
		for i := range defs {
			if belongs(a, defs[i]) {
				defs[i].Applications++
			}
		}
	}
	out := make([]Product, 0, len(by))
	for _, pr := range by {
		out = append(out, *pr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Image is an image an application's latest deployment record lists.
type Image struct {
	Registry   string
	Repository string
	Tags       []string
	Digest     string
	Commits    []images.Commit
	Issues     []images.Issue
}

// AppVersion is one application of a product in an environment: what runs there.
type AppVersion struct {
	Runtime   string
	Name      string
	Cluster   string
	Namespace string
	Health    string
	Sync      string
	Revision  string
	// Images are the images of the application's latest deployment record, with the commits
	// and issues they were built from where image enrichment knows them.
	Images []Image
	// DeployedAt is when the latest deployment record finished; zero when there is none.
	DeployedAt time.Time
}

// EnvironmentView is what a product runs in one environment.
type EnvironmentView struct {
	Environment  Environment
	Applications []AppVersion
}

// ImageChange is an image repository whose digest differs between two environments.
type ImageChange struct {
	Repository string
	From, To   string // digests: From is what the environment promoted from runs, To what the next runs ("" none)
	FromTags   []string
	ToTags     []string
}

// Promotion is what promoting a product from one environment to the next would change.
type Promotion struct {
	From, To string // environment names
	// Revisions are the revisions each side runs (sorted, distinct).
	FromRevisions, ToRevisions []string
	Images                     []ImageChange
	// Commits and Issues are what the images From runs were built from and To's were not.
	Commits []images.Commit
	Issues  []images.Issue
}

// View is a product's Environments view.
type View struct {
	Product      Product
	Environments []EnvironmentView
	// Promotions are between consecutive environments in order.
	Promotions []Promotion
	// Unplaced are the product's applications no environment's targets match.
	Unplaced []AppVersion
}

func (t Target) matches(runtime, cluster, namespace string) bool {
	for _, c := range []struct{ glob, v string }{{t.Runtime, runtime}, {t.Cluster, cluster}, {t.Namespace, namespace}} {
		if c.glob == "" {
			continue
		}
		if ok, _ := path.Match(c.glob, c.v); !ok {
			return false
		}
	}
	return true
}

func clusterOf(a runtimes.Application) string {
	if a.DestName != "" {
		return a.DestName
	}
	return a.DestServer
}

// GetProduct returns the Environments view of p's account's product name: per environment in
// promotion order, the product's applications p may read there, and between consecutive
// environments what promoting would change. A product neither defined nor named by an
// annotation of an application p may read is errdefs.ErrNotFound.
func (s *Service) GetProduct(ctx context.Context, p rbac.Principal, name string) (View, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return View{}, err
	}
	defs, err := s.definitions(ctx, p.AccountID)
	if err != nil {
		return View{}, err
	}
	pr := Product{Name: name, Patterns: []string{}}
	if i := slices.IndexFunc(defs, func(d Product) bool { return d.Name == name }); i >= 0 {
		pr = defs[i]
	}
	apps, err := s.visibleApps(ctx, p)
	if err != nil {
		return View{}, err
	}
	var mine []runtimes.Application
	for _, a := range apps {
		if belongs(a, pr) {
			mine = append(mine, a)
		}
	}
	if !pr.Defined && len(mine) == 0 {
		return View{}, fmt.Errorf("product %s: %w", name, errdefs.ErrNotFound)
	}
	pr.Applications = len(mine)
	envs, err := s.ListEnvironments(ctx, p)
	if err != nil {
		return View{}, err
	}
	v := View{Product: pr, Environments: make([]EnvironmentView, len(envs))}
	for i, e := range envs {
		v.Environments[i] = EnvironmentView{Environment: e, Applications: []AppVersion{}}
	}
	for _, a := range mine {
		av, err := s.version(ctx, p, a)
		if err != nil {
			return View{}, err
		}
		placed := false
		for i, e := range envs {
			if slices.ContainsFunc(e.Targets, func(t Target) bool { return t.matches(a.Runtime, av.Cluster, av.Namespace) }) {
				v.Environments[i].Applications = append(v.Environments[i].Applications, av)
				placed = true
				break
			}
		}
		if !placed {
			v.Unplaced = append(v.Unplaced, av)
		}
	}
	for i := 0; i+1 < len(v.Environments); i++ {
		v.Promotions = append(v.Promotions, promotion(v.Environments[i], v.Environments[i+1]))
	}
	return v, nil
}

// version returns what a runs: its reported state and its latest deployment record's images.
func (s *Service) version(ctx context.Context, p rbac.Principal, a runtimes.Application) (AppVersion, error) {
	av := AppVersion{Runtime: a.Runtime, Name: a.Name, Cluster: clusterOf(a), Namespace: a.DestNamespace, Health: a.Health, Sync: a.Sync,
		Revision: a.Revision, Images: []Image{}}
	if s.deploys == nil {
		return av, nil
	}
	ds, err := s.deploys.ListDeployments(ctx, p, analytics.Filter{App: a.Name, Runtime: a.RuntimeID}, paging.Page{Limit: 1})
	if err != nil {
		return AppVersion{}, fmt.Errorf("application %s/%s: deployments: %w", a.Runtime, a.Name, err)
	}
	if len(ds) == 0 {
		return av, nil
	}
	d := ds[0]
	av.DeployedAt = d.FinishedAt
	if av.Revision == "" {
		av.Revision = d.Revision
	}
	for _, im := range d.Images {
		av.Images = append(av.Images, Image{Registry: im.Registry, Repository: im.Repository, Tags: im.Tags, Digest: im.Digest, Commits: im.Commits, Issues: im.Issues})
	}
	return av, nil
}

// promotion compares what from runs with what to runs.
func promotion(from, to EnvironmentView) Promotion {
	pr := Promotion{From: from.Environment.Name, To: to.Environment.Name, FromRevisions: revisions(from), ToRevisions: revisions(to),
		Images: []ImageChange{}, Commits: []images.Commit{}, Issues: []images.Issue{}}
	type side struct {
		digest string
		tags   []string
	}
	fromIms, toIms := map[string]side{}, map[string]side{}
	toCommits, toIssues := map[string]bool{}, map[string]bool{}
	for _, a := range to.Applications {
		for _, im := range a.Images {
			toIms[im.Repository] = side{im.Digest, im.Tags}
			for _, c := range im.Commits {
				toCommits[c.SHA] = true
			}
			for _, is := range im.Issues {
				toIssues[is.Key] = true
			}
		}
	}
	seenC, seenI := map[string]bool{}, map[string]bool{}
	for _, a := range from.Applications {
		for _, im := range a.Images {
			fromIms[im.Repository] = side{im.Digest, im.Tags}
			if toIms[im.Repository].digest == im.Digest {
				continue
			}
			for _, c := range im.Commits {
				if !toCommits[c.SHA] && !seenC[c.SHA] {
					seenC[c.SHA] = true
					pr.Commits = append(pr.Commits, c)
				}
			}
			for _, is := range im.Issues {
				if !toIssues[is.Key] && !seenI[is.Key] {
					seenI[is.Key] = true
					pr.Issues = append(pr.Issues, is)
				}
			}
		}
	}
	repos := map[string]bool{}
	for r := range fromIms {
		repos[r] = true
	}
	for r := range toIms {
		repos[r] = true
	}
	for _, r := range slices.Sorted(maps.Keys(repos)) {
		f, t := fromIms[r], toIms[r]
		if f.digest != t.digest {
			pr.Images = append(pr.Images, ImageChange{Repository: r, From: f.digest, To: t.digest, FromTags: f.tags, ToTags: t.tags})
		}
	}
	return pr
}

func revisions(e EnvironmentView) []string {
	out := []string{}
	for _, a := range e.Applications {
		if a.Revision != "" && !slices.Contains(out, a.Revision) {
			out = append(out, a.Revision)
		}
	}
	slices.Sort(out)
	return out
}

// Applications returns the applications of p's account's product name that p may read, by
// runtime ID and name, for filtering deployments and DORA metrics to the product. A product
// with no applications is an empty list; a product neither defined nor named by an annotation
// of an application p may read is an errdefs.Invalid of field (the query parameter naming it).
func (s *Service) Applications(ctx context.Context, p rbac.Principal, field, name string) ([]analytics.AppRef, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return nil, err
	}
	defs, err := s.definitions(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	pr := Product{Name: name, Patterns: []string{}}
	if i := slices.IndexFunc(defs, func(d Product) bool { return d.Name == name }); i >= 0 {
		pr = defs[i]
	}
	apps, err := s.visibleApps(ctx, p)
	if err != nil {
		return nil, err
	}
	out := []analytics.AppRef{}
	for _, a := range apps {
		if belongs(a, pr) {
			out = append(out, analytics.AppRef{RuntimeID: a.RuntimeID, App: a.Name})
		}
	}
	if !pr.Defined && len(out) == 0 {
		return nil, errdefs.Invalid(field, name, "is not a product: none is defined with that name nor named by an application's "+AnnotationProduct+" annotation")
	}
	return out, nil
}
