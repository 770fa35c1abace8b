package server

import (
	"context"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/cron"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/runtimes/hostedkube"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
	"github.com/freshet-dev/freshet/internal/version"
)

// Where hosted runtimes run (--hosted-runtimes).
const (
	HostedInProcess  = "in-process"
	HostedKubernetes = "kubernetes"
)

// Resync and retry of the Kubernetes provisioner: how often the lease holder compares the
// cluster with the stored hosted runtimes, and the bounds of its backoff after the cluster
// could not be reached.
const (
	hostedKubeResync     = 10 * time.Second
	hostedKubeRetryFirst = time.Second
	hostedKubeRetryMax   = 5 * time.Minute
)

// HostedOptions choose where the platform runs hosted runtimes.
type HostedOptions struct {
	// Mode is HostedInProcess (default) or HostedKubernetes.
	Mode string
	// Kubeconfig reaches the platform-managed cluster (empty: in-cluster).
	Kubeconfig string
	// NamespacePrefix starts each hosted runtime's namespace.
	NamespacePrefix string
	// Image is the freshet image hosted runtimes run (default freshet/freshet:<version>).
	Image string
	// Server is the control plane URL the runtimes dial from the cluster (default --public-url).
	Server string
	// NodeSelector and Tolerations (KEY[=VALUE]:EFFECT each) place the runtimes' pods.
	NodeSelector map[string]string
	Tolerations  []string
	// StorageSize and StorageClass are each runtime's data claim's (size manifests.NoStorage:
	// none, the data dir is the pod's emptyDir; empty class: the cluster's default).
	StorageSize  string
	StorageClass string
}

// BindFlags registers the options on fs.
func (o *HostedOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Mode, "hosted-runtimes", HostedInProcess, "where hosted runtimes run: in-process (agents inside the replica that holds the hosted-runtimes lease) or kubernetes (a Deployment of charts/freshet-runtime per runtime on --hosted-runtimes-kubeconfig's cluster)")
	fs.StringVar(&o.Kubeconfig, "hosted-runtimes-kubeconfig", "", "kubernetes: kubeconfig of the platform-managed cluster hosted runtimes run on (default: the in-cluster configuration)")
	fs.StringVar(&o.NamespacePrefix, "hosted-runtimes-namespace-prefix", hostedkube.DefaultNamespacePrefix, "kubernetes: each hosted runtime runs in a namespace of its own, this prefix and its runtime ID")
	fs.StringVar(&o.Image, "hosted-runtimes-image", "", "kubernetes: the freshet image hosted runtimes run (default freshet/freshet:<server version>)")
	fs.StringVar(&o.Server, "hosted-runtimes-server", "", "kubernetes: the control plane URL hosted runtimes dial from the cluster (default: --public-url)")
	fs.StringToStringVar(&o.NodeSelector, "hosted-runtimes-node-selector", nil, "kubernetes: node selector of the hosted runtimes' pods (key=value,...)")
	fs.StringArrayVar(&o.Tolerations, "hosted-runtimes-toleration", nil, "kubernetes: a toleration of the hosted runtimes' pods, KEY[=VALUE]:EFFECT (repeatable; no VALUE: any value)")
	fs.StringVar(&o.StorageSize, "hosted-runtimes-storage-size", manifests.DefaultStorageSize, "kubernetes: the size of each hosted runtime's data claim (its installation repository, clusters and cache), a Kubernetes quantity; "+manifests.NoStorage+": no claim, the data dir is the pod's emptyDir (lost with the pod)")
	fs.StringVar(&o.StorageClass, "hosted-runtimes-storage-class", "", "kubernetes: the storage class of each hosted runtime's data claim (default: the cluster's default storage class)")
}

