package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/runner"
	"github.com/freshet-dev/freshet/internal/runner/executor/local"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// startRunner runs an in-process runner with the local executor until the returned stop is
// called (stop kills its steps, like a runner process dying) or the test ends.
func startRunner(t *testing.T, s *servertest.Server, token, name string, labels map[string]string) (stop func()) {
	t.Helper()
	return startRunnerWith(t, runner.Options{Server: s.URL, Token: token, Name: name, Executor: "local", Concurrency: 4,
		Labels: labels, Transport: runner.TransportAuto})
}

// startRunnerWith is startRunner with the runner's options given whole.
func startRunnerWith(t *testing.T, opts runner.Options) (stop func()) {
	t.Helper()
	name := opts.Name
	exec, err := local.New(local.Options{Root: t.TempDir(), KillGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("runner", name)
	}
	r, err := runner.New(opts, exec, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(ctx); err != nil {
			t.Errorf("runner %s: %v", name, err)
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func registerRunner(t *testing.T, c *client.Client, name string) string {
	t.Helper()
	r, err := c.RegisterRunner(context.Background(), client.RegisterRunnerRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return r.Token
}

// waitBuild waits until build id reaches one of the statuses.
func waitBuild(t *testing.T, c *client.Client, id string, timeout time.Duration, statuses ...string) client.Build {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, err := c.GetBuild(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range statuses {
			if b.Status == s {
				return b
			}
		}
		if time.Now().After(deadline) {
			log, _ := c.BuildLog(context.Background(), id, 0)
			t.Fatalf("build %s is %s after %s, want %v; log:\n%s", id, b.Status, timeout, statuses, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stepByName(b client.Build, name string) client.Step {
	for _, s := range b.Steps {
		if s.Name == name {
			return s
		}
	}
	return client.Step{}
}

const fullSpec = `version: '1.0'
stages: [checkout, test, release]
steps:
  clone:
    type: git-clone
    stage: checkout
    repo: ${{REPO_URL}}
    revision: main
  build:
    stage: test
    working_directory: ${{CF_VOLUME_PATH}}/app
    commands:
      - cat VERSION
      - cf_export APP_VERSION=$(cat VERSION)
  flaky:
    stage: test
    retry:
      maxAttempts: 2
      delay: 1
    commands:
      - n=$(cat "$CF_VOLUME_PATH/tries" 2>/dev/null || echo 0); echo $((n+1)) > "$CF_VOLUME_PATH/tries"
      - test "$(cat "$CF_VOLUME_PATH/tries")" -ge 2
  checks:
    type: parallel
    stage: test
    steps:
      unit:
        commands: [ 'echo unit ok' ]
      lint:
        commands: [ 'echo lint ok' ]
  secret_split:
    stage: test
    commands:
      - printf 'token=%s' "$(printf '%s' "$TOKEN" | cut -c1-6)"; sleep 0.3; printf '%s\n' "$(printf '%s' "$TOKEN" | cut -c7-)"
  gate:
    type: pending-approval
    stage: release
  release:
    stage: release
    commands:
      - 'echo "releasing ${{APP_VERSION}} from ${{CF_BRANCH}}"'
  only_tags:
    stage: release
    commands: [ 'echo never' ]
    when:
      branch:
        only: [ '/^v\d+/' ]
`

func TestPipelineEndToEnd(t *testing.T) {
	for _, d := range storetest_backends() {
		t.Run(string(d), func(t *testing.T) { testPipelineEndToEnd(t, d) })
	}
}

func testPipelineEndToEnd(t *testing.T, d store.Dialect) {
	ctx := context.Background()
	s := servertest.Start(t, d)
	git := gitserver.New(t)
	repo := git.NewRepo("app")
	repo.Commit("main", map[string]string{"VERSION": "1.4.2\n", "README.md": "app\n"}, "first")
	startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)

	const token = "tok-SECRET-8642-abcdef"
	if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "creds", Type: "secret", Values: map[string]string{"TOKEN": token}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateProject(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "app", Name: "ci", Spec: fullSpec,
		Config: client.PipelineConfig{Contexts: []string{"creds"}, Variables: []client.Variable{{Key: "REPO_URL", Value: repo.URL()}}}}); err != nil {
		t.Fatal(err)
	}
	b, err := s.Admin.RunPipeline(ctx, "app/ci", client.RunRequest{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	// Follow the log live while the build runs.
	logDone := make(chan string, 1)
	go func() {
		var sb strings.Builder
		s.Admin.FollowLog(ctx, b.ID, 0, func(ev client.LogEvent) error {
			sb.Write(ev.Data)
			return nil
		})
		logDone <- sb.String()
	}()
	waitBuild(t, s.Admin, b.ID, 30*time.Second, "pending-approval")
	// A comment with a line break is refused, naming the field; nothing is decided.
	if err := s.Admin.DecideBuild(ctx, b.ID, true, "ship\nit"); !invalidField(err, "comment") {
		t.Fatalf("approve with a two-line comment: %v, want invalid comment", err)
	}
	if err := s.Admin.DecideBuild(ctx, b.ID, true, "  ship it  "); err != nil {
		t.Fatal(err)
	}
	final := waitBuild(t, s.Admin, b.ID, 30*time.Second, "success", "failed", "terminated")
	var followed string
	select {
	case followed = <-logDone:
	case <-time.After(10 * time.Second):
		t.Fatal("log follower did not end with the build")
	}
	stored, _ := s.Admin.BuildLog(ctx, b.ID, 0)
	if final.Status != "success" {
		t.Fatalf("build %s: %s\n%s", final.Status, final.Reason, stored)
	}
	if followed != string(stored) {
		t.Fatalf("followed log differs from stored log:\n--- followed\n%s\n--- stored\n%s", followed, stored)
	}
	log := string(stored)
	for _, want := range []string{"cloned ", "1.4.2", "unit ok", "lint ok", "releasing 1.4.2 from main", "token=****"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if strings.Contains(log, token) || strings.Contains(log, token[6:]) && strings.Contains(log, "token="+token[:6]) {
		t.Errorf("the secret leaked into the log:\n%s", log)
	}
	if st := stepByName(final, "flaky"); st.Status != "success" || st.Attempts != 2 {
		t.Errorf("flaky step = %+v, want success on attempt 2", st)
	}
	if st := stepByName(final, "only_tags"); st.Status != "skipped" {
		t.Errorf("only_tags = %+v, want skipped", st)
	}
	if st := stepByName(final, "gate"); st.Status != "success" {
		t.Errorf("gate = %+v", st)
	}
	for _, name := range []string{"clone", "build", "unit", "lint", "release"} {
		if st := stepByName(final, name); st.Status != "success" {
			t.Errorf("step %s = %+v", name, st)
		}
	}
	// The approval is audited.
	// The approval is audited with its comment; the refused one is audited as a failure.
	evs, err := s.Admin.ListAudit(ctx, client.AuditFilter{Action: "build.approve", Result: "success"})
	if err != nil || len(evs.Items) != 1 || evs.Items[0].Detail != `step gate approved: "ship it"` {
		t.Fatalf("build.approve audit = %+v, %v", evs.Items, err)
	}
	if evs, err := s.Admin.ListAudit(ctx, client.AuditFilter{Action: "build.approve", Result: "failure"}); err != nil || len(evs.Items) != 1 {
		t.Fatalf("refused build.approve audit = %+v, %v", evs.Items, err)
	}
}

func storetest_backends() []store.Dialect {
	if os.Getenv("FRESHET_TEST_POSTGRES") != "" {
		return []store.Dialect{store.SQLite, store.Postgres}
	}
	return []store.Dialect{store.SQLite}
}

func TestCancelKillsTheProcessTree(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
	s.Admin.CreateProject(ctx, "p")
	pidDir := t.TempDir()
	spec := fmt.Sprintf(`version: '1.0'
steps:
  long:
    commands:
      - sh -c 'echo $$ > %[1]s/child; sleep 300' &
      - echo $$ > %[1]s/shell
      - sleep 300
`, pidDir)
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "long", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	b, err := s.Admin.RunPipeline(ctx, "p/long", client.RunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	deadline := time.Now().Add(20 * time.Second)
	for len(pids) < 2 {
		pids = pids[:0]
		for _, f := range []string{"shell", "child"} {
			if b, err := os.ReadFile(filepath.Join(pidDir, f)); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("step did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if err := s.Admin.CancelBuild(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	final := waitBuild(t, s.Admin, b.ID, 20*time.Second, "terminated")
	t.Logf("cancel → terminated in %s", time.Since(start).Round(time.Millisecond))
	if st := stepByName(final, "long"); st.Status != "terminated" {
		t.Errorf("step long = %+v", st)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is still alive after cancel", pid)
		}
	}
	// A finished build cannot be cancelled again.
	if err := s.Admin.CancelBuild(ctx, b.ID); !client.IsStatus(err, 409) {
		t.Errorf("second cancel: %v, want 409", err)
	}
}

// alive reports whether pid is a live process: zombies (dead, waiting to be reaped by an
// init that may never do it in a sandbox) do not count.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S …".
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func TestRunnerDiesMidBuildRequeuesWithoutDoubleRun(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	s.Dispatcher().SetLeaseTTL(1500 * time.Millisecond)
	s.Admin.CreateProject(ctx, "p")
	marks := t.TempDir()
	// The step records which runner ran it and whether another run overlapped.
	spec := fmt.Sprintf(`version: '1.0'
steps:
  work:
    commands:
      - 'if [ -e %[1]s/running ]; then echo overlap >> %[1]s/overlaps; fi'
      - 'touch %[1]s/running; echo "$RUNNER_NAME" >> %[1]s/runs'
      - 'sleep ${{SLEEP}}'
      - 'rm -f %[1]s/running'
`, marks)
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "work", Spec: spec,
		Config: client.PipelineConfig{Variables: []client.Variable{{Key: "SLEEP", Value: "4"}}}}); err != nil {
		t.Fatal(err)
	}
	stop1 := startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
	b, err := s.Admin.RunPipeline(ctx, "p/work", client.RunRequest{Variables: map[string]string{"RUNNER_NAME": "first", "SLEEP": "30"}})
	if err != nil {
		t.Fatal(err)
	}
	waitBuild(t, s.Admin, b.ID, 20*time.Second, "running")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(marks, "running")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("step did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop1() // the runner dies: its steps die with it, and it reports nothing more
	os.Remove(filepath.Join(marks, "running"))
	// Only the dead runner's lease is short. With 1.5 s for r2 too, a machine at load 20 starved
	// r2's heartbeats long enough that attempt 2 lost its lease as well and the build failed
	// (reproduced with -count=6 under load): the short TTL was the test's, not the product's.
	s.Dispatcher().SetLeaseTTL(time.Minute)
	startRunner(t, s, registerRunner(t, s.Admin, "r2"), "r2", nil)
	// r1's lease expires (at most 1.5 s + 5 s grace), the build is requeued, and r2 runs attempt 2.
	// The run variables stay, so attempt 2 sleeps 30 s too: cut that short by cancelling once it runs.
	deadline = time.Now().Add(30 * time.Second)
	for {
		cur, _ := s.Admin.GetBuild(ctx, b.ID)
		if cur.Attempt == 2 && cur.Status == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("build not requeued and retaken: %+v", cur)
		}
		time.Sleep(50 * time.Millisecond)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		runs, _ := os.ReadFile(filepath.Join(marks, "runs"))
		if strings.Count(string(runs), "first") == 2 {
			break
		}
		if time.Now().After(deadline) {
			cur, _ := s.Admin.GetBuild(ctx, b.ID)
			log, _ := s.Admin.BuildLog(ctx, b.ID, 0)
			t.Fatalf("second attempt did not start; build %+v; runs:\n%s\nlog:\n%s\n%s", cur, runs, log, runnerStacks())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Admin.CancelBuild(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	final := waitBuild(t, s.Admin, b.ID, 20*time.Second, "terminated")
	if final.Attempt != 2 {
		t.Errorf("attempt = %d, want 2", final.Attempt)
	}
	if o, _ := os.ReadFile(filepath.Join(marks, "overlaps")); len(o) > 0 {
		t.Errorf("two runs overlapped: %s", o)
	}
	log, _ := s.Admin.BuildLog(ctx, b.ID, 0)
	if !strings.Contains(string(log), "requeued") || strings.Count(string(log), "#1 (attempt 1)") != 1 || !strings.Contains(string(log), "(attempt 2)") {
		t.Errorf("log does not tell the story of the requeue:\n%s", log)
	}
}

func TestRunnersOnlyGetTheirAccountsBuilds(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	prov, err := s.Identity().Provision(ctx, "bravo", "eve@bravo.test", "eve-password")
	if err != nil {
		t.Fatal(err)
	}
	_ = prov
	eve := s.Login(t, "eve@bravo.test", "eve-password")
	startRunner(t, s, registerRunner(t, eve, "b-runner"), "b-runner", nil)
	s.Admin.CreateProject(ctx, "p")
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "x", Spec: isolationSpec}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		b, err := s.Admin.RunPipeline(ctx, "p/x", client.RunRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ID)
	}
	time.Sleep(2 * time.Second) // several dispatch rounds
	for _, id := range ids {
		if b, _ := s.Admin.GetBuild(ctx, id); b.Status != "queued" {
			t.Fatalf("account A's build %s is %s with only account B's runner connected", id, b.Status)
		}
	}
	// Now A's own runner takes them.
	startRunner(t, s, registerRunner(t, s.Admin, "a-runner"), "a-runner", nil)
	for _, id := range ids {
		waitBuild(t, s.Admin, id, 20*time.Second, "success")
	}
}

func TestDrainedRunnerTakesNoNewBuilds(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
	s.Admin.CreateProject(ctx, "p")
	s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "x", Spec: isolationSpec})
	first, _ := s.Admin.RunPipeline(ctx, "p/x", client.RunRequest{})
	waitBuild(t, s.Admin, first.ID, 20*time.Second, "success")
	if err := s.Admin.DrainRunner(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	b, _ := s.Admin.RunPipeline(ctx, "p/x", client.RunRequest{})
	time.Sleep(2 * time.Second)
	if cur, _ := s.Admin.GetBuild(ctx, b.ID); cur.Status != "queued" {
		t.Fatalf("a drained runner took build %s (%s)", b.ID, cur.Status)
	}
	// A fresh runner takes it.
	startRunner(t, s, registerRunner(t, s.Admin, "r2"), "r2", nil)
	waitBuild(t, s.Admin, b.ID, 20*time.Second, "success")
}

func TestRunnerLabelsSelectRunners(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	startRunner(t, s, registerRunner(t, s.Admin, "plain"), "plain", nil)
	s.Admin.CreateProject(ctx, "p")
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "gpu", Spec: isolationSpec,
		Config: client.PipelineConfig{RunnerLabels: map[string]string{"gpu": "true"}}}); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Admin.RunPipeline(ctx, "p/gpu", client.RunRequest{})
	time.Sleep(1500 * time.Millisecond)
	if cur, _ := s.Admin.GetBuild(ctx, b.ID); cur.Status != "queued" {
		t.Fatalf("build needing gpu=true ran on an unlabelled runner: %s", cur.Status)
	}
	startRunner(t, s, registerRunner(t, s.Admin, "gpu"), "gpu", map[string]string{"gpu": "true"})
	if done := waitBuild(t, s.Admin, b.ID, 20*time.Second, "success"); done.RunnerID == "" {
		t.Fatal("no runner recorded")
	}
}

func TestSpecFromGitAtTheBuildsRevision(t *testing.T) {
	ctx := context.Background()
	// The test's git server is on loopback, which the operator must allow for tenants' URLs.
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.Net.PrivateNetworks = []string{"loopback"} }})
	startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
	git := gitserver.New(t, gitserver.WithBasicAuth("bot", "bot-token-123"))
	repo := git.NewRepo("svc")
	v1 := repo.Commit("main", map[string]string{".freshet/ci.yml": "version: '1.0'\nsteps:\n  a:\n    commands: ['echo spec-v1']\n"}, "v1")
	s.Admin.CreateProject(ctx, "p")
	s.Admin.CreateContext(ctx, client.ContextRequest{Name: "gitcreds", Type: "secret", Values: map[string]string{"GIT_USERNAME": "bot", "GIT_PASSWORD": "bot-token-123"}})

	// A wrong path is refused at once, naming the field.
	_, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "svc", SpecRepo: repo.URL(), SpecPath: "nope.yml",
		Config: client.PipelineConfig{SpecContext: "gitcreds"}})
	var ae *client.Error
	if !asAPIError(err, &ae) || ae.Field != "specRepo" {
		t.Fatalf("missing spec file: %v", err)
	}
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "svc", SpecRepo: repo.URL(), SpecPath: ".freshet/ci.yml",
		Config: client.PipelineConfig{SpecContext: "gitcreds"}}); err != nil {
		t.Fatal(err)
	}
	v2 := repo.Commit("main", map[string]string{".freshet/ci.yml": "version: '1.0'\nsteps:\n  a:\n    commands: ['echo spec-v2']\n"}, "v2")
	for _, c := range []struct{ sha, want string }{{v1, "spec-v1"}, {v2, "spec-v2"}, {"", "spec-v2"}} {
		b, err := s.Admin.RunPipeline(ctx, "p/svc", client.RunRequest{Branch: "main", SHA: c.sha})
		if err != nil {
			t.Fatal(err)
		}
		done := waitBuild(t, s.Admin, b.ID, 30*time.Second, "success", "failed")
		log, _ := s.Admin.BuildLog(ctx, b.ID, 0)
		if done.Status != "success" || !strings.Contains(string(log), c.want) {
			t.Fatalf("build at %q: %s, log lacks %s:\n%s", c.sha, done.Status, c.want, log)
		}
		if c.sha == "" && done.SHA != v2 {
			t.Fatalf("build of the branch head recorded sha %q, want %s", done.SHA, v2)
		}
	}
	// A broken spec on a new commit makes a visible failed build, not a silent drop.
	bad := repo.Commit("main", map[string]string{".freshet/ci.yml": "version: '1.0'\nsteps:\n  a:\n    type: deplyo\n"}, "broken")
	b, err := s.Admin.RunPipeline(ctx, "p/svc", client.RunRequest{Branch: "main", SHA: bad})
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != "failed" || !strings.Contains(b.Reason, "deplyo") {
		t.Fatalf("broken spec build = %s: %s", b.Status, b.Reason)
	}
}

func TestCronFireIsOncePerScheduledTime(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	s.Admin.CreateProject(ctx, "p")
	s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "nightly", Spec: isolationSpec})
	if _, err := s.Admin.CreateTrigger(ctx, "p/nightly", client.TriggerRequest{Type: "cron", Expression: "61 * * * *"}); err == nil {
		t.Fatal("an invalid cron expression was accepted")
	}
	trg, err := s.Admin.CreateTrigger(ctx, "p/nightly", client.TriggerRequest{Type: "cron", Expression: "0 3 * * *", Timezone: "Europe/Berlin", Branch: "main",
		Variables: map[string]string{"MODE": "nightly"}})
	if err != nil {
		t.Fatal(err)
	}
	scheds, err := s.Pipelines().CronTriggers(ctx)
	if err != nil || len(scheds) != 1 || scheds[0].Timezone != "Europe/Berlin" {
		t.Fatalf("cron schedules = %+v, %v", scheds, err)
	}
	at := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	key := "cron:" + trg.ID + ":" + at.Format(time.RFC3339)
	if err := s.Pipelines().FireCron(ctx, trg.ID, key, at); err != nil {
		t.Fatal(err)
	}
	// A second fire of the same time (a new leader after a crash mid-fire) queues nothing.
	if err := s.Pipelines().FireCron(ctx, trg.ID, key, at); err == nil || !strings.Contains(err.Error(), "already queued") {
		t.Fatalf("second fire: %v", err)
	}
	bs, _ := s.Admin.ListBuilds(ctx, client.BuildFilter{})
	if len(bs.Items) != 1 || bs.Items[0].Trigger != "cron" || bs.Items[0].Branch != "main" {
		t.Fatalf("builds = %+v", bs.Items)
	}
}

