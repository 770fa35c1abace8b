package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/version"
)

// Live (non-persistent) subjects.
const (
	subjectWake    = "freshet-live.dispatch.wake"
	subjectLogs    = "freshet-live.logs."   // + build ID
	subjectBuilds  = "freshet-live.builds." // + build ID: state changed
	subjectDrain   = "freshet-live.runners.drain"
	offerTTL       = 5 * time.Second // an offer not accepted by then goes to another runner
	reapInterval   = 500 * time.Millisecond
	leaseGrace     = 5 * time.Second // a lease is reaped this long after it expired
	dispatchTick   = time.Second
	queueScanLimit = 500
)

// Dispatcher hands queued builds to connected runners. Every control-plane replica runs one;
// each pushes offers only to the runners connected to it, and they wake each other over the
// bus. The database decides: a build is claimed by exactly one Accept.
type Dispatcher struct {
	svc  *Service
	db   Store
	log  *slog.Logger
	nc   *nats.Conn
	now  func() time.Time
	wake chan struct{}
	// done is closed when Run returns: long-lived handlers (runner streams, long-polls, log
	// follows) end then, so a shutting-down replica does not wait on them.
	done chan struct{}

	// leaseTTL is how long a lease lasts unrenewed (runnerv1.LeaseTTL; shorter in tests).
	leaseTTL atomic.Int64

	mu       sync.Mutex
	sessions map[*session]struct{}
	offers   map[string]time.Time // build → when its offer expires
	polls    map[string]*session  // runner ID → long-poll session
}

type session struct {
	runner   Runner
	info     runnerv1.ConnectRequest
	msgs     chan runnerv1.ServerMessage
	running  map[string]bool   // builds this runner holds a lease on
	offered  map[string]bool   // builds offered and not yet accepted
	canceled map[string]bool   // cancels already sent
	labels   map[string]string // the runner's labels: registered ∪ announced
	// missed counts offers that expired unaccepted since the runner last took a build: a
	// session whose runner is gone without the server knowing (a silent network) misses them,
	// so dispatch prefers others.
	missed int
	// claimed is when builds were accepted through this replica (running counts them until
	// the database's count does).
	claimed map[string]time.Time

	// Poll sessions only.
	poll     bool
	noWait   bool      // the runner polls on an interval, not a long poll
	polling  int       // polls in flight
	lastPoll time.Time // when the last poll began or ended
}

// away reports whether s is a long-poll session whose runner is not polling: it would not see
// an offer until it polls again (if it ever does).
func (s *session) away(now time.Time) bool {
	return s.poll && !s.noWait && s.polling == 0 && now.Sub(s.lastPoll) > longPollGap
}

// expired reports whether s is a poll session whose runner stopped polling.
func (s *session) expired(now time.Time) bool {
	if !s.poll || s.polling > 0 {
		return false
	}
	ttl := pollSessionTTL
	if !s.noWait {
		ttl = longPollSessionTTL
	}
	return now.Sub(s.lastPoll) > ttl
}

// NewDispatcher returns a dispatcher for svc's builds; nc carries live wake-ups and logs.
func NewDispatcher(svc *Service, nc *nats.Conn, log *slog.Logger) *Dispatcher {
	d := &Dispatcher{svc: svc, db: svc.db, log: log, nc: nc, now: time.Now, wake: make(chan struct{}, 1), done: make(chan struct{}),
		sessions: map[*session]struct{}{}, offers: map[string]time.Time{}, polls: map[string]*session{}}
	d.leaseTTL.Store(int64(runnerv1.LeaseTTL))
	svc.queued = d.Wake
	return d
}

// SetLeaseTTL changes how long leases last (tests use short ones to see expiry quickly).
func (d *Dispatcher) SetLeaseTTL(ttl time.Duration) { d.leaseTTL.Store(int64(ttl)) }

func (d *Dispatcher) ttl() time.Duration { return time.Duration(d.leaseTTL.Load()) }

func (d *Dispatcher) grace() time.Duration { return min(leaseGrace, d.ttl()/2) }

