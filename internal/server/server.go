// Package server is the one place that wires the control plane together: it opens the store
// and the bus, builds every service with explicit constructors, mounts the REST and GraphQL
// APIs, health and metrics, and runs it all under one errgroup until the context ends.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/api/graphql"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/api/rest"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/cron"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/events"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/hub"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/notify"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/products"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/tunnel"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
	"github.com/freshet-dev/freshet/internal/webhook"
	"github.com/freshet-dev/freshet/internal/webui"
)

// Server is a running control plane.
type Server struct {
	opts     Options
	log      *slog.Logger
	db       *store.DB
	bus      *bus.Bus
	identity *identity.Service
	access   *httpx.Access
	audit    *audit.Log
	rest     *rest.API
	relay    *events.Relay
	outbox   *events.OutboxRelay
	analyze  *analytics.Handler
	stats    *analytics.Service
	images   *images.Service
	notify   *notify.Service
	products *products.Service
	hub      *hub.Service
	billing  *billing.Service
	pipes    *pipeline.Service
	dispatch *pipeline.Dispatcher
	runtimes *runtimes.Service
	tunnel   *tunnel.Server
	elector  *cron.Elector
	cron     *cron.Executor
	hosted   hostedProvisioner
	policy   *netpolicy.Policy // the operator's, for URLs from tenants
	handler  http.Handler
	metrics  *prometheus.Registry
	ln       net.Listener
	ready    atomic.Bool
}

