package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runnerv1"
)

// connected reports whether the control plane lists runner name as connected.
func (cp *controlPlane) connected(name string) bool {
	rs, err := cp.admin.ListRunners(context.Background())
	if err != nil {
		return false
	}
	for _, r := range rs.Items {
		if r.Name == name {
			return r.Connected
		}
	}
	return false
}

// Item 3 (server side): a runner that long-polled and died leaves its session behind. It must
// not keep the builds from a connected, idle runner: the dead session has more free slots
// (concurrency 16 against 1), which is what dispatch used to prefer.
func TestFaultDeadPollSessionTakesNoBuilds(t *testing.T) {
	const builds = 8
	const limit = 30 * time.Second
	cp := newControlPlane(t, "server")
	dead, _ := cp.runner("dead", "", "--transport", "poll", "--concurrency", "16")
	waitFor(t, 30*time.Second, "runner dead polling", func() bool { return cp.connected("dead") })
	dead.kill() // in the middle of its long poll
	live, _ := cp.runner("live", "", "--concurrency", "1")
	waitFor(t, 30*time.Second, "runner live streaming", func() bool {
		return strings.Contains(live.out.String(), `msg="connected to the control plane"`)
	})
	ref := cp.pipeline("quick", "version: '1.0'\nsteps:\n  hello:\n    commands: ['echo hello']\n")
	queued := time.Now()
	var ids []string
	for range builds {
		ids = append(ids, cp.run(ref, nil).ID)
	}
	done := make([]bool, builds)
	finishedAll := time.Duration(0)
	for time.Since(queued) < limit && finishedAll == 0 {
		all := true
		for i, id := range ids {
			if !done[i] {
				done[i] = finished(cp.build(id))
			}
			all = all && done[i]
		}
		if all {
			finishedAll = time.Since(queued)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stuck := 0
	for i, id := range ids {
		if b := cp.build(id); !done[i] && b.Status == "queued" {
			stuck++
		}
	}
	row(t, "3", fmt.Sprintf("builds still queued %s after they were queued beside an idle runner, %d builds, a dead long-poll session (%s)", limit, builds, backend()), stuck)
	if finishedAll > 0 {
		row(t, "3", fmt.Sprintf("seconds until all %d builds finished on the idle runner (%s)", builds, backend()), finishedAll)
	}
	if stuck > 0 || finishedAll == 0 {
		t.Fatalf("%d of %d builds still queued after %s beside the idle runner live; live:\n%s", stuck, builds, limit, live.out)
	}
}

// Item 3 (server side): a runner that restarts (killed, started again with its token) gives
// back the builds it held at once: they are requeued when it connects and said it runs
// nothing, not when their lease expires (30 s and 5 s of grace by default).
func TestFaultRestartedRunnerReleasesItsBuilds(t *testing.T) {
	cp := newControlPlane(t, "server")
	runner, again := cp.runner("r1", "")
	marks := t.TempDir()
	ref := cp.pipeline("long", `version: '1.0'
steps:
  work:
    commands:
      - 'echo ran >> "$MARKS/$CF_BUILD_ID"'
      - 'if [ "$(wc -l < "$MARKS/$CF_BUILD_ID")" -lt 2 ]; then sleep 120; fi'
`)
	b := cp.run(ref, map[string]string{"MARKS": marks})
	mark := filepath.Join(marks, b.ID)
	waitFor(t, 30*time.Second, "the step running", func() bool { _, err := os.Stat(mark); return err == nil })

	runner.kill()
	start(t, "runner r1 (again)", again[:1], again[1:]...)
	restarted := time.Now()
	final := cp.waitFinished(55*time.Second, b.ID)[0]
	row(t, "3", fmt.Sprintf("seconds from a runner's restart until the build it held finished, run again on it (lease 30 s, %s)", backend()), time.Since(restarted))
	ran, _ := os.ReadFile(mark)
	if final.Status != "success" || final.Attempt != 2 || strings.Count(string(ran), "ran\n") != 2 {
		t.Fatalf("build %s (%s), attempt %d, step ran %d times, want success on attempt 2:\n%s", final.Status, final.Reason, final.Attempt, strings.Count(string(ran), "ran\n"), cp.log(b.ID))
	}
}

// balancer stands for a load balancer in front of two replicas: the runner's stream (and
// polls) go to the first, each of its other calls to either.
type balancer struct {
	stream *httputil.ReverseProxy
	calls  []*httputil.ReverseProxy
}

func newBalancer(urls ...string) *balancer {
	lb := &balancer{}
	for _, u := range urls {
		target, _ := url.Parse(u)
		p := httputil.NewSingleHostReverseProxy(target)
		p.FlushInterval = -1
		lb.calls = append(lb.calls, p)
	}
	lb.stream = lb.calls[0]
	return lb
}

func (lb *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case runnerv1.ProcedureConnect, runnerv1.ProcedurePoll:
		lb.stream.ServeHTTP(w, r)
	default:
		lb.calls[rand.N(len(lb.calls))].ServeHTTP(w, r)
	}
}

// Item 3 (server side): two replicas behind a load balancer. The runner's stream is on one
// replica, its Accept and Complete calls land on either: the replica with the stream must
// still see the runner's slot free once a build completed through the other one, or the
// runner, idle, is offered nothing more.
func TestFaultRunnerBehindLoadBalancer(t *testing.T) {
	if backend() != "postgres" {
		t.Skip("replicas share PostgreSQL")
	}
	const builds = 8
	const limit = 30 * time.Second
	nats := natsServer(t)
	a := newControlPlane(t, "server", "--nats", nats)
	b := a.replica()
	front := httptest.NewServer(newBalancer(a.url, b.url))
	t.Cleanup(front.Close)
	reg, err := a.admin.RegisterRunner(t.Context(), runnerRequest("r1"))
	if err != nil {
		t.Fatal(err)
	}
	runner := start(t, "runner r1", []string{"FRESHET_RUNNER_TOKEN=" + reg.Token}, "runner", "--server", front.URL, "--work-dir", t.TempDir(),
		"--log-level", "debug", "--concurrency", "1")
	waitFor(t, 30*time.Second, "runner streaming", func() bool {
		return strings.Contains(runner.out.String(), `msg="connected to the control plane"`)
	})
	ref := a.pipeline("quick", "version: '1.0'\nsteps:\n  hello:\n    commands: ['echo hello']\n")
	queued := time.Now()
	var ids []string
	for range builds {
		ids = append(ids, a.run(ref, nil).ID)
	}
	done := make([]bool, builds)
	took := time.Duration(0)
	for time.Since(queued) < limit && took == 0 {
		all := true
		for i, id := range ids {
			if !done[i] {
				done[i] = finished(a.build(id))
			}
			all = all && done[i]
		}
		if all {
			took = time.Since(queued)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stuck := 0
	for i := range ids {
		if !done[i] {
			stuck++
		}
	}
	row(t, "3", fmt.Sprintf("builds not finished %s after they were queued, %d builds, one runner (concurrency 1) behind a load balancer over 2 replicas (%s)", limit, builds, backend()), stuck)
	if took > 0 {
		row(t, "3", fmt.Sprintf("seconds until all %d finished, same run", builds), took)
	}
	if stuck > 0 {
		t.Fatalf("%d of %d builds not finished after %s", stuck, builds, limit)
	}
}
