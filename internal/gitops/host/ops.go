package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/providers"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// The operations below are what both the REST API (api.go) and the GraphQL API (graphql.go)
// of the app-proxy do: one path for checks, commits and engine calls.

// Caller is who asks, as the control plane (or the ingress check) vouches.
type Caller struct {
	User, Email, Account, Role string
}

func (c Caller) mayWrite() error {
	switch c.Role {
	case "admin", "member":
		return nil
	}
	return fmt.Errorf("role %q may only read applications; changing them needs member or admin: %w", c.Role, errdefs.ErrForbidden)
}

func (c Caller) mayAdmin() error {
	if c.Role == "admin" {
		return nil
	}
	return fmt.Errorf("role %q: managing clusters needs admin: %w", c.Role, errdefs.ErrForbidden)
}

func (c Caller) author() git.Signature {
	if c.Email != "" {
		return git.Signature{Name: c.Email, Email: c.Email}
	}
	return git.Signature{Name: "Freshet", Email: "freshet@localhost"}
}

// Application returns one application with its spec and status.
func (h *Host) Application(name string) (Application, error) {
	st, err := h.eng.Status(name)
	if err != nil {
		return Application{}, err
	}
	return h.application(st), nil
}

// application is an app's status with what the loader knows of it; an application another
// one renders (app of apps) has the spec the engine runs and its owner.
func (h *Host) application(st engine.AppStatus) Application {
	la, _ := h.loaded(st.Name)
	a := Application{Name: st.Name, File: la.file, Source: la.source, Spec: la.app, Status: st, Owner: st.Owner}
	if a.Spec == nil && st.Owner != "" {
		a.Spec, _ = h.eng.Spec(st.Name)
		a.File = "application " + st.Owner
	}
	return a
}

// Applications returns every application, sorted by name.
func (h *Host) Applications() []Application {
	sts := h.eng.List()
	sort.Slice(sts, func(i, j int) bool { return sts[i].Name < sts[j].Name })
	items := make([]Application, 0, len(sts))
	for _, st := range sts {
		items = append(items, h.application(st))
	}
	return items
}

// CreateApplication decodes an Application and commits it: apps/<name>.yaml of the
// installation repository, or <path>/<name>.yaml of gitSource's repository; then loads it.
// An existing app is a conflict unless upsert.
func (h *Host) CreateApplication(ctx context.Context, c Caller, data []byte, upsert bool, gitSource string) (Application, error) {
	if err := c.mayWrite(); err != nil {
		return Application{}, err
	}
	if h.opts.InstallRepo.URL == "" {
		return Application{}, fmt.Errorf("this runtime has no installation repository to commit the application to: %w", errdefs.ErrUnavailable)
	}
	if len(data) > maxBody {
		return Application{}, errdefs.Invalid("body", fmt.Sprintf("%d bytes", len(data)), fmt.Sprintf("is larger than %d bytes", maxBody))
	}
	h.mu.Lock()
	g := h.sources[gitSource]
	h.mu.Unlock()
	if g != nil {
		// An app written into a Git Source may leave its destination to the source's.
		data = withDestination(data, g.Spec.Destination)
	}
	a, err := app.DecodeApplication(data)
	if err != nil {
		return Application{}, err
	}
	if err := h.checkSources(ctx, a); err != nil {
		return Application{}, err
	}
	name := a.Metadata.Name
	if owner, err := h.eng.Owner(name); err == nil && owner != "" {
		return Application{}, fmt.Errorf("application %q is rendered by application %q (app of apps): change it in %q's source: %w", name, owner, owner, errdefs.ErrConflict)
	}
	file, source := AppsDir+"/"+name+".yaml", gitSource
	h.mu.Lock()
	existing, exists := h.apps[name]
	h.mu.Unlock()
	switch {
	case exists && !upsert:
		return Application{}, fmt.Errorf("application %q exists (%s); use upsert to replace it: %w", name, existing.file, errdefs.ErrConflict)
	case exists && existing.source != "" && h.isRenderedSource(existing.source):
		return Application{}, fmt.Errorf("application %q is rendered by Git Source %q (a Helm chart or Kustomization): change it there in git: %w", name, existing.source, errdefs.ErrConflict)
	case exists:
		file, source = existing.file, existing.source
		if source != "" {
			file = existing.path
		}
	case source != "" && g == nil:
		return Application{}, errdefs.Invalid("gitSource", source, "is not a Git Source of this runtime")
	case source != "" && h.isRenderedSource(source):
		return Application{}, errdefs.Invalid("gitSource", source, "renders its applications (its directory is a Helm chart or a Kustomization): add the application to its templates or resources in git")
	case source != "":
		file = g.sourcePath(name)
	}
	content, err := app.EncodeApplication(a)
	if err != nil {
		return Application{}, err
	}
	verb := "create"
	if upsert {
		verb = "update"
	}
	change := git.FileChange{Path: file, Content: content, Create: !upsert}
	msg := fmt.Sprintf("%s application %s", verb, name)
	if source != "" {
		err = h.commitToSource(ctx, c, source, msg, change)
	} else {
		err = h.commit(ctx, c, msg, change)
	}
	if err != nil {
		return Application{}, err
	}
	// The new app's first refresh reads what its repository holds now, not refs cached up to
	// RefsTTL ago (manifests pushed just before the app is created must be found).
	if src := a.EffectiveSource(); src != nil {
		h.cache.Invalidate(src.RepoURL)
	}
	if err := h.Load(ctx); err != nil {
		return Application{}, err
	}
	return h.Application(name)
}