// New binds the listen address, opens the database (applying migrations) and the bus, and
// builds every service with what it depends on. Nothing is served until Run; the caller must
// Run or Close the server.
func New(ctx context.Context, opts Options, log *slog.Logger) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data-dir %s: %w", opts.DataDir, err)
	}
	s := &Server{opts: opts, log: log, metrics: prometheus.NewRegistry()}
	// Bind first: the server's URL is part of what the services are built with.
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", opts.Listen, err)
	}
	s.ln = ln
	if s.db, err = store.Open(ctx, opts.DSN(), log); err != nil {
		ln.Close()
		return nil, err
	}
	if s.bus, err = bus.Open(ctx, bus.Options{URL: opts.NATS, Replicas: opts.NATSReplicas, DataDir: filepath.Join(opts.DataDir, "nats")}, log.With("component", "bus")); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("event bus: %w", err)
	}
	s.audit = audit.NewLog(s.db, log)
	s.relay = events.NewRelay(s.db, s.bus, log.With("component", "events"))
	s.outbox = events.NewOutboxRelay(s.db, s.bus, log.With("component", "outbox"))
	keys, err := LoadKeyring(opts)
	if err != nil {
		s.Close()
		return nil, err
	}
	if err := CheckMasterKeys(ctx, s.db, keys); err != nil {
		s.Close()
		return nil, fmt.Errorf("master keys: %w", err)
	}
	if s.policy, err = opts.Net.Policy(opts.DataDir); err != nil {
		s.Close()
		return nil, err
	}
	plans, err := opts.Billing.Catalogue()
	if err != nil {
		s.Close()
		return nil, err
	}
	s.billing = billing.New(billing.Deps{Store: s.db, Catalogue: plans, Log: log.With("component", "billing"), ReservationTTL: opts.Billing.ReservationTTL})
	baseURL := opts.PublicURL
	if baseURL == "" {
		baseURL = s.URL()
	}
	resetMail, err := opts.SMTP.resetMailer(baseURL)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.identity = identity.New(identity.Deps{Store: s.db, Audit: s.audit, Log: log, OnRevoke: s.revoked, Describe: s.describe,
		Keys: keys, Net: s.policy, Limits: s.billing, ResetMail: resetMail,
		// The account's rows are gone: the provisioner removes its hosted runtime at once.
		OnAccountDeleted: func(string) { s.hosted.kick() }})
	s.access = httpx.NewAccess(s.identity, 0, log.With("component", "access"))
	if err := s.watchRevocations(); err != nil {
		s.Close()
		return nil, fmt.Errorf("revocations: %w", err)
	}
	cache, err := git.NewCache(filepath.Join(opts.DataDir, "git"), git.Options{Policy: s.policy})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("git cache: %w", err)
	}
	var steps pipeline.StepCatalog
	if opts.StepCatalogURL != "" {
		// The operator's repository: no tenant policy, a cache of its own.
		stepCache, err := git.NewCache(filepath.Join(opts.DataDir, "git-steps"), git.Options{})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("step catalogue cache: %w", err)
		}
		steps = gitSteps{cache: stepCache, url: opts.StepCatalogURL, revision: opts.StepCatalogRevision}
	}
	// The hooks below call components built after the pipeline service; they run only once
	// requests are served, when every component exists.
	s.pipes = pipeline.New(pipeline.Deps{Store: s.db, Audit: s.audit, Keys: keys, Log: log.With("component", "pipelines"),
		Specs: gitSpecs{cache: cache, policy: s.policy}, Steps: steps, BaseURL: baseURL, Net: s.policy, OnEvents: s.outbox.Kick, Limits: s.billing,
		OnOwnerChange: func(accountID string) { s.revoked(accountID, "") },
		OnCronChange:  func() { s.cron.Reload() },
		// Verified pushes to CI triggers' webhooks also reach the account's GitOps runtimes.
		OnPush: func(ctx context.Context, accountID string, evs []webhook.Event) {
			var ns []runtimes.Notification
			for _, ev := range evs {
				ns = append(ns, runtimes.PushNotifications(ev)...)
			}
			s.runtimes.NotifyPush(ctx, accountID, ns)
		}})
	s.elector = cron.NewElector(s.db, cron.LeaseName, "", opts.Cron.LeaseTTL, log.With("component", "cron"))
	fire := func(ctx context.Context, sc cron.Schedule, at time.Time) error {
		return s.pipes.FireCron(ctx, sc.ID, cron.FireKey(sc.ID, at), at)
	}
	if s.cron, err = cron.NewExecutor(s.db, s.elector, s.pipes, fire, opts.Cron, log.With("component", "cron")); err != nil {
		s.Close()
		return nil, err
	}
	s.dispatch = pipeline.NewDispatcher(s.pipes, s.bus.Conn(), log.With("component", "dispatcher"))
	if opts.RunnerLeaseTTL > 0 {
		s.dispatch.SetLeaseTTL(opts.RunnerLeaseTTL)
	}
	// The tunnel authenticates and resolves runtimes through the registry built next.
	if s.tunnel, err = s.newTunnel(log.With("component", "tunnel")); err != nil {
		s.Close()
		return nil, fmt.Errorf("tunnel: %w", err)
	}
	var kubeHosted *kubeProvisioner
	if opts.Hosted.Mode == HostedKubernetes {
		if kubeHosted, err = s.newKubeProvisioner(opts, log.With("component", "hosted-runtimes")); err != nil {
			s.Close()
			return nil, err
		}
		s.hosted = kubeHosted
	} else {
		s.hosted = newInProcessProvisioner(s, opts.Cron.LeaseTTL, log.With("component", "hosted-runtimes"))
	}
	s.runtimes = runtimes.New(runtimes.Deps{Store: s.db, Audit: s.audit, Keys: keys, Log: log.With("component", "runtimes"),
		Provisioner: s.hosted, Tunnel: runtimeTunnel{s.tunnel}, OnEvents: s.outbox.Kick, Limits: s.billing, TokenTTL: opts.RuntimeTokenTTL,
		OnOwnerChange: func(accountID string) { s.revoked(accountID, "") },
		// AppProject roles a runtime reports become rules derived from them (docs/security.md).
		OnProjectRoles: func(ctx context.Context, accountID, runtimeID, runtimeName string, roles []rbac.ProjectRole) error {
			d, err := s.identity.SetDerivedRules(ctx, accountID, runtimeID, runtimeName, roles)
			if err == nil && (len(d.UnknownGroups) > 0 || len(d.Skipped) > 0) {
				log.Info("AppProject roles: groups naming no team are ignored, lines not mapped are skipped", "account", accountID, "runtime", runtimeName,
					"unknownGroups", d.UnknownGroups, "skipped", d.Skipped)
			}
			return err
		}})
	if kubeHosted != nil {
		kubeHosted.registry = s.runtimes
	}
	// Every replica runs the analytics consumers; their durable names make them share the work.
	s.images = images.New(images.Deps{Store: s.db, Audit: s.audit, Keys: keys, Net: s.policy, Commits: gitCommits{cache: cache}, Log: log.With("component", "images")})
	s.stats = analytics.New(analytics.Deps{Store: s.db, Log: log.With("component", "analytics"), FailureWindow: opts.AnalyticsFailureWindow,
		Origins: s.images})
	s.analyze = analytics.NewHandler(analytics.HandlerDeps{Store: s.db, Bus: s.bus, Ledger: s.db.Ledger(), Log: log.With("component", "analytics"),
		FailureWindow: opts.AnalyticsFailureWindow})
	s.notify = notify.New(notify.Deps{Store: s.db, Audit: s.audit, Keys: keys, Net: s.policy, BaseURL: baseURL, Log: log.With("component", "notifications")})
	s.products = products.New(products.Deps{Store: s.db, Audit: s.audit, Apps: s.runtimes, Deployments: s.stats, Log: log.With("component", "products")})
	if s.hub, err = hub.New(hub.Deps{Store: s.db, Audit: s.audit, Git: cache, Net: s.policy, Runtimes: s.runtimes, Log: log.With("component", "hub")}); err != nil {
		s.Close()
		return nil, err
	}
	s.rest = rest.New(rest.Deps{Identity: s.identity, Audit: s.audit, Pipelines: s.pipes, Dispatcher: s.dispatch, Runtimes: s.runtimes, Analytics: s.stats, Images: s.images,
		Notifications: s.notify, Products: s.products, Hub: s.hub, Billing: s.billing, Log: log,
		SecureCookies: opts.TLSCert != "", Access: s.access, PublicURL: baseURL})
	gql, err := graphql.New(s.identity, s.audit, s.runtimes, s.stats, s.products, s.images, s.hub, log)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("graphql schema: %w", err)
	}
	s.handler = s.routes(gql)
	return s, nil
}