// Wake makes this replica's dispatcher, and the others', look at the queue now.
func (d *Dispatcher) Wake() {
	d.wakeLocal()
	if d.nc != nil {
		d.nc.Publish(subjectWake, nil)
	}
}

func (d *Dispatcher) wakeLocal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run dispatches and reaps expired leases until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	defer close(d.done)
	if d.nc != nil {
		sub, err := d.nc.Subscribe(subjectWake, func(*nats.Msg) { d.wakeLocal() })
		if err != nil {
			return fmt.Errorf("subscribe to dispatcher wake-ups: %w", err)
		}
		defer sub.Unsubscribe()
		dsub, err := d.nc.Subscribe(subjectDrain, func(m *nats.Msg) { d.drainLocal(string(m.Data)) })
		if err != nil {
			return fmt.Errorf("subscribe to drain requests: %w", err)
		}
		defer dsub.Unsubscribe()
	}
	tick := time.NewTicker(dispatchTick)
	defer tick.Stop()
	reap := time.NewTicker(reapInterval)
	defer reap.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-tick.C:
		case <-reap.C:
			if err := d.reap(ctx); err != nil && ctx.Err() == nil {
				d.log.Warn("reap expired leases", "err", err)
			}
			continue
		}
		if err := d.dispatch(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("dispatch builds", "err", err)
		}
	}
}

func labelsMatch(runner, want map[string]string) bool {
	for k, v := range want {
		if runner[k] != v {
			return false
		}
	}
	return true
}