func TestConcurrencyTerminateOlderAndRestartFromFailed(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
	s.Admin.CreateProject(ctx, "p")

	// Pipeline concurrency 1: a second build waits in the queue while the first runs.
	slow := "version: '1.0'\nsteps:\n  s:\n    commands: ['sleep ${{SLEEP}}']\n"
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "one", Spec: slow,
		Config: client.PipelineConfig{Concurrency: 1, Variables: []client.Variable{{Key: "SLEEP", Value: "1"}}}}); err != nil {
		t.Fatal(err)
	}
	b1, _ := s.Admin.RunPipeline(ctx, "p/one", client.RunRequest{Branch: "a"})
	waitBuild(t, s.Admin, b1.ID, 20*time.Second, "running")
	b2, _ := s.Admin.RunPipeline(ctx, "p/one", client.RunRequest{Branch: "b"})
	time.Sleep(400 * time.Millisecond)
	if cur, _ := s.Admin.GetBuild(ctx, b2.ID); cur.Status != "queued" {
		t.Fatalf("second build is %s while the first runs, want queued (concurrency 1)", cur.Status)
	}
	waitBuild(t, s.Admin, b1.ID, 20*time.Second, "success")
	waitBuild(t, s.Admin, b2.ID, 20*time.Second, "success")

	// terminateOlder: a new build of a branch terminates the branch's older running build.
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "newest", Spec: slow,
		Config: client.PipelineConfig{TerminateOlder: true, Variables: []client.Variable{{Key: "SLEEP", Value: "30"}}}}); err != nil {
		t.Fatal(err)
	}
	old, _ := s.Admin.RunPipeline(ctx, "p/newest", client.RunRequest{Branch: "main"})
	waitBuild(t, s.Admin, old.ID, 20*time.Second, "running")
	other, _ := s.Admin.RunPipeline(ctx, "p/newest", client.RunRequest{Branch: "feature"})
	fresh, _ := s.Admin.RunPipeline(ctx, "p/newest", client.RunRequest{Branch: "main", Variables: map[string]string{"SLEEP": "0"}})
	if o := waitBuild(t, s.Admin, old.ID, 20*time.Second, "terminated"); !strings.Contains(o.Reason, "newer build") {
		t.Fatalf("older build reason = %q", o.Reason)
	}
	waitBuild(t, s.Admin, fresh.ID, 20*time.Second, "success")
	if cur, _ := s.Admin.GetBuild(ctx, other.ID); cur.Status == "terminated" {
		t.Fatal("a build of another branch was terminated")
	}
	s.Admin.CancelBuild(ctx, other.ID)

	// Restart from the failed step skips what succeeded.
	marks := t.TempDir()
	spec := fmt.Sprintf("version: '1.0'\nsteps:\n  first:\n    commands: ['echo run >> %[1]s/first']\n  second:\n    commands: ['test -e %[1]s/fixed']\n", marks)
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "flaky", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	failed, _ := s.Admin.RunPipeline(ctx, "p/flaky", client.RunRequest{})
	waitBuild(t, s.Admin, failed.ID, 20*time.Second, "failed")
	os.WriteFile(filepath.Join(marks, "fixed"), nil, 0o600)
	re, err := s.Admin.RestartBuild(ctx, failed.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	done := waitBuild(t, s.Admin, re.ID, 20*time.Second, "success")
	if st := stepByName(done, "first"); st.Status != "skipped" {
		t.Fatalf("restarted build's first step = %+v, want skipped", st)
	}
	if runs, _ := os.ReadFile(filepath.Join(marks, "first")); strings.Count(string(runs), "run") != 1 {
		t.Fatalf("first step ran %d times, want 1", strings.Count(string(runs), "run"))
	}
	if done.RestartOf != failed.ID {
		t.Fatalf("restartOf = %q", done.RestartOf)
	}
}

