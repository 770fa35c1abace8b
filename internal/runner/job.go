package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/mask"
)

// maxSuspend bounds how long a runner keeps a suspended build (one whose lease it could not
// renew) waiting for the control plane to come back.
const maxSuspend = 30 * time.Minute

// job is one build this runner holds (or held, while suspended) a lease on.
//
// A job whose lease cannot be renewed in time stops its running step — the control plane may
// give the build to another runner — but it does not forget what its finished steps did: their
// results, exports, logs and the workspace stay, and the job is suspended. When the control
// plane renews the lease after all, or the runner takes the requeued build up again (it asks
// for it as soon as it hears the lease is gone), the job resumes: it reports what was not yet
// reported, ships the log it kept, and runs only the steps that had not finished.
type job struct {
	r     *Runner
	lease *leaseBox
	log   *slog.Logger
	rep   *reporter
	up    *uploader

	approvals chan string
	done      chan struct{}
	resume    chan runnerv1.Job // the job again: the same lease renewed, or a new one
	abandon   chan struct{}     // closed when the build is no longer this runner's to resume
	abandoned sync.Once
	reporting atomic.Bool // its steps are over and its Complete sent: it holds no slot

	mu         sync.Mutex
	j          runnerv1.Job
	cancel     context.CancelCauseFunc // the current attempt's
	stopped    bool                    // the current attempt was stopped
	accepted   time.Time               // when the lease was granted
	expiry     time.Time               // lease expiry as last renewed
	suspended  bool
	reclaiming bool
	completed  bool                          // every step has run: only reporting is left
	finished   map[string]runnerv1.StepState // final states of the steps that finished
	images     map[string][]runnerv1.Image   // what the finished steps pushed
}

func newJob(r *Runner, j runnerv1.Job) *job {
	lease := newLeaseBox(runnerv1.Lease{BuildID: j.BuildID, LeaseID: j.LeaseID})
	jb := &job{r: r, j: j, lease: lease, log: r.log, approvals: make(chan string, 1), done: make(chan struct{}),
		resume: make(chan runnerv1.Job, 1), abandon: make(chan struct{}), accepted: time.Now(), expiry: j.LeaseExpiry,
		finished: map[string]runnerv1.StepState{}, images: map[string][]runnerv1.Image{}}
	jb.rep = newReporter(r.c, lease, r.log)
	jb.up = newUploader(r.c, lease, j.LogOffset, r.log)
	return jb
}

// Reasons a job stops early.
var (
	errCanceled  = errors.New("terminated by a user")
	errLeaseLost = errors.New("lease lost or not renewed in time: the control plane may give the build to another runner")
	errShutdown  = errors.New("runner shutting down")
)

func (jb *job) setExpiry(t time.Time) {
	jb.mu.Lock()
	jb.expiry = t
	jb.mu.Unlock()
}

func (jb *job) leaseExpiry() time.Time {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return jb.expiry
}

// fenceAt is when the job must stop if its lease was not renewed: a margin before it expires.
func (jb *job) fenceAt() (time.Time, bool) {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	if jb.suspended {
		return time.Time{}, false
	}
	margin := min(fenceMargin, jb.j.LeaseExpiry.Sub(jb.accepted)/10)
	return jb.expiry.Add(-margin), true
}

func (jb *job) isSuspended() bool {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return jb.suspended
}

// stop ends the current attempt's work with cause. A user's cancel of a build whose steps
// have all run changes nothing (the result is reported as it is).
func (jb *job) stop(cause error) {
	jb.mu.Lock()
	if jb.stopped || jb.cancel == nil || (jb.completed && errors.Is(cause, errCanceled)) {
		jb.mu.Unlock()
		return
	}
	jb.stopped = true
	cancel := jb.cancel
	jb.mu.Unlock()
	jb.log.Info("stopping build", "build", jb.j.BuildID, "cause", cause)
	cancel(cause)
}

