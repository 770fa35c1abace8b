package pipeline

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
)

// MaxRunnerMessageBytes bounds one runner protocol message as received: the largest is a log
// chunk, which runners send up to 1 MiB at a time (base64 in JSON).
const MaxRunnerMessageBytes = 4 << 20

// RunnerAPI serves the runner protocol (api/runnerv1) over ConnectRPC.
type RunnerAPI struct {
	svc *Service
	d   *Dispatcher
}

// NewRunnerAPI returns the runner protocol handlers.
func NewRunnerAPI(svc *Service, d *Dispatcher) *RunnerAPI { return &RunnerAPI{svc: svc, d: d} }

// Register mounts the protocol's procedures on mux.
func (a *RunnerAPI) Register(mux *http.ServeMux) {
	// Bodies are read before the runner token is checked: the read limit keeps an
	// unauthenticated client from making the server buffer an unbounded message.
	opts := []connect.HandlerOption{connect.WithCodec(runnerv1.Codec{}), connect.WithReadMaxBytes(MaxRunnerMessageBytes)}
	mux.Handle(runnerv1.ProcedureConnect, connect.NewServerStreamHandler(runnerv1.ProcedureConnect, a.connect, opts...))
	mux.Handle(runnerv1.ProcedurePoll, connect.NewUnaryHandler(runnerv1.ProcedurePoll, a.poll, opts...))
	mux.Handle(runnerv1.ProcedureAccept, connect.NewUnaryHandler(runnerv1.ProcedureAccept, a.accept, opts...))
	mux.Handle(runnerv1.ProcedureHeartbeat, connect.NewUnaryHandler(runnerv1.ProcedureHeartbeat, a.heartbeat, opts...))
	mux.Handle(runnerv1.ProcedureUpdateStep, connect.NewUnaryHandler(runnerv1.ProcedureUpdateStep, a.updateStep, opts...))
	mux.Handle(runnerv1.ProcedureAppendLog, connect.NewUnaryHandler(runnerv1.ProcedureAppendLog, a.appendLog, opts...))
	mux.Handle(runnerv1.ProcedureComplete, connect.NewUnaryHandler(runnerv1.ProcedureComplete, a.complete, opts...))
}

func (a *RunnerAPI) runner(ctx context.Context, h http.Header) (Runner, error) {
	scheme, tok, _ := strings.Cut(h.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return Runner{}, errdefs.ConnectError(errdefs.ErrUnauthenticated)
	}
	r, err := a.svc.AuthenticateRunner(ctx, strings.TrimSpace(tok))
	return r, errdefs.ConnectError(err)
}

func (a *RunnerAPI) connect(ctx context.Context, req *connect.Request[runnerv1.ConnectRequest], stream *connect.ServerStream[runnerv1.ServerMessage]) error {
	r, err := a.runner(ctx, req.Header())
	if err != nil {
		return err
	}
	s, err := a.d.register(ctx, r, *req.Msg)
	if err != nil {
		return errdefs.ConnectError(err)
	}
	defer a.d.unregister(s)
	// The first message tells the runner the stream is up.
	if err := stream.Send(&runnerv1.ServerMessage{Kind: runnerv1.KindPing}); err != nil {
		return err
	}
	ping := time.NewTicker(runnerv1.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.d.done: // this replica is shutting down: the runner reconnects elsewhere
			return connect.NewError(connect.CodeUnavailable, errors.New("server shutting down"))
		case m := <-s.msgs:
			if err := stream.Send(&m); err != nil {
				return err
			}
		case <-ping.C:
			if err := stream.Send(&runnerv1.ServerMessage{Kind: runnerv1.KindPing}); err != nil {
				return err
			}
		}
	}
}

// poll is the long-poll fallback: the runner's session lives between polls, and each poll
// returns the next message or KindNone after PollWait.
func (a *RunnerAPI) poll(ctx context.Context, req *connect.Request[runnerv1.PollRequest]) (*connect.Response[runnerv1.ServerMessage], error) {
	r, err := a.runner(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	s, err := a.d.pollSession(ctx, r, *req.Msg)
	if err != nil {
		return nil, errdefs.ConnectError(err)
	}
	defer func() { a.d.pollDone(s, ctx.Err() != nil) }()
	wait := runnerv1.PollWait
	if req.Msg.NoWait {
		wait = 0
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	if wait == 0 {
		select {
		case m := <-s.msgs:
			return connect.NewResponse(&m), nil
		default:
			return connect.NewResponse(&runnerv1.ServerMessage{Kind: runnerv1.KindNone}), nil
		}
	}
	select {
	case m := <-s.msgs:
		return connect.NewResponse(&m), nil
	case <-t.C:
		return connect.NewResponse(&runnerv1.ServerMessage{Kind: runnerv1.KindNone}), nil
	case <-a.d.done:
		return connect.NewResponse(&runnerv1.ServerMessage{Kind: runnerv1.KindNone}), nil
	case <-ctx.Done():
		return nil, errdefs.ConnectError(ctx.Err())
	}
}

func (a *RunnerAPI) accept(ctx context.Context, req *connect.Request[runnerv1.AcceptRequest]) (*connect.Response[runnerv1.Job], error) {
	r, err := a.runner(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	job, err := a.d.accept(ctx, r, req.Msg.BuildID)
	if err != nil {
		return nil, errdefs.ConnectError(err)
	}
	return connect.NewResponse(&job), nil
}

func (a *RunnerAPI) heartbeat(ctx context.Context, req *connect.Request[runnerv1.HeartbeatRequest]) (*connect.Response[runnerv1.HeartbeatResponse], error) {
	r, err := a.runner(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	resp, err := a.d.heartbeat(ctx, r, req.Msg.Leases)
	if err != nil {
		return nil, errdefs.ConnectError(err)
	}
	return connect.NewResponse(&resp), nil
}

func (a *RunnerAPI) updateStep(ctx context.Context, req *connect.Request[runnerv1.StepUpdate]) (*connect.Response[runnerv1.Empty], error) {
	r, err := a.runner(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	if err := a.d.updateStep(ctx, r, *req.Msg); err != nil {
		return nil, errdefs.ConnectError(err)
	}
	return connect.NewResponse(&runnerv1.Empty{}), nil
}

func (a *RunnerAPI) appendLog(ctx context.Context, req *connect.Request[runnerv1.LogChunk]) (*connect.Response[runnerv1.LogAck], error) {
	r, err := a.runner(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	size, err := a.d.appendLog(ctx, r, *req.Msg)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrLogOffset):
		// Tell the runner where the log ends so it can resend from there.
		e := connect.NewError(connect.CodeFailedPrecondition, err)
		e.Meta().Set("X-Log-Size", formatInt(size))
		return nil, e
	case errors.Is(err, store.ErrLogMismatch):
		// Not a lost lease (FailedPrecondition without a size) and not stored: the bytes at
		// that offset are someone else's. No size, so the runner does not take its lines for
		// stored.
		return nil, connect.NewError(connect.CodeAlreadyExists, err)
	default:
		return nil, errdefs.ConnectError(err)
	}
	return connect.NewResponse(&runnerv1.LogAck{Size: size}), nil
}

func (a *RunnerAPI) complete(ctx context.Context, req *connect.Request[runnerv1.CompleteRequest]) (*connect.Response[runnerv1.Empty], error) {
	r, err := a.runner(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	if err := a.d.complete(ctx, r, *req.Msg); err != nil {
		return nil, errdefs.ConnectError(err)
	}
	return connect.NewResponse(&runnerv1.Empty{}), nil
}
