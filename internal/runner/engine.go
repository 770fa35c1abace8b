package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// Step statuses as the control plane records them.
const (
	stPending    = "pending"
	stRunning    = "running"
	stSuccess    = "success"
	stFailed     = "failed"
	stSkipped    = "skipped"
	stTerminated = "terminated"
	stApproval   = "pending-approval"
)

// skipStepsVariable lists steps a restarted build skips (they succeeded before).
const skipStepsVariable = "FRESHET_SKIP_STEPS"

// engine runs one build's steps.
type engine struct {
	job  runnerv1.Job
	p    *spec.Pipeline
	exec executor.Executor
	ws   executor.Workspace
	out  io.Writer // the build log (masked, limited)

	report    func(runnerv1.StepState) // records a step's state with the control plane
	flush     func()                   // pushes out log output held back by the masker
	approvals <-chan string            // "approved" or "denied" for the waiting step
	// done holds the final states of steps that finished in an earlier attempt of this build on
	// this runner (the control plane lost track of it meanwhile): they are reported as they
	// ended and not run again.
	done map[string]runnerv1.StepState

	mu        sync.Mutex
	images    map[string][]runnerv1.Image // what each build or push step pushed
	networks  []string                    // the networks of the pipeline's services, joined by every step
	launched  []launched                  // compositions launch-composition steps left running
	vars      map[string]string
	results   map[string]spec.Result
	positions map[string]int
	skip      map[string]bool
	failed    bool   // a step that fails the build failed
	reason    string // why the build failed
	logMu     sync.Mutex
}

func newEngine(job runnerv1.Job, p *spec.Pipeline, exec executor.Executor, ws executor.Workspace, out io.Writer,
	report func(runnerv1.StepState), approvals <-chan string) *engine {
	e := &engine{job: job, p: p, exec: exec, ws: ws, out: out, report: report, approvals: approvals,
		vars: maps.Clone(job.Variables), results: map[string]spec.Result{}, positions: map[string]int{}, skip: map[string]bool{},
		images: map[string][]runnerv1.Image{}}
	if e.vars == nil {
		e.vars = map[string]string{}
	}
	e.vars[executor.VolumePathEnv] = ws.Path
	for _, s := range job.Steps {
		e.positions[s.Name] = s.Position
	}
	for _, name := range strings.Split(e.vars[skipStepsVariable], ",") {
		if name != "" {
			e.skip[name] = true
		}
	}
	return e
}

// variables returns the build's variables as the steps so far left them (with their exports).
func (e *engine) variables() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.vars)
}

// resultOf is the result a recorded final status stands for.
func resultOf(status string) spec.Result {
	switch status {
	case stSuccess:
		return spec.ResultSuccess
	case stSkipped:
		return spec.ResultSkipped
	case stTerminated:
		return spec.ResultTerminated
	}
	return spec.ResultFailure
}

// sortStates orders step states as the pipeline lists its steps.
func sortStates(states []runnerv1.StepState) {
	slices.SortStableFunc(states, func(a, b runnerv1.StepState) int {
		if c := cmp.Compare(a.Position, b.Position); c != 0 {
			return c
		}
		return a.FinishedAt.Compare(b.FinishedAt)
	})
}

// logf writes a runner notice line to the build log.
func (e *engine) logf(format string, args ...any) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	fmt.Fprintf(e.out, "\x1b[36m[freshet]\x1b[0m "+format+"\n", args...)
}

func (e *engine) lookup(name string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.vars[name]
	return v, ok
}

func (e *engine) interp(s string) string { return spec.Interpolate(s, e.lookup) }

func (e *engine) evalContext() spec.EvalContext {
	e.mu.Lock()
	defer e.mu.Unlock()
	return spec.EvalContext{Variables: maps.Clone(e.vars), Steps: maps.Clone(e.results)}
}

func (e *engine) setResult(name string, r spec.Result) {
	e.mu.Lock()
	e.results[name] = r
	e.mu.Unlock()
}

func (e *engine) fail(reason string) {
	e.mu.Lock()
	if !e.failed {
		e.failed, e.reason = true, reason
	}
	e.mu.Unlock()
}

