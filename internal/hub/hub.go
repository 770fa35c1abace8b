// Package hub is the template Hub: a browsable catalogue of Argo WorkflowTemplates — the
// templates Freshet ships with (the repository's hub/ directory, embedded) and those of the
// git repositories an account's admin adds (hub sources: a URL, a revision and a directory in
// Argo Hub's layout) — and "use this template", which commits a template to a Git Source of
// one of the account's runtimes through its app-proxy. Every version is validated as the
// runtime's workflow engine validates WorkflowTemplates; what does not validate is left out
// and reported with its repository, file and field. Definitions: docs/hub.md.
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	hubfs "github.com/freshet-dev/freshet/hub"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/store"
)

// BuiltinSource is the Source of the templates Freshet ships with.
const BuiltinSource = "builtin"

// Bounds of hub sources.
const (
	MaxSources   = 20
	fetchTimeout = 60 * time.Second
	// maxLoaded bounds the decoded sources kept (by URL, revision and path).
	maxLoaded = 1000
)

var sourceNameRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Source is a git repository an account's admin added to the catalogue.
type Source struct {
	Name      string
	URL       string
	Revision  string // branch, tag or commit; empty: the repository's default branch
	Path      string // the directory of templates; "" or ".": the repository's root
	CreatedAt time.Time
}

// SourceStatus is what the last read of a source found: the commit, how many templates, and
// what is wrong (the fetch, or each file left out, as "FILE: FIELD: reason").
type SourceStatus struct {
	Source
	Commit    string
	Templates int
	Errors    []string
}

// Catalogue is what a caller sees: templates by name, and the state of the account's sources.
type Catalogue struct {
	Templates []Template
	Sources   []SourceStatus
}

// Filter narrows a listing: Search matches name, description, categories and tags
// (case-insensitive substring); Category is one category.
type Filter struct {
	Search, Category string
}

// UseRequest is "use this template": which version, and the runtime and Git Source it is
// committed to; Name renames it, Dir and Namespace say where it goes (see
// appproxyv1.WorkflowTemplateCommitRequest).
type UseRequest struct {
	Template, Version, Runtime, GitSource, Name, Dir, Namespace string
	Upsert                                                      bool
}

// UseResult is what the commit did.
type UseResult struct {
	Template, Version, Source, Runtime string
	appproxyv1.WorkflowTemplateCommit
}

// Runtimes commits to a runtime's Git Source (*runtimes.Service).
type Runtimes interface {
	CommitWorkflowTemplate(ctx context.Context, p rbac.Principal, runtime, gitSource string, req appproxyv1.WorkflowTemplateCommitRequest) (appproxyv1.WorkflowTemplateCommit, error)
}

var _ Runtimes = (*runtimes.Service)(nil)

// Deps are what the Service needs.
type Deps struct {
	Store Store
	Audit *audit.Log
	// Git reads hub sources; its Policy should be the operator's policy for tenants' URLs.
	Git *git.Cache
	// Net checks a source's URL when it is added (the operator's policy for tenants' URLs).
	Net      *netpolicy.Policy
	Runtimes Runtimes
	Log      *slog.Logger
	Now      func() time.Time
}

// Service is the template Hub.
type Service struct {
	db       Store
	audit    *audit.Log
	git      *git.Cache
	net      *netpolicy.Policy
	runtimes Runtimes
	log      *slog.Logger
	now      func() time.Time
	builtin  []Template

	mu     sync.Mutex
	loaded map[string]loadedSource // by URL, revision and path
}

type loadedSource struct {
	err       error // the fetch's, when it failed
	badPath   bool  // the source's path is not a directory at the commit
	commit    string
	templates []Template
	errs      []string
}

// New returns the Hub with the templates Freshet ships with; one of them that does not
// validate is an error (a build defect, which TestBuiltinCatalogue catches first).
func New(d Deps) (*Service, error) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if as, ok := d.Store.(audit.Store); ok && d.Audit == nil {
		d.Audit = audit.NewLog(as, d.Log)
	}
	ts, errs := Load(hubfs.FS, hubfs.Root)
	if len(errs) > 0 {
		return nil, fmt.Errorf("builtin hub templates: %w", errs[0])
	}
	for i := range ts {
		ts[i].Source = BuiltinSource
	}
	return &Service{db: d.Store, audit: d.Audit, git: d.Git, net: d.Net, runtimes: d.Runtimes, log: d.Log, now: d.Now,
		builtin: ts, loaded: map[string]loadedSource{}}, nil
}

