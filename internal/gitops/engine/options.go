package engine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

// Defaults for Options.
const (
	// DefaultPollInterval is how often each application is refreshed without a webhook
	// (Argo CD's 3 minutes), jittered by ±10%.
	DefaultPollInterval = 3 * time.Minute
	DefaultWorkers      = 8
	// DefaultSyncConcurrency bounds automated syncs (and self-heals) running at once.
	DefaultSyncConcurrency = 8
	// DefaultHealthTimeout bounds the wait for a wave to become healthy.
	DefaultHealthTimeout = 5 * time.Minute
	// DefaultHookTimeout bounds one hook.
	DefaultHookTimeout = 15 * time.Minute
	// DefaultCRDWait bounds the wait for a kind whose CRD the same sync applied.
	DefaultCRDWait = 30 * time.Second
	// DefaultPollStep is how often waits look at the caches.
	DefaultPollStep = 200 * time.Millisecond
	// DefaultRetryBase and DefaultRetryMax bound the backoff of refreshes that failed for a
	// temporary reason (an unreachable repository).
	DefaultRetryBase = 5 * time.Second
	DefaultRetryMax  = 3 * time.Minute
	// Self-heal: the first re-apply is immediate, then each one waits twice as long as the
	// previous (from DefaultSelfHealBase up to DefaultSelfHealMax), and at most
	// DefaultSelfHealMaxPerWindow happen per DefaultSelfHealWindow; the backoff resets after a
	// quiet DefaultSelfHealMax.
	DefaultSelfHealBase         = 1 * time.Second
	DefaultSelfHealMax          = 5 * time.Minute
	DefaultSelfHealWindow       = 10 * time.Minute
	DefaultSelfHealMaxPerWindow = 20
	// DefaultEventDebounce coalesces watch events of one application into one refresh.
	DefaultEventDebounce = 100 * time.Millisecond
	// DefaultRenderCacheSize and DefaultRenderCacheTTL bound the shared render cache (Argo CD
	// keeps manifests 24 h).
	DefaultRenderCacheSize = 4096
	DefaultRenderCacheTTL  = 24 * time.Hour
	// DefaultClientQPS and DefaultClientBurst bound the engine's requests to one cluster
	// (client-go's defaults, 5/10, are far too low for hundreds of applications).
	DefaultClientQPS   = 200
	DefaultClientBurst = 400
	// DefaultHistoryLimit is the history kept per app when spec.revisionHistoryLimit is unset.
	DefaultHistoryLimit = 10
)