// run runs the pipeline and returns the build's status and, when it did not succeed, why.
func (e *engine) run(ctx context.Context) (string, string) {
	if problems := e.lint(); len(problems) > 0 {
		for _, p := range problems {
			e.logf("%s", p)
		}
		return stFailed, strings.Join(problems, "; ")
	}
	defer e.stopLaunched()
	if e.p.Services != nil {
		network, stop, msg := e.startServices(ctx, "pipeline", e.p.Services)
		if msg != "" {
			e.logf("services: %s", msg)
			return stFailed, "services: " + msg
		}
		defer stop()
		e.mu.Lock()
		e.networks = append(e.networks, network)
		e.mu.Unlock()
	}
	if h := e.p.Hooks.OnElected; h != nil {
		if !e.runHook(ctx, "on_elected", h) {
			e.fail("the on_elected hook failed")
		}
	}
	if !e.isFailed() {
		e.runSteps(ctx, e.p.Steps, e.p.Mode)
	}
	status := stSuccess
	switch {
	case ctx.Err() != nil:
		status = stTerminated
	case e.isFailed():
		status = stFailed
	}
	hctx := context.WithoutCancel(ctx) // hooks run even after a cancel, bounded by their own timeouts
	if status == stSuccess && e.p.Hooks.OnSuccess != nil {
		e.runHook(hctx, "on_success", e.p.Hooks.OnSuccess)
	}
	if status == stFailed && e.p.Hooks.OnFail != nil {
		e.runHook(hctx, "on_fail", e.p.Hooks.OnFail)
	}
	if e.p.Hooks.OnFinish != nil {
		e.runHook(hctx, "on_finish", e.p.Hooks.OnFinish)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if status == stTerminated {
		return status, "terminated"
	}
	return status, e.reason
}

func (e *engine) isFailed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failed
}

// runHook runs a hook's steps; hooks never change step results of the pipeline.
func (e *engine) runHook(ctx context.Context, name string, h *spec.Hook) bool {
	e.logf("hook %s", name)
	ok := true
	for _, st := range h.Steps {
		res, _ := e.execute(ctx, st, false)
		if res != spec.ResultSuccess {
			ok = false
		}
	}
	return ok
}

// runSteps runs steps in order (sequential) or as their `when` allows (parallel).
func (e *engine) runSteps(ctx context.Context, steps []*spec.Step, mode spec.Mode) {
	if mode == spec.Mode("parallel") {
		e.runParallelMode(ctx, steps)
		return
	}
	for i, st := range steps {
		if ctx.Err() != nil || e.isFailed() {
			for _, rest := range steps[i:] {
				e.markNotRun(rest, ctx.Err() != nil)
			}
			return
		}
		e.runStep(ctx, st)
	}
}

// markNotRun records a step (and its children) that will not run.
func (e *engine) markNotRun(st *spec.Step, terminated bool) {
	status, msg, res := stSkipped, "not run: an earlier step failed", spec.ResultSkipped
	if terminated {
		status, msg, res = stTerminated, "not run: the build was terminated", spec.ResultTerminated
	}
	e.setResult(st.Name, res)
	e.report(runnerv1.StepState{Name: st.Name, Stage: st.Stage, Position: e.positions[st.Name], Status: status, Message: msg})
	for _, c := range st.Parallel {
		e.markNotRun(c, terminated)
	}
}

// runParallelMode starts every step whose `when` allows it as soon as it does, re-evaluating
// after each step finishes; what can never start is skipped.
func (e *engine) runParallelMode(ctx context.Context, steps []*spec.Step) {
	pending := append([]*spec.Step(nil), steps...)
	done := make(chan struct{}, len(steps))
	running := 0
	for {
		var still []*spec.Step
		for _, st := range pending {
			if ctx.Err() != nil {
				still = append(still, st)
				continue
			}
			run, _, err := st.When.Evaluate(e.evalContext())
			if err != nil || run {
				running++
				go func(st *spec.Step) {
					e.runStep(ctx, st)
					done <- struct{}{}
				}(st)
				continue
			}
			still = append(still, st)
		}
		pending = still
		if running == 0 {
			for _, st := range pending {
				if ctx.Err() != nil {
					e.markNotRun(st, true)
					continue
				}
				_, reason, _ := st.When.Evaluate(e.evalContext())
				e.setResult(st.Name, spec.ResultSkipped)
				e.report(runnerv1.StepState{Name: st.Name, Stage: st.Stage, Position: e.positions[st.Name], Status: stSkipped, Message: reason})
			}
			return
		}
		<-done
		running--
	}
}

