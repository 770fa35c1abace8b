// Package runner is `freshet runner`: the agent that runs CI builds inside the customer's
// network. It dials the control plane (never the reverse), keeps a ConnectRPC stream open for
// job offers (or long-polls where streaming is broken), accepts builds under leases it renews
// with heartbeats, runs their steps with an executor, masks secrets in the log and ships it in
// offset-addressed chunks, and reports steps and results.
//
// What it owes the control plane (log lines, step states, a build's result) it keeps until the
// control plane has it, across outages: nothing is dropped because delivery took long. A build
// whose lease it could not renew is suspended, not forgotten: its running step stops, what the
// finished steps did is kept, and the build resumes — only its unfinished steps run — when the
// control plane renews the lease or gives the requeued build back (see job).
//
// The runner imports no control-plane package: it speaks api/runnerv1 only.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// Transports.
const (
	TransportAuto   = "auto"   // stream, falling back to poll when streaming keeps failing
	TransportStream = "stream" // the ConnectRPC server stream only
	TransportPoll   = "poll"   // HTTP long-poll only
	// TransportInterval asks every PollInterval and waits for nothing in between, as older
	// runners (venona: 3 s) do. It exists to compare against; it is slower by design.
	TransportInterval = "interval"
)

// Defaults.
const (
	DefaultConcurrency = 2
	// DefaultShutdownTimeout is how long a runner takes at most to stop after SIGTERM.
	DefaultShutdownTimeout = 10 * time.Second
	maxReconnectBackoff    = 5 * time.Second // so a runner is back on its stream within seconds of an outage's end
	streamFailuresToPoll   = 3
	streamRetryInterval    = time.Minute     // while auto polls, how often it tries the stream again
	fenceMargin            = 3 * time.Second // stop a job this long before its unrenewed lease expires (at most a tenth of the lease)
)

// Options configure a runner.
type Options struct {
	Server       string
	Token        string
	Name         string
	Executor     string
	Concurrency  int
	Labels       map[string]string
	Transport    string
	PollInterval time.Duration // for TransportInterval
	Version      string
	// ShutdownTimeout bounds how long Run takes to return once its context ends: steps are
	// stopped and what the logs hold is shipped until then (0 means DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	host, _ := os.Hostname()
	fs.StringVar(&o.Server, "server", "", "control plane URL (env FRESHET_SERVER)")
	fs.StringVar(&o.Token, "token", "", "runner token from 'freshet runner register' (env FRESHET_RUNNER_TOKEN)")
	fs.StringVar(&o.Name, "name", host, "name shown in build logs")
	fs.StringVar(&o.Executor, "executor", "", "executor: container (steps in their images through Docker or Podman), local (steps as host processes) or kubernetes (a pod per step); default: container when a container engine answers, else local")
	fs.IntVar(&o.Concurrency, "concurrency", DefaultConcurrency, "builds run at once")
	fs.StringToStringVar(&o.Labels, "labels", nil, "labels pipelines select runners by, k=v,k=v")
	fs.StringVar(&o.Transport, "transport", TransportAuto, "how offers arrive: auto, stream, poll (long-poll) or interval (poll every --poll-interval)")
	fs.DurationVar(&o.PollInterval, "poll-interval", 3*time.Second, "with --transport interval: how often to ask for work")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", DefaultShutdownTimeout, "on SIGINT/SIGTERM: how long to take at most to stop steps and ship their logs before exiting")
}

// Validate names the first bad option.
func (o *Options) Validate() error {
	switch {
	case o.Server == "" || (!strings.HasPrefix(o.Server, "http://") && !strings.HasPrefix(o.Server, "https://")):
		return fmt.Errorf("--server %q: give the control plane's http(s):// URL", o.Server)
	case !strings.HasPrefix(o.Token, "frn_"):
		return fmt.Errorf("--token: not a runner token (they start with frn_; create one with 'freshet runner register')")
	case o.Concurrency < 1 || o.Concurrency > 256:
		return fmt.Errorf("--concurrency %d: use 1 to 256", o.Concurrency)
	case o.ShutdownTimeout < 0:
		return fmt.Errorf("--shutdown-timeout %s: must not be negative (0 means %s)", o.ShutdownTimeout, DefaultShutdownTimeout)
	}
	switch o.Transport {
	case TransportAuto, TransportStream, TransportPoll:
	case TransportInterval:
		if o.PollInterval <= 0 {
			return fmt.Errorf("--poll-interval %s: must be positive", o.PollInterval)
		}
	default:
		return fmt.Errorf("--transport %q: use auto, stream, poll or interval", o.Transport)
	}
	return nil
}