// dispatch offers queued builds to free runners and pushes cancels of terminating builds.
func (d *Dispatcher) dispatch(ctx context.Context) error {
	d.expirePolls()
	d.mu.Lock()
	idle := len(d.sessions) == 0
	d.mu.Unlock()
	if idle {
		return nil
	}
	// What each runner runs, from the database: a build accepted or completed through another
	// replica counts too.
	snapshot := d.now()
	leases, err := d.db.RunnerLeases(ctx)
	if err != nil {
		return err
	}
	terminating, err := d.db.BuildsWithStatus(ctx, StatusTerminating, queueScanLimit)
	if err != nil {
		return err
	}
	d.mu.Lock()
	for s := range d.sessions {
		running := map[string]bool{}
		for _, id := range leases[s.runner.ID] {
			running[id] = true
		}
		for id, at := range s.claimed {
			if at.After(snapshot) { // accepted here after the query
				running[id] = true
			} else {
				delete(s.claimed, id)
			}
		}
		for id := range running {
			if !s.running[id] { // it took a build, through whichever replica: it is there
				s.missed = 0
			}
		}
		s.running = running
		for id := range s.canceled {
			if !running[id] {
				delete(s.canceled, id)
			}
		}
	}
	for _, b := range terminating {
		for s := range d.sessions {
			if s.running[b.ID] && !s.canceled[b.ID] {
				if d.send(s, runnerv1.ServerMessage{Kind: runnerv1.KindCancel, BuildID: b.ID, Reason: b.Reason}) {
					s.canceled[b.ID] = true
				}
			}
		}
	}
	d.mu.Unlock()
	queued, err := d.db.QueuedBuilds(ctx, queueScanLimit)
	if err != nil || len(queued) == 0 {
		return err
	}
	// An offered build that is no longer queued was taken (through any replica) or ended: its
	// offer no longer holds a slot.
	stillQueued := make(map[string]bool, len(queued))
	for _, b := range queued {
		stillQueued[b.ID] = true
	}
	counts, err := d.db.RunningCounts(ctx)
	if err != nil {
		return err
	}
	perPipeline, perBranch := map[string]int{}, map[string]int{}
	for _, c := range counts {
		perPipeline[c.PipelineID] += c.N
		perBranch[c.PipelineID+"\x00"+c.Branch] += c.N
	}
	configs := map[string]Config{}
	// Each account's free concurrent builds under its plan (billing), once per pass: a build
	// the claim would refuse is not offered. The claim decides; this only saves offers.
	free := map[string]int64{}
	if d.svc.limits != nil {
		for _, b := range queued {
			if _, ok := free[b.AccountID]; ok {
				continue
			}
			n, err := d.svc.limits.Free(ctx, b.AccountID, billing.ConcurrentBuilds)
			if err != nil {
				return err
			}
			free[b.AccountID] = n
		}
	}
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for id := range d.offers {
		if !stillQueued[id] {
			delete(d.offers, id)
			for s := range d.sessions {
				delete(s.offered, id)
			}
		}
	}
	for id, exp := range d.offers {
		if now.After(exp) {
			delete(d.offers, id)
			for s := range d.sessions {
				if s.offered[id] {
					s.missed++
					delete(s.offered, id)
				}
			}
		}
	}
	for _, b := range queued { // an offer not yet accepted holds one of the free slots
		if n, ok := free[b.AccountID]; ok && n != billing.Unlimited && d.offers[b.ID] != (time.Time{}) {
			free[b.AccountID] = n - 1
		}
	}
	for _, b := range queued {
		if _, pending := d.offers[b.ID]; pending {
			continue
		}
		cfg, ok := configs[b.PipelineID]
		if !ok {
			pl, err := d.db.GetPipeline(ctx, b.AccountID, b.PipelineID)
			if err != nil {
				continue // deleted meanwhile
			}
			if cfg, err = decodeConfig(pl); err != nil {
				d.failQueued(ctx, b, err)
				continue
			}
			configs[b.PipelineID] = cfg
		}
		branchKey := b.PipelineID + "\x00" + b.Branch
		if (cfg.Concurrency > 0 && perPipeline[b.PipelineID] >= cfg.Concurrency) ||
			(cfg.BranchConcurrency > 0 && perBranch[branchKey] >= cfg.BranchConcurrency) {
			continue
		}
		if n, ok := free[b.AccountID]; ok && n != billing.Unlimited && n <= 0 {
			continue
		}
		want, err := runnerLabels(b)
		if err != nil {
			d.failQueued(ctx, b, err)
			continue
		}
		// The runner that missed the fewest offers (a live one), then the one with the most
		// free slots; never a long-poll session whose runner is not polling.
		var best *session
		bestFree := 0
		for s := range d.sessions {
			if s.runner.AccountID != b.AccountID || !labelsMatch(s.labels, want) || s.away(now) {
				continue
			}
			free := s.info.Concurrency - len(s.running) - len(s.offered)
			if free > 0 && (best == nil || s.missed < best.missed || s.missed == best.missed && free > bestFree) {
				best, bestFree = s, free
			}
		}
		if best == nil {
			continue
		}
		if d.send(best, runnerv1.ServerMessage{Kind: runnerv1.KindOffer, BuildID: b.ID}) {
			best.offered[b.ID] = true
			d.offers[b.ID] = now.Add(offerTTL)
			// Count it as running for the limits until it is accepted or expires.
			perPipeline[b.PipelineID]++
			perBranch[branchKey]++
			if n, ok := free[b.AccountID]; ok && n != billing.Unlimited {
				free[b.AccountID] = n - 1
			}
		}
	}
	return nil
}

// runnerLabels returns the labels a runner needs to take b.
func runnerLabels(b store.Build) (map[string]string, error) {
	want, err := decodeMap(b.Labels)
	if err != nil {
		return nil, fmt.Errorf("build %s: decode runner labels: %w", b.ID, err)
	}
	return want, nil
}

// failQueued fails a queued build that cannot run (its stored data cannot be read, a context
// was deleted, a secret cannot be decrypted) instead of letting it bounce between runners.
func (d *Dispatcher) failQueued(ctx context.Context, b store.Build, reason error) {
	if _, err := d.svc.setBuildStatus(ctx, b.AccountID, b.ID, "", []string{StatusQueued}, StatusFailed, reason.Error(), d.now()); err != nil && ctx.Err() == nil {
		d.log.Warn("fail build", "build", b.ID, "err", err)
	}
	d.publishState(b.ID)
}

// send queues m for s without blocking; it reports false when s's queue is full.
func (d *Dispatcher) send(s *session, m runnerv1.ServerMessage) bool {
	select {
	case s.msgs <- m:
		return true
	default:
		return false
	}
}