// runStep runs one pipeline step (with its when, retries and hooks) and records its result.
func (e *engine) runStep(ctx context.Context, st *spec.Step) spec.Result {
	pos := e.positions[st.Name]
	state := runnerv1.StepState{Name: st.Name, Stage: st.Stage, Position: pos}
	if prev, ok := e.done[st.Name]; ok {
		res := resultOf(prev.Status)
		e.setResult(st.Name, res)
		e.report(prev)
		e.logf("step %s: %s in an earlier attempt on this runner; kept, not run again", st.Name, prev.Status)
		if res == spec.ResultFailure && st.FailFast {
			e.fail(fmt.Sprintf("step %s failed: %s", st.Name, prev.Message))
		}
		return res
	}
	if e.skip[st.Name] {
		e.setResult(st.Name, spec.ResultSuccess)
		state.Status, state.Message = stSkipped, "succeeded in the build this one restarts"
		e.report(state)
		e.logf("step %s: skipped (succeeded before)", st.Name)
		return spec.ResultSuccess
	}
	if e.p.Mode != spec.Mode("parallel") {
		run, reason, err := st.When.Evaluate(e.evalContext())
		if err != nil {
			e.logf("step %s: when: %v", st.Name, err)
			state.Status, state.Message = stFailed, "when: "+err.Error()
			e.setResult(st.Name, spec.ResultFailure)
			e.report(state)
			if st.FailFast {
				e.fail(fmt.Sprintf("step %s: %v", st.Name, err))
			}
			return spec.ResultFailure
		}
		if !run {
			e.logf("step %s: skipped: %s", st.Name, reason)
			state.Status, state.Message = stSkipped, reason
			e.setResult(st.Name, spec.ResultSkipped)
			e.report(state)
			return spec.ResultSkipped
		}
	}
	if h := st.Hooks.OnElected; h != nil {
		e.runHook(ctx, st.Name+".on_elected", h)
	}
	res, msg := e.execute(ctx, st, true)
	hctx := context.WithoutCancel(ctx)
	if res == spec.ResultSuccess || res == spec.ResultApproved {
		if h := st.Hooks.OnSuccess; h != nil {
			e.runHook(hctx, st.Name+".on_success", h)
		}
	} else if h := st.Hooks.OnFail; h != nil && res != spec.ResultTerminated {
		e.runHook(hctx, st.Name+".on_fail", h)
	}
	if h := st.Hooks.OnFinish; h != nil {
		e.runHook(hctx, st.Name+".on_finish", h)
	}
	if (res == spec.ResultFailure || res == spec.ResultDenied) && st.FailFast {
		e.fail(fmt.Sprintf("step %s failed: %s", st.Name, msg))
	}
	return res
}

// execute runs a step's work. With record, its states are reported and its result kept.
func (e *engine) execute(ctx context.Context, st *spec.Step, record bool) (spec.Result, string) {
	state := runnerv1.StepState{Name: st.Name, Stage: st.Stage, Position: e.positions[st.Name], Status: stRunning, StartedAt: time.Now()}
	if record {
		e.setResult(st.Name, spec.ResultRunning)
		e.report(state)
	}
	res, code, attempts, msg := e.work(ctx, st)
	if e.flush != nil {
		e.flush() // a step's last bytes must not wait for the next step's output
	}
	state.FinishedAt, state.ExitCode, state.Attempts, state.Message = time.Now(), code, attempts, msg
	switch res {
	case spec.ResultSuccess, spec.ResultApproved:
		state.Status = stSuccess
	case spec.ResultTerminated:
		state.Status = stTerminated
	default:
		state.Status = stFailed
	}
	if record {
		e.setResult(st.Name, res)
		e.report(state)
	}
	e.logf("step %s: %s (%s)%s", st.Name, state.Status, state.FinishedAt.Sub(state.StartedAt).Round(time.Millisecond), suffix(msg))
	return res, msg
}

// interpChecked interpolates field s, checking each value it puts in with check, which says
// what is wrong with a value ("" for nothing).
func (e *engine) interpChecked(field, s string, check func(string) string) (string, error) {
	return interpChecked(e.lookup, field, s, check)
}