// current reports whether leaseID is the job's lease now (a heartbeat's answer may be about
// the lease a job had before it was taken up again under a new one).
func (jb *job) current(leaseID string) bool {
	l, _, _ := jb.lease.get()
	return l.LeaseID == leaseID
}

// onRenewed records a renewal of leaseID; a suspended job resumes under it.
func (jb *job) onRenewed(leaseID string, expiry time.Time) {
	if !jb.current(leaseID) {
		return
	}
	jb.setExpiry(expiry)
	jb.mu.Lock()
	suspended, j := jb.suspended, jb.j
	jb.mu.Unlock()
	if suspended {
		j.LeaseExpiry = expiry
		select {
		case jb.resume <- j:
		default:
		}
	}
}

// onLost acts on the control plane's word that leaseID is gone: a running job stops; a
// suspended one asks for the build again.
func (jb *job) onLost(ctx context.Context, leaseID string) {
	if !jb.current(leaseID) {
		return
	}
	if jb.isSuspended() {
		go jb.reclaim(ctx)
		return
	}
	jb.stop(errLeaseLost)
}

// reclaim asks for a suspended job's build again (requeued when its lease expired). Taken, the
// job resumes under the new lease; taken by another runner, or ended, it is abandoned.
func (jb *job) reclaim(ctx context.Context) {
	jb.mu.Lock()
	if jb.reclaiming || !jb.suspended {
		jb.mu.Unlock()
		return
	}
	jb.reclaiming = true
	id := jb.j.BuildID
	jb.mu.Unlock()
	defer func() {
		jb.mu.Lock()
		jb.reclaiming = false
		jb.mu.Unlock()
	}()
	j, err := unary(ctx, jb.r.c.token, jb.r.c.accept, &runnerv1.AcceptRequest{BuildID: id})
	if err == nil {
		select {
		case jb.resume <- *j:
		default:
		}
		return
	}
	switch connect.CodeOf(err) {
	case connect.CodeFailedPrecondition, connect.CodeNotFound, connect.CodePermissionDenied:
		jb.log.Info("a suspended build is no longer this runner's: dropping what it kept", "build", id, "err", err)
		jb.abandoned.Do(func() { close(jb.abandon) })
	default:
		jb.log.Debug("take a suspended build up again; retrying at the next heartbeat", "build", id, "err", err)
	}
}

// record keeps a step state for the control plane and, when final, for a later resume. A step
// terminated because the lease was lost or the runner stops is not final: it runs again.
func (jb *job) record(ctx context.Context, s runnerv1.StepState, images []runnerv1.Image) {
	cause := context.Cause(ctx)
	if s.Status == stTerminated && (errors.Is(cause, errLeaseLost) || errors.Is(cause, errShutdown) || errors.Is(cause, context.Canceled)) {
		return
	}
	switch s.Status {
	case stSuccess, stFailed, stSkipped:
		jb.mu.Lock()
		jb.finished[s.Name] = s
		if len(images) > 0 {
			jb.images[s.Name] = images
		}
		jb.mu.Unlock()
	}
	jb.rep.push(s, images...)
}

func (jb *job) finishedImages() map[string][]runnerv1.Image {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return maps.Clone(jb.images)
}

func (jb *job) finishedStates() map[string]runnerv1.StepState {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return maps.Clone(jb.finished)
}

