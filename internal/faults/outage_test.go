package faults

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runnerv1"
)

// Item 6: finished work is not done again. The control plane is away for three lease TTLs while
// builds are in the middle of their steps: leases expire, the runner stops what runs (it cannot
// know whether the control plane gave the build to another runner), and the control plane
// requeues the builds when it is back. The runner keeps what its finished steps did — results,
// exports, logs, the workspace — and reports it when it can, so when it takes a build up again
// only the step it interrupted runs again. Half the builds are held in their second step until
// the control plane is back (so the runner interrupts them); the other half finish every step
// during the outage (so only their reports wait).
func TestFaultFinishedStepsNotRunAgainAfterOutage(t *testing.T) {
	const ttl = 3 * time.Second
	const builds = 4
	cp := newControlPlane(t, "server", "--runner-lease-ttl", ttl.String())
	cp.runner("r1", "", "--concurrency", fmt.Sprint(builds))
	marks := t.TempDir()
	ref := cp.pipeline("steps", `version: '1.0'
steps:
  one:
    commands:
      - 'echo ran >> "$MARKS/$CF_BUILD_ID.one"'
      - cf_export FROM_ONE=kept
  two:
    commands:
      - 'if [ -n "$HOLD" ]; then while [ ! -e "$MARKS/back" ]; do sleep 0.1; done; else sleep 0.3; fi'
      - 'echo ran >> "$MARKS/$CF_BUILD_ID.two"'
  three:
    commands:
      - 'test "$FROM_ONE" = kept'
      - 'echo ran >> "$MARKS/$CF_BUILD_ID.three"'
`)
	var ids []string
	for i := range builds {
		vars := map[string]string{"MARKS": marks}
		if i%2 == 0 {
			vars["HOLD"] = "1"
		}
		ids = append(ids, cp.run(ref, vars).ID)
	}
	waitFor(t, 30*time.Second, "every build past step one", func() bool {
		for _, id := range ids {
			if _, err := os.Stat(filepath.Join(marks, id+".one")); err != nil {
				return false
			}
		}
		return true
	})
	cp.kill()
	time.Sleep(3 * ttl)
	cp.start()
	restarted := time.Now()
	if err := os.WriteFile(filepath.Join(marks, "back"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	final := cp.waitFinished(50*time.Second, ids...)
	row(t, "6", "seconds from restart until every build finished ("+backend()+")", time.Since(restarted))

	twice := 0
	for _, id := range ids {
		for _, step := range []string{"one", "two", "three"} {
			b, _ := os.ReadFile(filepath.Join(marks, id+"."+step))
			if n := strings.Count(string(b), "ran\n"); n > 1 {
				twice += n - 1
				t.Errorf("build %s: step %s ran %d times; log:\n%s", id, step, n, cp.log(id))
			}
		}
	}
	row(t, "6", fmt.Sprintf("finished steps run a second time after a %s outage, %d builds (%s)", 3*ttl, builds, backend()), twice)
	for i, b := range final {
		if b.Status != "success" {
			t.Errorf("build %s: %s (%s)\n%s", ids[i], b.Status, b.Reason, cp.log(ids[i]))
		}
	}
	if twice != 0 {
		t.Fatalf("%d finished steps ran again", twice)
	}
}

// refusingProxy stands between a runner and the control plane and refuses some AppendLog calls
// the way a control plane in trouble does (a failed precondition with no log size): before
// passing them on, or after the control plane stored the chunk (the answer is lost).
type refusingProxy struct {
	next    *httputil.ReverseProxy
	appends atomic.Int64
	refused atomic.Int64
}

func (p *refusingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != runnerv1.ProcedureAppendLog {
		p.next.ServeHTTP(w, r)
		return
	}
	n := p.appends.Add(1)
	switch {
	case n%4 == 1 && n < 40: // refused outright
	case n%4 == 3 && n < 40: // stored, but the runner hears a refusal
		rec := httptest.NewRecorder()
		p.next.ServeHTTP(rec, r)
	default:
		p.next.ServeHTTP(w, r)
		return
	}
	p.refused.Add(1)
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write([]byte(`{"code":"failed_precondition","message":"injected: duplicate key value violates unique constraint"}`))
}

// Item 1 (runner side): a runner never discards log lines while its lease is alive. Appends
// refused without a reason it can act on are kept and sent again; the build's log ends up
// whole, each line once.
func TestFaultRefusedAppendsKeepLines(t *testing.T) {
	cp := newControlPlane(t, "server")
	target, _ := url.Parse(cp.url)
	proxy := &refusingProxy{next: httputil.NewSingleHostReverseProxy(target)}
	proxy.next.FlushInterval = -1
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close) // after the runner is gone: Close waits for its stream
	reg, err := cp.admin.RegisterRunner(t.Context(), runnerRequest("r1"))
	if err != nil {
		t.Fatal(err)
	}
	start(t, "runner r1", []string{"FRESHET_RUNNER_TOKEN=" + reg.Token}, "runner", "--server", front.URL, "--executor", "local", "--work-dir", t.TempDir(), "--log-level", "debug")
	const lines = 100
	ref := cp.pipeline("count", fmt.Sprintf("version: '1.0'\nsteps:\n  count:\n    commands:\n      - 'for i in $(seq 1 %d); do echo \"line $i\"; sleep 0.02; done'\n", lines))
	b := cp.run(ref, nil)
	final := cp.waitFinished(60*time.Second, b.ID)[0]
	log := cp.log(b.ID)
	lost, doubled := countLog(log, lines)
	row(t, "1", fmt.Sprintf("log lines lost after %d refused appends (runner side, %s)", proxy.refused.Load(), backend()), lost)
	if final.Status != "success" || lost != 0 || doubled != 0 {
		t.Fatalf("build %s (%s): %d lines lost, %d doubled after %d refusals:\n%s", final.Status, final.Reason, lost, doubled, proxy.refused.Load(), log)
	}
}
