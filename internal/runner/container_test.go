package runner

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/container"
	"github.com/freshet-dev/freshet/internal/runner/executor/local"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

func TestMain(m *testing.M) { containers.Main(m) }

// ctrRun runs pipeline yaml on the container executor of the shared test engine, with the test
// registry as the job's default registry "loopback", and returns the build's status, reason,
// log, step states and the engine it ran on.
type ctrRun struct {
	status, reason, log string
	states              map[string]runnerv1.StepState
	images              map[string][]runnerv1.Image
	vars                map[string]string
}

func runOnEngine(t *testing.T, yaml string, regs []runnerv1.Registry) ctrRun {
	t.Helper()
	return runOnEngineWith(t, yaml, regs, nil, nil)
}

// runOnEngineWith is runOnEngine with more job variables and secrets (values masked in the log).
func runOnEngineWith(t *testing.T, yaml string, regs []runnerv1.Registry, vars map[string]string, secrets []string) ctrRun {
	t.Helper()
	reg := containers.Registry(t)
	eng := containers.Engine(t)
	exec, err := container.New(context.Background(), container.Options{Host: eng.Host, Runner: "runner-test", KillGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Close()
	if regs == nil {
		regs = []runnerv1.Registry{{Name: "loopback", URL: reg.Addr, Username: reg.Username, Password: reg.Password, CA: string(reg.CACert), Default: true}}
	}
	p, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ws, err := exec.Prepare(ctx, executor.Build{ID: "b-" + strings.ReplaceAll(t.Name(), "/", "-")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := exec.Cleanup(context.Background(), ws); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		running, stored, err := exec.Leftovers(context.Background(), ws.Handle)
		if err != nil || len(running)+len(stored) > 0 {
			t.Errorf("after cleanup: running %v, stored %v, %v", running, stored, err)
		}
	}()
	var mu sync.Mutex
	r := ctrRun{states: map[string]runnerv1.StepState{}, images: map[string][]runnerv1.Image{}}
	var log bytes.Buffer
	job := runnerv1.Job{BuildID: "b1", Variables: map[string]string{"CF_BRANCH_TAG_NORMALIZED": "main", "CF_SHORT_REVISION": "abc1234"}, Registries: regs, Secrets: secrets}
	maps.Copy(job.Variables, vars)
	var e *engine
	e = newEngine(job, p, exec, ws, &syncWriter{w: &log}, func(s runnerv1.StepState) {
		mu.Lock()
		defer mu.Unlock()
		r.states[s.Name] = s
		if im := e.imagesOf(s); im != nil {
			r.images[s.Name] = im
		}
	}, nil)
	r.status, r.reason = e.run(ctx)
	r.log, r.vars = log.String(), e.variables()
	return r
}

// TestContainerPipeline runs a Codefresh pipeline the way a platform team writes one: steps in
// their images, a Dockerfile written by one step and built by the next, pushed to the default
// registry and again by a push step, a step with a service container, entry_point and cmd as the
// image's own.
func TestContainerPipeline(t *testing.T) {
	reg := containers.Registry(t)
	busybox, echo, server := reg.Ref(containers.ImageBusybox), reg.Ref(containers.ImageEcho), reg.Ref(containers.ImageServer)
	repo := fmt.Sprintf("freshet-runner-test/app-%d", time.Now().UnixNano())
	r := runOnEngine(t, `version: '1.0'
steps:
  prepare:
    image: `+busybox+`
    commands:
      - mkdir -p app
      - printf 'FROM `+busybox+`\nARG GREETING\nRUN echo "$GREETING" > /greeting\nCMD ["cat", "/greeting"]\n' > app/Dockerfile
      - cf_export PREPARED=yes
  image_defaults:
    image: `+echo+`
  image_cmd:
    image: `+echo+`
    cmd: [hello, '${{CF_SHORT_REVISION}}']
  image_entry:
    image: `+echo+`
    entry_point: [sh, -c]
    cmd: ['echo "entry $FRESHET_TEST_IMAGE $PREPARED ${{CF_BRANCH_TAG_NORMALIZED}}"']
  build:
    type: build
    image_name: `+repo+`
    working_directory: app
    tags: [v1, '${{CF_SHORT_REVISION}}']
    build_arguments: [GREETING=hello from the build]
  run_built:
    image: ${{build}}
  release:
    type: push
    candidate: ${{build}}
    tags: [release]
  with_service:
    image: `+busybox+`
    commands:
      - wget -q -O- http://web:`+fmt.Sprint(containers.ServerPort)+`/
    services:
      composition:
        web:
          image: `+server+`
      readiness:
        image: `+busybox+`
        commands: ['wget -q -O /dev/null http://web:`+fmt.Sprint(containers.ServerPort)+`/']
        periodSeconds: 1
        timeoutSeconds: 60
`, nil)
	if r.status != stSuccess {
		t.Fatalf("build %s (%s); log:\n%s", r.status, r.reason, r.log)
	}
	for _, want := range []string{
		containers.EchoOutput,
		"entrypoint: hello abc1234\n",
		"entry echo yes main\n",
		"hello from the build\n",
		containers.ServerBody,
	} {
		if !strings.Contains(r.log, want) {
			t.Errorf("log lacks %q:\n%s", want, r.log)
		}
	}
	built := r.images["build"]
	if len(built) != 1 || built[0].Registry != "loopback" || built[0].Repository != reg.Addr+"/"+repo ||
		strings.Join(built[0].Tags, ",") != "v1,abc1234" || !strings.HasPrefix(built[0].Digest, "sha256:") || built[0].Size <= 0 {
		t.Errorf("build pushed %+v", built)
	}
	pushed := r.images["release"]
	if len(pushed) != 1 || strings.Join(pushed[0].Tags, ",") != "release" || len(built) == 1 && pushed[0].Digest != built[0].Digest {
		t.Errorf("push pushed %+v (build %+v)", pushed, built)
	}
	if r.vars["build"] != reg.Addr+"/"+repo+":v1" || !strings.HasPrefix(r.vars["build.imageId"], "sha256:") || r.vars["build.digest"] != built[0].Digest {
		t.Errorf("build variables: build=%q imageId=%q digest=%q", r.vars["build"], r.vars["build.imageId"], r.vars["build.digest"])
	}
	// The registry has what was reported.
	hc := reg.HTTPClient()
	for _, tag := range []string{"v1", "abc1234", "release"} {
		req, _ := http.NewRequest(http.MethodHead, "https://"+reg.Addr+"/v2/"+repo+"/manifests/"+tag, nil)
		req.SetBasicAuth(reg.Username, reg.Password)
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Docker-Content-Digest") != built[0].Digest {
			t.Errorf("registry %s:%s: %d %s, want %s", repo, tag, resp.StatusCode, resp.Header.Get("Docker-Content-Digest"), built[0].Digest)
		}
	}
}

// TestContainerInlineDockerfile builds Codefresh's inline form (dockerfile: {content: …}) with
// the context's own Dockerfile shadowed, lowercases the tag (tag_policy: lowercase) and names a
// cache image (cache_from: the image the first build pushed); a line of the inline Dockerfile
// that fails is reported as such.
func TestContainerInlineDockerfile(t *testing.T) {
	reg := containers.Registry(t)
	busybox := reg.Ref(containers.ImageBusybox)
	repo := fmt.Sprintf("freshet-runner-test/inline-%d", time.Now().UnixNano())
	r := runOnEngine(t, `version: '1.0'
steps:
  prepare:
    image: `+busybox+`
    commands: ["echo 'FROM scratch' > Dockerfile", "echo from-the-context > msg.txt"]
  build:
    type: build
    image_name: `+repo+`
    tag: Feature-X
    tag_policy: lowercase
    dockerfile:
      content: |
        FROM `+busybox+`
        COPY msg.txt /msg.txt
        CMD ["cat", "/msg.txt"]
  again:
    type: build
    image_name: `+repo+`
    tag: again
    cache_from: ['`+reg.Addr+"/"+repo+`:feature-x']
    dockerfile:
      content: |
        FROM `+busybox+`
        COPY msg.txt /msg.txt
        CMD ["cat", "/msg.txt"]
  run_built:
    image: ${{build}}
  broken:
    type: build
    image_name: `+repo+`
    disable_push: true
    dockerfile:
      content: |
        FROM `+busybox+`
        # a comment
        RUN echo inline-broken && exit 4
`, nil)
	if r.status != stFailed || !strings.Contains(r.reason, "step broken failed") ||
		!strings.Contains(r.reason, "the inline dockerfile line 3 (RUN echo inline-broken && exit 4)") {
		t.Fatalf("build %s (%s), want the broken step to fail at line 3 of the inline dockerfile; log:\n%s", r.status, r.reason, r.log)
	}
	for _, name := range []string{"prepare", "build", "again", "run_built"} {
		if r.states[name].Status != "success" {
			t.Errorf("step %s: %+v", name, r.states[name])
		}
	}
	if !strings.Contains(r.log, "from-the-context\n") {
		t.Errorf("the built image did not run:\n%s", r.log)
	}
	if built := r.images["build"]; len(built) != 1 || strings.Join(built[0].Tags, ",") != "feature-x" {
		t.Errorf("build pushed %+v, want the tag lowercased", built)
	}
}

// TestContainerBadInput: each bad input fails its step with one line naming the image,
// registry, or file and line, and the log keeps what the step printed.
func TestContainerBadInput(t *testing.T) {
	reg := containers.Registry(t)
	busybox := reg.Ref(containers.ImageBusybox)
	wrong := []runnerv1.Registry{{Name: "loopback", URL: reg.Addr, Username: reg.Username, Password: "wrong", Default: true}}
	for _, tc := range []struct {
		name, steps string
		regs        []runnerv1.Registry
		reason      []string
	}{
		{"missing image", "  s:\n    image: " + reg.Ref("freshet-test/nope:v1") + "\n    commands: [true]\n", nil,
			[]string{"step s failed", reg.Ref("freshet-test/nope:v1"), "could not be pulled"}},
		{"refused credentials", "  s:\n    image: " + reg.Ref(containers.ImageMultiLayer) + "\n    pull_policy: Always\n", wrong,
			[]string{"step s failed", reg.Ref(containers.ImageMultiLayer), "registry loopback"}},
		{"dockerfile line", "  w:\n    image: " + busybox + "\n    commands: [\"printf 'FROM " + busybox + "\\\\n\\\\n# ok\\\\nRUN echo fine\\\\nRUN echo broken-step-output && exit 3\\\\n' > Dockerfile\"]\n" +
			"  b:\n    type: build\n    image_name: freshet-runner-test/broken\n    disable_push: true\n", nil,
			[]string{"step b failed", "/codefresh/volume/Dockerfile line 5 (RUN echo broken-step-output && exit 3)"}},
		{"push without a context", "  w:\n    image: " + busybox + "\n    commands: [\"echo 'FROM " + busybox + "' > Dockerfile\"]\n" +
			"  b:\n    type: build\n    image_name: freshet-runner-test/nopush\n    registry: nowhere\n", nil,
			[]string{"step b failed", `no registry context named "nowhere"`, "loopback"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runOnEngine(t, "version: '1.0'\nsteps:\n"+tc.steps, tc.regs)
			if r.status != stFailed {
				t.Fatalf("status %s, want failed; log:\n%s", r.status, r.log)
			}
			for _, w := range tc.reason {
				if !strings.Contains(r.reason, w) {
					t.Errorf("reason %q lacks %q", r.reason, w)
				}
			}
			if strings.Contains(r.reason, "\n") {
				t.Errorf("reason is not one line: %q", r.reason)
			}
			if tc.name == "dockerfile line" && !strings.Contains(r.log, "broken-step-output") {
				t.Errorf("the log lost the failing instruction's output:\n%s", r.log)
			}
		})
	}
}

// TestContainerContextLimit: a build context over the executor's limit fails the step and says
// so.
func TestContainerContextLimit(t *testing.T) {
	reg := containers.Registry(t)
	eng := containers.Engine(t)
	exec, err := container.New(context.Background(), container.Options{Host: eng.Host, Runner: "runner-test", MaxContextSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Close()
	ctx := context.Background()
	ws, err := exec.Prepare(ctx, executor.Build{ID: "limit"})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Cleanup(ctx, ws)
	busybox := reg.Ref(containers.ImageBusybox)
	p, err := spec.Parse([]byte("version: '1.0'\nsteps:\n  w:\n    image: " + busybox + "\n    commands: [\"echo 'FROM " + busybox + "' > Dockerfile\", 'head -c 3000000 /dev/zero > big']\n" +
		"  b:\n    type: build\n    image_name: freshet-runner-test/big\n    disable_push: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	e := newEngine(runnerv1.Job{BuildID: "limit"}, p, exec, ws, &syncWriter{w: &log}, func(runnerv1.StepState) {}, nil)
	status, reason := e.run(ctx)
	if status != stFailed || !strings.Contains(reason, "larger than the limit of 1 MiB") {
		t.Errorf("build %s (%s); log:\n%s", status, reason, log.String())
	}
}

// TestLintRefusesContainerSteps: on an executor without containers, build, push and service
// steps fail the build before any step runs, one line each.
func TestLintRefusesContainerSteps(t *testing.T) {
	exec, err := local.New(local.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ws, err := exec.Prepare(ctx, executor.Build{ID: "lint"})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Cleanup(ctx, ws)
	p, err := spec.Parse([]byte(`version: '1.0'
steps:
  first:
    commands: ['touch "$CF_VOLUME_PATH/ran"']
  b:
    type: build
    image_name: app
  p:
    type: push
    candidate: ${{b}}
  s:
    image: alpine
    commands: [true]
    services: {composition: {db: {image: postgres:16}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	var states []runnerv1.StepState
	e := newEngine(runnerv1.Job{BuildID: "lint"}, p, exec, ws, &log, func(s runnerv1.StepState) { states = append(states, s) }, nil)
	status, reason := e.run(ctx)
	if status != stFailed || len(states) != 0 {
		t.Fatalf("build %s (%s), states %v; want failed before any step", status, reason, states)
	}
	for _, want := range []string{"step b: a build step needs a container engine", "step p: a push step needs", "step s: its services (image postgres:16) need a container engine"} {
		if !strings.Contains(reason, want) || !strings.Contains(log.String(), want) {
			t.Errorf("reason %q / log %q lacks %q", reason, log.String(), want)
		}
	}
	if _, out := runCheck(t, exec, ws); strings.Contains(out, "ran") {
		t.Error("a step ran")
	}
}

func runCheck(t *testing.T, exec executor.Executor, ws executor.Workspace) (executor.Result, string) {
	var out bytes.Buffer
	res, err := exec.Run(context.Background(), ws, executor.Step{Name: "check", Commands: []string{`ls "$CF_VOLUME_PATH"`}}, &out)
	if err != nil {
		t.Fatal(err)
	}
	return res, out.String()
}
