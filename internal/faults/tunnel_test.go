package faults

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// Item 10: a runtime that dies silently (SIGSTOP: its sockets stay open, nothing answers) is
// dropped by the control plane within the documented PingInterval+PingTimeout (15 s) on every
// tunnel connection, also when it dies just after a ping was answered — the worst moment, which
// took 20 s before.
func TestFaultTunnelSilentDeath(t *testing.T) {
	cp := newControlPlane(t, "server")
	reg, err := cp.admin.RegisterRuntime(context.Background(), client.RegisterRuntimeRequest{Name: "edge"})
	if err != nil {
		t.Fatal(err)
	}
	rt := start(t, "runtime edge", []string{"FRESHET_RUNTIME_TOKEN=" + reg.Token},
		"runtime", "--server", cp.url, "--data-dir", filepath.Join(t.TempDir(), "rt"), "--log-level", "debug")
	t.Cleanup(func() { rt.cmd.Process.Signal(syscall.SIGCONT) })
	connected := func() int { return countLogLines(cp.proc.out.String(), `msg="runtime connected"`, "component=tunnel") }
	waitFor(t, 30*time.Second, "both tunnel connections up", func() bool { return connected() >= 2 })
	up := time.Now()

	// Both ends ping an idle connection PingInterval after its last frame. Freeze the runtime
	// just after that first exchange.
	time.Sleep(time.Until(up.Add(wire.PingInterval + 500*time.Millisecond)))
	if err := rt.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	closed := func() int {
		return countLogLines(cp.proc.out.String(), `msg="runtime connection closed"`, "component=tunnel")
	}
	limit := 2 * (wire.PingInterval + wire.PingTimeout)
	var took time.Duration
	for time.Since(stopped) < limit && closed() < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	took = time.Since(stopped)
	row(t, "10", "seconds until the control plane drops both connections of a silently dead runtime", took)
	if closed() < 2 {
		t.Fatalf("after %s, %d of 2 connections dropped", limit, closed())
	}
	// The bound with a margin for a busy machine: the worst case before the fix was 20 s.
	if bound := wire.PingInterval + wire.PingTimeout + 2500*time.Millisecond; took > bound {
		t.Fatalf("silent death noticed after %s, want within %s (PingInterval+PingTimeout)", took.Round(100*time.Millisecond), wire.PingInterval+wire.PingTimeout)
	}
}

// countLogLines counts the lines of log that hold every one of parts.
func countLogLines(log string, parts ...string) int {
	n := 0
next:
	for _, l := range strings.Split(log, "\n") {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		n++
	}
	return n
}
