package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// greetStep is a step catalogue's step.yaml, written as Codefresh's marketplace writes them:
// metadata, spec.arguments as a JSON Schema in a JSON string, spec.steps.
const greetStep = `version: '1.0'
kind: step-type
metadata:
  name: greet
  version: 1.0.0
  description: Says hello.
  isPublic: false
spec:
  arguments: |-
    {
      "$schema": "http://json-schema.org/draft-07/schema#",
      "type": "object",
      "additionalProperties": false,
      "required": ["WHO"],
      "properties": {
        "WHO": {"type": "string"},
        "TIMES": {"type": "integer", "minimum": 1, "maximum": 3, "default": 2}
      }
    }
  steps:
    main:
      name: greet
      image: busybox
      commands:
        - echo "env says hello $WHO x$TIMES"
        - echo "ref says hello ${{WHO}}"
    export:
      image: busybox
      commands:
        - cf_export GREETED="$WHO"
`

// TestTypedPluginStepsFromCatalogue reads typed plugin steps from the operator's step
// catalogue, a real git repository served over HTTP: the API's lint (what `freshet pipeline
// lint` prints) validates the arguments against the step type's schema naming the field, and
// a build runs the step type's steps with the arguments as data — a value with shell syntax is
// printed, not run — and a pinned version missing from the catalogue is refused. A server
// without a catalogue refuses such steps, saying so.
func TestTypedPluginStepsFromCatalogue(t *testing.T) {
	ctx := context.Background()
	git := gitserver.New(t)
	catalog := git.NewRepo("steps")
	catalog.Commit("main", map[string]string{"greet/step.yaml": greetStep}, "greet 1.0.0")
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.StepCatalogURL = catalog.URL() }})
	startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
	if _, err := s.Admin.CreateProject(ctx, "p"); err != nil {
		t.Fatal(err)
	}

	marker := filepath.Join(t.TempDir(), "pwned")
	who := "$(touch " + marker + ") `id` ; echo"
	spec := `version: '1.0'
steps:
  hello:
    type: greet:1.0.0
    arguments:
      WHO: '` + who + `'
  after:
    commands:
      - echo "greeted=${{GREETED}}"
`
	res, err := s.Admin.LintPipeline(ctx, spec)
	if err != nil || !res.Valid {
		t.Fatalf("lint of a valid pipeline: %+v, %v", res, err)
	}
	bad := "version: '1.0'\nsteps:\n  hello:\n    type: greet\n    arguments:\n      WHO: x\n      TIMES: 7\n  old:\n    type: greet:0.9.0\n"
	res, err = s.Admin.LintPipeline(ctx, bad)
	if err != nil || res.Valid {
		t.Fatalf("lint of an invalid pipeline: %+v, %v", res, err)
	}
	fields := map[string]string{}
	for _, is := range res.Issues {
		fields[is.Field] = is.Message
	}
	if m := fields["steps.hello.arguments.TIMES"]; !strings.Contains(m, "maximum") || !strings.Contains(m, "greet") {
		t.Errorf("TIMES: %q (issues %+v)", m, res.Issues)
	}
	if m := fields["steps.old.type"]; !strings.Contains(m, `"greet:0.9.0" is not a step type`) {
		t.Errorf("old version: %q (issues %+v)", m, res.Issues)
	}
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "bad", Spec: bad}); err == nil {
		t.Error("a pipeline with invalid arguments was saved")
	}

	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "hello", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	b, err := s.Admin.RunPipeline(ctx, "p/hello", client.RunRequest{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitBuild(t, s.Admin, b.ID, 60*time.Second, "success", "failed")
	logb, _ := s.Admin.BuildLog(ctx, b.ID, 0)
	log := string(logb)
	if done.Status != "success" {
		t.Fatalf("build %s (%s):\n%s", done.Status, done.Reason, log)
	}
	for _, want := range []string{"env says hello " + who + " x2\n", "ref says hello " + who + "\n", "greeted=" + who + "\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("an argument's value ran as a command")
	}

	// A server without a catalogue says why it refuses the step.
	plain := servertest.Start(t, store.SQLite)
	res, err = plain.Admin.LintPipeline(ctx, spec)
	if err != nil || res.Valid || len(res.Issues) == 0 || !strings.Contains(res.Issues[0].Message, "no step catalogue") {
		t.Fatalf("lint without a catalogue: %+v, %v", res, err)
	}
}
