package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/mask"
)

// job is one build this runner holds a lease on.
type job struct {
	r     *Runner
	j     runnerv1.Job
	lease runnerv1.Lease
	log   *slog.Logger

	cancel    context.CancelCauseFunc
	approvals chan string
	done      chan struct{}

	accepted time.Time // when the lease was granted

	mu      sync.Mutex
	expiry  time.Time // lease expiry as last renewed
	stopped bool
}

// Reasons a job stops early.
var (
	errCanceled  = errors.New("terminated by a user")
	errLeaseLost = errors.New("lease lost: the control plane gave the build up")
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

// stop ends the job's work with cause.
func (jb *job) stop(cause error) {
	jb.mu.Lock()
	already := jb.stopped
	jb.stopped = true
	jb.mu.Unlock()
	if !already {
		jb.log.Info("stopping build", "build", jb.j.BuildID, "cause", cause)
		jb.cancel(cause)
	}
}

// run executes the build and reports it complete (unless the lease was lost).
func (jb *job) run(parent context.Context) {
	defer close(jb.done)
	ctx, cancel := context.WithCancelCause(parent)
	jb.cancel = cancel
	defer cancel(nil)

	// Shipping outlives the build's context so the last lines still go out after a cancel.
	shipCtx, stopShip := context.WithCancel(context.WithoutCancel(ctx))
	defer stopShip()
	up := newUploader(jb.r.c, jb.lease, jb.j.LogOffset)
	go up.run(shipCtx)
	masked := mask.New(up, jb.j.Secrets)
	out := &syncWriter{w: &lineLimiter{w: masked}}

	status, reason := jb.execute(ctx, out, func() { masked.Flush() })

	masked.Close()
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer ccancel()
	if err := up.close(cctx); err != nil {
		jb.log.Warn("ship build log", "build", jb.j.BuildID, "err", err)
	}
	if parent.Err() != nil || errors.Is(context.Cause(ctx), errLeaseLost) || errors.Is(context.Cause(ctx), errShutdown) {
		return // the runner is going away or lost the lease: another runner may take the build over, so report nothing
	}
	if errors.Is(context.Cause(ctx), errCanceled) {
		status, reason = stTerminated, "terminated on request"
	}
	jb.r.retry(cctx, "complete build", func(ctx context.Context) error {
		_, err := unary(ctx, jb.r.c.token, jb.r.c.complete, &runnerv1.CompleteRequest{Lease: jb.lease, Status: status, Reason: reason})
		return err
	})
}

func (jb *job) execute(ctx context.Context, out io.Writer, flush func()) (string, string) {
	p, err := spec.Parse([]byte(jb.j.SpecYAML))
	if err != nil {
		fmt.Fprintf(out, "[freshet] the pipeline spec does not compile: %v\n", err)
		return stFailed, "spec: " + err.Error()
	}
	fmt.Fprintf(out, "\x1b[36m[freshet]\x1b[0m build %s #%d (attempt %d) on runner %s, executor %s\n",
		jb.j.Pipeline, jb.j.Number, jb.j.Attempt, jb.r.opts.Name, jb.r.exec.Name())
	ws, err := jb.r.exec.Prepare(ctx, executor.Build{ID: jb.j.BuildID})
	if err != nil {
		fmt.Fprintf(out, "[freshet] prepare the workspace: %v\n", err)
		return stFailed, "workspace: " + err.Error()
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := jb.r.exec.Cleanup(cctx, ws); err != nil {
			jb.log.Warn("clean up workspace", "build", jb.j.BuildID, "err", err)
		}
	}()
	report := func(s runnerv1.StepState) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		jb.r.retry(rctx, "report step", func(ctx context.Context) error {
			_, err := unary(ctx, jb.r.c.token, jb.r.c.updateStep, &runnerv1.StepUpdate{Lease: jb.lease, Step: s})
			return err
		})
	}
	e := newEngine(jb.j, p, jb.r.exec, ws, out, report, jb.approvals)
	e.flush = flush
	return e.run(ctx)
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

// permanent reports whether a protocol error will not go away by retrying.
func permanent(err error) bool {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Code() {
	case connect.CodeUnavailable, connect.CodeDeadlineExceeded, connect.CodeInternal, connect.CodeUnknown, connect.CodeAborted:
		return false
	}
	return true
}