// The API shows pipelines by their project's name with encrypted variables masked, keeps a
// secret the client sends back masked, and names each listed build by its pipeline.
func TestPipelineAPIShowsNamesAndMasksSecrets(t *testing.T) {
	for _, d := range storetest_backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := servertest.Start(t, d)
			for _, p := range []string{"web", "api"} {
				if _, err := s.Admin.CreateProject(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			const secret = "hunter2-but-longer"
			cfg := client.PipelineConfig{Variables: []client.Variable{{Key: "PLAIN", Value: "shown"}, {Key: "TOKEN", Value: secret, Encrypted: true}}}
			created, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "web", Name: "ci", Spec: isolationSpec, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "api", Name: "deploy", Spec: isolationSpec}); err != nil {
				t.Fatal(err)
			}
			check := func(what string, p client.Pipeline) {
				t.Helper()
				v := p.Config.Variables
				if p.Project != "web" || p.FullName != "web/ci" || len(v) != 2 || v[0].Value != "shown" || v[1].Value != "*****" || !v[1].Encrypted {
					t.Fatalf("%s = %+v", what, p)
				}
			}
			check("created", created)
			list, err := s.Admin.ListPipelines(ctx, "", client.ListOptions{})
			if err != nil || len(list.Items) != 2 || list.Items[1].FullName != "api/deploy" {
				t.Fatalf("ListPipelines = %+v, %v", list.Items, err)
			}
			check("listed", list.Items[0])
			got, err := s.Admin.GetPipeline(ctx, "web/ci")
			if err != nil {
				t.Fatal(err)
			}
			updated, err := s.Admin.UpdatePipeline(ctx, "web/ci", client.PipelineRequest{Spec: isolationSpec, Config: got.Config})
			if err != nil {
				t.Fatal(err)
			}
			check("updated", updated)

			// The secret survived the round trip: a build gets it (and masks it in its log).
			spec := "version: '1.0'\nsteps:\n  show:\n    commands: [\"test \\\"$TOKEN\\\" = " + secret + " && echo token-ok\"]\n"
			if _, err := s.Admin.UpdatePipeline(ctx, "web/ci", client.PipelineRequest{Spec: spec, Config: got.Config}); err != nil {
				t.Fatal(err)
			}
			startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
			b, err := s.Admin.RunPipeline(ctx, "web/ci", client.RunRequest{Branch: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if final := waitBuild(t, s.Admin, b.ID, 30*time.Second, "success", "failed", "terminated"); final.Status != "success" {
				log, _ := s.Admin.BuildLog(ctx, b.ID, 0)
				t.Fatalf("build %s: %s\n%s", final.Status, final.Reason, log)
			}
			if _, err := s.Admin.RunPipeline(ctx, "api/deploy", client.RunRequest{}); err != nil {
				t.Fatal(err)
			}
			builds, err := s.Admin.ListBuilds(ctx, client.BuildFilter{})
			if err != nil || len(builds.Items) != 2 {
				t.Fatalf("ListBuilds = %+v, %v", builds.Items, err)
			}
			if n0, n1 := builds.Items[0].Name, builds.Items[1].Name; n0 != "api/deploy #1" || n1 != "web/ci #1" {
				t.Fatalf("listed builds are named %q and %q, want api/deploy #1 and web/ci #1", n0, n1)
			}
		})
	}
}

// runnerStacks returns the stacks of the goroutines in the runner's and local executor's code,
// and the processes running, for a failure to show where a step is stuck.
func runnerStacks() string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var b strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "internal/runner") {
			b.WriteString(g + "\n\n")
		}
	}
	ps, _ := exec.Command("ps", "-eo", "pid,ppid,pgid,stat,etime,args").CombinedOutput()
	return "goroutines in the runner:\n" + b.String() + "processes:\n" + string(ps)
}
