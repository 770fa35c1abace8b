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
)

// RegisterProtocol mounts the runtime protocol on mux. It authenticates runtime tokens itself.
func (s *Service) RegisterProtocol(mux *http.ServeMux) {
	opts := []connect.HandlerOption{connect.WithCodec(runnerv1.Codec{})}
	mux.Handle(runtimev1.ProcedureHeartbeat, connect.NewUnaryHandler(runtimev1.ProcedureHeartbeat, s.heartbeatRPC, opts...))
}

func (s *Service) heartbeatRPC(ctx context.Context, req *connect.Request[runtimev1.HeartbeatRequest]) (*connect.Response[runtimev1.HeartbeatResponse], error) {
	scheme, tok, _ := strings.Cut(req.Header().Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return nil, connect.NewError(connect.CodeUnauthenticated, errdefs.ErrUnauthenticated)
	}
	rt, err := s.Authenticate(ctx, strings.TrimSpace(tok))
	if err != nil {
		return nil, connect.NewError(connect.CodeUnauthenticated, err)
	}
	status, err := s.Heartbeat(ctx, rt, *req.Msg)
	if err != nil {
		code := connect.CodeInternal
		if errors.Is(err, errdefs.ErrInvalid) {
			code = connect.CodeInvalidArgument
		}
		return nil, connect.NewError(code, err)
	}
	return connect.NewResponse(&runtimev1.HeartbeatResponse{RuntimeID: rt.ID, Name: rt.Name, Account: rt.AccountID, Type: rt.Type, Status: status}), nil
}