// run executes the build, reports it, and completes it; see job for what happens when the
// lease is in doubt.
func (jb *job) run(parent context.Context) {
	defer close(jb.done)
	shipCtx, stopShip := context.WithCancel(context.WithoutCancel(parent))
	defer stopShip()
	go jb.rep.run(shipCtx)
	go jb.up.run(shipCtx)
	masked := mask.New(jb.up, jb.j.Secrets)
	defer masked.Close()
	out := &syncWriter{w: &lineLimiter{w: masked}}

	types, specErr := spec.ParseStepTypeSet(jb.j.StepTypes)
	var p *spec.Pipeline
	if specErr == nil {
		p, specErr = spec.ParseWith([]byte(jb.j.SpecYAML), spec.Options{StepTypes: types})
	}
	var ws executor.Workspace
	var wsErr error
	if specErr == nil {
		if ws, wsErr = jb.r.exec.Prepare(parent, executor.Build{ID: jb.j.BuildID}); wsErr == nil {
			defer func() {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(parent), time.Minute)
				defer cancel()
				if err := jb.r.exec.Cleanup(cctx, ws); err != nil {
					jb.log.Warn("clean up workspace", "build", jb.j.BuildID, "err", err)
				}
			}()
		}
	}

	var status, reason string
	var vars map[string]string // the build's variables as the finished steps left them
	for {
		ctx, cancel := jb.attempt(parent)
		jb.mu.Lock()
		completed, j := jb.completed, jb.j
		jb.mu.Unlock()
		if !completed {
			switch {
			case specErr != nil:
				fmt.Fprintf(out, "[freshet] the pipeline spec does not compile: %v\n", specErr)
				status, reason = stFailed, "spec: "+specErr.Error()
			case wsErr != nil:
				fmt.Fprintf(out, "[freshet] prepare the workspace: %v\n", wsErr)
				status, reason = stFailed, "workspace: "+wsErr.Error()
			default:
				fmt.Fprintf(out, "\x1b[36m[freshet]\x1b[0m build %s #%d (attempt %d) on runner %s, executor %s\n",
					j.Pipeline, j.Number, j.Attempt, jb.r.opts.Name, jb.r.exec.Name())
				stepsCtx := ctx
				var e *engine
				e = newEngine(j, p, jb.r.exec, ws, out, func(s runnerv1.StepState) { jb.record(stepsCtx, s, e.imagesOf(s)) }, jb.approvals)
				e.flush = func() { masked.Flush() }
				e.done = jb.finishedStates()
				e.images = jb.finishedImages()
				if vars != nil {
					e.vars = maps.Clone(vars)
					e.vars[executor.VolumePathEnv] = ws.Path
				}
				status, reason = e.run(ctx)
				vars = e.variables()
			}
			if cause := context.Cause(ctx); cause == nil || errors.Is(cause, errCanceled) {
				if cause != nil {
					status, reason = stTerminated, "terminated on request"
				}
				jb.mu.Lock()
				jb.completed = true
				jb.mu.Unlock()
				// Reporting gets a context of its own: a user's cancel ended the steps, not it.
				cancel(nil)
				ctx, cancel = jb.attempt(parent)
			}
		}
		masked.Flush()
		if jb.isCompleted() && jb.complete(ctx, status, reason) {
			cancel(nil)
			return
		}
		cause := context.Cause(ctx)
		cancel(nil)
		if parent.Err() != nil || errors.Is(cause, errShutdown) {
			jb.shutdownFlush()
			return // the control plane requeues (or fails) the build when its lease expires
		}
		next, ok := jb.suspend(parent)
		if !ok {
			return
		}
		jb.resumeWith(next, out)
	}
}

// attempt starts a phase of the job's work (running steps, or reporting) that stop can end.
func (jb *job) attempt(parent context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	jb.mu.Lock()
	jb.cancel, jb.stopped = cancel, false
	jb.mu.Unlock()
	return ctx, cancel
}

// isReporting reports whether the job sent (or is sending) its Complete: its steps are over
// and it no longer holds one of the runner's slots.
func (jb *job) isReporting() bool { return jb.reporting.Load() }

func (jb *job) isCompleted() bool {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return jb.completed
}

