// Package agent is `freshet runtime`: the process that lives in a customer's cluster (or inside
// `freshet up`) and carries the app-proxy, the tunnel client and the GitOps engine. It dials
// the control plane — never the reverse — announces its version and capabilities, and
// heartbeats with its components' health, reconnecting with backoff and jitter.
//
// It speaks only the runtime protocol (api/runtimev1): no control-plane package is imported.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/appproxy"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/events"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/helmreleases"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/gitops/repocreds"
	"github.com/freshet-dev/freshet/internal/gitops/rollouts"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/repourl"
	tunnelclient "github.com/freshet-dev/freshet/internal/tunnel/client"
)

// tunnelGrace is how long the agent waits for its tunnel before its first heartbeat.
const tunnelGrace = 3 * time.Second

// Options configure a runtime agent.
type Options struct {
	Server     string
	Token      string
	TokenFile  string // a mounted Secret's key, read when Token is empty
	AccessMode string // ingress or tunnel
	Listen     string // ingress mode: where the app-proxy listens
	IngressURL string // ingress mode: the URL clients reach the app-proxy at
	Kubeconfig string
	Context    string
	Version    string
	CDOnly     bool // a hosted runtime: no CI or workflows
	// Hosted: this is a hosted runtime the platform runs as a workload on its own cluster
	// (--hosted, set by the Kubernetes provisioner): CDOnly and NoInCluster, and without --repo
	// its installation repository is a local one under DataDir, like the in-process ones'.
	Hosted bool

	// GitOps: the engine's state directory, the installation repository and its credentials,
	// and the engine's tunables.
	DataDir      string
	Repo         string
	GitUsername  string
	GitToken     string
	GitTokenFile string
	// InstallRepo, when its URL is set, is used instead of Repo and the Git* options
	// (`freshet up` passes its local repository).
	InstallRepo git.Repo
	// NoInCluster: the runtime's own cluster is not a destination (hosted runtimes: their
	// cluster is the platform's).
	NoInCluster bool
	// NoRollouts: do not run the Argo Rollouts controller in the runtime's own cluster (it runs
	// by default, and installs its CRDs there).
	NoRollouts bool
	// NoWorkflows: do not run the Argo Workflows controller in the runtime's own cluster (a
	// hybrid runtime runs it by default; a hosted one never does, and refuses Workflows).
	NoWorkflows bool
	// NoEvents: do not run the Argo Events controller (EventSource, Sensor, EventBus) in the
	// runtime's own cluster (a hybrid runtime runs it by default; a hosted one never does).
	NoEvents bool
	// EventsNATSURL is the NATS (with JetStream) of EventBuses of type jetstream; empty: a
	// NATS server embedded in the runtime, storing under DataDir/events-nats.
	EventsNATSURL string
	// EventsListen, when set, also serves the EventSources' webhook events alone on this
	// address (for providers in tunnel mode, where the app-proxy is reached through the
	// control plane by signed-in users only).
	EventsListen string
	// EventsSlackAPI is the base URL of the Slack Web API the Sensors' slack triggers post to
	// (default events.DefaultSlackAPI), checked against the runtime's network policy.
	EventsSlackAPI string
	// WorkflowExecutorImage is the image whose freshet binary runs in every workflow pod
	// (default workflows.DefaultExecutorImage), at WorkflowExecutorPath.
	WorkflowExecutorImage, WorkflowExecutorPath string
	// WatchClusterApps: also run the Application and AppProject resources of
	// ClusterAppsNamespace (default: the runtime Pod's namespace, else "default") in the
	// runtime's own cluster, as Argo CD does (docs/gitops.md, "Applications from the cluster").
	WatchClusterApps     bool
	ClusterAppsNamespace string
	// ClusterAppsSourceNamespaces are other namespaces whose Application resources run too,
	// each only when its project's spec.sourceNamespaces lists the namespace (Argo CD's
	// application.namespaces).
	ClusterAppsSourceNamespaces []string
	Engine                      engine.Options
	// IngressAuthTTL: how long a caller's token checked with the control plane is trusted on
	// the runtime's ingress (default 30 s).
	IngressAuthTTL time.Duration
	// Policy decides which repositories, git providers and cluster API servers the runtime's
	// users may make it reach. nil is a runtime in its customer's own network (hybrid): any
	// address and provider, file:// anywhere but DataDir. Runtimes inside the control plane
	// (hosted ones, `freshet up`'s) get the operator's policy. Either way the installation
	// repository is allowed.
	Policy *netpolicy.Policy
	// Net is the policy `freshet runtime` builds Policy from when it is nil (--allow-file-repos,
	// --allow-private-networks, --git-provider-hosts, as `freshet server` takes them): by
	// default a hybrid runtime's (file:// anywhere but DataDir, any address, any git provider);
	// with --hosted, each one not given is the control plane's default (netpolicy.ServerDefaults).
	// The Kubernetes provisioner passes the control plane's own three to each hosted runtime.
	Net netpolicy.Options
	// netFlags is the flag set BindFlags registered Net on: it tells which were given.
	netFlags *pflag.FlagSet
}