// Runner is a running `freshet runner`.
type Runner struct {
	opts Options
	c    *protoClient
	exec executor.Executor
	log  *slog.Logger

	// takeMu makes taking an offer one step: the slot check, the accept and the start.
	takeMu sync.Mutex
	// freed is signalled when a slot frees: offers held while every slot was taken are taken up.
	freed chan struct{}

	mu         sync.Mutex
	jobs       map[string]*job
	held       map[string]time.Time // offers that came while every slot was taken → when
	draining   bool
	stoppingBy time.Time // set when Run's context ended: the shutdown deadline
	wg         sync.WaitGroup
}

// New returns a runner that runs builds with exec.
func New(opts Options, exec executor.Executor, hc *http.Client, log *slog.Logger) (*Runner, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{}
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	return &Runner{opts: opts, c: newProtoClient(opts.Server, opts.Token, hc), exec: exec, log: log,
		jobs: map[string]*job{}, held: map[string]time.Time{}, freed: make(chan struct{}, 1)}, nil
}

// ExecutorName is the name of the executor the runner runs steps with.
func (r *Runner) ExecutorName() string { return r.exec.Name() }

// Run takes and runs builds until ctx ends. Then it stops every step and ships what the logs
// hold, returning within Options.ShutdownTimeout; builds it held are left to their leases (the
// control plane requeues or fails them).
func (r *Runner) Run(ctx context.Context) error {
	if sw, ok := r.exec.(sweeper); ok {
		swept, err := sw.Sweep(ctx)
		if err != nil {
			r.log.Warn("clean up what earlier runs left", "err", err)
		}
		if len(swept) > 0 {
			r.log.Info("cleaned up builds an earlier run of a runner left behind", "workspaces", swept)
		}
	}
	hbCtx, stopHB := context.WithCancel(ctx)
	defer stopHB()
	go r.heartbeats(hbCtx)
	go r.takeHeldOffers(hbCtx)
	err := r.receive(ctx)
	deadline := time.Now().Add(r.opts.ShutdownTimeout)
	r.mu.Lock()
	r.stoppingBy = deadline
	for _, jb := range r.jobs {
		jb.stop(errShutdown)
		jb.abandoned.Do(func() { close(jb.abandon) })
	}
	r.mu.Unlock()
	stopped := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(time.Until(deadline)):
		// Steps still in their kill grace die with the process (the executor ties them to it).
		r.log.Warn("shutdown timeout: exiting with builds still stopping", "timeout", r.opts.ShutdownTimeout)
	}
	return err
}

// shutdownDeadline is when Run returns once its context ended (in ShutdownTimeout from now
// until then).
func (r *Runner) shutdownDeadline() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stoppingBy.IsZero() {
		return time.Now().Add(r.opts.ShutdownTimeout)
	}
	return r.stoppingBy
}

// sweeper is an executor that can clean up what runners that are gone left behind (workspaces,
// step processes) before this runner takes builds.
type sweeper interface {
	Sweep(ctx context.Context) ([]string, error)
}

