package server_test

import (
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	gcrname "github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	mobyclient "github.com/moby/moby/client"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/runner"
	"github.com/freshet-dev/freshet/internal/runner/executor/container"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestMain stops the container engine and the loopback Kubernetes clusters the tests started.
func TestMain(m *testing.M) {
	code := kube.Run(m)
	if err := containers.Teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "containers: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// TestContainerPipelineEndToEnd runs a codefresh.yml through a real control plane and a runner
// with the container executor on a real engine: steps in their images, a Dockerfile built and
// then run, a step with a service container and its readiness check. (Pushes need the
// registries the control plane puts into jobs; the runner's own tests push to the registry.)
func TestContainerPipelineEndToEnd(t *testing.T) {
	reg := containers.Registry(t)
	eng := containers.Engine(t)
	cli := eng.Client(t)
	// The job carries no registry credentials here: the images are on the engine already.
	for _, n := range []string{containers.ImageBusybox, containers.ImageEcho, containers.ImageServer} {
		resp, err := cli.ImagePull(context.Background(), reg.Ref(n), mobyclient.ImagePullOptions{RegistryAuth: reg.RegistryAuth()})
		if err == nil {
			err = resp.Wait(context.Background())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range storetest_backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := servertest.Start(t, d)
			token := registerRunner(t, s.Admin, "ctr")
			exec, err := container.New(ctx, container.Options{Host: eng.Host, Runner: "ctr-" + string(d), KillGrace: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer exec.Close()
			r, err := runner.New(runner.Options{Server: s.URL, Token: token, Name: "ctr", Executor: container.Name, Concurrency: 2,
				Transport: runner.TransportAuto}, exec, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = r.Run(rctx) }()
			defer func() { cancel(); <-done }()

			busybox, echo, server := reg.Ref(containers.ImageBusybox), reg.Ref(containers.ImageEcho), reg.Ref(containers.ImageServer)
			yml := `version: '1.0'
steps:
  write:
    image: ` + busybox + `
    commands:
      - printf 'FROM ` + busybox + `\nRUN echo built-in-the-image > /msg\nCMD ["cat", "/msg"]\n' > Dockerfile
      - cat /etc/hostname > /dev/null && echo "in a container"
  echo:
    image: ` + echo + `
    cmd: [from, the, image]
  image:
    type: build
    image_name: freshet-e2e/app-` + string(d) + `
    tag: e2e
  run_it:
    image: ${{image}}
  with_db:
    image: ` + busybox + `
    commands: ['wget -q -O- http://db:` + fmt.Sprint(containers.ServerPort) + `/']
    services:
      composition:
        db: {image: '` + server + `'}
      readiness:
        image: ` + busybox + `
        commands: ['wget -q -O /dev/null http://db:` + fmt.Sprint(containers.ServerPort) + `/']
`
			if _, err := s.Admin.CreateProject(ctx, "app"); err != nil {
				t.Fatal(err)
			}
			// The build step pushes to the account's default registry, with its credentials.
			if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "loopback", Type: "registry", Registry: &client.RegistryContext{
				URL: reg.Addr, Username: reg.Username, Password: reg.Password, CA: string(reg.CACert), Default: true}}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "app", Name: "ctr", Spec: yml}); err != nil {
				t.Fatal(err)
			}
			b, err := s.Admin.RunPipeline(ctx, "app/ctr", client.RunRequest{Branch: "main"})
			if err != nil {
				t.Fatal(err)
			}
			final := waitBuild(t, s.Admin, b.ID, 3*time.Minute, "success", "failed", "terminated")
			logBytes, _ := s.Admin.BuildLog(ctx, b.ID, 0)
			log := string(logBytes)
			if final.Status != "success" {
				t.Fatalf("build %s (%s); log:\n%s", final.Status, final.Reason, log)
			}
			for _, want := range []string{"in a container", "entrypoint: from the image", "built-in-the-image", containers.ServerBody, "executor container"} {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
			for _, name := range []string{"write", "echo", "image", "run_it", "with_db"} {
				if st := stepByName(final, name); st.Status != "success" {
					t.Errorf("step %s = %+v", name, st)
				}
			}
			// The push is recorded on the build as the registry stored it, once.
			got, err := s.Admin.GetBuild(ctx, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			repo := reg.Ref("freshet-e2e/app-" + string(d))
			if len(got.Images) != 1 || got.Images[0].Repository != repo || got.Images[0].Registry != "loopback" || got.Images[0].Step != "image" ||
				!slices.Contains(got.Images[0].Tags, "e2e") || !strings.HasPrefix(got.Images[0].Digest, "sha256:") || got.Images[0].Size <= 0 || got.Images[0].Branch != "main" {
				t.Fatalf("images on the build = %+v, want one push of %s:e2e", got.Images, repo)
			}
			ref, err := gcrname.ParseReference(repo + "@" + got.Images[0].Digest)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := remote.Head(ref, remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password}), remote.WithTransport(reg.HTTPClient().Transport)); err != nil {
				t.Fatalf("the recorded digest is not in the registry: %v", err)
			}
			if strings.Contains(log, reg.Password) {
				t.Error("the registry password is in the build log")
			}
			// Nothing of the build is left on the engine.
			deadline := time.Now().Add(30 * time.Second)
			for {
				running, stored, err := exec.Leftovers(ctx, "")
				if err != nil {
					t.Fatal(err)
				}
				if len(running)+len(stored) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("left on the engine: running %v, stored %v", running, stored)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
