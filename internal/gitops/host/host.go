// Package host runs the GitOps engine inside a runtime: it builds the repository cache, the
// renderer and the cluster registry, loads the runtime's applications from its installation
// repository (apps/*.yaml, projects/*.yaml), serves the applications API on the app-proxy and
// reports what the engine does to the control plane.
//
// It is runtime-side code: it imports nothing from the control plane; the report goes through
// a Sink the agent provides (the runtime protocol's Report call).
package host

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/appset"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/gitops/notifications"
	"github.com/freshet-dev/freshet/internal/gitops/render"
	"github.com/freshet-dev/freshet/internal/gitops/repocreds"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/repourl"
)

// Installation repository layout.
const (
	AppsDir     = "apps"
	ProjectsDir = "projects"
	// CascadeFinalizer on an Application makes removing it from git delete its resources, as
	// in Argo CD.
	CascadeFinalizer = "resources-finalizer.argocd.argoproj.io"
)

// DefaultReloadInterval is how often the installation repository is read without a push.
const DefaultReloadInterval = time.Minute

// Options configure a Host.
type Options struct {
	// Dir holds the repository cache.
	Dir string
	// InstallRepo is the runtime's installation repository; an empty URL means none (apps
	// can then not be created through the API).
	InstallRepo git.Repo
	// Branch of the installation repository; "" is the remote's default branch.
	Branch string
	// InCluster is the runtime's own cluster (destination https://kubernetes.default.svc and
	// name in-cluster); nil means none: apps get a NoClusterConfigured condition.
	InCluster *rest.Config
	// ClusterStore keeps managed clusters' credentials (nil: no managed clusters).
	ClusterStore ClusterStore
	// Credentials for application source repositories (nil: anonymous). When set, it is used
	// instead of RepoCreds.
	Credentials func(repoURL string) git.Credentials
	// RepoCreds is where the runtime keeps repository credentials as Argo CD does (repository
	// and repo-creds Secrets, argocd-tls-certs-cm), for git repositories, chart repositories
	// and OCI registries; read at start and with every load of the installation repository.
	// nil: none.
	RepoCreds repocreds.Source
	// Engine holds the engine's tunables; Cache, Renderer, Clusters and Reporter are set here.
	Engine engine.Options
	// Sink sends reports to the control plane; nil discards them.
	Sink func(context.Context, runtimev1.ReportRequest) error
	// ReloadInterval: how often the installation repository is read (DefaultReloadInterval).
	ReloadInterval time.Duration
	Logger         *slog.Logger
	// Policy decides which URLs the runtime's users may make it use — repositories, git
	// provider APIs, managed clusters' API servers — and which addresses it may connect to
	// for them (nil: all). A hosted runtime gets the control plane operator's, which allows
	// its own installation repository.
	Policy *netpolicy.Policy
	// Rollouts is the runtime's Argo Rollouts controller, served under rollouts/ (nil: none;
	// those routes answer unavailable).
	Rollouts Rollouts
	// Workflows is the runtime's Argo Workflows controller, served under workflows/ and
	// workflow-templates/ (nil: none; those routes answer unavailable).
	Workflows Workflows
	// Events is the runtime's Argo Events controller, served under sensors/ and event-sources/
	// (nil: none; those routes answer unavailable).
	Events Events
	// ClusterApps: also run the Application and AppProject custom resources (argoproj.io) of
	// ClusterAppsNamespace in the InCluster cluster, as Argo CD does, installing their CRDs
	// (docs/gitops.md, "Applications from the cluster"). Needs InCluster.
	ClusterApps bool
	// ClusterAppsNamespace is the namespace watched with ClusterApps ("default" when empty).
	ClusterAppsNamespace string
	// MailRootCAs check the certificates of the mail servers argocd-notifications-cm's email
	// services name (nil: the host's).
	MailRootCAs *x509.CertPool
	// ClusterAppsSourceNamespaces are other namespaces whose Application resources run with
	// ClusterApps (Argo CD's application.namespaces): one runs only when its project's
	// spec.sourceNamespaces lists its namespace. AppProjects and ApplicationSets are read in
	// ClusterAppsNamespace only.
	ClusterAppsSourceNamespaces []string
}