// reap requeues or fails builds whose runner stopped renewing its lease.
func (d *Dispatcher) reap(ctx context.Context) error {
	expired, err := d.db.ExpiredLeases(ctx, d.now().Add(-d.grace()))
	if err != nil {
		return err
	}
	for _, b := range expired {
		d.endLease(ctx, b, "runner stopped renewing its lease")
	}
	if len(expired) > 0 {
		d.wakeLocal()
	}
	return nil
}

// endLease takes b from the runner that holds its lease, because of why: it requeues the build
// or, per the pipeline's onLeaseExpiry and maxAttempts (or when it was being terminated), ends
// it, and says so in its log. Nothing changes if the lease changed meanwhile.
func (d *Dispatcher) endLease(ctx context.Context, b store.Build, why string) {
	pl, err := d.db.GetPipeline(ctx, b.AccountID, b.PipelineID)
	if err != nil {
		return
	}
	reason := fmt.Sprintf("%s (attempt %d)", why, b.Attempt)
	cfg, err := decodeConfig(pl)
	if err != nil {
		reason += "; not requeued: " + err.Error()
	}
	requeue := err == nil && cfg.OnLeaseExpiry != "fail" && b.Attempt < cfg.maxAttempts() && b.Status != StatusTerminating
	if requeue {
		// The marker goes in with the requeue: the next attempt's log starts after it.
		marker := markerLine(fmt.Sprintf("[freshet] %s; the build was requeued", reason))
		ok, at, err := d.db.RequeueBuild(ctx, b.AccountID, b.ID, b.LeaseID, reason+"; requeued", marker)
		if err != nil || !ok {
			return
		}
		d.publishLog(b.ID, at, marker)
	} else {
		status := StatusFailed
		if b.Status == StatusTerminating {
			status = StatusTerminated
		}
		ok, err := d.svc.setBuildStatus(ctx, b.AccountID, b.ID, b.LeaseID, nil, status, reason, d.now())
		if err != nil || !ok {
			return
		}
		d.appendMarker(ctx, b, "[freshet] "+reason+"; the build "+status)
	}
	d.log.Info("lease ended", "build", b.ID, "why", why, "requeued", requeue)
	d.forget(b.ID)
	d.publishState(b.ID)
}

func (d *Dispatcher) appendMarker(ctx context.Context, b store.Build, line string) {
	cur, err := d.db.GetBuild(ctx, b.AccountID, b.ID)
	if err != nil {
		return
	}
	data := markerLine(line)
	if _, err := d.db.AppendLog(ctx, b.ID, cur.LogSize, data); err == nil {
		d.publishLog(b.ID, cur.LogSize, data)
	}
}

// markerLine is a line the control plane writes in a build's log, on a line of its own.
func markerLine(line string) []byte { return []byte("\n" + line + "\n") }

// forget drops a build from every local session.
func (d *Dispatcher) forget(buildID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.offers, buildID)
	for s := range d.sessions {
		delete(s.running, buildID)
		delete(s.offered, buildID)
		delete(s.canceled, buildID)
		delete(s.claimed, buildID)
	}
}

// LiveLog is a log chunk as published for live followers.
type LiveLog struct {
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
}

func (d *Dispatcher) publishLog(buildID string, offset int64, data []byte) {
	if d.nc == nil {
		return
	}
	b, _ := json.Marshal(LiveLog{Offset: offset, Data: data})
	d.nc.Publish(subjectLogs+buildID, b)
}

func (d *Dispatcher) publishState(buildID string) {
	if d.nc != nil {
		d.nc.Publish(subjectBuilds+buildID, nil)
	}
}

