package runtimes

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
)

// RegisterProtocol mounts the runtime protocol on mux. It authenticates runtime tokens itself.
func (s *Service) RegisterProtocol(mux *http.ServeMux) {
	opts := []connect.HandlerOption{connect.WithCodec(runnerv1.Codec{})}
	mux.Handle(runtimev1.ProcedureHeartbeat, connect.NewUnaryHandler(runtimev1.ProcedureHeartbeat, s.heartbeatRPC, opts...))
	mux.Handle(runtimev1.ProcedureReport, connect.NewUnaryHandler(runtimev1.ProcedureReport, s.reportRPC,
		append(opts, connect.WithReadMaxBytes(MaxReportBytes))...))
}

// caller resolves the runtime token of a protocol request.
func (s *Service) caller(ctx context.Context, h http.Header) (store.Runtime, error) {
	scheme, tok, _ := strings.Cut(h.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return store.Runtime{}, connect.NewError(connect.CodeUnauthenticated, errdefs.ErrUnauthenticated)
	}
	rt, err := s.Authenticate(ctx, strings.TrimSpace(tok))
	if err != nil {
		return store.Runtime{}, connect.NewError(connect.CodeUnauthenticated, err)
	}
	return rt, nil
}

// connectError maps a domain error to its connect code.
func connectError(err error) *connect.Error {
	code := connect.CodeInternal
	switch {
	case errors.Is(err, errdefs.ErrInvalid):
		code = connect.CodeInvalidArgument
	case errors.Is(err, errdefs.ErrNotFound):
		code = connect.CodeNotFound
	case errors.Is(err, errdefs.ErrUnavailable):
		code = connect.CodeUnavailable
	}
	return connect.NewError(code, err)
}

func (s *Service) heartbeatRPC(ctx context.Context, req *connect.Request[runtimev1.HeartbeatRequest]) (*connect.Response[runtimev1.HeartbeatResponse], error) {
	rt, err := s.caller(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	status, err := s.Heartbeat(ctx, rt, *req.Msg)
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&runtimev1.HeartbeatResponse{RuntimeID: rt.ID, Name: rt.Name, Account: rt.AccountID, Type: rt.Type, Status: status}), nil
}

// reportRPC applies a report to the applications of the runtime the token belongs to. Account
// and runtime come from the token, never from the message.
func (s *Service) reportRPC(ctx context.Context, req *connect.Request[runtimev1.ReportRequest]) (*connect.Response[runtimev1.ReportResponse], error) {
	rt, err := s.caller(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	n, err := s.Report(ctx, rt, *req.Msg)
	if err != nil {
		if !errors.Is(err, errdefs.ErrInvalid) {
			s.log.Warn("runtime report failed", "runtime", rt.Name, "account", rt.AccountID, "err", err)
		}
		return nil, connectError(err)
	}
	return connect.NewResponse(&runtimev1.ReportResponse{Accepted: n}), nil
}