// RuntimeNetDefaults are a hybrid runtime's defaults of its URL policy: it runs in its
// customer's network, where a private git server or cluster is normal (netpolicy.Unrestricted).
var RuntimeNetDefaults = netpolicy.Defaults{FileRepoDirs: []string{"/"}, PrivateNetworks: []string{"all"}, ProviderHosts: []string{"*"}}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Server, "server", "", "control plane URL")
	fs.StringVar(&o.Token, "token", "", "runtime token (env FRESHET_RUNTIME_TOKEN)")
	fs.StringVar(&o.TokenFile, "token-file", "", "file holding the runtime token (a mounted Secret)")
	fs.StringVar(&o.AccessMode, "access-mode", "tunnel", "how clients reach the app-proxy: tunnel (through the control plane) or ingress")
	fs.StringVar(&o.Listen, "listen", ":8080", "ingress mode: address the app-proxy listens on")
	fs.StringVar(&o.IngressURL, "ingress-url", "", "ingress mode: the URL clients reach the app-proxy at")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the runtime's cluster (default: in-cluster config, KUBECONFIG, ~/.kube/config)")
	fs.StringVar(&o.Context, "context", "", "kubeconfig context")
	fs.StringVar(&o.DataDir, "data-dir", defaultDataDir(), "directory for the GitOps engine's repository cache")
	fs.StringVar(&o.Repo, "repo", os.Getenv("FRESHET_RUNTIME_REPO"), "installation repository URL: apps/*.yaml and projects/*.yaml are this runtime's applications (env FRESHET_RUNTIME_REPO)")
	fs.StringVar(&o.GitUsername, "git-username", "", "user name for the installation repository (with --git-token; default x-access-token)")
	fs.StringVar(&o.GitToken, "git-token", "", "token for the installation repository (env FRESHET_GIT_TOKEN)")
	fs.StringVar(&o.GitTokenFile, "git-token-file", "", "file holding the installation repository token (a mounted Secret)")
	fs.BoolVar(&o.NoRollouts, "no-rollouts", false, "do not run the Argo Rollouts controller (Rollout CRDs and reconciliation) in the runtime's cluster")
	fs.BoolVar(&o.NoWorkflows, "no-workflows", false, "do not run the Argo Workflows controller (Workflow CRDs and their pods) in the runtime's cluster")
	fs.BoolVar(&o.NoEvents, "no-events", false, "do not run the Argo Events controller (EventSource, Sensor and EventBus CRDs, webhook and calendar events) in the runtime's cluster")
	fs.StringVar(&o.EventsNATSURL, "events-nats-url", os.Getenv("FRESHET_EVENTS_NATS_URL"), "NATS with JetStream for EventBuses of type jetstream (default: a NATS embedded in the runtime; env FRESHET_EVENTS_NATS_URL)")
	fs.StringVar(&o.EventsListen, "events-listen", "", "also serve the event sources' webhooks (and nothing else) on this address, e.g. :12000")
	fs.StringVar(&o.EventsSlackAPI, "events-slack-api", events.DefaultSlackAPI, "base URL of the Slack Web API the Sensors' slack triggers post to (chat.postMessage), checked against the runtime's URL policy")
	fs.StringVar(&o.WorkflowExecutorImage, "workflow-executor-image", workflows.DefaultExecutorImage, "image holding the freshet binary that runs in every workflow pod (the emissary)")
	fs.StringVar(&o.WorkflowExecutorPath, "workflow-executor-path", workflows.DefaultExecutorPath, "path of the freshet binary in --workflow-executor-image")
	fs.BoolVar(&o.WatchClusterApps, "watch-cluster-apps", os.Getenv("FRESHET_WATCH_CLUSTER_APPS") == "true", "also run the argoproj.io Application and AppProject resources of --cluster-apps-namespace (installs their CRDs; env FRESHET_WATCH_CLUSTER_APPS=true)")
	fs.StringSliceVar(&o.ClusterAppsSourceNamespaces, "cluster-apps-source-namespaces", nil, "other namespaces whose Application resources --watch-cluster-apps runs, each only when the app's AppProject lists the namespace in spec.sourceNamespaces (comma-separated; Argo CD's application.namespaces)")
	fs.StringVar(&o.ClusterAppsNamespace, "cluster-apps-namespace", "", "namespace whose Application resources --watch-cluster-apps runs (default: the runtime Pod's namespace, else default)")
	fs.BoolVar(&o.Hosted, "hosted", false, "a hosted runtime the platform runs on its own cluster: CD only, its own cluster is not a destination, and without --repo its installation repository is local under --data-dir")
	o.Net.BindFlags(fs, RuntimeNetDefaults)
	o.netFlags = fs
	o.Engine.BindFlags(fs)
}

func defaultDataDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "freshet-runtime")
	}
	return filepath.Join(os.TempDir(), "freshet-runtime")
}

// Validate names the first bad option and reads the token file.
func (o *Options) Validate() error {
	if o.Token == "" && o.TokenFile != "" {
		b, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		o.Token = strings.TrimSpace(string(b))
	}
	if o.GitToken == "" && o.GitTokenFile != "" {
		b, err := os.ReadFile(o.GitTokenFile)
		if err != nil {
			return fmt.Errorf("--git-token-file: %w", err)
		}
		o.GitToken = strings.TrimSpace(string(b))
	}
	if o.GitToken == "" {
		o.GitToken = os.Getenv("FRESHET_GIT_TOKEN")
	}
	if o.Hosted {
		o.CDOnly, o.NoInCluster = true, true
		if o.InstallRepo.URL == "" && o.Repo == "" {
			u, err := host.InitLocalRepo(filepath.Join(o.DataDir, "installation.git"))
			if err != nil {
				return fmt.Errorf("--hosted: the local installation repository: %w", err)
			}
			o.InstallRepo = git.Repo{URL: u}
		}
	}
	if o.Policy == nil && o.netFlags != nil {
		if o.Hosted {
			// A hosted runtime is the platform's: what it was not told is the control plane's
			// default, never a hybrid runtime's (any address).
			d := netpolicy.ServerDefaults
			if !o.netFlags.Changed(netpolicy.FlagFileRepos) {
				o.Net.FileRepoDirs = d.FileRepoDirs
			}
			if !o.netFlags.Changed(netpolicy.FlagPrivateNetworks) {
				o.Net.PrivateNetworks = d.PrivateNetworks
			}
			if !o.netFlags.Changed(netpolicy.FlagProviderHosts) {
				o.Net.ProviderHosts = d.ProviderHosts
			}
		}
		p, err := o.Net.Policy(o.DataDir)
		if err != nil {
			return err
		}
		o.Policy = p
	}
	if o.InstallRepo.URL == "" && o.Repo != "" {
		o.InstallRepo = git.Repo{URL: o.Repo, Credentials: git.Credentials{Username: o.GitUsername, Token: o.GitToken}}
	}
	switch {
	case !strings.HasPrefix(o.Server, "http://") && !strings.HasPrefix(o.Server, "https://"):
		return fmt.Errorf("--server %q: give the control plane's http(s):// URL", o.Server)
	case !strings.HasPrefix(o.Token, "frt_"):
		return errors.New("--token: not a runtime token (they start with frt_; register one with 'freshet runtime install' or the API)")
	}
	switch o.AccessMode {
	case "tunnel":
	case "ingress":
		if o.IngressURL == "" {
			return errors.New("--ingress-url is required with --access-mode ingress")
		}
	default:
		return fmt.Errorf("--access-mode %q: use tunnel or ingress", o.AccessMode)
	}
	return nil
}