// Host is a running GitOps engine with its application loader.
type Host struct {
	opts     Options
	log      *slog.Logger
	cache    *git.Cache
	renderer *render.Renderer // renders Git Sources that are Helm charts or Kustomizations
	eng      *engine.Engine
	sets     *appset.Controller
	clusters *engine.Clusters
	rep      *reporter
	reload   chan struct{}
	writeMu  sync.Mutex // serializes API writes to the installation repository
	loadMu   sync.Mutex // serializes loads: one that read an older commit must not apply after a newer one

	mu   sync.Mutex
	apps map[string]loadedApp // by name
	// loadedSets are the ApplicationSets of the last load (installation repository and Git
	// Sources), by name.
	loadedSets map[string]loadedSet
	sources    map[string]*GitSource
	// projects are the AppProjects of the last load (installation repository and Git Sources).
	projects map[string]*app.AppProject
	// renderedSources are the Git Sources whose directory is a Helm chart or a Kustomization.
	renderedSources map[string]bool
	// clusterHealth is each cluster's health at the last probe, by name.
	clusterHealth map[string]string
	// repoCreds is the last set of repository credentials read from Options.RepoCreds, and
	// credErrs the problems of that read.
	repoCreds atomic.Pointer[repocreds.Set]
	credErrs  []string
	// settingsErrs are the problems of the last argocd-cm read, settingsSum its content's hash.
	settingsErrs []string
	settingsSum  [32]byte
	// notif runs Argo CD Notifications (nil without a source for argocd-notifications-cm);
	// notifyErrs are the problems of the last argocd-notifications-cm read, notifySum its hash.
	notif      *notifications.Controller
	notifyErrs []string
	notifySum  [32]byte
	loadErrs   []string // problems of the last load, by file
	loadedAt   time.Time
	revision   string // the installation repository's commit last loaded
	lastErr    error  // the last load's failure (the repository itself)

	// lastRoles are the AppProject roles last sent to the control plane (nil: none yet).
	rolesMu   sync.Mutex
	lastRoles []runtimev1.ProjectRoleRecord

	capps     *clusterApps  // nil without Options.ClusterApps
	firstLoad chan struct{} // closed after the first load of the installation repository
	firstOnce sync.Once
}

type loadedApp struct {
	app    *app.Application
	file   string // where it is defined, for people: apps/x.yaml, or "git-source S: path"
	source string // the Git Source it comes from; "" for the installation repository
	path   string // its file in the Git Source's repository
}

