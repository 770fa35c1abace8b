package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
)

func TestLineLimiterCutsLongLines(t *testing.T) {
	var out bytes.Buffer
	l := &lineLimiter{w: &out}
	long := strings.Repeat("x", MaxLineBytes+500)
	// The long line arrives in three writes; the short lines around it stay whole.
	l.Write([]byte("before\n" + long[:100]))
	l.Write([]byte(long[100 : MaxLineBytes+200]))
	l.Write([]byte(long[MaxLineBytes+200:] + "\nafter\n"))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "before" || lines[2] != "after" {
		t.Fatalf("lines = %d: %q … %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if !strings.HasSuffix(lines[1], strings.TrimSuffix(string(longLineMarker), "\n")) || len(lines[1]) != MaxLineBytes+len(longLineMarker)-1 {
		t.Fatalf("cut line is %d bytes, ends %q", len(lines[1]), lines[1][len(lines[1])-40:])
	}
}

func TestLineLimiterPassesShortLines(t *testing.T) {
	var out bytes.Buffer
	l := &lineLimiter{w: &out}
	in := "a\nbb\n" + strings.Repeat("c", MaxLineBytes) + "\n"
	for i := 0; i < len(in); i += 7 {
		l.Write([]byte(in[i:min(i+7, len(in))]))
	}
	if out.String() != in {
		t.Fatal("a line of exactly the limit was changed")
	}
}

func TestUploaderTruncatesAtTheLimitWithAMarker(t *testing.T) {
	u := newUploader(nil, newLeaseBox(runnerv1.Lease{BuildID: "b", LeaseID: "l"}), MaxLogBytes-10, slog.New(slog.DiscardHandler))
	n, err := u.Write([]byte(strings.Repeat("y", 100)))
	if err != nil || n != 100 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	u.Write([]byte("more that is dropped"))
	got := u.buf.String()
	if !strings.HasPrefix(got, strings.Repeat("y", 10)) || !strings.HasSuffix(got, string(truncatedMarker)) || len(got) != 10+len(truncatedMarker) {
		t.Fatalf("buffer = %q", got)
	}
}

// logServer is a control plane's AppendLog with faults: it refuses calls as told, and stores
// chunks at the end of its log only.
type logServer struct {
	mu     sync.Mutex
	log    []byte
	faults []func(c *runnerv1.LogChunk) error // one per call while any are left; nil passes
	calls  int
}

func (s *logServer) appendLog(_ context.Context, req *connect.Request[runnerv1.LogChunk]) (*connect.Response[runnerv1.LogAck], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := req.Msg
	s.calls++
	if len(s.faults) > 0 {
		f := s.faults[0]
		s.faults = s.faults[1:]
		if f != nil {
			if err := f(c); err != nil {
				return nil, err
			}
		}
	}
	end := c.Offset + int64(len(c.Data))
	switch {
	case end <= int64(len(s.log)): // stored before
	case c.Offset == int64(len(s.log)):
		s.log = append(s.log, c.Data...)
	default:
		e := connect.NewError(connect.CodeFailedPrecondition, errors.New("offset"))
		e.Meta().Set("X-Log-Size", strconv.Itoa(len(s.log)))
		return nil, e
	}
	return connect.NewResponse(&runnerv1.LogAck{Size: int64(len(s.log))}), nil
}

// The uploader keeps every line through refusals that say nothing, through answers lost after
// the chunk was stored, and realigns on a refusal that gives the log's size.
func TestUploaderKeepsLinesThroughRefusals(t *testing.T) {
	s := &logServer{}
	refuse := func(*runnerv1.LogChunk) error {
		return connect.NewError(connect.CodeFailedPrecondition, errors.New("duplicate key value violates unique constraint"))
	}
	storedButLost := func(c *runnerv1.LogChunk) error {
		if c.Offset == int64(len(s.log)) {
			s.log = append(s.log, c.Data...)
		}
		return connect.NewError(connect.CodeUnavailable, errors.New("connection reset"))
	}
	partly := func(c *runnerv1.LogChunk) error { // the first 3 bytes got stored, the answer says so
		if c.Offset == int64(len(s.log)) && len(c.Data) > 3 {
			s.log = append(s.log, c.Data[:3]...)
		}
		e := connect.NewError(connect.CodeFailedPrecondition, errors.New("offset"))
		e.Meta().Set("X-Log-Size", strconv.Itoa(len(s.log)))
		return e
	}
	s.faults = []func(*runnerv1.LogChunk) error{refuse, refuse, storedButLost, nil, partly, refuse, storedButLost, partly}
	mux := http.NewServeMux()
	mux.Handle(runnerv1.ProcedureAppendLog, connect.NewUnaryHandler(runnerv1.ProcedureAppendLog, s.appendLog, connect.WithCodec(runnerv1.Codec{})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c := newProtoClient(srv.URL, "frn_test", srv.Client())
	u := newUploader(c, newLeaseBox(runnerv1.Lease{BuildID: "b", LeaseID: "l"}), 0, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		u.run(ctx)
		close(done)
	}()
	var want bytes.Buffer
	for i := range 200 {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		u.Write([]byte(line))
		if i%20 == 0 {
			time.Sleep(3 * flushInterval / 2)
		}
	}
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	if err := u.drain(dctx); err != nil {
		t.Fatalf("drain: %v (%d bytes still buffered)", err, u.pending())
	}
	cancel()
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	if string(s.log) != want.String() {
		t.Fatalf("the control plane's log differs from what was written (%d bytes, want %d, %d calls)", len(s.log), want.Len(), s.calls)
	}
	if len(s.faults) != 0 {
		t.Fatalf("%d faults not used: too few calls", len(s.faults))
	}
}

// While the lease is in doubt the uploader sends nothing and keeps everything; under a new lease
// it sends what it kept from where the control plane's log ends.
func TestUploaderWaitsForTheLeaseAndRebases(t *testing.T) {
	s := &logServer{log: []byte("0123456789")} // the log of an earlier attempt, and a marker
	var leases []string
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.Handle(runnerv1.ProcedureAppendLog, connect.NewUnaryHandler(runnerv1.ProcedureAppendLog,
		func(ctx context.Context, req *connect.Request[runnerv1.LogChunk]) (*connect.Response[runnerv1.LogAck], error) {
			mu.Lock()
			leases = append(leases, req.Msg.LeaseID)
			mu.Unlock()
			return s.appendLog(ctx, req)
		}, connect.WithCodec(runnerv1.Codec{})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	box := newLeaseBox(runnerv1.Lease{BuildID: "b", LeaseID: "old"})
	box.set(runnerv1.Lease{BuildID: "b", LeaseID: "old"}, false)
	u := newUploader(newProtoClient(srv.URL, "frn_test", srv.Client()), box, 4, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		u.run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	u.Write([]byte("kept while away\n"))
	time.Sleep(5 * flushInterval)
	mu.Lock()
	sent := len(leases)
	mu.Unlock()
	if sent != 0 || u.pending() != len("kept while away\n") {
		t.Fatalf("%d calls and %d bytes buffered while the lease was in doubt", sent, u.pending())
	}
	u.rebase(10)
	box.set(runnerv1.Lease{BuildID: "b", LeaseID: "new"}, true)
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	if err := u.drain(dctx); err != nil {
		t.Fatal(err)
	}
	if got := string(s.log); got != "0123456789kept while away\n" {
		t.Fatalf("log %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range leases {
		if l != "new" {
			t.Fatalf("sent under lease %q", l)
		}
	}
}