// Runtime is a running agent.
type Runtime struct {
	opts      Options
	hb        *connect.Client[runtimev1.HeartbeatRequest, runtimev1.HeartbeatResponse]
	log       *slog.Logger
	AppProxy  *appproxy.Handler
	heartbeat time.Duration

	tunnel   *tunnelclient.Client
	gitops   *host.Host
	rollouts *rollouts.Controller
	wf       *workflows.Controller
	ev       *events.Controller
	helm     *helmreleases.Reporter // nil without the runtime's own cluster as a destination
	evNATS   *eventsNATS
	report   *connect.Client[runtimev1.ReportRequest, runtimev1.ReportResponse]
	failing  bool // the last heartbeat failed

	ingressOnce sync.Once
	ingress     http.Handler
	audit       *connect.Client[runtimev1.AuditRequest, runtimev1.AuditResponse]
	audits      *auditQueue

	mu         sync.Mutex
	components map[string]runtimev1.Component
	last       runtimev1.HeartbeatResponse
}

// New returns an agent.
func New(opts Options, hc *http.Client, log *slog.Logger) (*Runtime, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	r := &Runtime{opts: opts, log: log, heartbeat: runtimev1.HeartbeatInterval, components: map[string]runtimev1.Component{}}
	r.hb = connect.NewClient[runtimev1.HeartbeatRequest, runtimev1.HeartbeatResponse](hc,
		strings.TrimRight(opts.Server, "/")+runtimev1.ProcedureHeartbeat, connect.WithCodec(runnerv1.Codec{}))
	r.report = connect.NewClient[runtimev1.ReportRequest, runtimev1.ReportResponse](hc,
		strings.TrimRight(opts.Server, "/")+runtimev1.ProcedureReport, connect.WithCodec(runnerv1.Codec{}))
	r.audit = connect.NewClient[runtimev1.AuditRequest, runtimev1.AuditResponse](hc,
		strings.TrimRight(opts.Server, "/")+runtimev1.ProcedureAudit, connect.WithCodec(runnerv1.Codec{}))
	r.audits = newAuditQueue(r.sendAudit, log)
	r.AppProxy = appproxy.New(r.info)
	r.SetComponent(runtimev1.Component{Name: "app-proxy", Health: runtimev1.ComponentHealthy, Version: opts.Version})

	var kube *rest.Config
	if !opts.NoInCluster {
		var err error
		if kube, err = kubeConfig(opts.Kubeconfig, opts.Context); err != nil {
			return nil, err
		}
		if kube == nil {
			log.Warn("no Kubernetes cluster configured: applications will show NoClusterConfigured (give --kubeconfig, or run in a cluster)")
		}
	}
	store, err := clusterStore(opts.DataDir, kube)
	if err != nil {
		return nil, err
	}
	policy := opts.Policy
	if policy == nil {
		policy = netpolicy.Unrestricted(opts.DataDir)
	}
	if u, err := repourl.Parse(opts.InstallRepo.URL); err == nil && u.Scheme == "file" {
		policy = policy.WithOwnRepo(u.Path)
	}
	if opts.WatchClusterApps && kube == nil {
		log.Warn("--watch-cluster-apps needs the runtime's own cluster (give --kubeconfig, or run in a cluster): Application resources are not watched")
	}
	creds, err := repoCredsSource(opts.DataDir, kube)
	if err != nil {
		return nil, err
	}
	if opts.CDOnly {
		opts.Engine.Refuse = func(group, kind string) error {
			if err := workflows.RefuseOnHosted(group, kind); err != nil {
				return err
			}
			return events.RefuseOnHosted(group, kind)
		}
	}
	if kube != nil && !opts.NoRollouts {
		if r.rollouts, err = rollouts.New(kube, rollouts.Options{Logger: log.With("component", "rollouts"), Policy: policy}); err != nil {
			return nil, fmt.Errorf("rollouts: %w", err)
		}
		r.SetComponent(runtimev1.Component{Name: "rollouts", Health: runtimev1.ComponentDegraded, Message: "starting", Version: opts.Version})
	}
	if kube != nil && !opts.NoWorkflows && !opts.CDOnly {
		if r.wf, err = workflows.New(kube, workflows.Options{Logger: log.With("component", "workflows"),
			ExecutorImage: opts.WorkflowExecutorImage, ExecutorPath: opts.WorkflowExecutorPath,
			// Artifacts' URLs (S3, HTTP, git) go through the runtime's network policy; the
			// runtime's default artifact repository is in its own namespace.
			Policy: policy, ConfigNamespace: clusterAppsNamespace(""),
			// Finished workflows go to the control plane with the applications' events; it
			// archives them (r.gitops is set below, before the controller runs).
			OnFinished: func(rec runtimev1.WorkflowRecord) { r.gitops.ReportWorkflow(rec) },
			Archived:   func(uid string, finishedAt time.Time) bool { return r.gitops.WorkflowArchived(uid, finishedAt) }}); err != nil {
			return nil, fmt.Errorf("workflows: %w", err)
		}
		r.SetComponent(runtimev1.Component{Name: "workflows", Health: runtimev1.ComponentDegraded, Message: "starting", Version: opts.Version})
	}
	if kube != nil && !opts.NoEvents && !opts.CDOnly {
		r.evNATS = &eventsNATS{url: opts.EventsNATSURL, dir: filepath.Join(opts.DataDir, "events-nats"), log: log}
		if r.ev, err = events.New(kube, events.Options{Logger: log.With("component", "events"), NATS: r.evNATS.conn,
			// http and nats triggers' URLs and the connecting event sources' servers go
			// through the runtime's network policy.
			Policy: policy, SlackAPI: opts.EventsSlackAPI}); err != nil {
			return nil, fmt.Errorf("events: %w", err)
		}
		r.SetComponent(runtimev1.Component{Name: "events", Health: runtimev1.ComponentDegraded, Message: "starting", Version: opts.Version})
		// Webhook events are verified by their signatures, not by a caller's API key
		// (ingress.go lets them pass): docs/runtimes.md, "Events".
		r.AppProxy.Handle(events.PathPrefix, r.ev.Handler())
	}
	var ro host.Rollouts
	if r.rollouts != nil {
		ro = r.rollouts
	}
	var wfs host.Workflows
	if r.wf != nil {
		wfs = r.wf
	}
	var evs host.Events
	if r.ev != nil {
		evs = r.ev
	}
	gh, err := host.New(host.Options{Workflows: wfs, Events: evs, Dir: opts.DataDir, InstallRepo: opts.InstallRepo, InCluster: kube, Engine: opts.Engine,
		ClusterStore: store, RepoCreds: creds, Sink: r.sendReport, Logger: log, Policy: policy, Rollouts: ro,
		ClusterApps: opts.WatchClusterApps && kube != nil, ClusterAppsNamespace: clusterAppsNamespace(opts.ClusterAppsNamespace),
		ClusterAppsSourceNamespaces: opts.ClusterAppsSourceNamespaces})
	if err != nil {
		return nil, fmt.Errorf("gitops: %w", err)
	}
	r.gitops = gh
	if kube != nil && !opts.NoInCluster {
		// Helm releases of the runtime's own cluster, read from Helm's release Secrets
		// (list only) and reported with the applications' events (docs/runtimes.md, "Helm releases").
		kc, err := kubernetes.NewForConfig(kube)
		if err != nil {
			return nil, fmt.Errorf("helm releases: %w", err)
		}
		r.helm = &helmreleases.Reporter{Cluster: engine.InClusterName, Client: kc, Send: gh.ReportHelmRelease, Logger: log.With("component", "helm-releases")}
	}
	api := gh.Handler()
	r.AppProxy.Handle(host.APIPrefix, api)
	r.AppProxy.Handle("POST /app-proxy/api/graphql", api) // docs/appproxy.md, "GraphQL"
	return r, nil
}