// complete waits until every step state and log line was delivered, then reports the build's
// result. It returns false when ctx ended first (the lease was lost, the runner stops).
func (jb *job) complete(ctx context.Context, status, reason string) bool {
	for jb.rep.pending() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	if jb.up.drain(ctx) != nil {
		return false
	}
	backoff := deliverFirstBackoff
	for {
		lease, held, changed := jb.lease.get()
		if held {
			if !jb.reporting.Swap(true) { // from here the control plane may free the slot
				jb.r.slotFreed()
			}
			_, err := unary(ctx, jb.r.c.token, jb.r.c.complete, &runnerv1.CompleteRequest{Lease: lease, Status: status, Reason: reason})
			if err == nil {
				return true
			}
			if connect.CodeOf(err) == connect.CodeInvalidArgument {
				jb.log.Warn("complete build refused", "build", lease.BuildID, "err", err)
				return true
			}
			if ctx.Err() == nil {
				jb.log.Debug("complete build; retrying", "build", lease.BuildID, "err", err, "in", backoff)
			}
		}
		backoff = deliverWait(ctx, backoff, changed)
		if ctx.Err() != nil {
			return false
		}
	}
}

// shutdownFlush ships what the log holds until the runner's shutdown deadline.
func (jb *job) shutdownFlush() {
	ctx, cancel := context.WithDeadline(context.Background(), jb.r.shutdownDeadline())
	defer cancel()
	if err := jb.up.drain(ctx); err != nil {
		jb.log.Warn("runner shutting down: build log not fully shipped", "build", jb.j.BuildID, "bytes", jb.up.pending())
	}
}

// suspend waits, with what the finished steps did kept, until the build can resume, or is no
// longer this runner's, or the runner stops.
func (jb *job) suspend(parent context.Context) (runnerv1.Job, bool) {
	lease, _, _ := jb.lease.get()
	jb.lease.set(lease, false) // deliveries wait
	select {
	case <-jb.resume: // stale: from before this suspension
	default:
	}
	jb.mu.Lock()
	jb.suspended = true
	kept := len(jb.finished)
	jb.mu.Unlock()
	jb.log.Warn("build suspended: its lease could not be renewed; keeping what its finished steps did until the control plane is back",
		"build", lease.BuildID, "finished_steps", kept)
	t := time.NewTimer(maxSuspend)
	defer t.Stop()
	select {
	case next := <-jb.resume:
		return next, true
	case <-jb.abandon:
	case <-parent.Done():
	case <-t.C:
		jb.log.Warn("suspended build dropped: the control plane did not come back in time", "build", lease.BuildID, "after", maxSuspend)
	}
	return runnerv1.Job{}, false
}

// resumeWith continues a suspended job as next says: under the same lease, renewed, or under a
// new one (the build was requeued and taken again: its log continues at the control plane's
// end, and every finished step is reported again).
func (jb *job) resumeWith(next runnerv1.Job, out io.Writer) {
	old, _, _ := jb.lease.get()
	jb.mu.Lock()
	same := next.LeaseID == old.LeaseID
	if !same {
		jb.j, jb.accepted = next, time.Now()
	}
	jb.expiry, jb.suspended = next.LeaseExpiry, false
	completed := jb.completed
	var replay []runnerv1.StepState
	for _, s := range jb.finished {
		replay = append(replay, s)
	}
	images := maps.Clone(jb.images)
	jb.mu.Unlock()
	if !same {
		jb.rep.reset()
		jb.up.rebase(next.LogOffset)
		if completed { // nothing runs again: report every step as it ended
			sortStates(replay)
			for _, s := range replay {
				jb.rep.push(s, images[s.Name]...)
			}
		}
	}
	jb.lease.set(runnerv1.Lease{BuildID: next.BuildID, LeaseID: next.LeaseID}, true)
	fmt.Fprintf(out, "\x1b[36m[freshet]\x1b[0m the control plane has the build again (attempt %d): %d finished steps kept, not run again\n", next.Attempt, len(replay))
	jb.log.Info("build resumed", "build", next.BuildID, "same_lease", same, "finished_steps", len(replay))
}

// syncWriter serialises writes from parallel steps into one log.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