func (s *Service) finish(ctx context.Context, e *audit.Entry, err error) {
	if s.audit != nil {
		s.audit.Finish(ctx, e, err)
	}
}

// Builtin returns the templates Freshet ships with.
func (s *Service) Builtin() []Template { return s.builtin }

// List returns p's account's catalogue: the builtin templates and those of its sources (a
// name already taken is left out, with an error on the source that repeats it), narrowed by f.
func (s *Service) List(ctx context.Context, p rbac.Principal, f Filter) (Catalogue, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return Catalogue{}, err
	}
	cat, err := s.catalogue(ctx, p.AccountID)
	if err != nil {
		return Catalogue{}, err
	}
	q, category := strings.ToLower(strings.TrimSpace(f.Search)), strings.ToLower(strings.TrimSpace(f.Category))
	out := cat.Templates[:0:0]
	for _, t := range cat.Templates {
		if category != "" && !contains(t.Categories, category) {
			continue
		}
		if q != "" && !matches(t, q) {
			continue
		}
		out = append(out, t)
	}
	cat.Templates = out
	return cat, nil
}

func matches(t Template, q string) bool {
	if strings.Contains(t.Name, q) || strings.Contains(strings.ToLower(t.Description), q) {
		return true
	}
	for _, w := range append(append([]string{}, t.Categories...), t.Tags...) {
		if strings.Contains(w, q) {
			return true
		}
	}
	return false
}

// Get returns template name of p's account's catalogue and its version ("" or "latest": the
// newest).
func (s *Service) Get(ctx context.Context, p rbac.Principal, name, version string) (Template, Version, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return Template{}, Version{}, err
	}
	cat, err := s.catalogue(ctx, p.AccountID)
	if err != nil {
		return Template{}, Version{}, err
	}
	for _, t := range cat.Templates {
		if t.Name != name {
			continue
		}
		v, ok := t.Version(version)
		if !ok {
			names := make([]string, 0, len(t.Versions))
			for _, x := range t.Versions {
				names = append(names, x.Version)
			}
			return Template{}, Version{}, errdefs.Invalid("version", version, "is not a version of "+name+": it has "+strings.Join(names, ", "))
		}
		return t, v, nil
	}
	return Template{}, Version{}, fmt.Errorf("hub template %q: %w", name, errdefs.ErrNotFound)
}

func (s *Service) catalogue(ctx context.Context, accountID string) (Catalogue, error) {
	cat := Catalogue{Templates: append([]Template{}, s.builtin...), Sources: []SourceStatus{}}
	rows, err := s.db.ListHubSources(ctx, accountID)
	if err != nil {
		return Catalogue{}, err
	}
	taken := map[string]string{}
	for _, t := range s.builtin {
		taken[t.Name] = BuiltinSource
	}
	for _, row := range rows {
		src := sourceFromRow(row)
		ls := s.read(ctx, src)
		st := SourceStatus{Source: src, Commit: ls.commit, Errors: append([]string{}, ls.errs...)}
		for _, t := range ls.templates {
			if by, ok := taken[t.Name]; ok {
				st.Errors = append(st.Errors, fmt.Sprintf("%s: left out: the name is taken by the %s template", t.Name, describe(by)))
				continue
			}
			taken[t.Name] = src.Name
			t.Source = src.Name
			cat.Templates = append(cat.Templates, t)
			st.Templates++
		}
		cat.Sources = append(cat.Sources, st)
	}
	sort.SliceStable(cat.Templates, func(i, j int) bool { return cat.Templates[i].Name < cat.Templates[j].Name })
	return cat, nil
}

func describe(source string) string {
	if source == BuiltinSource {
		return "builtin"
	}
	return "hub source " + source + "'s"
}

func sourceFromRow(r store.HubSource) Source {
	return Source{Name: r.Name, URL: r.URL, Revision: r.Revision, Path: r.Path, CreatedAt: r.CreatedAt}
}