// Bootstrap creates the first account and admin on a new database (see identity.Bootstrap).
func (s *Server) Bootstrap(ctx context.Context) (identity.BootstrapResult, error) {
	return s.identity.Bootstrap(ctx, s.opts.Account, s.opts.AdminEmail, s.opts.AdminPassword)
}

// LoadKeyring returns the master keys secrets are encrypted with: from --master-key-file, or
// from FRESHET_MASTER_KEY, or — with the embedded SQLite database only — master.key in the data
// dir, created on first start. On PostgreSQL, replicas must share one key, so it must be given.
func LoadKeyring(opts Options) (*secrets.Keyring, error) {
	if opts.MasterKeyFile != "" && os.Getenv(secrets.EnvMasterKey) != "" {
		return nil, errdefs.Invalid("master-key-file", opts.MasterKeyFile, "and "+secrets.EnvMasterKey+" are both set: give the master keys one way")
	}
	createDir := opts.DataDir
	if strings.HasPrefix(opts.DSN(), "postgres") {
		createDir = ""
	}
	kr, _, err := (&secrets.Options{MasterKeyFile: opts.MasterKeyFile}).Open(createDir)
	if errors.Is(err, secrets.ErrNoMasterKey) {
		return nil, fmt.Errorf("no master key: with PostgreSQL every replica must use the same keys: set --master-key-file or %s (create a key file with 'freshet master-key generate FILE')", secrets.EnvMasterKey)
	}
	return kr, err
}

// URL is the base URL of the listen address.
func (s *Server) URL() string {
	addr := s.ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return fmt.Sprintf("%s://%s", s.opts.Scheme(), net.JoinHostPort(host, fmt.Sprint(addr.Port)))
}

