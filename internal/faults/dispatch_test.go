package faults

import (
	"strings"
	"testing"
	"time"
)

// Item 3 (runner side): after a short control-plane outage the runner must go back to its
// stream, not fall back to long-polling for the rest of its life, and take new builds at once.
func TestFaultStreamRecoversAfterOutage(t *testing.T) {
	cp := newControlPlane(t, "server")
	runner, _ := cp.runner("r1", "", "--transport", "auto")
	streams := func() int { return strings.Count(runner.out.String(), `msg="connected to the control plane"`) }
	waitFor(t, 20*time.Second, "runner streaming", func() bool { return streams() == 1 })
	ref := cp.pipeline("quick", "version: '1.0'\nsteps:\n  hello:\n    commands: ['echo hello']\n")

	cp.kill()
	time.Sleep(2 * time.Second) // the outage of the report: long enough for 3 failed reconnects
	cp.start()
	restarted := time.Now()

	// A build queued now runs (over whatever the runner reconnected with).
	b := cp.run(ref, nil)
	final := cp.waitFinished(45*time.Second, b.ID)[0]
	row(t, "3", "seconds from restart to a new build finished ("+backend()+")", time.Since(restarted))
	// And the runner is back on a stream, not long-polling for the rest of its life.
	back := 0
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && back == 0 {
		if streams() >= 2 {
			back = 1
		}
		time.Sleep(50 * time.Millisecond)
	}
	row(t, "3", "runner back on its stream after a 2 s outage ("+backend()+")", back)
	if back == 0 {
		t.Fatalf("the runner did not reconnect its stream within 30 s of the build; runner:\n%s", runner.out)
	}
	if final.Status != "success" {
		t.Fatalf("build %s: %s", final.Status, final.Reason)
	}
}