// read returns what src holds at its revision now (the git cache's ref advertisement is reused
// for a few seconds, so a push shows within them); a commit read before is not decoded again.
func (s *Service) read(ctx context.Context, src Source) loadedSource {
	at := fmt.Sprintf("hub source %s (%s", src.Name, src.URL)
	if src.Revision != "" {
		at += " at " + src.Revision
	}
	at += ")"
	if s.git == nil {
		return loadedSource{errs: []string{at + ": this server reads no git repositories"}}
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	rev := src.Revision
	if rev == "" {
		rev = "HEAD"
	}
	snap, err := s.git.Checkout(ctx, git.Repo{URL: src.URL}, rev)
	if err != nil {
		return loadedSource{err: err, errs: []string{at + ": " + err.Error()}}
	}
	defer snap.Release()
	key := src.URL + "\x00" + rev + "\x00" + src.Path
	s.mu.Lock()
	ls, ok := s.loaded[key]
	s.mu.Unlock()
	if ok && ls.commit == snap.SHA {
		return ls
	}
	root := src.Path
	if root == "" {
		root = "."
	}
	ts, errs := Load(os.DirFS(snap.Dir), root)
	ls = loadedSource{commit: snap.SHA, templates: ts}
	for _, e := range errs {
		if e.File == root && e.Field == "path" {
			ls.badPath = true
			ls.errs = append(ls.errs, fmt.Sprintf("%s: path %q: %s", at, src.Path, e.Reason))
			continue
		}
		ls.errs = append(ls.errs, at+": "+path.Join(strings.TrimPrefix(root, "."), e.File)+": "+strings.TrimPrefix(e.Error(), e.File+": "))
	}
	s.mu.Lock()
	if len(s.loaded) >= maxLoaded {
		// Sources deleted, or revisions moved on: forget them all rather than grow.
		clear(s.loaded)
	}
	s.loaded[key] = ls
	s.mu.Unlock()
	return ls
}

// ListSources returns p's account's hub sources with what their last read found.
func (s *Service) ListSources(ctx context.Context, p rbac.Principal) ([]SourceStatus, error) {
	cat, err := s.List(ctx, p, Filter{})
	if err != nil {
		return nil, err
	}
	return cat.Sources, nil
}

// ValidateSource checks a source's fields (its URL under the operator's policy when one is set).
func (s *Service) ValidateSource(src Source) error {
	switch {
	case !sourceNameRe.MatchString(src.Name):
		return errdefs.Invalid("name", src.Name, "is not a name: 1 to 63 lower-case letters, digits and '-', starting and ending with a letter or digit")
	case src.Name == BuiltinSource:
		return errdefs.Invalid("name", src.Name, "is the name of the templates Freshet ships with: choose another")
	case src.URL == "":
		return errdefs.Invalid("url", "", "is required: the git repository of the templates")
	case len(src.URL) > 2048:
		return errdefs.Invalid("url", src.URL, "is longer than 2048 characters")
	case strings.HasPrefix(src.Revision, "-") || strings.ContainsAny(src.Revision, " \t\n~^:?*[\\") || len(src.Revision) > 255:
		return errdefs.Invalid("revision", src.Revision, "is not a branch, tag or commit")
	}
	if _, err := git.NormalizeURL(src.URL); err != nil {
		return errdefs.Invalid("url", src.URL, "is not a git repository URL: "+err.Error())
	}
	if u, err := url.Parse(src.URL); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.User != nil {
		return errdefs.Invalid("url", "", "carries credentials: hub sources are read without credentials (public repositories)")
	}
	if s.net != nil {
		if err := s.net.CheckRepoURL("url", src.URL); err != nil {
			return err
		}
	}
	if src.Path != "" {
		clean := path.Clean(src.Path)
		if path.IsAbs(src.Path) || clean == ".." || strings.HasPrefix(clean, "../") || len(src.Path) > 1024 {
			return errdefs.Invalid("path", src.Path, "is not a directory of the repository: a relative path without '..', as workflows")
		}
	}
	return nil
}

// AddSource adds a hub source to p's account (admins): its repository is read at once, and a
// repository that cannot be read, or a path that is not a directory of it, is refused naming
// the field; templates in it that do not validate are left out and listed in the answer's
// Errors.
func (s *Service) AddSource(ctx context.Context, p rbac.Principal, src Source) (_ SourceStatus, err error) {
	e := audit.Start(ctx, p, "hub.source.create", "hub-source", src.Name)
	defer func() { s.finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRuntimes); err != nil {
		return SourceStatus{}, err
	}
	if src.Path != "" {
		src.Path = strings.TrimPrefix(path.Clean(src.Path), "./")
		if src.Path == "." {
			src.Path = ""
		}
	}
	if err := s.ValidateSource(src); err != nil {
		return SourceStatus{}, err
	}
	rows, err := s.db.ListHubSources(ctx, p.AccountID)
	if err != nil {
		return SourceStatus{}, err
	}
	if len(rows) >= MaxSources {
		return SourceStatus{}, errdefs.Invalid("name", src.Name, fmt.Sprintf("is one source too many: an account has at most %d", MaxSources))
	}
	ls := s.read(ctx, src)
	if errors.Is(ls.err, git.ErrUnreachable) {
		return SourceStatus{}, fmt.Errorf("url %s cannot be reached now (retry later): %s: %w", src.URL, strings.Join(ls.errs, "; "), errdefs.ErrUnavailable)
	}
	if ls.commit == "" || ls.badPath {
		field, v := "url", src.URL
		if ls.commit != "" {
			field, v = "path", src.Path
		}
		return SourceStatus{}, errdefs.Invalid(field, v, "cannot be read: "+strings.Join(ls.errs, "; "))
	}
	src.CreatedAt = s.now().UTC()
	row := store.HubSource{ID: store.NewID(store.PrefixHubSource), AccountID: p.AccountID, Name: src.Name, URL: src.URL, Revision: src.Revision,
		Path: src.Path, CreatedAt: src.CreatedAt}
	e.Detail("%s at %q, path %q: %d templates, %d errors", src.URL, src.Revision, src.Path, len(ls.templates), len(ls.errs))
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateHubSource(ctx, row); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return SourceStatus{}, fmt.Errorf("hub source %s: %w", src.Name, err)
	}
	return SourceStatus{Source: src, Commit: ls.commit, Templates: len(ls.templates), Errors: ls.errs}, nil
}