var _ host.Rollouts = (*rollouts.Controller)(nil)

// clusterAppsNamespace is the namespace --watch-cluster-apps watches: the one given, else the
// runtime Pod's, else "default".
func clusterAppsNamespace(ns string) string {
	if ns != "" {
		return ns
	}
	if b, err := os.ReadFile(saNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

// GitOps is the runtime's GitOps host.
func (r *Runtime) GitOps() *host.Host { return r.gitops }

// Rollouts is the runtime's Argo Rollouts controller, nil without a cluster or with NoRollouts.
func (r *Runtime) Rollouts() *rollouts.Controller { return r.rollouts }

// Events is the runtime's Argo Events controller, nil without a cluster, with NoEvents, or on
// a hosted runtime.
func (r *Runtime) Events() *events.Controller { return r.ev }

// Workflows is the runtime's Argo Workflows controller, nil without a cluster, with
// NoWorkflows, or on a hosted runtime.
func (r *Runtime) Workflows() *workflows.Controller { return r.wf }

// runRollouts runs the Rollouts controller until ctx ends. A failure (the cluster unreachable,
// no right to install CRDs) leaves the component degraded and is retried with backoff: the
// rest of the runtime keeps working.
func (r *Runtime) runRollouts(ctx context.Context) { r.runController(ctx, "rollouts", r.rollouts.Run) }

// runController runs one of the runtime's controllers (rollouts, workflows) until ctx ends,
// retrying its failures with backoff and reporting them as its component's health.
func (r *Runtime) runController(ctx context.Context, name string, run func(context.Context) error) {
	backoff := time.Second
	for ctx.Err() == nil {
		err := run(ctx)
		if ctx.Err() != nil {
			return
		}
		msg := "stopped"
		if err != nil {
			msg = err.Error()
		}
		r.SetComponent(runtimev1.Component{Name: name, Health: runtimev1.ComponentDegraded, Message: msg, Version: r.opts.Version})
		wait := backoff/2 + rand.N(backoff/2+1)
		r.log.Warn(name+" controller failed; retrying", "err", err, "in", wait.Round(time.Millisecond))
		backoff = min(backoff*2, 5*time.Minute)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// kubeConfig loads the runtime's own cluster: an explicit kubeconfig (which must load), the
// in-cluster config inside a Pod, else KUBECONFIG or ~/.kube/config. No config at all is nil.
func kubeConfig(path, context string) (*rest.Config, error) {
	if path == "" && context == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster Kubernetes config: %w", err)
		}
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("--kubeconfig %q: %w", path, err)
		}
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if clientcmd.IsEmptyConfig(err) && path == "" && context == "" {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q, context %q: %w", path, context, err)
	}
	return cfg, nil
}

// saNamespaceFile holds the namespace of the Pod's service account.
const saNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// clusterStore is where managed clusters' credentials live: Secrets in the runtime's
// namespace when it runs in a Pod, else files in its data dir.
func clusterStore(dataDir string, kube *rest.Config) (host.ClusterStore, error) {
	if ns, err := os.ReadFile(saNamespaceFile); err == nil && kube != nil && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		kc, err := kubernetes.NewForConfig(kube)
		if err != nil {
			return nil, err
		}
		return host.SecretClusterStore{Client: kc, Namespace: strings.TrimSpace(string(ns))}, nil
	}
	return host.FileClusterStore{Dir: filepath.Join(dataDir, "clusters")}, nil
}

// repoCredsSource is where the runtime's repository credentials live, as Argo CD keeps
// them: Secrets (and argocd-tls-certs-cm) in the runtime's namespace when it runs in a Pod,
// else the same manifests as files in DATA_DIR/repositories (docs/runtimes.md).
func repoCredsSource(dataDir string, kube *rest.Config) (repocreds.Source, error) {
	if ns, err := os.ReadFile(saNamespaceFile); err == nil && kube != nil && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		kc, err := kubernetes.NewForConfig(kube)
		if err != nil {
			return nil, err
		}
		return repocreds.Secrets{Client: kc, Namespace: strings.TrimSpace(string(ns))}, nil
	}
	return repocreds.Files{Dir: filepath.Join(dataDir, "repositories")}, nil
}

