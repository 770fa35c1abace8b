package runner

import (
	"context"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
)

// protoClient calls the control plane's runner protocol.
type protoClient struct {
	token      string
	connect    *connect.Client[runnerv1.ConnectRequest, runnerv1.ServerMessage]
	poll       *connect.Client[runnerv1.PollRequest, runnerv1.ServerMessage]
	accept     *connect.Client[runnerv1.AcceptRequest, runnerv1.Job]
	heartbeat  *connect.Client[runnerv1.HeartbeatRequest, runnerv1.HeartbeatResponse]
	updateStep *connect.Client[runnerv1.StepUpdate, runnerv1.Empty]
	appendLog  *connect.Client[runnerv1.LogChunk, runnerv1.LogAck]
	complete   *connect.Client[runnerv1.CompleteRequest, runnerv1.Empty]
}

func newProtoClient(server, token string, hc *http.Client) *protoClient {
	base := strings.TrimRight(server, "/")
	opts := []connect.ClientOption{connect.WithCodec(runnerv1.Codec{})}
	return &protoClient{
		token:      token,
		connect:    connect.NewClient[runnerv1.ConnectRequest, runnerv1.ServerMessage](hc, base+runnerv1.ProcedureConnect, opts...),
		poll:       connect.NewClient[runnerv1.PollRequest, runnerv1.ServerMessage](hc, base+runnerv1.ProcedurePoll, opts...),
		accept:     connect.NewClient[runnerv1.AcceptRequest, runnerv1.Job](hc, base+runnerv1.ProcedureAccept, opts...),
		heartbeat:  connect.NewClient[runnerv1.HeartbeatRequest, runnerv1.HeartbeatResponse](hc, base+runnerv1.ProcedureHeartbeat, opts...),
		updateStep: connect.NewClient[runnerv1.StepUpdate, runnerv1.Empty](hc, base+runnerv1.ProcedureUpdateStep, opts...),
		appendLog:  connect.NewClient[runnerv1.LogChunk, runnerv1.LogAck](hc, base+runnerv1.ProcedureAppendLog, opts...),
		complete:   connect.NewClient[runnerv1.CompleteRequest, runnerv1.Empty](hc, base+runnerv1.ProcedureComplete, opts...),
	}
}

func request[T any](token string, msg *T) *connect.Request[T] {
	r := connect.NewRequest(msg)
	r.Header().Set("Authorization", "Bearer "+token)
	return r
}

func unary[Req, Res any](ctx context.Context, token string, c *connect.Client[Req, Res], msg *Req) (*Res, error) {
	resp, err := c.CallUnary(ctx, request(token, msg))
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}