// register adds a session for runner r.
func (d *Dispatcher) register(ctx context.Context, r Runner, info runnerv1.ConnectRequest) (*session, error) {
	if info.Protocol < runnerv1.MinProtocolVersion || info.Protocol > runnerv1.ProtocolVersion {
		return nil, errdefs.Invalid("protocol", strconv.Itoa(info.Protocol),
			fmt.Sprintf("is not supported: this server speaks runner protocol %d to %d; upgrade the runner", runnerv1.MinProtocolVersion, runnerv1.ProtocolVersion))
	}
	// The version skew policy: a runner lagging more than one minor version (or newer than the
	// control plane) is refused. What it announced is recorded, so the Runners page shows why.
	if sk := version.CheckSkew("runner", info.Version, version.Current()); sk.Status == version.SkewUnsupported {
		infoJSON, _ := json.Marshal(map[string]any{"version": info.Version, "hostname": info.Hostname, "protocol": info.Protocol})
		if err := d.db.TouchRunner(ctx, r.ID, string(infoJSON), d.now()); err != nil {
			return nil, err
		}
		return nil, errdefs.Invalid("version", info.Version, sk.Message)
	}
	if info.Concurrency < 1 {
		info.Concurrency = 1
	}
	labels := map[string]string{} // registered ∪ announced
	maps.Copy(labels, r.Labels)
	maps.Copy(labels, info.Labels)
	s := &session{runner: r, info: info, msgs: make(chan runnerv1.ServerMessage, 256), running: map[string]bool{},
		offered: map[string]bool{}, canceled: map[string]bool{}, claimed: map[string]time.Time{}, labels: labels}
	// After a reconnect the runner says what it still runs: those leases stay with it. Any other
	// build it holds a lease on it does not run (it restarted, or never heard that Accept
	// succeeded): give those back now rather than when their leases expire.
	leased, err := d.db.LeasedBuilds(ctx, r.AccountID, r.ID)
	if err != nil {
		return nil, err
	}
	released := false
	for _, b := range leased {
		if slices.Contains(info.Running, b.ID) {
			s.running[b.ID] = true
			continue
		}
		d.endLease(ctx, b, "runner "+r.Name+" connected again without it")
		released = true
	}
	if released {
		d.Wake()
	}
	infoJSON, _ := json.Marshal(map[string]any{"version": info.Version, "hostname": info.Hostname, "executors": info.Executors,
		"concurrency": info.Concurrency, "protocol": info.Protocol, "labels": info.Labels})
	if err := d.db.TouchRunner(ctx, r.ID, string(infoJSON), d.now()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.sessions[s] = struct{}{}
	d.mu.Unlock()
	d.wakeLocal()
	return s, nil
}

func (d *Dispatcher) unregister(s *session) {
	d.mu.Lock()
	delete(d.sessions, s)
	for id := range s.offered {
		delete(d.offers, id)
	}
	d.mu.Unlock()
	d.wakeLocal()
}

// Drain tells runner id, on whichever replica it is connected to, to take no new builds; it
// finishes the ones it runs.
func (d *Dispatcher) Drain(runnerID string) {
	if d.nc != nil {
		d.nc.Publish(subjectDrain, []byte(runnerID))
		return
	}
	d.drainLocal(runnerID)
}

func (d *Dispatcher) drainLocal(runnerID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for s := range d.sessions {
		if s.runner.ID == runnerID {
			d.send(s, runnerv1.ServerMessage{Kind: runnerv1.KindDrain, Reason: "drained by an admin"})
			s.info.Concurrency = 0 // offer it nothing more
		}
	}
}

// Connected lists the IDs of runners connected to this replica.
func (d *Dispatcher) Connected() map[string]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]bool{}
	now := d.now()
	for s := range d.sessions {
		if !s.away(now) {
			out[s.runner.ID] = true
		}
	}
	return out
}