// receive takes messages from the control plane until ctx ends.
//
// With TransportAuto it streams, and falls back to long-polling only when streaming itself is
// broken: a stream that fails while the control plane answers other calls (a proxy that buffers
// or cuts streams). A stream that fails because the control plane is away does not count: an
// outage ends with the runner back on its stream. Once polling, it tries the stream again every
// streamRetryInterval, and a stream that comes up clears the count.
func (r *Runner) receive(ctx context.Context) error {
	backoff := 250 * time.Millisecond
	streamFailures := 0
	var polling time.Time // when auto fell back to polling
	for ctx.Err() == nil {
		if r.opts.Transport == TransportAuto && streamFailures >= streamFailuresToPoll && time.Since(polling) >= streamRetryInterval {
			streamFailures = streamFailuresToPoll - 1 // one more try; a failure polls again
			r.log.Info("trying the stream again after polling", "for", time.Since(polling).Round(time.Second))
		}
		useStream := r.opts.Transport == TransportStream || (r.opts.Transport == TransportAuto && streamFailures < streamFailuresToPoll)
		var err error
		var got bool
		switch {
		case r.opts.Transport == TransportInterval:
			got, err = r.pollInterval(ctx)
		case useStream:
			got, err = r.stream(ctx)
		default:
			got, err = r.pollOnce(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		if useStream && got {
			streamFailures = 0
		}
		if err == nil {
			backoff = 250 * time.Millisecond
			continue
		}
		if isAuthError(err) {
			return fmt.Errorf("the control plane refused this runner: %w", err)
		}
		if got {
			backoff = 250 * time.Millisecond
		}
		if useStream && !got && r.opts.Transport == TransportAuto && r.reachable(ctx) {
			streamFailures++
			if streamFailures == streamFailuresToPoll {
				polling = time.Now()
				r.log.Warn("the stream keeps failing while the control plane answers; long-polling instead", "err", err, "retry_stream_in", streamRetryInterval)
			}
		}
		wait := backoff/2 + rand.N(backoff/2+1) // jitter
		r.log.Warn("connection to the control plane failed; retrying", "err", err, "in", wait.Round(time.Millisecond), "stream", useStream)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(backoff*2, maxReconnectBackoff)
	}
	return nil
}

// reachable reports whether the control plane answers a call other than the stream: a
// heartbeat without leases, which creates no session and changes nothing.
func (r *Runner) reachable(ctx context.Context) bool {
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := unary(hctx, r.c.token, r.c.heartbeat, &runnerv1.HeartbeatRequest{})
	return err == nil
}

func isAuthError(err error) bool {
	code := connect.CodeOf(err)
	return code == connect.CodeUnauthenticated || code == connect.CodePermissionDenied || code == connect.CodeInvalidArgument
}

func (r *Runner) hello() runnerv1.ConnectRequest {
	host, _ := os.Hostname()
	r.mu.Lock()
	defer r.mu.Unlock()
	req := runnerv1.ConnectRequest{Protocol: runnerv1.ProtocolVersion, Version: r.opts.Version, Hostname: host, Labels: r.opts.Labels,
		Executors: []string{r.exec.Name()}, Concurrency: r.opts.Concurrency}
	for id := range r.jobs {
		req.Running = append(req.Running, id)
	}
	return req
}

// stream holds the server stream open and handles its messages. got says whether the stream
// was established (so a later break is not a reason to give up streaming).
func (r *Runner) stream(ctx context.Context) (got bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := r.c.connect.CallServerStream(sctx, request(r.c.token, ptr(r.hello())))
	if err != nil {
		return false, err
	}
	defer st.Close()
	// A stream with no message for 3 ping intervals is dead even if TCP says otherwise.
	alive := make(chan struct{}, 1)
	go func() {
		t := time.NewTimer(3 * runnerv1.PingInterval)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-alive:
				t.Reset(3 * runnerv1.PingInterval)
			case <-t.C:
				r.log.Warn("no message from the control plane for 3 ping intervals; reconnecting")
				cancel()
				return
			}
		}
	}()
	for st.Receive() {
		if !got {
			r.log.Info("connected to the control plane", "server", r.opts.Server, "transport", "stream")
		}
		got = true
		select {
		case alive <- struct{}{}:
		default:
		}
		r.handle(ctx, *st.Msg())
	}
	if err := st.Err(); err != nil {
		return got, err
	}
	return got, errors.New("stream closed by the control plane")
}

func (r *Runner) pollOnce(ctx context.Context) (bool, error) {
	m, err := unary(ctx, r.c.token, r.c.poll, &runnerv1.PollRequest{ConnectRequest: r.hello()})
	if err != nil {
		return false, err
	}
	r.handle(ctx, *m)
	return true, nil
}

