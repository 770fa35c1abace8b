package runner

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/local"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

// TestContainerComposition runs composition and launch-composition steps on the real engine:
// a candidate reaches the composition's service by name, sees composition_variables and the
// build's workspace, and a service with add_flow_volume_to_composition writes into the
// workspace; a failing candidate fails its step with its exit code; a launched composition
// serves the steps after it until the build ends (runOnEngine checks nothing is left over),
// and a second launch under the same environment name replaces the first.
func TestContainerComposition(t *testing.T) {
	reg := containers.Registry(t)
	busybox, server := reg.Ref(containers.ImageBusybox), reg.Ref(containers.ImageServer)
	port := fmt.Sprint(containers.ServerPort)
	r := runOnEngine(t, `version: '1.0'
steps:
  prepare:
    image: `+busybox+`
    commands: ['echo from-workspace > "$CF_VOLUME_PATH/in.txt"']
  it:
    type: composition
    composition:
      version: '2'
      services:
        web:
          image: `+server+`
        writer:
          image: `+busybox+`
          command: sh -c 'echo "$GREETING" > /codefresh/volume/svc.txt; sleep 600'
    composition_candidates:
      tests:
        image: `+busybox+`
        command:
          - sh
          - -c
          - |
            for i in $(seq 1 100); do wget -q -O- http://web:`+port+`/ && break; sleep 0.2; done
            for i in $(seq 1 100); do [ -s "$CF_VOLUME_PATH/svc.txt" ] && break; sleep 0.2; done
            echo "service wrote: $(cat $CF_VOLUME_PATH/svc.txt)"
            echo "candidate sees: $GREETING $EXTRA $(cat $CF_VOLUME_PATH/in.txt) ${{CF_SHORT_REVISION}}"
    composition_variables:
      - GREETING=hello-compose
    environment:
      - EXTRA=step-env
    add_flow_volume_to_composition: true
  failing:
    type: composition
    fail_fast: false
    composition:
      version: '2'
      services:
        web: {image: `+server+`}
    composition_candidates:
      tests:
        image: `+busybox+`
        command: sh -c "exit 3"
  env:
    type: launch-composition
    composition:
      version: '2'
      services:
        web: {image: `+server+`}
    environment_name: review
    entry_point: web
  smoke:
    image: `+busybox+`
    commands:
      - for i in $(seq 1 100); do wget -q -O- http://web:`+port+`/ && exit 0; sleep 0.2; done; exit 1
  env_again:
    type: launch-composition
    composition:
      version: '2'
      services:
        api: {image: `+server+`}
    environment_name: review
  smoke_again:
    image: `+busybox+`
    commands:
      - for i in $(seq 1 100); do wget -q -O- http://api:`+port+`/ && break; sleep 0.2; done
      - if wget -q -T 2 -O- http://web:`+port+`/; then echo "old environment still reachable"; exit 1; fi
`, nil)
	if r.status != stSuccess {
		t.Fatalf("build %s (%s); want success (the failing step has fail_fast: false); log:\n%s", r.status, r.reason, r.log)
	}
	for name, want := range map[string]string{"prepare": stSuccess, "it": stSuccess, "failing": stFailed, "env": stSuccess, "smoke": stSuccess, "env_again": stSuccess, "smoke_again": stSuccess} {
		if got := r.states[name].Status; got != want {
			t.Errorf("step %s: %s (%s), want %s; log:\n%s", name, got, r.states[name].Message, want, r.log)
		}
	}
	if s := r.states["failing"]; s.ExitCode != 3 || !strings.Contains(s.Message, "candidate tests: exit code 3") {
		t.Errorf("failing step: exit code %d, message %q", s.ExitCode, s.Message)
	}
	for _, want := range []string{
		containers.ServerBody,
		"service wrote: hello-compose\n",
		"candidate sees: hello-compose step-env from-workspace abc1234\n",
		`environment "review" (launched by step env) is replaced`,
	} {
		if !strings.Contains(r.log, want) {
			t.Errorf("log lacks %q:\n%s", want, r.log)
		}
	}
}

// TestLintRefusesCompositions: an executor without containers refuses composition steps
// before any step runs.
func TestLintRefusesCompositions(t *testing.T) {
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
  it:
    type: composition
    composition: {version: '2', services: {db: {image: postgres:16}}}
    composition_candidates: {tests: {image: alpine, command: "true"}}
  env:
    type: launch-composition
    composition: {version: '2', services: {db: {image: postgres:16}}}
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
	for _, want := range []string{"step it: a composition step needs a container engine", "step env: a launch-composition step needs a container engine"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q lacks %q", reason, want)
		}
	}
	if _, out := runCheck(t, exec, ws); strings.Contains(out, "ran") {
		t.Error("a step ran")
	}
}
