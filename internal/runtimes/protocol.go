package runtimes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// MaxHeartbeatBytes bounds a runtime's heartbeat as received (its components, clusters and Git
// Sources).
const MaxHeartbeatBytes = 1 << 20

// RegisterProtocol mounts the runtime protocol on mux. It authenticates runtime tokens itself.
func (s *Service) RegisterProtocol(mux *http.ServeMux) {
	opts := []connect.HandlerOption{connect.WithCodec(runnerv1.Codec{})}
	// Every message is read before the runtime token is checked: each has a read limit.
	mux.Handle(runtimev1.ProcedureHeartbeat, connect.NewUnaryHandler(runtimev1.ProcedureHeartbeat, s.heartbeatRPC,
		append(opts, connect.WithReadMaxBytes(MaxHeartbeatBytes))...))
	mux.Handle(runtimev1.ProcedureReport, connect.NewUnaryHandler(runtimev1.ProcedureReport, s.reportRPC,
		append(opts, connect.WithReadMaxBytes(MaxReportBytes))...))
	mux.Handle(runtimev1.ProcedureAudit, connect.NewUnaryHandler(runtimev1.ProcedureAudit, s.auditRPC,
		append(opts, connect.WithReadMaxBytes(1<<20))...))
}

// auditRPC records the changes callers made on the runtime's own ingress, in the runtime's
// account. The actor is marked as seen by that runtime: the control plane did not see the call.
func (s *Service) auditRPC(ctx context.Context, req *connect.Request[runtimev1.AuditRequest]) (*connect.Response[runtimev1.AuditResponse], error) {
	rt, err := s.caller(ctx, req)
	if err != nil {
		return nil, err
	}
	recs := req.Msg.Records
	if len(recs) > runtimev1.MaxAuditRecords {
		return nil, errdefs.ConnectError(errdefs.Invalid("records", fmt.Sprint(len(recs)), fmt.Sprintf("at most %d per request", runtimev1.MaxAuditRecords)))
	}
	for i, r := range recs {
		switch {
		case r.Method == "" || len(r.Method) > 16 || strings.ContainsAny(r.Method, " \x00"):
			return nil, errdefs.ConnectError(errdefs.Invalid(fmt.Sprintf("records[%d].method", i), r.Method, "is not an HTTP method"))
		case !strings.HasPrefix(r.Path, "/") || len(r.Path) > 2048:
			return nil, errdefs.ConnectError(errdefs.Invalid(fmt.Sprintf("records[%d].path", i), r.Path, "is not a request path (at most 2048 bytes)"))
		case r.Status < 100 || r.Status > 599:
			return nil, errdefs.ConnectError(errdefs.Invalid(fmt.Sprintf("records[%d].status", i), fmt.Sprint(r.Status), "is not an HTTP status"))
		case len(r.Email) > 320 || len(r.UserID) > 64:
			return nil, errdefs.ConnectError(errdefs.Invalid(fmt.Sprintf("records[%d].email", i), r.Email, "is too long"))
		}
	}
	for _, r := range recs {
		p := rbac.Principal{AccountID: rt.AccountID, UserID: r.UserID, Email: noNUL(r.Email) + " (via runtime " + rt.Name + "'s ingress)"}
		e := audit.Start(audit.WithMeta(ctx, audit.Meta{SourceIP: r.SourceIP}), p, "runtime.app-proxy", "runtime", rt.ID)
		e.Detail("%s %s → %d (runtime %s, ingress)", r.Method, noNUL(r.Path), r.Status, rt.Name)
		var result error
		switch {
		case r.Status == http.StatusForbidden || r.Status == http.StatusUnauthorized:
			result = fmt.Errorf("the runtime answered %d: %w", r.Status, errdefs.ErrForbidden)
		case r.Status >= 400:
			result = fmt.Errorf("the runtime answered %d", r.Status)
		}
		s.audit.Finish(ctx, e, result)
	}
	return connect.NewResponse(&runtimev1.AuditResponse{Accepted: len(recs)}), nil
}

// caller resolves the runtime token of a protocol request. A refusal of the runtime's own
// token (expired, replaced) is recorded on the runtime, as a refused tunnel handshake is.
func (s *Service) caller(ctx context.Context, req connect.AnyRequest) (Runtime, error) {
	scheme, tok, _ := strings.Cut(req.Header().Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return Runtime{}, connect.NewError(connect.CodeUnauthenticated, errdefs.ErrUnauthenticated)
	}
	rt, err := s.Authenticate(ctx, strings.TrimSpace(tok))
	if err != nil {
		s.RecordRefusal(ctx, err, peerHost(req.Peer().Addr))
		return Runtime{}, connect.NewError(connect.CodeUnauthenticated, err)
	}
	return rt, nil
}

// peerHost is the host of a host:port address (the address itself when it has no port).
func peerHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

func (s *Service) heartbeatRPC(ctx context.Context, req *connect.Request[runtimev1.HeartbeatRequest]) (*connect.Response[runtimev1.HeartbeatResponse], error) {
	rt, err := s.caller(ctx, req)
	if err != nil {
		return nil, err
	}
	status, err := s.Heartbeat(ctx, rt, *req.Msg)
	if err != nil {
		return nil, errdefs.ConnectError(err)
	}
	return connect.NewResponse(&runtimev1.HeartbeatResponse{RuntimeID: rt.ID, Name: rt.Name, Account: rt.AccountID, Type: rt.Type, Status: status}), nil
}

// reportRPC applies a report to the applications of the runtime the token belongs to. Account
// and runtime come from the token, never from the message.
func (s *Service) reportRPC(ctx context.Context, req *connect.Request[runtimev1.ReportRequest]) (*connect.Response[runtimev1.ReportResponse], error) {
	rt, err := s.caller(ctx, req)
	if err != nil {
		return nil, err
	}
	n, err := s.Report(ctx, rt, *req.Msg)
	if err != nil {
		if !errors.Is(err, errdefs.ErrInvalid) {
			s.log.Warn("runtime report failed", "runtime", rt.Name, "account", rt.AccountID, "err", err)
		}
		return nil, errdefs.ConnectError(err)
	}
	return connect.NewResponse(&runtimev1.ReportResponse{Accepted: n}), nil
}