// accept claims build id for runner r under a new lease and returns the job.
func (d *Dispatcher) accept(ctx context.Context, r Runner, id string) (runnerv1.Job, error) {
	b, err := d.db.GetBuild(ctx, r.AccountID, id) // a runner sees only its own account's builds
	if err != nil {
		return runnerv1.Job{}, err
	}
	if b.Status != StatusQueued {
		return runnerv1.Job{}, fmt.Errorf("build %s is %s, not queued: %w", id, b.Status, errdefs.ErrConflict)
	}
	want, err := runnerLabels(b)
	if err != nil {
		d.failQueued(ctx, b, err)
		return runnerv1.Job{}, err
	}
	labels := map[string]string{}
	maps.Copy(labels, r.Labels)
	d.mu.Lock()
	for s := range d.sessions {
		if s.runner.ID == r.ID {
			maps.Copy(labels, s.labels)
		}
	}
	d.mu.Unlock()
	if !labelsMatch(labels, want) {
		return runnerv1.Job{}, fmt.Errorf("build %s needs runner labels %v: %w", id, want, errdefs.ErrForbidden)
	}
	job, err := d.svc.job(ctx, b)
	if err != nil {
		d.failQueued(ctx, b, err)
		return runnerv1.Job{}, err
	}
	now := d.now()
	leaseID := store.NewID(store.PrefixLease)
	expires := now.Add(d.ttl())
	ok, err := d.svc.claimBuild(ctx, b, r.ID, leaseID, expires, now)
	if err != nil {
		return runnerv1.Job{}, err
	}
	if !ok {
		return runnerv1.Job{}, fmt.Errorf("build %s was taken by another runner: %w", id, errdefs.ErrConflict)
	}
	job.LeaseID, job.LeaseExpiry, job.Attempt = leaseID, expires, b.Attempt+1
	d.mu.Lock()
	delete(d.offers, b.ID)
	for s := range d.sessions {
		delete(s.offered, b.ID)
		if s.runner.ID == r.ID {
			s.running[b.ID] = true
			s.claimed[b.ID] = d.now()
			s.missed = 0
		}
	}
	d.mu.Unlock()
	d.publishState(b.ID)
	return job, nil
}

// heartbeat renews r's leases and says which builds to stop, cancel or continue after approval.
func (d *Dispatcher) heartbeat(ctx context.Context, r Runner, leases []runnerv1.Lease) (runnerv1.HeartbeatResponse, error) {
	expires := d.now().Add(d.ttl())
	resp := runnerv1.HeartbeatResponse{Expiry: expires}
	for _, l := range leases {
		status, ok, err := d.db.RenewLease(ctx, r.AccountID, l.BuildID, l.LeaseID, expires)
		if err != nil {
			return resp, err
		}
		if !ok {
			resp.Lost = append(resp.Lost, l.BuildID)
			continue
		}
		switch status {
		case StatusTerminating:
			resp.Cancel = append(resp.Cancel, l.BuildID)
		case StatusRunning:
			steps, err := d.db.ListSteps(ctx, l.BuildID)
			if err != nil {
				return resp, err
			}
			for _, st := range steps {
				if st.Status == StatusPendingApproval && (strings.HasPrefix(st.Message, "approved") || strings.HasPrefix(st.Message, "denied")) {
					if resp.Approved == nil {
						resp.Approved = map[string]string{}
					}
					resp.Approved[l.BuildID], _, _ = strings.Cut(st.Message, " ")
				}
			}
		}
	}
	if err := d.db.TouchRunner(ctx, r.ID, "", d.now()); err != nil {
		return resp, err
	}
	return resp, nil
}

// holds checks that r holds lease on build and returns the build.
func (d *Dispatcher) holds(ctx context.Context, r Runner, l runnerv1.Lease) (store.Build, error) {
	b, err := d.db.GetBuild(ctx, r.AccountID, l.BuildID)
	if err != nil {
		return b, err
	}
	if b.RunnerID != r.ID || b.LeaseID != l.LeaseID || !Active(b.Status) {
		return b, fmt.Errorf("lease %s on build %s is not held: %w", l.LeaseID, l.BuildID, errLeaseLost)
	}
	return b, nil
}

var errLeaseLost = fmt.Errorf("lease lost: %w", errdefs.ErrConflict)

