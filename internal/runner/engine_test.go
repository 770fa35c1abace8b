package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/local"
)

// stepOf compiles a one-step pipeline and returns an engine over vars and its step.
func stepOf(t *testing.T, yaml string, vars map[string]string) (*engine, *spec.Step) {
	t.Helper()
	p, err := spec.Parse([]byte("version: '1.0'\nsteps:\n  s:\n" + yaml))
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(runnerv1.Job{BuildID: "b1", Variables: vars}, p, nil, executor.Workspace{Path: "/ws"}, nil, func(runnerv1.StepState) {}, nil)
	return e, p.Step("s")
}

func envOf(s executor.Step) map[string]string {
	m := map[string]string{}
	for _, v := range s.Env {
		m[v.Name] = v.Value
	}
	return m
}

func TestExecutorStepKeepsValuesOutOfScripts(t *testing.T) {
	const branch = `main$(touch${IFS}/tmp/x)"'`
	vars := map[string]string{"CF_BRANCH": branch, "FRESHET_VAR_CF_BRANCH": "overridden?"}
	e, st := stepOf(t, `    environment: [FRESHET_VAR_CF_BRANCH=mine]
    entry_point: [bash, -x]
    commands:
      - echo ${{CF_BRANCH}} "${{CF_BRANCH}}" '${{CF_BRANCH}}' ${{UNKNOWN}}
`, vars)
	s, err := e.executorStep(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `echo "${FRESHET_VAR_CF_BRANCH}" "${FRESHET_VAR_CF_BRANCH}" ''"${FRESHET_VAR_CF_BRANCH}"'' ${{UNKNOWN}}`
	if len(s.Commands) != 1 || s.Commands[0] != want {
		t.Errorf("commands = %q, want %q", s.Commands, want)
	}
	if s.EntryPoint != nil {
		t.Errorf("entry point %q kept with commands (documented as ignored)", s.EntryPoint)
	}
	// The step's own environment and the pipeline's variables cannot change what a reference reads.
	merged := executor.MergeEnv(nil, s.Env)
	if got := envOf(executor.Step{Env: merged})["FRESHET_VAR_CF_BRANCH"]; got != branch {
		t.Errorf("FRESHET_VAR_CF_BRANCH = %q, want the branch", got)
	}
}

// entry_point and cmd are the image's ENTRYPOINT and CMD, argument vectors as Codefresh and
// Docker take them: values go in as data.
func TestExecutorStepEntryPointAndCmd(t *testing.T) {
	e, st := stepOf(t, "    image: app\n    entry_point: [/app/server, --flag]\n    cmd: [--name, '${{CF_BRANCH}}']\n    pull_policy: Never\n",
		map[string]string{"CF_BRANCH": "a b; id"})
	s, err := e.executorStep(st)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.EntryPoint, "|") != "/app/server|--flag" || strings.Join(s.Cmd, "|") != "--name|a b; id" || len(s.Commands) != 0 {
		t.Errorf("entry point %q, cmd %q, commands %q", s.EntryPoint, s.Cmd, s.Commands)
	}
	if s.PullPolicy != "Never" {
		t.Errorf("pull policy %q", s.PullPolicy)
	}
	e, st = stepOf(t, "    image: app\n    cmd: [sh, -c, 'echo ${{CF_BRANCH}}']\n", map[string]string{"CF_BRANCH": "x"})
	if s, err = e.executorStep(st); err != nil || strings.Join(s.Cmd, "|") != `sh|-c|echo "${FRESHET_VAR_CF_BRANCH}"` || s.EntryPoint != nil {
		t.Errorf("cmd with a shell script: %q, %v", s.Cmd, err)
	}
}

func TestExecutorStepShellEntryPoint(t *testing.T) {
	e, st := stepOf(t, `    entry_point: [sh, -c, 'echo "${{CF_COMMIT_MESSAGE}}" ${{CF_BRANCH}}', arg0, '${{CF_BRANCH}}']
`, map[string]string{"CF_BRANCH": "a b", "CF_COMMIT_MESSAGE": `x"; id; "`})
	s, err := e.executorStep(st)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sh", "-c", `echo "${FRESHET_VAR_CF_COMMIT_MESSAGE}" "${FRESHET_VAR_CF_BRANCH}"`, "arg0", "a b"}
	if strings.Join(s.EntryPoint, "|") != strings.Join(want, "|") {
		t.Errorf("entry point = %q, want %q", s.EntryPoint, want)
	}
	env := envOf(s)
	if env["FRESHET_VAR_CF_COMMIT_MESSAGE"] != `x"; id; "` || env["FRESHET_VAR_CF_BRANCH"] != "a b" {
		t.Errorf("env = %v", env)
	}
}

