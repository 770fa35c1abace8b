package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// Timing of a step's end.
const (
	// logDrainTimeout bounds how long the log stream may go on once the step container has
	// exited (or its pod is gone).
	logDrainTimeout = 10 * time.Second
	// logEOFRecheck is how long a log stream that ended waits to learn that the container
	// exited before it reconnects (a stream can also end because a connection did).
	logEOFRecheck = time.Second
	logRetryMin   = 200 * time.Millisecond
	logRetryMax   = 2 * time.Second
	// sidecarSlack is how long, beyond the kill grace period, the pod may take to finish once the
	// step container has exited (the kubelet stopping the exports sidecar).
	sidecarSlack = 15 * time.Second
	// logReadBuffer is the size of the reads from the log stream; each is written to out as is.
	logReadBuffer = 32 << 10
)

// ErrPodDeleted means the step's pod was deleted by something other than the executor (Cleanup
// of the same build, a person, a controller) while the step ran.
var ErrPodDeleted = errors.New("the step's pod was deleted by someone else")

// Run runs the step in its own pod. See executor.Executor for the contract and the package
// comment for how.
func (k *Kubernetes) Run(ctx context.Context, ws executor.Workspace, s executor.Step, out io.Writer) (executor.Result, error) {
	var res executor.Result
	if err := s.Validate(); err != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	workDir, inWorkspace, err := executor.ResolveWorkingDir(ws.Path, s.WorkingDir)
	if err != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	if ctx.Err() != nil {
		res.Canceled = true
		return res, nil
	}
	pvc, err := k.claim(ctx, ws)
	if err != nil {
		if ctx.Err() != nil {
			res.Canceled = true
			return res, nil
		}
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	pod, err := k.podFor(ws, pvc, s, workDir, inWorkspace)
	if err != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	res, _, err = k.runPod(ctx, ws, s, pod, out, nil)
	return res, err
}

// runPod runs pod, made by podFor for s, to its end as Run does, and returns the pod's last
// known state with the result (nil when the pod was never created).
// created, when set, runs once the pod exists (with the pod as created); an error stops the pod.
func (k *Kubernetes) runPod(ctx context.Context, ws executor.Workspace, s executor.Step, pod *corev1.Pod, out io.Writer, created func(context.Context, *corev1.Pod) error) (executor.Result, *corev1.Pod, error) {
	if out == nil {
		out = io.Discard
	}
	r := &stepRun{k: k, ws: ws, step: s, out: executor.NewOutput(out), start: time.Now(), created: created}
	res, err := r.run(ctx, pod)
	res.Duration = time.Since(r.start)
	if err != nil {
		return res, r.last, fmt.Errorf("step %q: %w", s.Name, err)
	}
	if err := r.out.Err(); err != nil {
		return res, r.last, fmt.Errorf("step %q: write output: %w", s.Name, err)
	}
	return res, r.last, nil
}

// stepRun is one Run: the pod, what is known of it, and the goroutines that follow it.
type stepRun struct {
	k       *Kubernetes
	ws      executor.Workspace
	step    executor.Step
	out     *executor.Output
	start   time.Time
	created func(context.Context, *corev1.Pod) error // see runPod

	name   string
	uid    *types.UID
	last   *corev1.Pod   // the latest state seen
	events chan podEvent // from watchPod
	logs   *logFollower  // nil until the step container started
	ended  chan struct{} // closed once the step container exited or the pod is gone
	wdone  chan struct{} // closed when watchPod returned
	wstop  func()        // stops watchPod
}

// run creates the pod and follows it to its end.
func (r *stepRun) run(ctx context.Context, pod *corev1.Pod) (res executor.Result, err error) {
	pods := r.k.client.CoreV1().Pods(r.k.namespace)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiTimeout)
	created, err := pods.Create(actx, pod, metav1.CreateOptions{})
	cancel()
	if err != nil {
		return res, fmt.Errorf("create pod: %w", err)
	}
	r.name, r.uid, r.last = created.Name, ptr(created.UID), created
	r.ended = make(chan struct{})
	r.events = make(chan podEvent)
	r.wdone = make(chan struct{})
	wctx, wstop := context.WithCancel(context.WithoutCancel(ctx))
	r.wstop = wstop
	go func() {
		defer close(r.wdone)
		r.k.watchPod(wctx, r.name, created.ResourceVersion, r.events)
	}()
	defer r.shutdown()
	if r.created != nil {
		if err := r.created(ctx, created); err != nil {
			return r.stop(res, err)
		}
	}

	// The step's timeout counts from its container's start (seen here): scheduling, volume
	// attachment and image pulls are bounded by StartTimeout instead.
	var timeout <-chan time.Time
	startTimer := time.NewTimer(r.k.opts.StartTimeout)
	defer startTimer.Stop()
	var finishing <-chan time.Time // armed when the step container exited before the pod finished
	for {
		select {
		case ev, ok := <-r.events:
			switch {
			case !ok:
				return r.killed(res, errors.New("pod watch ended"))
			case ev.err != nil:
				return r.stop(res, ev.err)
			case ev.pod == nil:
				r.out.Notice("the step's pod %s was deleted while the step ran", r.name)
				close(r.ended)
				r.drainLogs()
				res.ExitCode = r.exitCodeOrKilled()
				return res, fmt.Errorf("pod %s: %w", r.name, ErrPodDeleted)
			}
			r.last = ev.pod
			if r.logs == nil && stepStarted(r.last) {
				startTimer.Stop()
				r.followLogs()
				if r.step.Timeout > 0 {
					t := time.NewTimer(r.step.Timeout)
					defer t.Stop()
					timeout = t.C
				}
			}
			if why := startFailure(r.last); why != "" && !stepStarted(r.last) {
				r.out.Notice("%s", why)
				res.ExitCode = executor.ExitCodeNotFound
				return r.stop(res, nil)
			}
			if podDone(r.last) {
				return r.finish(res, true)
			}
			if finishing == nil && stepTerminated(r.last) != nil {
				finishing = time.After(r.k.opts.KillGrace + sidecarSlack)
			}
		case <-ctx.Done():
			res.Canceled = true
			return r.stop(res, nil)
		case <-timeout:
			res.TimedOut = true
			r.out.Notice("the step timed out after %s", r.step.Timeout)
			return r.stop(res, nil)
		case <-startTimer.C:
			if r.logs != nil {
				continue
			}
			r.out.Notice("the step's pod %s did not start within %s: %s", r.name, r.k.opts.StartTimeout, pending(r.last))
			res.ExitCode = executor.ExitCodeNotFound
			return r.stop(res, nil)
		case <-finishing:
			r.out.Notice("the step's pod %s did not finish within %s of the step's exit; its exports are not read", r.name, r.k.opts.KillGrace+sidecarSlack)
			return r.finish(res, false)
		}
	}
}