// pollInterval asks for work without waiting, handles what came, and sleeps the interval.
func (r *Runner) pollInterval(ctx context.Context) (bool, error) {
	for {
		m, err := unary(ctx, r.c.token, r.c.poll, &runnerv1.PollRequest{ConnectRequest: r.hello(), NoWait: true})
		if err != nil {
			return false, err
		}
		if m.Kind != runnerv1.KindNone {
			r.handle(ctx, *m)
			continue // drain what is queued before sleeping
		}
		select {
		case <-ctx.Done():
			return true, nil
		case <-time.After(r.opts.PollInterval):
		}
	}
}

func ptr[T any](v T) *T { return &v }

// handle acts on one message.
func (r *Runner) handle(ctx context.Context, m runnerv1.ServerMessage) {
	switch m.Kind {
	case runnerv1.KindOffer:
		r.mu.Lock()
		jb := r.jobs[m.BuildID]
		r.mu.Unlock()
		if jb != nil { // requeued while suspended here: take it up again
			go jb.reclaim(ctx)
			return
		}
		r.take(ctx, m.BuildID)
	case runnerv1.KindCancel:
		r.mu.Lock()
		jb := r.jobs[m.BuildID]
		r.mu.Unlock()
		if jb != nil {
			jb.stop(errCanceled)
		}
	case runnerv1.KindDrain:
		r.mu.Lock()
		r.draining = true
		r.mu.Unlock()
		r.log.Info("draining: taking no new builds", "reason", m.Reason)
	}
}

// heldOfferTTL is how long an offer that came while every slot was taken is kept to take up
// when one frees: the control plane's offers expire (and go to another runner) after 5 s.
const heldOfferTTL = 5 * time.Second

// take accepts the offered build and starts it when a slot is free, else holds the offer until
// one frees. The control plane counts an offer against the runner's free slots until it is
// accepted or expires, so an offer dropped here would keep a slot idle until then: its view
// of this runner's builds can lag (an accept through another replica), and a build frees its
// slot here when it sends Complete, which can cross an offer on its way.
func (r *Runner) take(ctx context.Context, buildID string) {
	r.takeMu.Lock()
	defer r.takeMu.Unlock()
	r.mu.Lock()
	if r.draining {
		r.mu.Unlock()
		return
	}
	if r.busy() >= r.opts.Concurrency {
		r.held[buildID] = time.Now()
		r.mu.Unlock()
		return
	}
	delete(r.held, buildID)
	r.mu.Unlock()
	job, err := unary(ctx, r.c.token, r.c.accept, &runnerv1.AcceptRequest{BuildID: buildID})
	if err != nil {
		r.log.Debug("offer not taken", "build", buildID, "err", err) // another runner was faster
		return
	}
	r.start(ctx, *job)
}

// slotFreed says a slot may have freed.
func (r *Runner) slotFreed() {
	select {
	case r.freed <- struct{}{}:
	default:
	}
}

// takeHeldOffers takes up held offers, oldest first, whenever a slot frees, until ctx ends.
func (r *Runner) takeHeldOffers(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.freed:
		}
		for {
			r.mu.Lock()
			id, oldest := "", time.Time{}
			for b, at := range r.held {
				switch {
				case time.Since(at) > heldOfferTTL:
					delete(r.held, b)
				case id == "" || at.Before(oldest):
					id, oldest = b, at
				}
			}
			full := r.draining || r.busy() >= r.opts.Concurrency
			r.mu.Unlock()
			if id == "" || full || ctx.Err() != nil {
				break
			}
			r.take(ctx, id)
		}
	}
}

// busy counts the builds that hold a slot: every job but those that sent their Complete. The
// control plane frees the slot when it takes Complete and may offer the next build before the
// answer is back here, or while the finished build's workspace is being removed; such an
// offer is taken. r.mu is held.
func (r *Runner) busy() int {
	n := 0
	for _, jb := range r.jobs {
		if !jb.isReporting() {
			n++
		}
	}
	return n
}