func interpChecked(lookup func(string) (string, bool), field, s string, check func(string) string) (string, error) {
	var errs []error
	out := spec.Interpolate(s, func(name string) (string, bool) {
		v, ok := lookup(name)
		if ok {
			if msg := check(v); msg != "" {
				errs = append(errs, errdefs.Invalid(field, s, fmt.Sprintf("the value of ${{%s}} %s", name, msg)))
			}
		}
		return v, ok
	})
	return out, errors.Join(errs...)
}

// imageValue checks a value put into an image reference.
func imageValue(v string) string {
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-/:@", c)) {
			return fmt.Sprintf("has %q, which cannot be part of an image reference (letters, digits, '.', '_', '-', '/', ':', '@'): use ${{CF_BRANCH_TAG_NORMALIZED}} for a branch", c)
		}
	}
	return ""
}

// pathValue checks a value put into a path: it may not climb out of the directory it is put in.
func pathValue(v string) string {
	if strings.ContainsRune(v, 0) {
		return "has a NUL byte"
	}
	for el := range strings.SplitSeq(v, "/") {
		if el == ".." {
			return "has a '..' path element: a variable cannot move a directory out of where the pipeline puts it"
		}
	}
	return ""
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// work does what the step's type says.
func (e *engine) work(ctx context.Context, st *spec.Step) (res spec.Result, exitCode, attempts int, msg string) {
	switch st.Type {
	case spec.TypeParallel:
		return e.parallel(ctx, st)
	case spec.TypePendingApproval:
		return e.approval(ctx, st)
	case spec.TypeBuild:
		return e.withRetry(ctx, st, e.build)
	case spec.TypePush:
		return e.withRetry(ctx, st, e.push)
	case spec.TypeComposition:
		return e.withRetry(ctx, st, e.composition)
	case spec.TypeLaunchComposition:
		return e.withRetry(ctx, st, e.launchComposition)
	case spec.TypePlugin:
		return e.withRetry(ctx, st, e.plugin)
	case spec.TypeDeploy:
		return e.withRetry(ctx, st, e.deploy)
	case spec.TypeHelm:
		return e.withRetry(ctx, st, e.helm)
	}
	step, err := e.executorStep(st)
	if err != nil {
		e.logf("step %s: %v", st.Name, err)
		return spec.ResultFailure, 1, 1, err.Error()
	}
	if st.Services != nil && len(st.Services.Composition) > 0 {
		network, stop, msg := e.startServices(ctx, st.Name, st.Services)
		if msg != "" {
			if ctx.Err() != nil {
				return spec.ResultTerminated, 0, 1, "terminated"
			}
			e.logf("step %s: services: %s", st.Name, msg)
			return spec.ResultFailure, 1, 1, "services: " + msg
		}
		defer stop()
		step.Networks = append(step.Networks, network)
	}
	delays := st.Retry.Delays()
	runs := st.Retry.Runs()
	for attempt := 1; ; attempt++ {
		e.logf("step %s (%s) attempt %d/%d", st.Name, st.Type, attempt, runs)
		r, err := e.exec.Run(ctx, e.ws, step, e.out)
		switch {
		case err != nil:
			msg, exitCode = err.Error(), 1
		case r.Canceled || ctx.Err() != nil:
			return spec.ResultTerminated, r.ExitCode, attempt, "terminated"
		case r.TimedOut:
			msg, exitCode = fmt.Sprintf("timed out after %s", step.Timeout), r.ExitCode
		case r.Message != "":
			msg, exitCode = r.Message, r.ExitCode
		case r.ExitCode != 0:
			msg, exitCode = fmt.Sprintf("exit code %d", r.ExitCode), r.ExitCode
		default:
			e.mu.Lock()
			for _, ex := range r.Exports {
				e.vars[ex.Name] = ex.Value
			}
			e.mu.Unlock()
			return spec.ResultSuccess, 0, attempt, ""
		}
		if attempt >= runs {
			return spec.ResultFailure, exitCode, attempt, msg
		}
		d := delays[min(attempt-1, len(delays)-1)]
		e.logf("step %s failed (%s); retrying in %s", st.Name, msg, d)
		select {
		case <-ctx.Done():
			return spec.ResultTerminated, exitCode, attempt, "terminated"
		case <-time.After(d):
		}
	}
}

// withRetry runs a build or push step's work as its retry says.
func (e *engine) withRetry(ctx context.Context, st *spec.Step, once func(context.Context, *spec.Step) (spec.Result, int, int, string)) (spec.Result, int, int, string) {
	delays, runs := st.Retry.Delays(), st.Retry.Runs()
	for attempt := 1; ; attempt++ {
		if runs > 1 {
			e.logf("step %s (%s) attempt %d/%d", st.Name, st.Type, attempt, runs)
		}
		res, code, _, msg := once(ctx, st)
		if res != spec.ResultFailure || attempt >= runs {
			return res, code, attempt, msg
		}
		d := delays[min(attempt-1, len(delays)-1)]
		e.logf("step %s failed (%s); retrying in %s", st.Name, msg, d)
		select {
		case <-ctx.Done():
			return spec.ResultTerminated, code, attempt, "terminated"
		case <-time.After(d):
		}
	}
}

func (e *engine) parallel(ctx context.Context, st *spec.Step) (spec.Result, int, int, string) {
	var wg sync.WaitGroup
	results := make([]spec.Result, len(st.Parallel))
	for i, c := range st.Parallel {
		wg.Add(1)
		go func(i int, c *spec.Step) {
			defer wg.Done()
			results[i] = e.runStepInGroup(ctx, c)
		}(i, c)
	}
	wg.Wait()
	var failed []string
	for i, c := range st.Parallel {
		if results[i] == spec.ResultTerminated {
			return spec.ResultTerminated, 0, 1, "terminated"
		}
		if (results[i] == spec.ResultFailure || results[i] == spec.ResultDenied) && c.FailFast {
			failed = append(failed, c.Name)
		}
	}
	if len(failed) > 0 {
		return spec.ResultFailure, 1, 1, "failed: " + strings.Join(failed, ", ")
	}
	return spec.ResultSuccess, 0, 1, ""
}

// runStepInGroup runs a step of a parallel group: a failure fails the group, not the build
// directly (the group's own result does).
func (e *engine) runStepInGroup(ctx context.Context, st *spec.Step) spec.Result {
	ff := st.FailFast
	copyStep := *st
	copyStep.FailFast = false
	res := e.runStep(ctx, &copyStep)
	st.FailFast = ff
	return res
}

func (e *engine) approval(ctx context.Context, st *spec.Step) (spec.Result, int, int, string) {
	timeout, final := spec.DefaultApprovalTimeout, spec.ApprovalDenied
	if st.Approval != nil {
		if st.Approval.Timeout.Duration > 0 {
			timeout = st.Approval.Timeout.Duration
		}
		if st.Approval.FinalState != "" {
			final = st.Approval.FinalState
		}
	}
	e.report(runnerv1.StepState{Name: st.Name, Stage: st.Stage, Position: e.positions[st.Name], Status: stApproval, StartedAt: time.Now(),
		Message: fmt.Sprintf("waiting for approval (%s, then %s)", timeout, final)})
	e.logf("step %s: waiting for approval: freshet build approve %s", st.Name, e.job.BuildID)
	t := time.NewTimer(timeout)
	defer t.Stop()
	decision := ""
	select {
	case <-ctx.Done():
		return spec.ResultTerminated, 0, 1, "terminated"
	case decision = <-e.approvals:
	case <-t.C:
		decision = final
		e.logf("step %s: no decision within %s: %s", st.Name, timeout, final)
	}
	switch decision {
	case spec.ApprovalApproved:
		return spec.ResultApproved, 0, 1, "approved"
	case spec.ApprovalTerminated:
		return spec.ResultTerminated, 0, 1, "terminated at the approval timeout"
	}
	return spec.ResultDenied, 1, 1, "denied"
}

// cloneSource returns the URL a git-clone step clones, and the credentials to clone it with:
// its credentials, or the token of its git context (git: NAME), through which a repo of the form
// owner/name becomes the provider's clone URL. A context's token goes only to its own host.
func (e *engine) cloneSource(st *spec.Step) (repo, user, pass string, err error) {
	repo = e.interp(st.Repo)
	var gc *runnerv1.GitContext
	if st.GitContext != "" {
		name := e.interp(st.GitContext)
		i := slices.IndexFunc(e.job.GitContexts, func(g runnerv1.GitContext) bool { return g.Name == name })
		if i < 0 {
			return "", "", "", errdefs.Invalid("git", name, "is not a git context of this pipeline: add it to the pipeline's contexts (freshet context create git NAME …)")
		}
		gc = &e.job.GitContexts[i]
		if !strings.Contains(repo, "://") {
			if !ownerNameRE.MatchString(repo) || slices.ContainsFunc(strings.Split(repo, "/"), func(c string) bool { return strings.Trim(c, ".") == "" }) {
				return "", "", "", errdefs.Invalid("repo", repo, "is neither owner/name (a GitLab group path may have more levels) nor a clone URL")
			}
			repo = gc.CloneURL + "/" + repo + ".git"
		}
	}
	u, perr := url.Parse(repo)
	if perr != nil || u.Scheme == "" || u.Host == "" {
		return "", "", "", fmt.Errorf("git-clone: repo %q is not a clone URL (like https://git.example.com/owner/name.git) or owner/name with git: a git context", repo)
	}
	if u.User != nil {
		return "", "", "", errdefs.Invalid("repo", u.Redacted(), "carries credentials: give them in credentials or a git context, which keep them out of logs")
	}
	if c := st.Credentials; c != nil && c.Username != "" {
		return repo, e.interp(c.Username), e.interp(c.Password), nil
	}
	if gc != nil {
		if cu, err := url.Parse(gc.CloneURL); err != nil || !strings.EqualFold(cu.Host, u.Host) || cu.Scheme != u.Scheme {
			return "", "", "", errdefs.Invalid("repo", repo, fmt.Sprintf("is not on git context %s's host (%s): its token goes only there", gc.Name, gc.CloneURL))
		}
		return repo, gc.Username, gc.Token, nil
	}
	return repo, "", "", nil
}

// gitCredentialHelper is a git credential helper (run by git through the shell) that answers
// get with the credentials in the environment.
const gitCredentialHelper = `!f() { if [ "$1" = get ]; then printf 'username=%s\npassword=%s\n' "$FRESHET_GIT_USERNAME" "$FRESHET_GIT_PASSWORD"; fi; }; f`

// ownerNameRE is a repository's path at a provider: owner/name, or a GitLab group/subgroup/name.
var ownerNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$`)

// executorStep turns a freestyle or git-clone step into what the executor runs, with the
// build's variables in the environment. In shell commands (commands, cmd, and the script of an
// entry point such as [sh, -c, …]) every ${{VAR}} becomes a reference to an environment
// variable that the shell reads as data (spec.InterpolateShell), so no value from git or a
// webhook is ever parsed as shell code. Other fields get the values themselves, checked for
// what the field can hold: image and working directory refuse values that could not be part
// of an image reference or that climb out of a directory with "..".
func (e *engine) executorStep(st *spec.Step) (executor.Step, error) {
	return e.executorStepWith(st, nil)
}

// executorStepWith is executorStep with extra variables (a typed plugin step's arguments):
// ${{NAME}} reads them before the build's variables, and they are in the step's environment.
func (e *engine) executorStepWith(st *spec.Step, extra []executor.EnvVar) (executor.Step, error) {
	lookup := e.lookup
	if len(extra) > 0 {
		lookup = func(name string) (string, bool) {
			for i := len(extra) - 1; i >= 0; i-- {
				if extra[i].Name == name {
					return extra[i].Value, true
				}
			}
			return e.lookup(name)
		}
	}
	interp := func(s string) string { return spec.Interpolate(s, lookup) }
	e.mu.Lock()
	env := make([]executor.EnvVar, 0, len(e.vars)+len(st.Env))
	for k, v := range e.vars {
		env = append(env, executor.EnvVar{Name: k, Value: v})
	}
	e.mu.Unlock()
	env = append(env, extra...)
	for _, v := range st.Env {
		env = append(env, executor.EnvVar{Name: v.Name, Value: interp(v.Value)})
	}
	image, imageErr := interpChecked(lookup, "image", st.Image, imageValue)
	wd, wdErr := interpChecked(lookup, "working_directory", st.WorkingDir, pathValue)
	if err := errors.Join(imageErr, wdErr); err != nil {
		return executor.Step{}, err
	}
	s := executor.Step{Name: st.Name, Image: image, Shell: st.Shell, WorkingDir: wd, Timeout: st.Timeout.Duration,
		PullPolicy: st.PullPolicy, Registries: e.registries()}
	e.mu.Lock()
	s.Networks = slices.Clone(e.networks)
	e.mu.Unlock()
	var shellVars []spec.ShellVar
	add := func(cmds []string, vars []spec.ShellVar, err error) ([]string, error) {
		shellVars = append(shellVars, vars...)
		return cmds, err
	}
	var err error
	switch {
	case len(st.Commands) > 0: // entry_point and cmd are ignored (Lint warns)
		s.Commands, err = add(spec.InterpolateShell("commands", st.Commands, lookup))
	default:
		// entry_point is the image's ENTRYPOINT and cmd its CMD, both argument vectors, as in
		// Codefresh and Docker. Values go in as they are, except in the script of a shell's -c
		// (sh -c 'script' written across entry_point and cmd), which is shell code.
		argv := append(slices.Clone(st.EntryPoint), st.Cmd...)
		script := spec.ShellScriptArg(argv)
		for i, a := range argv {
			field, fi := "entry_point", i
			if i >= len(st.EntryPoint) {
				field, fi = "cmd", i-len(st.EntryPoint)
			}
			v := interp(a)
			if i == script {
				// Padded with empty lines so that an error names field[fi].
				lines := append(make([]string, fi), a)
				out, serr := add(spec.InterpolateShell(field, lines, lookup))
				if serr != nil {
					err = errors.Join(err, serr)
					continue
				}
				v = out[fi]
			}
			if i < len(st.EntryPoint) {
				s.EntryPoint = append(s.EntryPoint, v)
			} else {
				s.Cmd = append(s.Cmd, v)
			}
		}
	}
	if err != nil {
		return executor.Step{}, err
	}
	for _, v := range shellVars { // last: nothing the pipeline sets can change them
		env = append(env, executor.EnvVar{Name: v.Name, Value: v.Value})
	}
	s.Env = env
	if st.Type != spec.TypeGitClone {
		return s, nil
	}
	repo, user, pass, err := e.cloneSource(st)
	if err != nil {
		return s, err
	}
	rev := e.interp(st.Revision)
	if rev == "" {
		rev, _ = e.lookup("CF_REVISION")
	}
	if strings.HasPrefix(rev, "-") {
		return s, errdefs.Invalid("revision", rev, "is not a branch, tag or commit: none starts with '-'")
	}
	dir := path.Join(s.WorkingDir, spec.CloneDir(repo))
	if s.WorkingDir == "" {
		dir = spec.CloneDir(repo)
	}
	s.WorkingDir = ""
	s.Env = append(s.Env, executor.EnvVar{Name: "FRESHET_CLONE_URL", Value: repo},
		executor.EnvVar{Name: "FRESHET_CLONE_DIR", Value: dir}, executor.EnvVar{Name: "FRESHET_CLONE_REVISION", Value: rev})
	// Credentials reach git as environment data, through a credential helper for the clone
	// URL's origin only (set in git's environment configuration, git 2.31 or later) that prints
	// them: never in the URL, which git would show in messages and keep in .git/config, nor in
	// argv.
	if user != "" || pass != "" {
		u, _ := url.Parse(repo) // cloneSource parsed it
		s.Env = append(s.Env, executor.EnvVar{Name: "FRESHET_GIT_USERNAME", Value: user}, executor.EnvVar{Name: "FRESHET_GIT_PASSWORD", Value: pass},
			executor.EnvVar{Name: "GIT_CONFIG_COUNT", Value: "1"},
			executor.EnvVar{Name: "GIT_CONFIG_KEY_0", Value: "credential." + u.Scheme + "://" + u.Host + ".helper"},
			executor.EnvVar{Name: "GIT_CONFIG_VALUE_0", Value: gitCredentialHelper})
	}
	depth := ""
	if st.Depth > 0 {
		depth = fmt.Sprintf("--depth %d ", st.Depth)
	}
	s.Commands = []string{
		`rm -rf "$FRESHET_CLONE_DIR"`,
		`git clone --quiet ` + depth + `"$FRESHET_CLONE_URL" "$FRESHET_CLONE_DIR"`,
		`cd "$FRESHET_CLONE_DIR"`,
		`if [ -n "$FRESHET_CLONE_REVISION" ]; then git -c advice.detachedHead=false checkout --quiet "$FRESHET_CLONE_REVISION"; fi`,
		`echo "cloned $(git rev-parse HEAD) into $FRESHET_CLONE_DIR"`,
	}
	return s, nil
}
