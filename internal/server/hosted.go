package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/version"
)

// inProcessProvisioner runs hosted runtimes as agents inside this server process: the default
// for `freshet up` and single-node servers. A Kubernetes provisioner can replace it behind
// runtimes.Provisioner.
type inProcessProvisioner struct {
	s   *Server
	log *slog.Logger

	mu      sync.Mutex
	ctx     context.Context // set by run: provisioned agents live as long as the server
	running map[string]context.CancelFunc
	pending map[string]string // runtime ID → token, provisioned before run started
}

var _ runtimes.Provisioner = (*inProcessProvisioner)(nil)

func newInProcessProvisioner(s *Server, log *slog.Logger) *inProcessProvisioner {
	return &inProcessProvisioner{s: s, log: log, running: map[string]context.CancelFunc{}, pending: map[string]string{}}
}

func (p *inProcessProvisioner) Provision(ctx context.Context, rt runtimes.Runtime, token string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx == nil {
		p.pending[rt.ID] = token
		return nil
	}
	return p.start(rt.ID, token)
}

// start runs an agent for a hosted runtime; p.mu is held.
func (p *inProcessProvisioner) start(id, token string) error {
	// A hosted runtime deploys only to clusters the customer registers, never to the platform's
	// own; its installation repository is a local one under the data dir. It reaches what the
	// operator's policy allows tenants' URLs to reach, and of the data dir only that repository.
	dir := filepath.Join(p.s.opts.DataDir, "hosted", id)
	repoURL, err := host.InitLocalRepo(filepath.Join(dir, "installation.git"))
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Options{Server: p.s.URL(), Token: token, AccessMode: runtimes.AccessTunnel, Version: version.Version, CDOnly: true,
		NoInCluster: true, DataDir: dir, InstallRepo: git.Repo{URL: repoURL}, Policy: p.s.policy}, &http.Client{}, p.log.With("runtime", id))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(p.ctx)
	p.running[id] = cancel
	go func() {
		if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			p.log.Warn("hosted runtime stopped", "runtime", id, "err", err)
		}
	}()
	return nil
}

func (p *inProcessProvisioner) Deprovision(_ context.Context, rt runtimes.Runtime) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, rt.ID)
	if cancel, ok := p.running[rt.ID]; ok {
		cancel()
		delete(p.running, rt.ID)
	}
	return nil
}

// run lets provisioned agents start once the server listens, until ctx ends. Hosted runtimes
// provisioned before a restart are not restarted here: their tokens are not kept (a
// Kubernetes provisioner keeps them in a Secret).
func (p *inProcessProvisioner) run(ctx context.Context) error {
	p.mu.Lock()
	p.ctx = ctx
	for id, token := range p.pending {
		if err := p.start(id, token); err != nil {
			p.log.Warn("start hosted runtime", "runtime", id, "err", err)
		}
	}
	p.pending = map[string]string{}
	p.mu.Unlock()
	<-ctx.Done()
	return nil
}