// cluster returns the provisioner's options of o; publicURL is the default server URL, net the
// control plane's policy for tenants' URLs (each runtime is started with it).
func (o *HostedOptions) cluster(publicURL string, net netpolicy.Options) (hostedkube.Options, error) {
	ho := hostedkube.Options{NamespacePrefix: o.NamespacePrefix, Image: o.Image, Version: version.Version,
		Server: o.Server, NodeSelector: o.NodeSelector, StorageSize: o.StorageSize, StorageClass: o.StorageClass, Net: net}
	if ho.Server == "" {
		ho.Server = publicURL
	}
	for _, v := range o.Tolerations {
		t, err := hostedkube.ParseToleration(v)
		if err != nil {
			return ho, err
		}
		ho.Tolerations = append(ho.Tolerations, t)
	}
	return ho, ho.Validate()
}

// Validate names the first bad option.
func (o *HostedOptions) Validate(publicURL string, net netpolicy.Options) error {
	switch o.Mode {
	case "", HostedInProcess:
		return nil
	case HostedKubernetes:
	default:
		return errdefs.Invalid("hosted-runtimes", o.Mode, "is not in-process or kubernetes")
	}
	if o.Server == "" && publicURL == "" {
		return errdefs.Invalid("hosted-runtimes-server", "", "is required with --hosted-runtimes kubernetes when --public-url is not set: the URL runtimes on the cluster dial the control plane at")
	}
	_, err := o.cluster(publicURL, net)
	return err
}

// hostedProvisioner runs the hosted runtimes: in this process (inProcessProvisioner) or on a
// platform-managed cluster (kubeProvisioner). Either does its work while it holds the
// hosted-runtimes lease (run), and is woken by kick after a change made on this replica.
type hostedProvisioner interface {
	runtimes.Provisioner
	// run contends for the lease and reconciles while it holds it, until ctx ends.
	run(ctx context.Context) error
	// kick wakes the lease holder's loop if it is this replica; it must not block.
	kick()
	// Running returns the IDs of the hosted runtimes this replica placed (for tests).
	Running() []string
}

var (
	_ hostedProvisioner = (*inProcessProvisioner)(nil)
	_ hostedProvisioner = (*kubeProvisioner)(nil)
)

// kubeProvisioner places hosted runtimes on a platform-managed cluster (hostedkube): the
// replica that holds the hosted-runtimes lease reconciles the cluster with the stored hosted
// runtimes every hostedKubeResync, and at once after a change made on this replica. When the
// cluster cannot be reached it tries again with backoff (hostedKubeRetryFirst doubling up to
// hostedKubeRetryMax, with jitter), and each hosted runtime it could not place shows why, as its
// "provisioner" component.
type kubeProvisioner struct {
	registry *runtimes.Service
	cluster  *hostedkube.Cluster
	log      *slog.Logger
	elector  *cron.Elector
	wake     chan struct{}

	mu     sync.Mutex
	placed map[string]bool // runtime IDs placed by the last pass
	// claimNotes are the last notes logged of runtimes' data claims that keep another size than
	// --hosted-runtimes-storage-size, by runtime ID: each is logged once, not every pass. Only
	// the lease holder's loop touches it.
	claimNotes map[string]string
}

// newKubeProvisioner builds the Kubernetes provisioner of opts.Hosted; its registry is set once
// the runtime registry, which it is a dependency of, is built.
func (s *Server) newKubeProvisioner(opts Options, log *slog.Logger) (*kubeProvisioner, error) {
	cfg, err := hostedkube.RESTConfig(opts.Hosted.Kubeconfig)
	if err != nil {
		return nil, err
	}
	ho, err := opts.Hosted.cluster(opts.PublicURL, opts.Net)
	if err != nil {
		return nil, err
	}
	cluster, err := hostedkube.New(cfg, ho)
	if err != nil {
		return nil, err
	}
	return &kubeProvisioner{cluster: cluster, log: log, wake: make(chan struct{}, 1), placed: map[string]bool{}, claimNotes: map[string]string{},
		elector: cron.NewElector(s.db, HostedLeaseName, "", opts.Cron.LeaseTTL, log)}, nil
}

// Provision wakes the lease holder if it is this replica; the token is already stored.
func (p *kubeProvisioner) Provision(context.Context, runtimes.Runtime, string) error {
	p.kick()
	return nil
}