// DeleteSource removes a hub source of p's account (admins).
func (s *Service) DeleteSource(ctx context.Context, p rbac.Principal, name string) (err error) {
	e := audit.Start(ctx, p, "hub.source.delete", "hub-source", name)
	defer func() { s.finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRuntimes); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteHubSource(ctx, p.AccountID, name); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

// Use commits version req.Version of template req.Template to Git Source req.GitSource of
// runtime req.Runtime, as p (the runtime's app-proxy checks and commits; see
// runtimes.CommitWorkflowTemplate), and records it in the audit log.
func (s *Service) Use(ctx context.Context, p rbac.Principal, req UseRequest) (_ UseResult, err error) {
	e := audit.Start(ctx, p, "hub.template.use", "hub-template", req.Template)
	defer func() { s.finish(ctx, e, err) }()
	if req.Runtime == "" {
		return UseResult{}, errdefs.Invalid("runtime", "", "is required: the runtime whose Git Source the template is committed to")
	}
	if req.GitSource == "" {
		return UseResult{}, errdefs.Invalid("gitSource", "", "is required: the Git Source the template is committed to")
	}
	if req.Name != "" && (!nameRe.MatchString(req.Name) || len(req.Name) > maxLabel) {
		return UseResult{}, errdefs.Invalid("name", req.Name, "is not a WorkflowTemplate name: 1-63 lowercase letters, digits and '-'")
	}
	t, v, err := s.Get(ctx, p, req.Template, req.Version)
	if err != nil {
		return UseResult{}, err
	}
	manifest := v.Manifest
	if req.Name != "" && req.Name != t.Name {
		m, err := manifestJSON(v)
		if err != nil {
			return UseResult{}, err
		}
		meta, _ := m["metadata"].(map[string]any)
		meta["name"] = req.Name
		data, err := json.Marshal(m)
		if err != nil {
			return UseResult{}, err
		}
		out, err := yaml.JSONToYAML(data)
		if err != nil {
			return UseResult{}, err
		}
		manifest = string(out)
	}
	e.Detail("%s %s (%s) to git source %s of runtime %s", t.Name, v.Version, t.Source, req.GitSource, req.Runtime)
	res, err := s.runtimes.CommitWorkflowTemplate(ctx, p, req.Runtime, req.GitSource, appproxyv1.WorkflowTemplateCommitRequest{
		Manifest: manifest, Dir: req.Dir, Namespace: req.Namespace, Upsert: req.Upsert,
		Message: fmt.Sprintf("use hub template %s %s", t.Name, v.Version)})
	if err != nil {
		return UseResult{}, err
	}
	e.Detail("%s %s (%s) to git source %s of runtime %s: %s at %s", t.Name, v.Version, t.Source, req.GitSource, req.Runtime, res.File, res.Commit)
	return UseResult{Template: t.Name, Version: v.Version, Source: t.Source, Runtime: req.Runtime, WorkflowTemplateCommit: res}, nil
}
