package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/cron"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/version"
)

// HostedLeaseName is the lease whose holder runs the hosted runtimes.
const HostedLeaseName = "hosted-runtimes"

// hostedResync is how often the holder of the hosted-runtime lease compares the runtimes it
// runs with the stored ones (a runtime created, rotated or deleted on another replica, an
// account deleted); a change made on this replica wakes it at once.
const hostedResync = 2 * time.Second

// inProcessProvisioner runs hosted runtimes as agents inside the server process that holds the
// hosted-runtime lease: the default for `freshet up` and `freshet server`. Their tokens are
// stored encrypted (runtimes.HostedCredentials), so after any restart, or when the lease's
// holder dies and another replica takes the lease, the new holder starts every hosted runtime
// again without anyone's action. A runtime whose row is gone (deleted, or its account deleted)
// is stopped and its data directory removed.
type inProcessProvisioner struct {
	s       *Server
	log     *slog.Logger
	elector *cron.Elector
	wake    chan struct{}

	mu      sync.Mutex
	running map[string]*hostedAgent // runtime ID → its agent
}

// hostedAgent is one running hosted runtime.
type hostedAgent struct {
	updated time.Time // the stored token's UpdatedAt the agent was started with
	cancel  context.CancelFunc
	done    chan struct{}
}

var _ runtimes.Provisioner = (*inProcessProvisioner)(nil)

func newInProcessProvisioner(s *Server, ttl time.Duration, log *slog.Logger) *inProcessProvisioner {
	return &inProcessProvisioner{s: s, log: log, running: map[string]*hostedAgent{}, wake: make(chan struct{}, 1),
		elector: cron.NewElector(s.db, HostedLeaseName, "", ttl, log)}
}

// Provision wakes the lease holder if it is this replica; the token is already stored with the
// runtime (in the transaction that created or rotated it).
func (p *inProcessProvisioner) Provision(context.Context, runtimes.Runtime, string) error {
	p.kick()
	return nil
}

// Deprovision stops the runtime's agent if this replica runs it. Another holder stops its own
// within hostedResync of the row's deletion (the deleted token no longer authenticates anyway).
func (p *inProcessProvisioner) Deprovision(_ context.Context, rt runtimes.Runtime) error {
	p.mu.Lock()
	a := p.running[rt.ID]
	delete(p.running, rt.ID)
	p.mu.Unlock()
	if a != nil {
		p.stop(rt.ID, a, true)
	}
	p.kick()
	return nil
}

func (p *inProcessProvisioner) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Running returns the IDs of the hosted runtimes this replica runs.
func (p *inProcessProvisioner) Running() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, 0, len(p.running))
	for id := range p.running {
		ids = append(ids, id)
	}
	return ids
}

// run contends for the hosted-runtime lease until ctx ends. While it holds the lease it runs
// every stored hosted runtime; when it loses the lease, or ctx ends, it stops them all.
func (p *inProcessProvisioner) run(ctx context.Context) error {
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		p.elector.Run(ctx)
	}()
	t := time.NewTicker(hostedResync)
	defer t.Stop()
	for {
		changed := p.elector.Changed()
		if p.elector.IsLeader() {
			p.reconcile(ctx)
		} else {
			p.stopAll(false)
		}
		select {
		case <-ctx.Done():
			p.stopAll(false)
			<-electorDone
			return nil
		case <-changed:
		case <-p.wake:
		case <-t.C:
		}
	}
}

// reconcile starts the stored hosted runtimes this replica does not run (or runs with a token
// since rotated), and stops those no longer stored.
func (p *inProcessProvisioner) reconcile(ctx context.Context) {
	creds, err := p.s.runtimes.HostedCredentials(ctx)
	if err != nil {
		p.log.Warn("read the hosted runtimes' tokens", "err", err)
		if creds == nil {
			return // a read failure: change nothing until the next pass
		}
	}
	want := map[string]bool{}
	for _, c := range creds {
		want[c.RuntimeID] = true
		p.mu.Lock()
		a := p.running[c.RuntimeID]
		p.mu.Unlock()
		if a != nil && a.updated.Equal(c.UpdatedAt) {
			continue
		}
		if a != nil { // its token was rotated: start it again with the new one
			p.stop(c.RuntimeID, a, false)
		}
		if err := p.start(ctx, c); err != nil {
			p.log.Warn("start hosted runtime", "runtime", c.Name, "account", c.AccountID, "err", err)
		}
	}
	p.mu.Lock()
	var gone []string
	for id := range p.running {
		if !want[id] {
			gone = append(gone, id)
		}
	}
	p.mu.Unlock()
	for _, id := range gone {
		p.mu.Lock()
		a := p.running[id]
		delete(p.running, id)
		p.mu.Unlock()
		if a != nil {
			p.log.Info("hosted runtime deleted: stopped", "runtime", id)
			p.stop(id, a, true)
		}
	}
}

// start runs an agent for hosted runtime c until ctx ends or it is stopped.
func (p *inProcessProvisioner) start(ctx context.Context, c runtimes.HostedCredential) error {
	// A hosted runtime deploys only to clusters the customer registers, never to the platform's
	// own; its installation repository is a local one under the data dir. It reaches what the
	// operator's policy allows tenants' URLs to reach, and of the data dir only that repository.
	dir := p.dir(c.RuntimeID)
	repoURL, err := host.InitLocalRepo(filepath.Join(dir, "installation.git"))
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Options{Server: p.s.URL(), Token: c.Token, AccessMode: runtimes.AccessTunnel, Version: version.Version, CDOnly: true,
		NoInCluster: true, DataDir: dir, InstallRepo: git.Repo{URL: repoURL}, Policy: p.s.policy}, &http.Client{}, p.log.With("runtime", c.Name, "account", c.AccountID))
	if err != nil {
		return err
	}
	actx, cancel := context.WithCancel(ctx)
	h := &hostedAgent{updated: c.UpdatedAt, cancel: cancel, done: make(chan struct{})}
	p.mu.Lock()
	p.running[c.RuntimeID] = h
	p.mu.Unlock()
	go func() {
		defer close(h.done)
		if err := a.Run(actx); err != nil && !errors.Is(err, context.Canceled) && actx.Err() == nil {
			p.log.Warn("hosted runtime stopped", "runtime", c.Name, "account", c.AccountID, "err", err)
		}
	}()
	p.log.Info("hosted runtime started", "runtime", c.Name, "account", c.AccountID)
	return nil
}

func (p *inProcessProvisioner) dir(id string) string {
	return filepath.Join(p.s.opts.DataDir, "hosted", filepath.Base(id))
}

// stop ends agent a of runtime id and waits for it; removeData also deletes its data directory
// (the runtime is gone).
func (p *inProcessProvisioner) stop(id string, a *hostedAgent, removeData bool) {
	a.cancel()
	<-a.done
	if removeData {
		if err := os.RemoveAll(p.dir(id)); err != nil {
			p.log.Warn("remove a deleted hosted runtime's data", "runtime", id, "err", err)
		}
	}
}

// stopAll stops every agent this replica runs and keeps their data (another start resumes it).
func (p *inProcessProvisioner) stopAll(removeData bool) {
	p.mu.Lock()
	running := p.running
	p.running = map[string]*hostedAgent{}
	p.mu.Unlock()
	for id, a := range running {
		p.stop(id, a, removeData)
	}
}