// Routes lists the REST routes (for tests that must cover every route).
func (s *Server) Routes() []rest.Route { return s.rest.Routes() }

// LocalRunnerToken returns the token of the in-process runner `freshet up` runs for the first
// account, registering it on first start (its token is kept in the data dir, mode 0600).
func (s *Server) LocalRunnerToken(ctx context.Context) (string, error) {
	a, err := s.db.FirstAccount(ctx)
	if err != nil {
		return "", err
	}
	return s.pipes.EnsureRunner(ctx, a.ID, "local", map[string]string{"freshet.dev/local": "true"}, filepath.Join(s.opts.DataDir, "runner.token"))
}

// Pipelines returns the pipeline service (for in-process agents and tests).
func (s *Server) Pipelines() *pipeline.Service { return s.pipes }

// Dispatcher returns the build dispatcher (for tests).
func (s *Server) Dispatcher() *pipeline.Dispatcher { return s.dispatch }

// Runtimes returns the runtime registry.
func (s *Server) Runtimes() *runtimes.Service { return s.runtimes }

// HostedRunning returns the IDs of the hosted runtimes this replica runs (it holds the
// hosted-runtime lease).
func (s *Server) HostedRunning() []string { return s.hosted.Running() }

// LocalRuntimeToken returns the token of the in-process runtime `freshet up` runs for the first
// account, registering it on first start (its token is kept in the data dir, mode 0600).
func (s *Server) LocalRuntimeToken(ctx context.Context) (string, error) {
	a, err := s.db.FirstAccount(ctx)
	if err != nil {
		return "", err
	}
	return s.runtimes.EnsureRuntime(ctx, a.ID, "local", filepath.Join(s.opts.DataDir, "runtime.token"))
}

// Identity returns the identity service (for provisioning and tests).
func (s *Server) Identity() *identity.Service { return s.identity }

// Handler is the server's whole HTTP handler (for tests).
func (s *Server) Handler() http.Handler { return s.handler }

// DB returns the server's database (for tests and tools in this module).
func (s *Server) DB() *store.DB { return s.db }

// Run serves until ctx ends, then shuts down gracefully: it stops accepting, lets requests
// finish for up to ShutdownTimeout, and closes the bus and the database.
func (s *Server) Run(ctx context.Context) error {
	defer s.Close()
	// HTTP/1.1, and HTTP/2 under TLS. No cleartext HTTP/2: runners' streams work over HTTP/1.1,
	// the tunnel does its own upgrade, and h2c's preface check holds new connections open in a
	// way that stalls graceful shutdown.
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		if s.opts.TLSCert != "" {
			srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
			err = srv.ServeTLS(s.ln, s.opts.TLSCert, s.opts.TLSKey)
		} else {
			err = srv.Serve(s.ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	})
	g.Go(func() error { return s.sweepExpired(gctx) })
	g.Go(func() error { return s.pipes.SweepDeliveries(gctx, 0) })
	g.Go(func() error { return s.relay.Run(gctx) })
	g.Go(func() error { return s.outbox.Run(gctx) })
	g.Go(func() error { return s.analyze.Run(gctx) })
	g.Go(func() error { return s.pipes.RunCommitStatuses(gctx, s.bus) })
	g.Go(func() error { return s.notify.Run(gctx, s.bus) })
	g.Go(func() error { return s.notify.RunSender(gctx) })
	g.Go(func() error { return s.dispatch.Run(gctx) })
	g.Go(func() error { return s.elector.Run(gctx) })
	g.Go(func() error { return s.cron.Run(gctx) })
	g.Go(func() error { return s.runtimes.Sweep(gctx, time.Second) })
	g.Go(func() error { return s.hosted.run(gctx) })
	g.Go(func() error { return s.tunnel.Run(gctx) })
	g.Go(func() error {
		<-gctx.Done()
		s.ready.Store(false)
		sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
		defer cancel()
		s.log.Info("shutting down", "timeout", s.opts.ShutdownTimeout)
		return srv.Shutdown(sctx)
	})
	s.ready.Store(true)
	return g.Wait()
}

