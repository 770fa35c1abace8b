package faults

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runnerv1"
)

// cuttingProxy stands between a runner and the control plane and cuts one AppendLog call in
// three a few milliseconds after it arrived: the connection to the control plane closes (a
// client timeout, a network cut) while the control plane is storing the chunk, so it may have
// stored all of it, part of it or nothing; the runner hears an error and sends the chunk again.
type cuttingProxy struct {
	next    *httputil.ReverseProxy
	appends atomic.Int64
	cut     atomic.Int64
}

func (p *cuttingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != runnerv1.ProcedureAppendLog || p.appends.Add(1)%3 != 0 {
		p.next.ServeHTTP(w, r)
		return
	}
	p.cut.Add(1)
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(rand.N(8000))*time.Microsecond)
	defer cancel()
	p.next.ServeHTTP(w, r.WithContext(ctx))
}

// Item 1 (control-plane side): a build's log is stored whole, each line once, and a build is
// never left unable to deliver its log, when appends are cut in the middle of being stored and
// the control plane is SIGKILLed twice while 12 builds stream 300 lines each. A chunk and the
// log's size are stored together or not at all; a chunk sent again that is already stored is
// answered as stored.
func TestFaultLogAppendsCutAndKilledMidWrite(t *testing.T) {
	const builds, lines = 12, 300
	cp := newControlPlane(t, "server")
	target, _ := url.Parse(cp.url)
	proxy := &cuttingProxy{next: httputil.NewSingleHostReverseProxy(target)}
	proxy.next.FlushInterval = -1
	proxy.next.ErrorLog = log.New(io.Discard, "", 0) // the cuts it makes
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close) // after the runner is gone: Close waits for its stream
	reg, err := cp.admin.RegisterRunner(t.Context(), runnerRequest("r1"))
	if err != nil {
		t.Fatal(err)
	}
	start(t, "runner r1", []string{"FRESHET_RUNNER_TOKEN=" + reg.Token}, "runner", "--server", front.URL, "--work-dir", t.TempDir(),
		"--log-level", "debug", "--concurrency", fmt.Sprint(builds))
	ref := cp.pipeline("stream", fmt.Sprintf(`version: '1.0'
steps:
  count:
    commands:
      - 'for i in $(seq 1 %d); do echo "line $i"; case $i in *0) sleep 0.1;; esac; done'
`, lines))
	var ids []string
	for range builds {
		ids = append(ids, cp.run(ref, nil).ID)
	}
	waitFor(t, 30*time.Second, "every build streaming its log", func() bool {
		for _, id := range ids {
			if b := cp.build(id); b.LogSize < 200 {
				return false
			}
		}
		return true
	})
	for range 2 {
		time.Sleep(700 * time.Millisecond)
		cp.kill()
		cp.start()
	}

	// Builds end within seconds; one that cannot deliver its log never does.
	deadline := time.Now().Add(45 * time.Second)
	done := make([]bool, builds)
	for all := false; !all && time.Now().Before(deadline); {
		all = true
		for i, id := range ids {
			if !done[i] {
				done[i] = finished(cp.build(id))
			}
			all = all && done[i]
		}
		time.Sleep(200 * time.Millisecond)
	}
	lost, doubled, stuck, truncated := 0, 0, 0, 0
	for i, id := range ids {
		l, d := countLog(cp.log(id), lines)
		lost += l
		doubled += d
		b := cp.build(id)
		switch {
		case !done[i]:
			stuck++
		case l > 0 && b.Status == "success":
			truncated++
		}
		if l > 0 || d > 0 || b.Status != "success" {
			t.Errorf("build %s: %s (%s), %d lines lost, %d doubled", id, b.Status, b.Reason, l, d)
		}
	}
	what := fmt.Sprintf("%d builds of %d lines, %d of %d appends cut, 2 SIGKILLs of the control plane (%s)", builds, lines, proxy.cut.Load(), proxy.appends.Load(), backend())
	row(t, "1", "log lines lost, "+what, lost)
	row(t, "1", "builds that could not deliver their log (still running 45 s later), same run", stuck)
	row(t, "1", "builds marked success with lines missing, same run", truncated)
	if doubled > 0 {
		row(t, "1", "log lines stored twice, same run", doubled)
	}
}