func (d *Dispatcher) updateStep(ctx context.Context, r Runner, u runnerv1.StepUpdate) error {
	b, err := d.holds(ctx, r, u.Lease)
	if err != nil {
		return err
	}
	if err := checkStepUpdate(&u); err != nil {
		return err
	}
	st := u.Step
	err = d.db.UpsertStep(ctx, store.BuildStep{BuildID: b.ID, Name: st.Name, Position: st.Position, Stage: st.Stage, Status: st.Status,
		ExitCode: st.ExitCode, Attempts: st.Attempts, Message: st.Message, StartedAt: st.StartedAt, FinishedAt: st.FinishedAt})
	if err != nil {
		return err
	}
	if len(u.Images) > 0 {
		if err := d.svc.recordImages(ctx, r, u.Lease, b, st.Name, u.Images); err != nil {
			return err
		}
	}
	switch st.Status {
	case StatusPendingApproval:
		_, err = d.db.SetBuildStatus(ctx, r.AccountID, b.ID, u.LeaseID, []string{StatusRunning}, StatusPendingApproval, "waiting for approval of step "+st.Name, time.Time{})
	}
	d.publishState(b.ID)
	return err
}

func (d *Dispatcher) appendLog(ctx context.Context, r Runner, c runnerv1.LogChunk) (int64, error) {
	b, err := d.holds(ctx, r, c.Lease)
	if err != nil {
		return 0, err
	}
	if c.Offset < 0 {
		return b.LogSize, errdefs.Invalid("offset", strconv.FormatInt(c.Offset, 10), "is negative: give the byte offset where the chunk starts in the build's log")
	}
	if c.Offset+int64(len(c.Data)) > MaxLogBytes+int64(len(TruncationMarker)) {
		return b.LogSize, fmt.Errorf("build log is over %d bytes: %w", MaxLogBytes, errdefs.ErrTooLarge)
	}
	size, err := d.db.AppendLog(ctx, b.ID, c.Offset, c.Data)
	if errors.Is(err, store.ErrLogMismatch) {
		d.log.Warn("a runner's log chunk differs from the stored log", "build", b.ID, "runner", r.ID, "offset", c.Offset, "bytes", len(c.Data), "err", err)
	}
	if err != nil {
		return size, err
	}
	if size == c.Offset+int64(len(c.Data)) && size > b.LogSize {
		d.publishLog(b.ID, c.Offset, c.Data)
	}
	return size, nil
}

func (d *Dispatcher) complete(ctx context.Context, r Runner, c runnerv1.CompleteRequest) error {
	b, err := d.holds(ctx, r, c.Lease)
	if err != nil {
		return err
	}
	status := c.Status
	switch status {
	case StatusSuccess, StatusFailed, StatusTerminated:
	default:
		return errdefs.Invalid("status", status, "is not success, failed or terminated")
	}
	reason := c.Reason
	if b.Status == StatusTerminating {
		status, reason = StatusTerminated, "" // keep the reason recorded when termination was asked for
	}
	if _, err := d.svc.setBuildStatus(ctx, r.AccountID, b.ID, c.LeaseID, nil, status, reason, d.now()); err != nil {
		return err
	}
	d.forget(b.ID)
	d.publishState(b.ID)
	// Wake every replica (the runner has a slot more): the replica holding the runner's stream
	// may not be this one. The runner counts the slot free from when it sent Complete, and
	// takes up an offer that reached it while its slots were all taken once one frees, so an
	// offer now is taken at once.
	d.Wake()
	return nil
}

// Poll sessions. A long-polling runner has a poll in flight but for the moment between two
// polls: one with none for longPollGap is away (offered nothing), and after longPollSessionTTL
// it is gone. A runner that polls on an interval (NoWait) keeps its session pollSessionTTL
// after its last poll. The dispatcher drops expired sessions itself, every dispatchTick.
const (
	longPollGap        = 3 * time.Second
	longPollSessionTTL = 10 * time.Second
	pollSessionTTL     = 2 * runnerv1.PollWait
)