func (r *Runner) start(ctx context.Context, j runnerv1.Job) {
	jb := newJob(r, j)
	r.mu.Lock()
	r.jobs[j.BuildID] = jb
	r.mu.Unlock()
	r.wg.Add(1)
	r.log.Info("running build", "build", j.BuildID, "pipeline", j.Pipeline, "number", j.Number, "attempt", j.Attempt)
	go func() {
		defer r.wg.Done()
		jb.run(ctx)
		r.mu.Lock()
		delete(r.jobs, j.BuildID)
		r.mu.Unlock()
		r.slotFreed()
		r.log.Info("build finished", "build", j.BuildID)
	}()
}

// heartbeatEvery is how often leases are renewed: a third of the shortest time a held lease has
// left, within bounds, so leases of any length the control plane grants stay renewed. With
// only suspended builds (whose leases have run out) it is suspendedHeartbeat.
func (r *Runner) heartbeatEvery() time.Duration {
	every := runnerv1.LeaseTTL / 3
	now := time.Now()
	r.mu.Lock()
	active := 0
	for _, jb := range r.jobs {
		if jb.isSuspended() {
			continue
		}
		active++
		if left := jb.leaseExpiry().Sub(now) / 3; left < every {
			every = left
		}
	}
	if active == 0 && len(r.jobs) > 0 {
		every = suspendedHeartbeat
	}
	r.mu.Unlock()
	return max(every, 100*time.Millisecond)
}

// suspendedHeartbeat is how often a runner with only suspended builds asks after them.
const suspendedHeartbeat = time.Second

// heartbeats renews leases (see heartbeatEvery), stops builds whose lease is gone or cancelled,
// delivers approval decisions, and stops any build whose lease it could not renew in time
// (so a build the control plane requeues never runs twice at once). Suspended builds are in
// every heartbeat too: a renewal resumes them, a lost lease makes the runner ask for the build
// again.
func (r *Runner) heartbeats(ctx context.Context) {
	fence := time.NewTicker(100 * time.Millisecond)
	defer fence.Stop()
	next := time.Now().Add(r.heartbeatEvery())
	for {
		select {
		case <-ctx.Done():
			return
		case <-fence.C:
			r.fenceExpired()
			if time.Now().Before(next) {
				continue
			}
		}
		next = time.Now().Add(r.heartbeatEvery())
		r.mu.Lock()
		var leases []runnerv1.Lease
		jobs := map[string]*job{}
		sent := map[string]string{} // build → the lease this heartbeat is about
		for id, jb := range r.jobs {
			l, _, _ := jb.lease.get()
			leases = append(leases, l)
			jobs[id] = jb
			sent[id] = l.LeaseID
		}
		r.mu.Unlock()
		if len(leases) == 0 {
			continue
		}
		hctx, cancel := context.WithTimeout(ctx, runnerv1.LeaseTTL/3)
		resp, err := unary(hctx, r.c.token, r.c.heartbeat, &runnerv1.HeartbeatRequest{Leases: leases})
		cancel()
		if err != nil {
			r.log.Warn("heartbeat failed", "err", err)
			continue
		}
		lost := map[string]bool{}
		for _, id := range resp.Lost {
			lost[id] = true
			if jb := jobs[id]; jb != nil {
				jb.onLost(ctx, sent[id])
			}
		}
		for _, id := range resp.Cancel {
			if jb := jobs[id]; jb != nil {
				jb.stop(errCanceled)
			}
		}
		for id, decision := range resp.Approved {
			if jb := jobs[id]; jb != nil {
				select {
				case jb.approvals <- decision:
				default:
				}
			}
		}
		for id, jb := range jobs {
			if !lost[id] {
				jb.onRenewed(sent[id], resp.Expiry)
			}
		}
	}
}

// fenceExpired stops every running build whose lease was not renewed in time.
func (r *Runner) fenceExpired() {
	now := time.Now()
	r.mu.Lock()
	var late []*job
	for _, jb := range r.jobs {
		if at, ok := jb.fenceAt(); ok && now.After(at) {
			late = append(late, jb)
		}
	}
	r.mu.Unlock()
	for _, jb := range late {
		jb.stop(errLeaseLost)
	}
}