// New builds a host; Run starts it.
func New(opts Options) (*Host, error) {
	if opts.Dir == "" {
		return nil, errdefs.Invalid("dir", "", "is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ReloadInterval <= 0 {
		opts.ReloadInterval = DefaultReloadInterval
	}
	if opts.InstallRepo.URL != "" {
		if _, err := repourl.Normalize(opts.InstallRepo.URL); err != nil {
			return nil, errdefs.Invalid("installRepo", opts.InstallRepo.URL, err.Error())
		}
	}
	cache, err := git.NewCache(filepath.Join(opts.Dir, "git"), git.Options{Logger: opts.Logger.With("component", "git"), Policy: opts.Policy})
	if err != nil {
		return nil, err
	}
	renderer, err := render.New(render.Options{})
	if err != nil {
		return nil, err
	}
	charts, err := helmrepo.New(helmrepo.Options{Dir: filepath.Join(opts.Dir, "charts"), Policy: opts.Policy, Logger: opts.Logger.With("component", "charts")})
	if err != nil {
		return nil, err
	}
	clusters := engine.NewClusters()
	if opts.InCluster != nil {
		clusters.SetInCluster(opts.InCluster)
	}
	h := &Host{opts: opts, log: opts.Logger, cache: cache, clusters: clusters, reload: make(chan struct{}, 1), apps: map[string]loadedApp{}, firstLoad: make(chan struct{})}
	if opts.ClusterApps {
		if opts.InCluster == nil {
			return nil, errdefs.Invalid("clusterApps", "true", "needs the runtime's own cluster (a kubeconfig or in-cluster config)")
		}
		ns := opts.ClusterAppsNamespace
		if ns == "" {
			ns = "default"
		}
		dyn, err := dynamic.NewForConfig(opts.InCluster)
		if err != nil {
			return nil, err
		}
		h.capps = newClusterApps(h, ns, dyn)
		for i, other := range opts.ClusterAppsSourceNamespaces {
			if msgs := validation.IsDNS1123Label(other); len(msgs) > 0 {
				return nil, errdefs.Invalid(fmt.Sprintf("clusterAppsSourceNamespaces[%d]", i), other, "is not a namespace name: "+strings.Join(msgs, "; "))
			}
			if other == ns || slices.Contains(opts.ClusterAppsSourceNamespaces[:i], other) {
				continue
			}
			o := newClusterApps(h, other, dyn)
			o.home = h.capps
			h.capps.others = append(h.capps.others, o)
		}
	}
	lctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = h.loadClusters(lctx)
	cancel()
	if err != nil {
		return nil, err
	}
	h.rep = newReporter(opts.Sink, opts.Logger.With("component", "gitops-report"))
	h.rep.roles = h.snapshotRoles
	h.rep.spec = func(name string) *app.Application {
		if la, ok := h.loaded(name); ok {
			return la.app
		}
		a, _ := h.eng.Spec(name) // a child application (app of apps)
		return a
	}
	eo := opts.Engine
	h.renderer = renderer
	eo.Cache, eo.Renderer, eo.Clusters, eo.Logger = cache, renderer, clusters, opts.Logger.With("component", "gitops")
	if err := h.newNotifications(); err != nil {
		return nil, err
	}
	eo.Reporter = engine.ReporterFunc(func(ctx context.Context, ev engine.Event) {
		h.rep.Report(ctx, ev)
		if h.capps != nil {
			h.capps.notify(ev.App)
		}
		if h.notif != nil {
			if ev.Type == engine.EventAppDeleted {
				h.notif.Deleted(ev.App)
			} else {
				h.notif.Enqueue(ev.App)
			}
		}
	})
	if eo.Charts == nil {
		eo.Charts = charts
	}
	if opts.Credentials != nil {
		eo.Credentials = opts.Credentials
	}
	eo.Projects = h.project
	eo.ProjectsChanged = h.reportRoles
	if eo.Credentials == nil {
		// Apps in the installation repository itself use its credentials; other repositories
		// the runtime's repository credentials.
		installKey, _ := repourl.Normalize(opts.InstallRepo.URL)
		eo.Credentials = func(u string) git.Credentials {
			if k, _ := repourl.Normalize(u); opts.InstallRepo.URL != "" && k == installKey {
				return opts.InstallRepo.Credentials
			}
			c, _ := h.repoCreds.Load().Lookup(u)
			return c
		}
	}
	if eo.RepoByName == nil {
		eo.RepoByName = func(name string) (string, bool) {
			e, ok := h.repoCreds.Load().ByName(name)
			if !ok {
				return "", false
			}
			return e.URL, true
		}
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	h.loadRepoCreds(cctx)
	if s, changed := h.readSettings(cctx); changed {
		eo.Settings = s
	}
	h.loadNotifications(cctx)
	ccancel()
	h.sets = appset.New(appset.Options{Logger: opts.Logger.With("component", "applicationsets"),
		Sources: appset.Sources{Checkout: h.checkout, Clusters: h.appSetClusters},
		OnStatus: func(s appset.Status) {
			if h.capps != nil {
				h.capps.setChanged(s.Name)
			}
		}})
	eo.AppSets = h.sets.Hook()
	if h.eng, err = engine.New(eo); err != nil {
		return nil, err
	}
	h.sets.SetEngine(h.eng)
	return h, nil
}

// Engine is the hosted engine.
func (h *Host) Engine() *engine.Engine { return h.eng }

// Run runs the engine, the loader and the reporter until ctx ends.
func (h *Host) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- h.eng.Run(ctx) }()
	setsDone := make(chan struct{})
	go func() { _ = h.sets.Run(ctx); close(setsDone) }()
	defer func() { <-setsDone }()
	go h.rep.run(ctx, h.snapshot)
	go h.loadLoop(ctx)
	go h.probeClusters(ctx)
	if h.notif != nil {
		notifDone := make(chan struct{})
		go func() { _ = h.notif.Run(ctx); close(notifDone) }()
		defer func() { <-notifDone }()
	}
	if h.capps != nil {
		cappsDone := make(chan struct{})
		go func() {
			defer close(cappsDone)
			if err := h.capps.run(ctx, h.firstLoad); err != nil && ctx.Err() == nil {
				h.log.Error("watching Application resources stopped", "namespace", h.capps.ns, "err", err)
			}
		}()
		defer func() { <-cappsDone }()
	}
	select {
	case <-ctx.Done():
		<-errc
		h.eng.Close()
		return nil
	case err := <-errc:
		return err
	}
}