func TestExecutorStepRefusesValues(t *testing.T) {
	vars := map[string]string{"CF_REPO_NAME": "../..", "CF_BRANCH": "x y", "BAD": "a[$(id)]", "REV": "--upload-pack=touch /tmp/x",
		"OK": "app", "CF_BRANCH_TAG_NORMALIZED": "feature_x"}
	tests := []struct{ yaml, field string }{
		{"    working_directory: ${{CF_VOLUME_PATH}}/${{CF_REPO_NAME}}\n    commands: [pwd]\n", "working_directory"},
		{"    working_directory: sub/${{CF_REPO_NAME}}/x\n    commands: [pwd]\n", "working_directory"},
		{"    image: repo/app:${{CF_BRANCH}}\n    commands: [pwd]\n", "image"},
		{"    commands: ['echo $(( ${{BAD}} + 1 ))']\n", "commands[0]"},
		{"    cmd: [sh, -c, 'let n=${{BAD}}']\n", "cmd[2]"},
		{"    entry_point: [sh, -c]\n    cmd: ['echo $(( ${{BAD}} ))']\n", "cmd[0]"},
		{"    entry_point: [bash, -c, 'echo $(( ${{BAD}} ))']\n", "entry_point[2]"},
		{"    type: git-clone\n    repo: https://git.example/a/b.git\n    revision: ${{REV}}\n", "revision"},
		{"    type: git-clone\n    repo: https://git.example/a/b.git\n    working_directory: ${{CF_VOLUME_PATH}}/${{CF_REPO_NAME}}\n", "working_directory"},
	}
	for _, tt := range tests {
		e, st := stepOf(t, tt.yaml, vars)
		_, err := e.executorStep(st)
		var fe *errdefs.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: err = %v, want one for %s", tt.yaml, err, tt.field)
		}
	}
	for _, ok := range []string{
		"    working_directory: ${{CF_VOLUME_PATH}}/${{OK}}/..\n    commands: [pwd]\n",
		"    image: repo/app:${{CF_BRANCH_TAG_NORMALIZED}}\n    commands: [pwd]\n",
		"    entry_point: [printf, '%s\\n', '${{BAD}}', '--name=${{CF_BRANCH}}']\n",
		"    cmd: [echo, 'let n=${{BAD}}']\n",
	} {
		e, st := stepOf(t, ok, vars)
		if _, err := e.executorStep(st); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// A step whose commands cannot be rewritten fails before anything runs, with the reason in the
// log and the step's message.
func TestEngineFailsRefusedStep(t *testing.T) {
	dir := t.TempDir()
	exec, err := local.New(local.Options{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ws, err := exec.Prepare(ctx, executor.Build{ID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Cleanup(ctx, ws)
	mark := filepath.Join(dir, "pwned")
	p, err := spec.Parse([]byte("version: '1.0'\nsteps:\n  s:\n    commands: ['echo $(( ${{N}} ))', 'touch " + mark + "']\n"))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	var states []runnerv1.StepState
	e := newEngine(runnerv1.Job{BuildID: "b1", Variables: map[string]string{"N": "a[$(touch " + mark + ")]"}}, p, exec, ws, &log,
		func(s runnerv1.StepState) { states = append(states, s) }, nil)
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	status, reason := e.run(runCtx)
	if status != stFailed || !strings.Contains(reason, "commands[0]") {
		t.Errorf("build %s (%s), want failed for commands[0]", status, reason)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the step ran")
	}
	if !strings.Contains(log.String(), "${{N}}") || strings.Contains(log.String(), "touch "+mark+")]") {
		t.Errorf("log:\n%s", log.String())
	}
}

// builderFunc is an executor with an image builder whose Build and Push are functions (the
// engine's retry of build steps needs no engine to be tested).
type builderFunc struct {
	executor.Executor
	build func() executor.BuildResult
}

func (b builderFunc) Build(context.Context, executor.Workspace, executor.BuildSpec, io.Writer) (executor.BuildResult, error) {
	return b.build(), nil
}

func (b builderFunc) Push(context.Context, executor.PushSpec, io.Writer) (executor.PushResult, error) {
	return executor.PushResult{Message: "not here"}, nil
}

// A build step is retried as its retry says.
func TestBuildStepRetries(t *testing.T) {
	exec, err := local.New(local.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	b := builderFunc{Executor: exec, build: func() executor.BuildResult {
		calls++
		if calls < 3 {
			return executor.BuildResult{Message: fmt.Sprintf("build failed (%d)", calls)}
		}
		return executor.BuildResult{ImageID: "sha256:abc"}
	}}
	p, err := spec.Parse([]byte("version: '1.0'\nsteps:\n  b:\n    type: build\n    image_name: app\n    disable_push: true\n    retry: {maxAttempts: 2, delay: 0.01}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	var final runnerv1.StepState
	e := newEngine(runnerv1.Job{BuildID: "b1"}, p, b, executor.Workspace{Path: "/ws"}, &log, func(s runnerv1.StepState) { final = s }, nil)
	status, reason := e.run(context.Background())
	if status != stSuccess || calls != 3 || final.Attempts != 3 || e.variables()["b.imageId"] != "sha256:abc" {
		t.Errorf("build %s (%s) after %d calls, state %+v; log:\n%s", status, reason, calls, final, log.String())
	}
}