// pollSession returns runner r's poll session, creating it on the first poll, and counts a poll
// in flight on it until pollDone.
func (d *Dispatcher) pollSession(ctx context.Context, r Runner, req runnerv1.PollRequest) (*session, error) {
	d.expirePolls()
	now := d.now()
	d.mu.Lock()
	s, ok := d.polls[r.ID]
	if ok {
		s.polling++
		s.lastPoll, s.noWait = now, req.NoWait
	}
	d.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := d.register(ctx, r, req.ConnectRequest)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if old := d.polls[r.ID]; old != nil { // two first polls at once: keep the other's session
		old.polling++
		old.lastPoll = now
		d.mu.Unlock()
		d.unregister(s)
		return old, nil
	}
	s.poll, s.noWait, s.polling, s.lastPoll = true, req.NoWait, 1, now
	d.polls[r.ID] = s
	d.mu.Unlock()
	return s, nil
}

// pollDone ends a poll that pollSession counted. A poll the runner abandoned (it went away in
// the middle: it died, or its network did) leaves the session away at once.
func (d *Dispatcher) pollDone(s *session, abandoned bool) {
	d.mu.Lock()
	s.polling--
	s.lastPoll = d.now()
	if abandoned {
		s.lastPoll = s.lastPoll.Add(-longPollGap)
	}
	d.mu.Unlock()
}

// expirePolls drops the poll sessions whose runner stopped polling.
func (d *Dispatcher) expirePolls() {
	now := d.now()
	d.mu.Lock()
	var stale []*session
	for id, s := range d.polls {
		if s.expired(now) {
			stale = append(stale, s)
			delete(d.polls, id)
		}
	}
	d.mu.Unlock()
	for _, s := range stale {
		d.log.Debug("poll session expired", "runner", s.runner.Name, "last_poll", s.lastPoll)
		d.unregister(s)
	}
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

// Runner step reports are stored as the runner sends them, after checkStepUpdate.
const (
	maxStepFieldBytes   = 256      // a step's name, stage and status
	maxStepMessageBytes = 16 << 10 // a step's message, cut beyond
	maxStepCount        = 1 << 20  // position and attempts
)

// stepStatuses are the statuses a runner may report for a step.
var stepStatuses = []string{"pending", StatusRunning, StatusSuccess, StatusFailed, "skipped", StatusTerminated, StatusPendingApproval}

// checkStepUpdate checks a runner's step report before it is stored, naming the field at fault,
// and makes its message storable: invalid UTF-8 and NULs (which PostgreSQL refuses) become
// U+FFFD and a message longer than maxStepMessageBytes is cut.
func checkStepUpdate(u *runnerv1.StepUpdate) error {
	st := &u.Step
	for _, f := range []struct{ name, v string }{{"step.name", st.Name}, {"step.stage", st.Stage}, {"step.status", st.Status}} {
		switch {
		case len(f.v) > maxStepFieldBytes:
			return errdefs.Invalid(f.name, f.v, fmt.Sprintf("is longer than %d bytes", maxStepFieldBytes))
		case !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0):
			return errdefs.Invalid(f.name, strings.ToValidUTF8(f.v, "\uFFFD"), "holds a NUL or invalid UTF-8")
		}
	}
	switch {
	case st.Name == "":
		return errdefs.Invalid("step.name", "", "is required")
	case !slices.Contains(stepStatuses, st.Status):
		return errdefs.Invalid("step.status", st.Status, "is not one of "+strings.Join(stepStatuses, ", "))
	case st.Position < 0 || st.Position > maxStepCount:
		return errdefs.Invalid("step.position", strconv.Itoa(st.Position), fmt.Sprintf("is not from 0 to %d", maxStepCount))
	case st.Attempts < 0 || st.Attempts > maxStepCount:
		return errdefs.Invalid("step.attempts", strconv.Itoa(st.Attempts), fmt.Sprintf("is not from 0 to %d", maxStepCount))
	case st.ExitCode < math.MinInt32 || st.ExitCode > math.MaxInt32:
		return errdefs.Invalid("step.exitCode", strconv.Itoa(st.ExitCode), "is not a 32-bit exit code")
	}
	msg := strings.ReplaceAll(strings.ToValidUTF8(st.Message, "\uFFFD"), "\x00", "\uFFFD")
	if len(msg) > maxStepMessageBytes {
		msg = strings.ToValidUTF8(msg[:maxStepMessageBytes], "")
	}
	st.Message = msg
	return checkImages(u.Images)
}