// sendAudit reports changes made on the ingress (the runtime protocol's Audit call).
func (r *Runtime) sendAudit(ctx context.Context, recs []runtimev1.AuditRecord) error {
	creq := connect.NewRequest(&runtimev1.AuditRequest{Records: recs})
	creq.Header().Set("Authorization", "Bearer "+r.opts.Token)
	_, err := r.audit.CallUnary(ctx, creq)
	return err
}

// sendReport is the GitOps host's sink: the runtime protocol's Report call.
func (r *Runtime) sendReport(ctx context.Context, req runtimev1.ReportRequest) error {
	creq := connect.NewRequest(&req)
	creq.Header().Set("Authorization", "Bearer "+r.opts.Token)
	_, err := r.report.CallUnary(ctx, creq)
	if c := connect.CodeOf(err); c == connect.CodeInvalidArgument || c == connect.CodeResourceExhausted {
		return fmt.Errorf("%w: %w", host.ErrReportRejected, err)
	}
	return err
}

func (r *Runtime) info() appproxy.Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	return appproxy.Info{Runtime: r.last.Name, Version: r.opts.Version, Type: r.last.Type}
}

// SetComponent records a component's health for the next heartbeat.
func (r *Runtime) SetComponent(c runtimev1.Component) {
	r.mu.Lock()
	r.components[c.Name] = c
	r.mu.Unlock()
}