func (h *Host) isRenderedSource(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.renderedSources[name]
}

// DeleteApplication removes an application's file (a commit) and the app; cascade deletes its
// resources too.
func (h *Host) DeleteApplication(ctx context.Context, c Caller, name string, cascade bool) error {
	if err := c.mayWrite(); err != nil {
		return err
	}
	// No load may run meanwhile: one that read the repository before this commit would add the
	// app back.
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	la, ok := h.loaded(name)
	if !ok {
		if owner, err := h.eng.Owner(name); err == nil && owner != "" {
			return fmt.Errorf("application %q is rendered by application %q (app of apps): remove it from %q's source, or delete %q: %w", name, owner, owner, owner, errdefs.ErrConflict)
		}
		return fmt.Errorf("application %q: %w", name, errdefs.ErrNotFound)
	}
	if la.source != "" && h.isRenderedSource(la.source) {
		return fmt.Errorf("application %q is rendered by Git Source %q (a Helm chart or Kustomization): remove it there in git: %w", name, la.source, errdefs.ErrConflict)
	}
	var err error
	if la.source != "" {
		err = h.commitToSource(ctx, c, la.source, "delete application "+name, git.FileChange{Path: la.path, Delete: true})
	} else {
		err = h.commit(ctx, c, "delete application "+name, git.FileChange{Path: la.file, Delete: true})
	}
	if err != nil {
		return err
	}
	// Remove it first with the caller's cascade choice; the reload then finds it gone.
	if err := h.eng.Remove(ctx, name, cascade); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	h.mu.Lock()
	delete(h.apps, name)
	h.mu.Unlock()
	return nil
}

// RefreshApplication compares the app with git and the cluster now (hard: caches dropped).
func (h *Host) RefreshApplication(ctx context.Context, c Caller, name string, hard bool) (Application, error) {
	if err := c.mayWrite(); err != nil {
		return Application{}, err
	}
	if _, err := h.eng.Refresh(ctx, name, hard); err != nil {
		return Application{}, err
	}
	return h.Application(name)
}

// SyncApplication syncs an app and returns when the sync has ended.
func (h *Host) SyncApplication(ctx context.Context, c Caller, name string, req SyncRequest) (*engine.SyncResult, error) {
	if err := c.mayWrite(); err != nil {
		return nil, err
	}
	opts := engine.SyncOptions{Revision: req.Revision, Prune: req.Prune, DryRun: req.DryRun, Options: app.SyncOptions(req.Options), User: c.Email}
	for i, s := range req.Resources {
		k, err := parseResource(s)
		if err != nil {
			return nil, errdefs.Invalid(fmt.Sprintf("resources[%d]", i), s, err.Error())
		}
		opts.Resources = append(opts.Resources, k)
	}
	if la, ok := h.loaded(name); ok && req.Revision == "" {
		// A manual sync goes to what the target revision names now, not to what the shared
		// ref advertisement said up to RefsTTL ago.
		if src := la.app.EffectiveSource(); src != nil {
			h.cache.Invalidate(src.RepoURL)
		}
	}
	return h.eng.Sync(ctx, name, opts)
}

// TerminateSync stops an app's running sync; it reports whether one was running.
func (h *Host) TerminateSync(c Caller, name string) (bool, error) {
	if err := c.mayWrite(); err != nil {
		return false, err
	}
	if _, err := h.eng.Status(name); err != nil {
		return false, err
	}
	return h.eng.Terminate(name), nil
}

// RollbackApplication syncs an app to a history entry's revision (auto-sync switched off).
func (h *Host) RollbackApplication(ctx context.Context, c Caller, name string, id int64, prune bool) (*engine.RollbackResult, error) {
	if err := c.mayWrite(); err != nil {
		return nil, err
	}
	if id <= 0 {
		return nil, errdefs.Invalid("id", strconv.FormatInt(id, 10), "must be the id of a history entry (see history)")
	}
	return h.eng.RollbackAs(ctx, name, id, prune, c.Email)
}