// Reload asks the loader to read the installation repository now.
func (h *Host) Reload() {
	select {
	case h.reload <- struct{}{}:
	default:
	}
}

func (h *Host) loadLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	backoff := time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.reload:
		}
		h.loadRepoCreds(ctx)
		h.loadSettings(ctx)
		h.loadNotifications(ctx)
		err := h.Load(ctx)
		h.firstOnce.Do(func() { close(h.firstLoad) })
		next := h.opts.ReloadInterval
		if err != nil && ctx.Err() == nil {
			h.log.Warn("reading the installation repository failed", "repo", h.opts.InstallRepo.URL, "err", err)
			if git.IsTemporary(err) {
				next = min(backoff, next)
				backoff = min(backoff*2, h.opts.ReloadInterval)
			}
		} else {
			backoff = time.Second
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next)
	}
}

// Load reads the installation repository once and brings the engine's applications in line
// with it. A file that does not decode keeps the application it held before (a typo must not
// delete an app); its error is kept for Health.
func (h *Host) Load(ctx context.Context) error {
	if h.opts.InstallRepo.URL == "" {
		return nil
	}
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	repo := h.opts.InstallRepo
	h.cache.Invalidate(repo.URL)
	rev := h.opts.Branch
	snap, err := h.cache.Checkout(ctx, repo, rev)
	if errors.Is(err, git.ErrRevisionNotFound) && (rev == "" || rev == "HEAD") {
		// An empty repository: nothing is installed yet.
		h.apply(ctx, nil, nil, nil, "")
		h.mu.Lock()
		h.sources = nil
		h.mu.Unlock()
		return nil
	}
	if err != nil {
		h.mu.Lock()
		h.lastErr = err
		h.mu.Unlock()
		return err
	}
	defer snap.Release()
	projects, perrs := readProjects(snap.Dir)
	sets := map[string]loadedSet{}
	apps, failed, aerrs := readApps(snap.Dir, sets)
	sources, serrs := readGitSources(snap.Dir)
	problems := append(append(perrs, aerrs...), serrs...)
	keep := func(la loadedApp) bool { return failed[la.file] }
	failedSources := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		sapps, sprojects, errs, err := h.loadGitSource(ctx, sources[name], sets)
		problems = append(problems, errs...)
		if err != nil {
			// Its apps stay as they were until the repository answers again.
			problems = append(problems, fmt.Sprintf("git-source %s: %v", name, err))
			failedSources[name] = true
			continue
		}
		for pn, p := range sprojects {
			if _, dup := projects[pn]; !dup {
				projects[pn] = p
			}
		}
		for an, la := range sapps {
			if prev, dup := apps[an]; dup {
				problems = append(problems, fmt.Sprintf("%s: application %q is also defined in %s; the first one is used", la.file, an, prev.file))
				continue
			}
			apps[an] = la
		}
	}
	h.mu.Lock()
	h.projects = projects
	h.mu.Unlock()
	h.reportRoles()
	problems = append(problems, h.apply(ctx, apps, func(la loadedApp) bool { return keep(la) || failedSources[la.source] }, projects, snap.SHA)...)
	problems = append(problems, h.applySets(ctx, sets, func(ls loadedSet) bool { return failed[ls.file] || failedSources[ls.source] })...)
	h.mu.Lock()
	h.sources = sources
	h.loadErrs = problems
	h.lastErr = nil
	h.mu.Unlock()
	h.capps.retryRefused() // a name git released may now go to a resource
	if _, err := h.cache.GC(2); err != nil {
		h.log.Debug("git cache GC", "err", err)
	}
	return nil
}