// Close releases the listener, the bus and the database.
func (s *Server) Close() error {
	var errs []error
	s.ln.Close() // already closed when Run served on it; URL still answers from it
	if s.bus != nil {
		errs = append(errs, s.bus.Close())
		s.bus = nil
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
		s.db = nil
	}
	return errors.Join(errs...)
}

// sweepExpired has identity delete expired sessions and invitations every SweepInterval, and
// forgets the message ledger's keys older than bus.LedgerRetention (no replica can be handed
// those messages again, so any replica may run it).
func (s *Server) sweepExpired(ctx context.Context) error {
	t := time.NewTicker(identity.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if sessions, invitations, err := s.identity.SweepExpired(ctx); err != nil {
				s.log.Warn("sweep expired sessions and invitations", "err", err)
			} else if sessions+invitations > 0 {
				s.log.Debug("swept expired sessions and invitations", "sessions", sessions, "invitations", invitations)
			}
			if n, err := s.db.ForgetProcessed(ctx, time.Now().Add(-bus.LedgerRetention)); err != nil {
				s.log.Warn("forget old message ledger keys", "err", err)
			} else if n > 0 {
				s.log.Debug("forgot old message ledger keys", "keys", n)
			}
		}
	}
}

func (s *Server) routes(gql *graphql.Handler) http.Handler {
	mux := http.NewServeMux()
	s.rest.Register(mux)
	mux.Handle("/api/graphql", gql)
	// /runtimes/{runtime}/… reaches a runtime through its tunnel (authenticated users only);
	// /runtimes and /runtimes/{runtime} themselves are the web UI's pages.
	mux.Handle(tunnel.DefaultPathPrefix, s.reserving(s.tunnel.ProxyHandler()))
	mux.Handle("GET /runtimes", webui.Handler())
	mux.Handle("GET /runtimes/{runtime}", webui.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	s.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{Registry: s.metrics}))
	mux.Handle("/", webui.Handler())
	inst := newInstrumentation(s.metrics, s.log)
	var h http.Handler = inst.wrap(mux)
	h = s.kickRelay(h)
	h = httpx.Authenticate(s.identity, identity.CSRFToken, s.log, h)

	// The runner protocol authenticates runner tokens itself; user credentials mean nothing there.
	agents := http.NewServeMux()
	pipeline.NewRunnerAPI(s.pipes, s.dispatch).Register(agents)
	s.runtimes.RegisterProtocol(agents)
	top := http.NewServeMux()
	top.Handle("/"+runnerv1.ServiceName+"/", inst.wrap(agents))
	top.Handle("/"+runtimev1.ServiceName+"/", inst.wrap(agents))
	// Runtimes open tunnels with their runtime token; replicas forward with a signed hop.
	top.Handle(wire.ConnectPath, s.tunnel.ConnectHandler())
	top.Handle(tunnel.DefaultHopPath, s.tunnel.HopHandler())
	top.Handle("/", h)
	return httpx.WithRequestID(top)
}

// kickRelay wakes the event relay after requests that may have written audit records, so API
// events reach the bus within milliseconds rather than at the next poll.
func (s *Server) kickRelay(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.relay.Kick()
		}
	})
}

// Bus returns the server's event bus (for tests and in-process agents).
func (s *Server) Bus() *bus.Bus { return s.bus }

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{"database": "ok", "bus": "ok"}
	ok := true
	if err := s.db.Ping(ctx); err != nil {
		checks["database"], ok = err.Error(), false
	}
	if err := s.bus.Ready(ctx); err != nil {
		checks["bus"], ok = err.Error(), false
	}
	if !s.ready.Load() {
		checks["server"], ok = "starting or stopping", false
	}
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	httpx.WriteJSON(w, status, map[string]any{"ready": ok, "checks": checks})
}

// NewLogger builds the process logger from the options.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	lv, err := parseLevel(level)
	if err != nil {
		return nil, err
	}
	ho := &slog.HandlerOptions{Level: slog.Level(lv)}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return slog.New(slog.NewTextHandler(w, ho)), nil
}