// SetAutoSync switches automated sync back on (or off) for an app whose spec asks for it.
func (h *Host) SetAutoSync(c Caller, name string, enabled bool) (Application, error) {
	if err := c.mayWrite(); err != nil {
		return Application{}, err
	}
	if err := h.eng.SetAutoSync(name, enabled); err != nil {
		return Application{}, err
	}
	return h.Application(name)
}

// NotifyPush tells the runtime a repository changed: its apps refresh, and a push to the
// installation repository or a Git Source's reloads the applications.
func (h *Host) NotifyPush(c Caller, repoURL, revision string) (int, error) {
	if err := c.mayWrite(); err != nil {
		return 0, err
	}
	if repoURL == "" {
		return 0, errdefs.Invalid("repoURL", "", "is required")
	}
	n := h.eng.Notify(repoURL, revision)
	reload := h.opts.InstallRepo.URL != "" && sameRepo(repoURL, h.opts.InstallRepo.URL)
	for _, g := range h.GitSources() {
		reload = reload || sameRepo(repoURL, g.Spec.RepoURL)
	}
	if reload {
		h.Reload()
	}
	return n, nil
}

// GitSource returns one Git Source.
func (h *Host) GitSource(name string) (*GitSource, error) {
	h.mu.Lock()
	g := h.sources[name]
	h.mu.Unlock()
	if g == nil {
		return nil, fmt.Errorf("git source %q: %w", name, errdefs.ErrNotFound)
	}
	return g, nil
}

// PutGitSource creates (or with upsert replaces) a Git Source: a commit of
// git-sources/<name>.yaml to the installation repository.
func (h *Host) PutGitSource(ctx context.Context, c Caller, data []byte, upsert bool) (*GitSource, error) {
	if err := c.mayWrite(); err != nil {
		return nil, err
	}
	if h.opts.InstallRepo.URL == "" {
		return nil, fmt.Errorf("this runtime has no installation repository: %w", errdefs.ErrUnavailable)
	}
	g, err := decodeGitSource(data)
	if err != nil {
		return nil, err
	}
	if h.opts.Policy != nil {
		if err := h.opts.Policy.CheckRepoURLNow(ctx, "spec.repoURL", g.Spec.RepoURL); err != nil {
			return nil, err
		}
	}
	content, err := yaml.Marshal(g)
	if err != nil {
		return nil, err
	}
	if err := h.commit(ctx, c, "git source "+g.Metadata.Name, git.FileChange{Path: gitSourceFile(g.Metadata.Name), Content: content, Create: !upsert}); err != nil {
		return nil, err
	}
	return g, h.Load(ctx)
}

// DeleteGitSource removes a Git Source (a commit); its applications go with it.
func (h *Host) DeleteGitSource(ctx context.Context, c Caller, name string) error {
	if err := c.mayWrite(); err != nil {
		return err
	}
	if _, err := h.GitSource(name); err != nil {
		return err
	}
	if err := h.commit(ctx, c, "delete git source "+name, git.FileChange{Path: gitSourceFile(name), Delete: true}); err != nil {
		return err
	}
	return h.Load(ctx)
}

// checkSources refuses, before it is committed, an application whose repositories the
// runtime's policy does not allow (the cache would refuse to read them anyway).
func (h *Host) checkSources(ctx context.Context, a *app.Application) error {
	if h.opts.Policy == nil {
		return nil
	}
	if s := a.Spec.Source; s != nil {
		if err := h.opts.Policy.CheckRepoURLNow(ctx, "spec.source.repoURL", s.RepoURL); err != nil {
			return err
		}
	}
	for i, s := range a.Spec.Sources {
		if err := h.opts.Policy.CheckRepoURLNow(ctx, fmt.Sprintf("spec.sources[%d].repoURL", i), s.RepoURL); err != nil {
			return err
		}
	}
	return nil
}

// ProviderRepos lists repositories through a git provider's API with the caller's token (used
// for this call only, never kept): for picking a Git Source's or an application's repository.
func (h *Host) ProviderRepos(ctx context.Context, provider, baseURL, owner, token string) ([]providers.Repo, error) {
	var hc *http.Client
	if p := h.opts.Policy; p != nil {
		if baseURL != "" {
			if err := p.CheckProviderURL("baseURL", baseURL); err != nil {
				return nil, err
			}
		}
		hc = p.HTTPClient(providers.DefaultTimeout)
	}
	c, err := providers.New(provider, baseURL, token, hc)
	if err != nil {
		return nil, err
	}
	return c.ListRepos(ctx, owner)
}