// apply upserts apps (with their projects) and removes the loaded apps that are gone, except
// those keep accepts (their file exists but does not decode now, or their Git Source's
// repository does not answer): they keep their previous state.
func (h *Host) apply(ctx context.Context, apps map[string]loadedApp, keep func(loadedApp) bool, projects map[string]*app.AppProject, sha string) []string {
	var problems []string
	h.mu.Lock()
	old := h.apps
	// The new specs are visible before the engine hears of them, so that its first report of an
	// app already carries the spec's fields (labels, repository, destination).
	merged := maps.Clone(old)
	if merged == nil {
		merged = map[string]loadedApp{}
	}
	maps.Copy(merged, apps)
	h.apps = merged
	h.mu.Unlock()
	next := make(map[string]loadedApp, len(apps))
	for name, la := range apps {
		if ns, held := h.capps.holder(name); held {
			problems = append(problems, fmt.Sprintf("%s: application %q is defined twice: here and as the Application resource %s/%s; the first one registered (the resource) keeps it: rename or remove one", la.file, name, ns, name))
			continue
		}
		if err := h.eng.Upsert(la.app, projectFor(la.app, projects)); err != nil {
			h.log.Warn("application not loaded", "app", name, "file", la.file, "err", err)
			problems = append(problems, fmt.Sprintf("%s: application not loaded: %v", la.file, err))
			continue
		}
		next[name] = la
		// A spec change the engine's status does not show (labels, say) is reported here.
		if prev, ok := old[name]; ok && !sameSpec(prev.app, la.app) {
			if st, err := h.eng.Status(name); err == nil {
				h.rep.Report(ctx, engine.Event{Type: engine.EventAppChanged, App: name, At: time.Now(), Status: &st})
			}
		}
	}
	for name, la := range old {
		if _, ok := next[name]; ok {
			continue
		}
		if keep != nil && keep(la) {
			next[name] = la
			continue
		}
		cascade := slices.Contains(la.app.Metadata.Finalizers, CascadeFinalizer)
		if err := h.eng.Remove(ctx, name, cascade); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			h.log.Warn("removing application", "app", name, "err", err)
		}
	}
	h.mu.Lock()
	h.apps, h.loadedAt, h.revision = next, time.Now(), sha
	h.mu.Unlock()
	return problems
}

// project is an AppProject defined in the installation repository or a Git Source (nil when
// none is), for the engine's child applications.
func (h *Host) project(name string) *app.AppProject {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.projects[name]
}

// sameSpec reports whether two loaded Applications are the same document.
func sameSpec(a, b *app.Application) bool {
	ea, err1 := app.EncodeApplication(a)
	eb, err2 := app.EncodeApplication(b)
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}

