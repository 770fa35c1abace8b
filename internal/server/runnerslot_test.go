package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/runner"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// TestRunnerTakesTheNextBuildBeforeCompleteIsAnswered: the control plane frees a runner's slot
// when it stores the build's Complete and offers the next queued build at once, which can reach
// the runner before the answer to Complete does. A runner with one slot takes that offer: it
// counts the slot free from the moment it sends Complete. (Counting it busy until the answer
// drops the offer, and the next build waits out the offer's 5 s expiry.) A proxy between them
// holds the answer to the first Complete until the runner accepts the second build, or 60 s.
func TestRunnerTakesTheNextBuildBeforeCompleteIsAnswered(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	if _, err := s.Admin.CreateProject(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "x", Spec: "version: '1.0'\nsteps:\n  a:\n    commands: ['true']\n"}); err != nil {
		t.Fatal(err)
	}
	var builds []client.Build
	for range 2 {
		b, err := s.Admin.RunPipeline(ctx, "p/x", client.RunRequest{})
		if err != nil {
			t.Fatal(err)
		}
		builds = append(builds, b)
	}

	target, _ := url.Parse(s.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // the offer stream passes through as it comes
	var (
		mu        sync.Mutex
		completes int
		accepts   int
		held      context.Context // the first Complete's request, while its answer is held
		early     bool            // the second build was accepted while the runner still waited for that answer
		heldBy    string          // what released the held answer
	)
	acceptedNext := make(chan struct{})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, runnerv1.ProcedureAccept):
			mu.Lock()
			accepts++
			next := accepts == 2
			if next {
				early = held != nil && held.Err() == nil
			}
			mu.Unlock()
			rp.ServeHTTP(w, r)
			if next {
				close(acceptedNext)
			}
		case strings.HasSuffix(r.URL.Path, runnerv1.ProcedureComplete):
			mu.Lock()
			completes++
			first := completes == 1
			mu.Unlock()
			if !first {
				rp.ServeHTTP(w, r)
				return
			}
			// The control plane stores the Complete now; its answer waits.
			mu.Lock()
			held = r.Context()
			mu.Unlock()
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			by := "the second build's accept"
			select {
			case <-acceptedNext:
			case <-time.After(60 * time.Second):
				by = "the 60 s bound"
			}
			mu.Lock()
			heldBy = by
			mu.Unlock()
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(proxy.Close)

	token := registerRunner(t, s.Admin, "one-slot")
	startRunnerWith(t, runner.Options{Server: proxy.URL, Token: token, Name: "one-slot", Executor: "local", Concurrency: 1,
		Transport: runner.TransportAuto})
	for _, b := range builds {
		if got := waitBuild(t, s.Admin, b.ID, 2*time.Minute, "success", "failed"); got.Status != "success" {
			t.Fatalf("build %s: %s (%s)", b.ID, got.Status, got.Reason)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !early || heldBy != "the second build's accept" {
		t.Fatalf("the runner did not take the second build while it waited for the answer to the first Complete (released by %s; %d Completes sent): it kept the slot busy", heldBy, completes)
	}
}
