package server_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/runner"
	"github.com/freshet-dev/freshet/internal/runner/executor/local"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/version"
)

// The version skew policy through the real server: runtimes and runners one minor version
// behind the control plane work and are reported outdated; further behind they are refused,
// with their version recorded and reported unsupported with the policy's message.
func TestVersionSkew(t *testing.T) {
	t.Cleanup(version.Override("v1.4.0"))
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))

	runRuntime := func(name, v string) {
		reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: name, AccessMode: "tunnel"})
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.New(agent.Options{Server: s.URL, Token: reg.Token, AccessMode: "tunnel", Version: v, DataDir: t.TempDir()}, nil, discard)
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); a.Run(rctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	runRuntime("lagging", "v1.3.2")
	runRuntime("ancient", "v1.2.0")
	r := waitRuntime(t, s.Admin, "lagging", 30*time.Second, "healthy")
	if sk := r.VersionSkew; sk == nil || sk.Status != "outdated" || sk.Agent != "v1.3.2" || sk.Server != "v1.4.0" || !strings.Contains(sk.Message, "one minor version") {
		t.Fatalf("lagging runtime's skew = %+v", sk)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := s.Admin.GetRuntime(ctx, "ancient")
		if err != nil {
			t.Fatal(err)
		}
		if sk := r.VersionSkew; sk != nil {
			if sk.Status != "unsupported" || sk.Agent != "v1.2.0" || !strings.Contains(sk.Message, "more than one minor version") || r.Status == "healthy" {
				t.Fatalf("refused runtime = %s, skew %+v", r.Status, sk)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused runtime's version was not recorded: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}

	runRunner := func(name, v string) {
		reg, err := s.Admin.RegisterRunner(ctx, client.RegisterRunnerRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		exec, err := local.New(local.Options{Root: t.TempDir(), KillGrace: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		rn, err := runner.New(runner.Options{Server: s.URL, Token: reg.Token, Name: name, Executor: "local", Concurrency: 1, Version: v, Transport: runner.TransportAuto}, exec, nil, discard)
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); rn.Run(rctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	runRunner("near", "v1.3.0")
	runRunner("far", "v2.0.0")
	want := map[string]string{"near": "outdated", "far": "unsupported"}
	deadline = time.Now().Add(30 * time.Second)
	for {
		list, err := s.Admin.ListRunners(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*client.VersionSkew{}
		for _, rn := range list.Items {
			got[rn.Name] = rn.VersionSkew
		}
		if got["near"] != nil && got["far"] != nil {
			for name, status := range want {
				if got[name].Status != status || got[name].Server != "v1.4.0" || got[name].Message == "" {
					t.Errorf("runner %s: skew %+v, want %s", name, got[name], status)
				}
			}
			if !strings.Contains(got["far"].Message, "another major version") {
				t.Errorf("far runner's message: %q", got["far"].Message)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runners' skew not reported: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