// AddedCluster is what AddCluster answers.
type AddedCluster = appproxyv1.AddedCluster

// AddCluster keeps a managed cluster's credential after checking it reaches the cluster.
func (h *Host) AddCluster(ctx context.Context, c Caller, cred ClusterCredential) (AddedCluster, error) {
	if err := c.mayAdmin(); err != nil {
		return AddedCluster{}, err
	}
	if h.opts.ClusterStore == nil {
		return AddedCluster{}, fmt.Errorf("this runtime keeps no managed clusters: %w", errdefs.ErrUnavailable)
	}
	if err := cred.Validate(); err != nil {
		return AddedCluster{}, err
	}
	if h.opts.Policy != nil {
		if err := h.opts.Policy.CheckServerURL("server", cred.Server); err != nil {
			return AddedCluster{}, err
		}
	}
	kc, err := kubernetes.NewForConfig(withTimeout(h.clusterConfig(cred)))
	if err != nil {
		return AddedCluster{}, errdefs.Invalid("server", cred.Server, err.Error())
	}
	v, err := kc.Discovery().ServerVersion()
	if refused := (*netpolicy.Error)(nil); errors.As(err, &refused) {
		return AddedCluster{}, errdefs.Invalid("server", cred.Server, refused.Error())
	}
	if err != nil {
		return AddedCluster{}, fmt.Errorf("cluster %s at %s does not answer with this credential: %s: %w", cred.Name, cred.Server, clusterError(err), errdefs.ErrInvalid)
	}
	cred.CreatedAt = time.Now().UTC()
	if err := h.opts.ClusterStore.Put(ctx, cred); err != nil {
		return AddedCluster{}, err
	}
	if old := h.clusters.Remove(cred.Name); old != "" {
		h.eng.ForgetCluster(old)
	}
	h.clusters.Add(cred.Name, cred.Server, h.clusterConfig(cred))
	h.mu.Lock()
	if h.clusterHealth == nil {
		h.clusterHealth = map[string]string{}
	}
	h.clusterHealth[cred.Name] = "healthy" // it just answered
	h.mu.Unlock()
	// Apps waiting for this destination can go now.
	go func() { _ = h.eng.RefreshAll(context.WithoutCancel(ctx)) }()
	return AddedCluster{Name: cred.Name, Server: cred.Server, Version: v.GitVersion}, nil
}

// RemoveCluster forgets a managed cluster.
func (h *Host) RemoveCluster(ctx context.Context, c Caller, name string) error {
	if err := c.mayAdmin(); err != nil {
		return err
	}
	if name == engine.InClusterName {
		return errdefs.Invalid("name", name, "is the runtime's own cluster; it cannot be removed")
	}
	found := false
	for _, cl := range h.clusters.List() {
		found = found || cl.Name == name
	}
	if !found {
		return fmt.Errorf("cluster %q: %w", name, errdefs.ErrNotFound)
	}
	if h.opts.ClusterStore != nil {
		if err := h.opts.ClusterStore.Delete(ctx, name); err != nil {
			return err
		}
	}
	if old := h.clusters.Remove(name); old != "" {
		h.eng.ForgetCluster(old)
	}
	h.mu.Lock()
	delete(h.clusterHealth, name)
	h.mu.Unlock()
	return nil
}

// commit makes one change to the installation repository as the caller.
func (h *Host) commit(ctx context.Context, c Caller, msg string, change git.FileChange) error {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	_, err := h.cache.Commit(ctx, h.opts.InstallRepo, git.CommitRequest{Branch: h.opts.Branch, Message: msg, Author: c.author(), Changes: []git.FileChange{change}})
	if errors.Is(err, git.ErrConflict) {
		return fmt.Errorf("%s exists in the installation repository: %w", change.Path, errdefs.ErrConflict)
	}
	return err
}

// commitToSource makes one change to a Git Source's repository as the caller.
func (h *Host) commitToSource(ctx context.Context, c Caller, source, msg string, change git.FileChange) error {
	g, err := h.GitSource(source)
	if err != nil {
		return err
	}
	repo := git.Repo{URL: g.Spec.RepoURL, Credentials: h.credentials(g.Spec.RepoURL)}
	branch := g.Spec.TargetRevision
	if branch == "HEAD" {
		branch = ""
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	_, err = h.cache.Commit(ctx, repo, git.CommitRequest{Branch: branch, Message: msg, Author: c.author(), Changes: []git.FileChange{change}})
	if errors.Is(err, git.ErrConflict) {
		return fmt.Errorf("%s exists in git source %s: %w", change.Path, source, errdefs.ErrConflict)
	}
	return err
}