// Status is what the control plane last answered (zero before the first heartbeat).
func (r *Runtime) Status() runtimev1.HeartbeatResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Run heartbeats (and, in ingress mode, serves the app-proxy) until ctx ends. A token the
// control plane refuses stops it with an error; anything else is retried with backoff.
func (r *Runtime) Run(ctx context.Context) error {
	errc := make(chan error, 4)
	go func() {
		if err := r.gitops.Run(ctx); err != nil && ctx.Err() == nil {
			errc <- fmt.Errorf("gitops: %w", err)
		}
	}()
	if r.wf != nil {
		go r.runController(ctx, "workflows", r.wf.Run)
	}
	if r.ev != nil {
		go r.runController(ctx, "events", r.ev.Run)
		defer r.evNATS.close()
		if r.opts.EventsListen != "" {
			ln, err := net.Listen("tcp", r.opts.EventsListen)
			if err != nil {
				return fmt.Errorf("events listen: %w", err)
			}
			mux := http.NewServeMux()
			mux.Handle(events.PathPrefix, r.ev.Handler())
			esrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			go func() { errc <- esrv.Serve(ln) }()
			defer esrv.Close()
		}
	}
	if r.helm != nil {
		go r.helm.Run(ctx)
	}
	if r.rollouts != nil {
		go r.runRollouts(ctx)
		// Rollouts' transitions go to the control plane with the applications' events
		// (docs/analytics.md): steps, phases, and updates completed or aborted.
		go func() {
			err := r.rollouts.WatchTransitions(ctx, func(t rollouts.Transition) { r.gitops.ReportRollout(t.App, t.At, t.Record) })
			if err != nil && ctx.Err() == nil {
				r.log.Warn("rollout transitions are not reported", "err", err)
			}
		}()
	}
	if r.opts.AccessMode == "tunnel" {
		tc, err := tunnelclient.New(tunnelclient.Options{ServerURL: r.opts.Server, Token: r.opts.Token, Handler: r.AppProxy, Log: r.log.With("component", "tunnel")})
		if err != nil {
			return err
		}
		r.tunnel = tc
		go func() {
			if err := tc.Run(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("tunnel: %w", err)
			}
		}()
		// Give the tunnel a moment, so the first heartbeat reports it up rather than degraded.
		for deadline := time.Now().Add(tunnelGrace); tc.State().Connected == 0 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if r.opts.AccessMode == "ingress" {
		ln, err := net.Listen("tcp", r.opts.Listen)
		if err != nil {
			return fmt.Errorf("app-proxy listen: %w", err)
		}
		go r.audits.run(ctx)
		srv := &http.Server{Handler: r.IngressHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- srv.Serve(ln) }()
		defer srv.Close()
	}
	backoff := 500 * time.Millisecond
	for {
		err := r.beat(ctx)
		wait := r.heartbeat
		if err != nil {
			if connect.CodeOf(err) == connect.CodeUnauthenticated || connect.CodeOf(err) == connect.CodeInvalidArgument {
				return fmt.Errorf("the control plane refused this runtime: %w", err)
			}
			wait = backoff/2 + rand.N(backoff/2+1)
			r.log.Warn("heartbeat failed; retrying", "err", err, "in", wait.Round(time.Millisecond))
			backoff = min(backoff*2, 30*time.Second)
		} else {
			backoff = 500 * time.Millisecond
			wait = wait - wait/10 + rand.N(wait/5+1) // ±10% jitter
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case <-time.After(wait):
		}
	}
}

func (r *Runtime) beat(ctx context.Context) error {
	if r.tunnel != nil {
		st := r.tunnel.State()
		c := runtimev1.Component{Name: "tunnel", Health: runtimev1.ComponentHealthy, Message: fmt.Sprintf("%d/%d connections", st.Connected, st.Want)}
		if st.Connected == 0 {
			c.Health = runtimev1.ComponentDegraded
			if st.LastError != nil {
				c.Message += ": " + st.LastError.Error()
			}
		}
		r.SetComponent(c)
	}
	r.SetComponent(r.gitops.Health())
	if r.rollouts != nil && r.rollouts.Healthy() {
		r.SetComponent(runtimev1.Component{Name: "rollouts", Health: runtimev1.ComponentHealthy, Version: r.opts.Version})
	}
	if r.ev != nil && r.ev.Healthy() {
		r.SetComponent(runtimev1.Component{Name: "events", Health: runtimev1.ComponentHealthy, Version: r.opts.Version})
	}
	if r.wf != nil && r.wf.Healthy() {
		r.SetComponent(runtimev1.Component{Name: "workflows", Health: runtimev1.ComponentHealthy, Version: r.opts.Version})
	}
	r.mu.Lock()
	req := runtimev1.HeartbeatRequest{Protocol: runtimev1.ProtocolVersion, Version: r.opts.Version, AccessMode: r.opts.AccessMode,
		IngressURL: r.opts.IngressURL, Capabilities: []string{"cd"}}
	if !r.opts.CDOnly {
		req.Capabilities = append(req.Capabilities, "ci")
	}
	for _, c := range r.components {
		req.Components = append(req.Components, c)
	}
	for _, c := range r.gitops.ClusterStates() {
		req.Clusters = append(req.Clusters, runtimev1.Cluster{Name: c.Name, Server: c.Server, Health: c.Health})
	}
	for _, g := range r.gitops.GitSources() {
		req.GitSources = append(req.GitSources, g.Metadata.Name)
	}
	r.mu.Unlock()
	creq := connect.NewRequest(&req)
	creq.Header().Set("Authorization", "Bearer "+r.opts.Token)
	resp, err := r.hb.CallUnary(ctx, creq)
	if err != nil {
		r.mu.Lock()
		r.failing = true
		r.mu.Unlock()
		return err
	}
	r.mu.Lock()
	first := r.last.RuntimeID == ""
	reconnected := r.failing
	r.last, r.failing = *resp.Msg, false
	r.mu.Unlock()
	if reconnected {
		// The control plane may have missed reports meanwhile: send the whole state again.
		r.gitops.Resync()
	}
	if first {
		r.log.Info("runtime connected", "name", resp.Msg.Name, "type", resp.Msg.Type, "status", resp.Msg.Status)
	}
	return nil
}