// shutdown stops the watch and the log follower and waits for both.
func (r *stepRun) shutdown() {
	if r.logs != nil {
		r.logs.cancel()
		<-r.logs.done
	}
	r.wstop()
	<-r.wdone
}

// followLogs starts following the step container's log.
func (r *stepRun) followLogs() {
	ctx, cancel := context.WithCancel(context.Background())
	r.logs = &logFollower{k: r.k, name: r.name, out: r.out, ended: r.ended, done: make(chan struct{}), cancel: cancel}
	go r.logs.run(ctx)
}

// finish ends a step whose container exited: the rest of its log, its exit code, its exports
// (when the pod finished, so the exports sidecar has printed them), then the pod's deletion.
func (r *stepRun) finish(res executor.Result, readExports bool) (executor.Result, error) {
	close(r.ended)
	r.drainLogs()
	code, notes, _ := exitStatus(r.last)
	if r.last.Status.Reason == "DeadlineExceeded" {
		res.TimedOut = true
	}
	for _, n := range notes {
		r.out.Notice("%s", n)
	}
	res.ExitCode = code
	if readExports {
		res.Exports = r.exports()
	}
	err := r.remove(!podDone(r.last))
	if err != nil {
		// The step has ended and is reported; the pod that is left holds no running container.
		r.k.opts.Logger.Warn("delete finished step pod", "pod", r.name, "namespace", r.k.namespace, "error", err)
	}
	return res, nil
}

// stop deletes the pod of a step that must end (canceled, timed out, never started), with the
// kill grace period, and waits until it is gone. cause, when set, is returned with the result.
func (r *stepRun) stop(res executor.Result, cause error) (executor.Result, error) {
	err := r.remove(true)
	close(r.ended)
	r.drainLogs()
	if res.ExitCode == 0 {
		res.ExitCode = r.exitCodeOrKilled()
	}
	return res, errors.Join(cause, err)
}

// killed is stop for a pod whose watch ended: it deletes the pod without waiting for it.
func (r *stepRun) killed(res executor.Result, cause error) (executor.Result, error) {
	r.out.Notice("lost track of the step's pod %s (%v); deleting it", r.name, cause)
	grace := r.k.opts.graceSeconds()
	actx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	err := r.k.client.CoreV1().Pods(r.k.namespace).Delete(actx, r.name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: r.uid}})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	close(r.ended)
	r.drainLogs()
	res.ExitCode = r.exitCodeOrKilled()
	return res, errors.Join(cause, err)
}

// exitCodeOrKilled is the step's exit code if its container was seen to exit, else that of a
// killed process.
func (r *stepRun) exitCodeOrKilled() int {
	if code, _, known := exitStatus(r.last); known && code != 0 {
		return code
	}
	return exitCodeKilled
}