// Deprovision deletes the runtime's namespace; should the cluster not answer, the lease
// holder's next pass deletes it (its runtime is no longer stored).
func (p *kubeProvisioner) Deprovision(ctx context.Context, rt runtimes.Runtime) error {
	p.mu.Lock()
	delete(p.placed, rt.ID)
	p.mu.Unlock()
	defer p.kick()
	return p.cluster.Remove(ctx, rt.ID)
}

func (p *kubeProvisioner) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Running returns the IDs of the hosted runtimes the last pass found placed or placed.
func (p *kubeProvisioner) Running() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, 0, len(p.placed))
	for id := range p.placed {
		ids = append(ids, id)
	}
	return ids
}

func (p *kubeProvisioner) run(ctx context.Context) error {
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		p.elector.Run(ctx)
	}()
	retry := time.Duration(0)
	for {
		changed := p.elector.Changed()
		wait := hostedKubeResync
		if p.elector.IsLeader() {
			if err := p.reconcile(ctx); err != nil && ctx.Err() == nil {
				retry = min(max(2*retry, hostedKubeRetryFirst), hostedKubeRetryMax)
				wait = retry/2 + rand.N(retry/2+1) // jitter: half to all of it
				p.log.Warn("hosted runtimes: the cluster cannot be reached; trying again", "in", wait.Round(time.Millisecond), "err", err)
			} else {
				retry = 0
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			<-electorDone
			return nil
		case <-changed:
		case <-p.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// reconcile runs one pass; its error is the cluster's (a temporary failure: try again later).
// A runtime it could not place shows why; one placed shows nothing of the provisioner.
func (p *kubeProvisioner) reconcile(ctx context.Context) error {
	creds, err := p.registry.HostedCredentials(ctx)
	if err != nil {
		p.log.Warn("read the hosted runtimes' tokens", "err", err)
		if creds == nil {
			return nil // the database's problem, not the cluster's: the next pass reads again
		}
	}
	res, err := p.cluster.Reconcile(ctx, creds)
	placed := map[string]bool{}
	for _, c := range creds {
		problem := ""
		switch {
		case err != nil:
			problem = "the platform's cluster cannot be reached; retrying: " + err.Error()
		case res.Failed[c.RuntimeID] != nil:
			problem = "cannot be placed on the platform's cluster; retrying: " + res.Failed[c.RuntimeID].Error()
		default:
			placed[c.RuntimeID] = true
			// Placed and running, on a claim that cannot grow yet: shown, not retried with
			// backoff (each pass looks again).
			problem = res.NotGrown[c.RuntimeID]
		}
		if serr := p.registry.SetHostedPlacement(ctx, c.AccountID, c.RuntimeID, problem); serr != nil && ctx.Err() == nil {
			p.log.Warn("record the hosted runtime's placement", "runtime", c.Name, "account", c.AccountID, "err", serr)
		}
	}
	if err == nil {
		p.mu.Lock()
		p.placed = placed
		p.mu.Unlock()
	}
	for _, id := range res.Applied {
		p.log.Info("hosted runtime placed", "runtime", id)
	}
	for _, id := range res.Resized {
		p.log.Info("hosted runtime's data claim asked to grow", "runtime", id, "size", p.cluster.StorageSize())
		delete(p.claimNotes, id)
	}
	if err == nil {
		notes := map[string]string{}
		maps.Copy(notes, res.Kept)
		maps.Copy(notes, res.NotGrown)
		for id, note := range notes {
			if p.claimNotes[id] != note {
				p.log.Warn("hosted runtime's data claim keeps its size", "runtime", id, "why", note)
			}
		}
		p.claimNotes = notes
	}
	for _, ns := range res.Removed {
		p.log.Info("hosted runtime removed: its runtime is deleted", "namespace", ns)
	}
	if err == nil && len(res.Failed) > 0 {
		for id, ferr := range res.Failed {
			p.log.Warn("place hosted runtime", "runtime", id, "err", ferr)
		}
		return errFailedPlacements
	}
	return err
}

// errFailedPlacements makes a pass that could not place some runtime try again with backoff.
var errFailedPlacements = errdefs.ErrUnavailable