// projectFor returns the app's project: one from the repository, the built-in default, or —
// for a name that exists nowhere — a project that permits nothing and says why.
func projectFor(a *app.Application, projects map[string]*app.AppProject) *app.AppProject {
	name := a.Spec.Project
	if p, ok := projects[name]; ok {
		return p
	}
	if name == app.DefaultProject || name == "" {
		return nil
	}
	p := &app.AppProject{APIVersion: app.APIVersion, Kind: app.KindAppProject}
	p.Metadata.Name = name
	p.Spec.Description = fmt.Sprintf("project %q does not exist in the installation repository (%s/)", name, ProjectsDir)
	return p
}

func yamlFiles(root, dir string) []string {
	var out []string
	base := filepath.Join(root, dir)
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != base && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := strings.ToLower(path.Ext(d.Name())); ext == ".yaml" || ext == ".yml" || ext == ".json" {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func readProjects(root string) (map[string]*app.AppProject, []string) {
	projects := map[string]*app.AppProject{}
	var errs []string
	for _, f := range yamlFiles(root, ProjectsDir) {
		docs, err := decodeFile(root, f)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, d := range docs {
			if d.AppProject != nil {
				projects[d.AppProject.Metadata.Name] = d.AppProject
			}
		}
	}
	return projects, errs
}

// readApps decodes apps/: the applications by name, the files that failed, and the problems.
func readApps(root string, sets map[string]loadedSet) (map[string]loadedApp, map[string]bool, []string) {
	apps := map[string]loadedApp{}
	failed := map[string]bool{}
	var errs []string
	for _, f := range yamlFiles(root, AppsDir) {
		docs, err := decodeFile(root, f)
		if err != nil {
			errs = append(errs, err.Error())
			failed[f] = true
			continue
		}
		for _, d := range docs {
			if d.ApplicationSet != nil {
				set, err := appset.DecodeNode(d.ApplicationSet, d.Line)
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v", f, err))
					failed[f] = true
					continue
				}
				addSet(sets, loadedSet{set: set, file: f}, &errs)
				continue
			}
			if d.Application == nil {
				continue
			}
			name := d.Application.Metadata.Name
			if prev, dup := apps[name]; dup {
				errs = append(errs, fmt.Sprintf("%s:%d: application %q is also defined in %s; the first one is used", f, d.Line, name, prev.file))
				continue
			}
			apps[name] = loadedApp{app: d.Application, file: f}
		}
	}
	return apps, failed, errs
}

func readFile(root, f string) ([]byte, error) {
	return os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
}

func decodeFile(root, f string) ([]app.Document, error) {
	data, err := readFile(root, f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	docs, err := app.DecodeAll(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	return docs, nil
}

// Health reports the GitOps component's health for the runtime's heartbeat.
func (h *Host) Health() runtimev1.Component {
	// Read before h.mu: the engine's lock is never taken inside the host's.
	var troubled []string
	if h.eng != nil {
		for _, st := range h.eng.List() {
			for _, cd := range st.Conditions {
				if permanentProblem[cd.Type] {
					troubled = append(troubled, st.Name+": "+cd.Type+": "+cut(cd.Message, 200))
					break
				}
			}
		}
		sort.Strings(troubled)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := runtimev1.Component{Name: "gitops", Health: runtimev1.ComponentHealthy}
	n := len(h.apps)
	switch {
	case h.opts.InstallRepo.URL == "":
		c.Message = "no installation repository"
	case h.lastErr != nil:
		c.Health, c.Message = runtimev1.ComponentDegraded, "installation repository: "+h.lastErr.Error()
	case len(h.loadErrs) > 0:
		c.Health = runtimev1.ComponentDegraded
		c.Message = fmt.Sprintf("%d applications; %d problems in the installation repository: %s", n, len(h.loadErrs), strings.Join(h.loadErrs[:min(3, len(h.loadErrs))], "; "))
	default:
		c.Message = fmt.Sprintf("%d applications", n)
	}
	if len(h.sources) > 0 {
		c.Message += fmt.Sprintf(" (%d git sources)", len(h.sources))
	}
	if sets := h.sets.List(); len(sets) > 0 {
		c.Message += fmt.Sprintf("; %d ApplicationSets", len(sets))
		for _, s := range sets {
			if hr := s.Health(); hr.Status == "Degraded" {
				c.Health = runtimev1.ComponentDegraded
				c.Message += fmt.Sprintf("; ApplicationSet %s: %s", s.Name, hr.Message)
			}
		}
	}
	if h.capps != nil {
		c.Message += fmt.Sprintf("; %d from Application resources in namespace %s", h.capps.count(), strings.Join(h.capps.namespaces(), ", "))
	}
	if h.opts.InCluster == nil {
		c.Message += "; no in-cluster destination configured"
	}
	if len(h.credErrs) > 0 {
		c.Health = runtimev1.ComponentDegraded
		c.Message += fmt.Sprintf("; %d problems with repository credentials: %s", len(h.credErrs), strings.Join(h.credErrs[:min(3, len(h.credErrs))], "; "))
	}
	if len(h.settingsErrs) > 0 {
		c.Health = runtimev1.ComponentDegraded
		c.Message += fmt.Sprintf("; %d problems with argocd-cm: %s", len(h.settingsErrs), strings.Join(h.settingsErrs[:min(3, len(h.settingsErrs))], "; "))
	}
	if len(h.notifyErrs) > 0 {
		c.Health = runtimev1.ComponentDegraded
		c.Message += fmt.Sprintf("; %d problems with argocd-notifications-cm: %s", len(h.notifyErrs), strings.Join(h.notifyErrs[:min(3, len(h.notifyErrs))], "; "))
	}
	if h.notif != nil {
		if ps := h.notif.Problems(); len(ps) > 0 {
			c.Message += fmt.Sprintf("; %d problems sending notifications: %s", len(ps), strings.Join(ps[max(0, len(ps)-3):], "; "))
		}
	}
	// An application that cannot be compared or placed (no cluster, a comparison error, an
	// invalid spec) is a problem of GitOps on this runtime, named with its reason: it does not
	// pass by waiting.
	if len(troubled) > 0 {
		c.Health = runtimev1.ComponentDegraded
		c.Message += fmt.Sprintf("; %d applications with problems: %s", len(troubled), strings.Join(troubled[:min(3, len(troubled))], "; "))
	}
	return c
}

// permanentProblem are the condition types that degrade the gitops component: the application
// cannot be compared or placed until someone acts. A failed sync (SyncError) is the app's, not
// the runtime's.
var permanentProblem = map[string]bool{engine.ConditionComparisonError: true, engine.ConditionInvalidSpec: true, engine.ConditionNoCluster: true}

// cut shortens s to n bytes at most, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// loaded returns what the loader knows of an app.
func (h *Host) loaded(name string) (loadedApp, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	la, ok := h.apps[name]
	return la, ok
}

// snapshot is every application's report state (for the reporter after a (re)connect).
func (h *Host) snapshot() []runtimev1.Application {
	h.mu.Lock()
	specs := make(map[string]*app.Application, len(h.apps))
	for n, la := range h.apps {
		specs[n] = la.app
	}
	h.mu.Unlock()
	var out []runtimev1.Application
	for _, st := range h.eng.List() {
		spec := specs[st.Name]
		if spec == nil {
			spec, _ = h.eng.Spec(st.Name)
		}
		out = append(out, toReport(spec, st))
	}
	return out
}

// Resync makes the next report a snapshot of every application (after the control plane was
// unreachable).
func (h *Host) Resync() { h.rep.markDisconnected() }

// InitLocalRepo makes dir a bare git repository (when it is not one yet) and returns its URL:
// the installation repository of a runtime that has no remote one (`freshet up`'s `local`,
// hosted runtimes). Its default branch is main.
func InitLocalRepo(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		_, err := gogit.PlainInitWithOptions(dir, &gogit.PlainInitOptions{Bare: true,
			InitOptions: gogit.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}})
		if err != nil {
			return "", fmt.Errorf("installation repository %s: %w", dir, err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return "file://" + filepath.ToSlash(abs), nil
}