// remove deletes the pod (with the kill grace period when kill, else at once: a finished pod's
// containers have all exited) and waits, reading the watch, until it is gone or the grace period and
// goneSlack have passed.
func (r *stepRun) remove(kill bool) error {
	grace := int64(0)
	if kill {
		grace = r.k.opts.graceSeconds()
	}
	actx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	err := r.k.client.CoreV1().Pods(r.k.namespace).Delete(actx, r.name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: r.uid}})
	cancel()
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("delete pod %s: %w", r.name, err)
	}
	deadline := time.NewTimer(time.Duration(grace)*time.Second + goneSlack)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-r.events:
			switch {
			case !ok:
				return fmt.Errorf("pod %s: watch ended before the pod was gone", r.name)
			case ev.err != nil:
				return ev.err
			case ev.pod == nil:
				return nil
			}
			r.last = ev.pod
		case <-deadline.C:
			r.out.Notice("the step's pod %s is still there %s after it was deleted", r.name, time.Duration(grace)*time.Second+goneSlack)
			return fmt.Errorf("pod %s: still there %s after it was deleted", r.name, time.Duration(grace)*time.Second+goneSlack)
		}
	}
}

// drainLogs waits, for at most logDrainTimeout, until the log follower has written the rest of
// the log, and reports a log that could not be read.
func (r *stepRun) drainLogs() {
	if r.logs == nil {
		return
	}
	t := time.NewTimer(logDrainTimeout)
	defer t.Stop()
	select {
	case <-r.logs.done:
	case <-t.C:
		r.logs.cancel()
		<-r.logs.done
		r.out.Notice("the step's log stream did not end within %s of the step's end; the rest of it is not shown", logDrainTimeout)
		return
	}
	if r.logs.err != nil {
		r.out.Notice("the step's log could not be read: %v", r.logs.err)
	}
}

// exports reads the export file the exports sidecar printed, and reports lines that are not
// assignments when they differ from the last ones reported for the workspace.
func (r *stepRun) exports() []executor.EnvVar {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	limit := int64(len(exportsHeader) + 1 + executor.MaxExportFileSize + 1)
	b, err := r.k.client.CoreV1().Pods(r.k.namespace).GetLogs(r.name, &corev1.PodLogOptions{Container: ExportsContainer, LimitBytes: &limit}).DoRaw(ctx)
	if err != nil {
		r.out.Notice("the step's exports (%s) could not be read: %v", executor.ExportFile, err)
		return nil
	}
	vars, perr, ok := parseExportsLog(b)
	if !ok {
		r.out.Notice("the step's exports (%s) could not be read: the %s container printed no exports", executor.ExportFile, ExportsContainer)
		return nil
	}
	bad := ""
	if perr != nil {
		bad = perr.Error()
	}
	r.k.mu.Lock()
	changed := r.k.exportsSeen[r.ws.Handle] != bad
	r.k.exportsSeen[r.ws.Handle] = bad
	r.k.mu.Unlock()
	if changed && bad != "" {
		for _, line := range strings.Split(bad, "\n") {
			r.out.Notice("ignored: %s", line)
		}
	}
	return vars
}

// parseExportsLog parses the log of the exports sidecar: exportsHeader, then the export file.
// ok is false when the header is missing (the sidecar did not print the file).
func parseExportsLog(b []byte) (vars []executor.EnvVar, parseErr error, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(exportsHeader+"\n"))
	if !ok {
		return nil, nil, false
	}
	vars, parseErr = executor.ParseExports(bytes.NewReader(rest))
	return vars, parseErr, true
}

// logFollower writes the step container's log to the output as it arrives. The stream (follow)
// ends when the container exits; a stream that breaks while the container runs is reopened and
// what was already written is skipped.
type logFollower struct {
	k      *Kubernetes
	name   string
	out    *executor.Output
	ended  <-chan struct{} // closed once the container has exited
	done   chan struct{}   // closed when run returns
	cancel func()

	written int64 // bytes of the log written so far
	err     error // why the log could not be read (the last attempt's error), read after done
}

func (l *logFollower) run(ctx context.Context) {
	defer close(l.done)
	delay := logRetryMin
	for {
		endedBefore := isClosed(l.ended)
		err := l.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			// The stream ended: because the container did, or because a connection did.
			l.err = nil
			if endedBefore {
				return
			}
			select {
			case <-l.ended:
				return
			case <-time.After(logEOFRecheck):
			case <-ctx.Done():
				return
			}
			continue
		}
		l.err = err
		if endedBefore {
			return // the attempt after the container's end failed too
		}
		select {
		case <-l.ended: // one more attempt: the log of an exited container is still there
		case <-time.After(delay):
			delay = min(2*delay, logRetryMax)
		case <-ctx.Done():
			return
		}
	}
}

// follow streams the log once, skipping the bytes already written, until it ends (nil) or fails.
func (l *logFollower) follow(ctx context.Context) error {
	rc, err := l.k.client.CoreV1().Pods(l.k.namespace).GetLogs(l.name, &corev1.PodLogOptions{Container: StepContainer, Follow: true}).Stream(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	skip := l.written
	buf := make([]byte, logReadBuffer)
	for {
		n, err := rc.Read(buf)
		p := buf[:n]
		if skip > 0 {
			d := min(skip, int64(len(p)))
			p, skip = p[d:], skip-d
		}
		if len(p) > 0 {
			l.out.Write(p)
			l.written += int64(len(p))
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func ptr[T any](v T) *T { return &v }