// Options configure an Engine. Cache, Renderer and Clusters are required; zero durations and
// counts take the Default* values.
type Options struct {
	Cache    *git.Cache
	Renderer *render.Renderer
	Clusters ClusterResolver
	// Credentials returns the credentials for a repository URL (nil: anonymous).
	Credentials func(repoURL string) git.Credentials
	// Charts fetches charts from chart repositories and OCI registries (spec.source.chart,
	// and Helm charts' remote dependencies); nil: such apps get a ComparisonError.
	// Credentials gives their basic auth, CA and client certificate too.
	Charts *helmrepo.Cache
	// RepoByName returns the URL of the repository credentials named name, for Helm
	// dependencies written repository: "@name" or "alias:name" (nil: none).
	RepoByName func(name string) (url string, ok bool)
	// Projects looks up an AppProject by name where applications are defined (the
	// installation repository, Git Sources); nil or a nil answer means none is defined there.
	// Child applications (app of apps) resolve their project through it, then through the
	// AppProjects their parents render.
	Projects func(name string) *app.AppProject
	// ProjectsChanged is called (without the engine's locks held) when the AppProjects
	// applications render (app of apps) change: one is created, changed or removed. See
	// Engine.ChildProjects. nil: not called.
	ProjectsChanged func()
	// AppSets is the ApplicationSet controller that takes the ApplicationSets applications
	// render (nil: an application rendering one gets an InvalidSpecError).
	AppSets  AppSets
	Reporter Reporter
	Logger   *slog.Logger
	// HealthRules are CEL health checks for custom kinds.
	HealthRules []health.Rule
	// Settings are the argocd-cm settings at start (Lua health checks, resource tracking);
	// SetSettings replaces them.
	Settings Settings
	// Refuse, when set, is asked about each rendered object's kind; an error keeps the object
	// out of the sync with an InvalidSpecError naming it (a hosted runtime refuses Argo
	// Workflows' kinds this way: they need a hybrid runtime).
	Refuse func(group, kind string) error

	PollInterval       time.Duration
	Workers            int
	SyncConcurrency    int
	InventoryNamespace string
	HealthTimeout      time.Duration
	HookTimeout        time.Duration
	CRDWait            time.Duration
	PollStep           time.Duration
	RetryBase          time.Duration
	RetryMax           time.Duration

	SelfHealBase         time.Duration
	SelfHealMax          time.Duration
	SelfHealWindow       time.Duration
	SelfHealMaxPerWindow int

	EventDebounce   time.Duration
	RenderCacheSize int
	RenderCacheTTL  time.Duration
	ClientQPS       float32
	ClientBurst     int

	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// BindFlags registers the engine's tunables as command-line flags.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.PollInterval, "gitops-poll-interval", DefaultPollInterval, "how often each application is refreshed without a webhook")
	fs.IntVar(&o.Workers, "gitops-workers", DefaultWorkers, "applications refreshed at once")
	fs.IntVar(&o.SyncConcurrency, "gitops-sync-concurrency", DefaultSyncConcurrency, "automated syncs run at once")
	fs.StringVar(&o.InventoryNamespace, "gitops-inventory-namespace", DefaultInventoryNamespace, "namespace of the per-application inventory ConfigMaps in each destination cluster")
	fs.DurationVar(&o.HealthTimeout, "gitops-health-timeout", DefaultHealthTimeout, "how long a sync waits for one wave to become healthy")
	fs.DurationVar(&o.HookTimeout, "gitops-hook-timeout", DefaultHookTimeout, "how long a sync waits for one hook")
	fs.DurationVar(&o.SelfHealMax, "gitops-self-heal-max-backoff", DefaultSelfHealMax, "longest wait between two self-heals of one application")
	fs.Float32Var(&o.ClientQPS, "gitops-kube-qps", DefaultClientQPS, "requests per second the engine sends to one cluster")
	fs.IntVar(&o.ClientBurst, "gitops-kube-burst", DefaultClientBurst, "request burst the engine sends to one cluster")
	fs.IntVar(&o.SelfHealMaxPerWindow, "gitops-self-heal-max-per-window", DefaultSelfHealMaxPerWindow, "self-heals of one application per 10 minutes before self-heal pauses")
}

// Validate checks required dependencies and rejects negative values.
func (o Options) Validate() error {
	switch {
	case o.Cache == nil:
		return errdefs.Invalid("cache", "", "is required")
	case o.Renderer == nil:
		return errdefs.Invalid("renderer", "", "is required")
	case o.Clusters == nil:
		return errdefs.Invalid("clusters", "", "is required")
	}
	for name, v := range map[string]int64{"pollInterval": int64(o.PollInterval), "workers": int64(o.Workers),
		"syncConcurrency": int64(o.SyncConcurrency), "healthTimeout": int64(o.HealthTimeout), "hookTimeout": int64(o.HookTimeout),
		"selfHealMax": int64(o.SelfHealMax), "selfHealMaxPerWindow": int64(o.SelfHealMaxPerWindow), "renderCacheSize": int64(o.RenderCacheSize)} {
		if v < 0 {
			return errdefs.Invalid(name, fmt.Sprint(v), "must not be negative (zero means the default)")
		}
	}
	return nil
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.PollInterval, DefaultPollInterval)
	def(&o.HealthTimeout, DefaultHealthTimeout)
	def(&o.HookTimeout, DefaultHookTimeout)
	def(&o.CRDWait, DefaultCRDWait)
	def(&o.PollStep, DefaultPollStep)
	def(&o.RetryBase, DefaultRetryBase)
	def(&o.RetryMax, DefaultRetryMax)
	def(&o.SelfHealBase, DefaultSelfHealBase)
	def(&o.SelfHealMax, DefaultSelfHealMax)
	def(&o.SelfHealWindow, DefaultSelfHealWindow)
	def(&o.EventDebounce, DefaultEventDebounce)
	def(&o.RenderCacheTTL, DefaultRenderCacheTTL)
	defInt(&o.Workers, DefaultWorkers)
	defInt(&o.SyncConcurrency, DefaultSyncConcurrency)
	defInt(&o.SelfHealMaxPerWindow, DefaultSelfHealMaxPerWindow)
	defInt(&o.RenderCacheSize, DefaultRenderCacheSize)
	defInt(&o.ClientBurst, DefaultClientBurst)
	if o.ClientQPS == 0 {
		o.ClientQPS = DefaultClientQPS
	}
	if o.InventoryNamespace == "" {
		o.InventoryNamespace = DefaultInventoryNamespace
	}
	if o.Reporter == nil {
		o.Reporter = discardReporter{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
