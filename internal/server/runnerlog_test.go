package server_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// callRunner makes one runner-protocol call to the control plane at url as the runner token.
func callRunner[Req, Resp any](url, token, procedure string, msg *Req) (*Resp, error) {
	c := connect.NewClient[Req, Resp](http.DefaultClient, url+procedure, connect.WithCodec(runnerv1.Codec{}))
	req := connect.NewRequest(msg)
	req.Header().Set("Authorization", "Bearer "+token)
	resp, err := c.CallUnary(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}

// What AppendLog answers, as the runner reads it: stored (a chunk sent again included), "the
// log ends at N" (FailedPrecondition with X-Log-Size), "these bytes are someone else's"
// (AlreadyExists, no size: the runner must not take its lines for stored), and "the lease is
// gone" (FailedPrecondition without a size).
func TestAppendLogAnswers(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := servertest.Start(t, d)
			if _, err := s.Admin.CreateProject(ctx, "p"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "x", Spec: "version: '1.0'\nsteps:\n  a:\n    commands: ['true']\n"}); err != nil {
				t.Fatal(err)
			}
			token := registerRunner(t, s.Admin, "r1")
			b, err := s.Admin.RunPipeline(ctx, "p/x", client.RunRequest{})
			if err != nil {
				t.Fatal(err)
			}
			job, err := callRunner[runnerv1.AcceptRequest, runnerv1.Job](s.URL, token, runnerv1.ProcedureAccept, &runnerv1.AcceptRequest{BuildID: b.ID})
			if err != nil {
				t.Fatal(err)
			}
			lease := runnerv1.Lease{BuildID: b.ID, LeaseID: job.LeaseID}
			appendLog := func(offset int64, data string) (int64, error) {
				ack, err := callRunner[runnerv1.LogChunk, runnerv1.LogAck](s.URL, token, runnerv1.ProcedureAppendLog,
					&runnerv1.LogChunk{Lease: lease, Offset: offset, Data: []byte(data)})
				if err != nil {
					return -1, err
				}
				return ack.Size, nil
			}
			logSize := func(err error) string {
				var ce *connect.Error
				if errors.As(err, &ce) {
					return ce.Meta().Get("X-Log-Size")
				}
				return ""
			}
			off := job.LogOffset
			if size, err := appendLog(off, "line 1\n"); err != nil || size != off+7 {
				t.Fatalf("append: %d, %v", size, err)
			}
			if size, err := appendLog(off, "line 1\n"); err != nil || size != off+7 {
				t.Fatalf("the same chunk again: %d, %v; want stored", size, err)
			}
			_, err = appendLog(off, "line X\n")
			if connect.CodeOf(err) != connect.CodeAlreadyExists || logSize(err) != "" {
				t.Fatalf("a different chunk at a stored offset: %v (size %q); want AlreadyExists without a size", err, logSize(err))
			}
			_, err = appendLog(off+100, "line 9\n")
			if connect.CodeOf(err) != connect.CodeFailedPrecondition || logSize(err) != strconv.FormatInt(off+7, 10) {
				t.Fatalf("a chunk past the end: %v (size %q); want FailedPrecondition with the size %d", err, logSize(err), off+7)
			}
			if _, err := callRunner[runnerv1.CompleteRequest, runnerv1.Empty](s.URL, token, runnerv1.ProcedureComplete,
				&runnerv1.CompleteRequest{Lease: lease, Status: "success"}); err != nil {
				t.Fatal(err)
			}
			_, err = appendLog(off+7, "line 2\n")
			if connect.CodeOf(err) != connect.CodeFailedPrecondition || logSize(err) != "" {
				t.Fatalf("after the lease ended: %v (size %q); want FailedPrecondition without a size", err, logSize(err))
			}
			log, err := s.Admin.BuildLog(ctx, b.ID, 0)
			if err != nil || string(log[off:]) != "line 1\n" {
				t.Fatalf("log = %q, %v", log, err)
			}
		})
	}
}
