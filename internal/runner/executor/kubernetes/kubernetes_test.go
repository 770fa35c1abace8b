package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/executortest"
)

// noExecution is why the contract suite's behavioural subtests cannot run here.
const noExecution = "the loopback cluster's kwok node makes pods Running and ends them as annotated, but runs no container and serves no pod log (docs/testing.md)"

// TestContract runs the contract suite's subtests that do not need a step's commands to run:
// Name, InvalidStep and Cleanup (with the Leftovers hook seeing the claim and the pods).
// With FRESHET_TEST_KUBE_EXECUTES=1 on a cluster that runs containers, the whole suite runs.
func TestContract(t *testing.T) {
	e := newTestEnv(t)
	opts := executortest.Options{
		KillGrace:   testGrace,
		Slack:       5 * time.Second,
		Leftovers:   e.leftovers,
		NoExecution: noExecution,
	}
	if executes() {
		opts.NoExecution = ""
		opts.Slack = 15 * time.Second // pod start-up, image pulls, volume attachment
		opts.Image = e.image()
		opts.UnorderedStreams = "the container runtime logs stdout and stderr as two streams and copies each separately"
	}
	executortest.Run(t, func(t *testing.T) executor.Executor { return boundClaims{e.executor(t, Options{}), t, e} }, opts)
	checkNoGoroutines(t)
}

// run runs st on ws and returns its result, output and duration, failing the test on an error
// or if it takes longer than testBound.
func run(t *testing.T, k *Kubernetes, ws executor.Workspace, st executor.Step) (executor.Result, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	var out executortest.Buffer
	start := time.Now()
	res, err := k.Run(ctx, ws, st, &out)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Run(%s): %v\n%s", st.Name, err, out.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("Run(%s) took longer than %s", st.Name, testBound)
	}
	return res, out.String(), elapsed
}

// prepare prepares a workspace for build id on the test cluster (waiting until its claim is
// bound), cleaned up when the test ends.
func prepare(t *testing.T, e *testEnv, k *Kubernetes, id string, labels map[string]string) executor.Workspace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	ws, err := k.Prepare(ctx, executor.Build{ID: id, Labels: labels})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	e.waitBound(t, ws)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testBound)
		defer cancel()
		if err := k.Cleanup(ctx, ws); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	})
	return ws
}

// TestPodSpec checks the pod a step becomes, as the apiserver stored it after validation and
// admission, while it runs on the kwok node; then that the step ends with the pod's exit code and
// its pod is deleted.
func TestPodSpec(t *testing.T) {
	kwokOnly(t)
	e := newTestEnv(t)
	ctx := t.Context()
	t.Setenv("FRESHET_RUNNER_TOKEN", "runner-secret-must-not-leak")
	if _, err := e.c.Client.CoreV1().ServiceAccounts(e.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := e.executor(t, Options{
		ServiceAccount:   "builder",
		NodeSelector:     map[string]string{"kubernetes.io/os": "linux"},
		Tolerations:      []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ci", Effect: corev1.TaintEffectNoSchedule}},
		Resources:        corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
		ImagePullSecrets: []string{"registry-credentials"},
		Labels:           map[string]string{"team": "ci"},
		Annotations:      exitAfter("0", "2s"),
		StartTimeout:     30 * time.Second,
	})
	ws := prepare(t, e, k, "build-42", map[string]string{"project": "web"})
	step := executor.Step{
		Name:       "Build & Test",
		Image:      "golang:1.26",
		Commands:   []string{`go test ./...`, `cf_export RESULT=ok`},
		WorkingDir: "src/app",
		Env: []executor.EnvVar{
			{Name: "GOFLAGS", Value: "-mod=mod"},
			{Name: "PRICE", Value: "$(GOFLAGS) costs $5"},
			{Name: executor.VolumePathEnv, Value: "/elsewhere"},
		},
		Timeout: 90 * time.Second,
	}
	type ran struct {
		res executor.Result
		out string
		err error
	}
	done := make(chan ran, 1)
	go func() {
		var out executortest.Buffer
		res, err := k.Run(ctx, ws, step, &out)
		done <- ran{res, out.String(), err}
	}()
	pod := e.runningPod(t, "build-42")

	if pod.Spec.NodeName != "kwok-node-0" {
		t.Errorf("pod scheduled to %q, want kwok-node-0", pod.Spec.NodeName)
	}
	wantLabels := map[string]string{LabelBuild: "build-42", LabelStep: labelValue("Build & Test"), LabelManagedBy: "freshet", "team": "ci", "project": "web"}
	for key, v := range wantLabels {
		if pod.Labels[key] != v {
			t.Errorf("label %s = %q, want %q", key, pod.Labels[key], v)
		}
	}
	if pod.Annotations[AnnotationBuildID] != "build-42" || pod.Annotations[AnnotationStepName] != "Build & Test" {
		t.Errorf("annotations %v: want the build ID and the step name as they are", pod.Annotations)
	}
	if pod.Annotations[annotationScript] != step.Script() || pod.Annotations[annotationCFExport] != executor.CFExportScript {
		t.Errorf("the script and cf_export annotations are not the step's script and executor.CFExportScript")
	}
	spec := pod.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s, want Never", spec.RestartPolicy)
	}
	if spec.ActiveDeadlineSeconds == nil || *spec.ActiveDeadlineSeconds != 120 {
		t.Errorf("activeDeadlineSeconds %v, want 120 (the step's timeout plus the start timeout)", spec.ActiveDeadlineSeconds)
	}
	if spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds != 1 {
		t.Errorf("terminationGracePeriodSeconds %v, want 1 (the kill grace)", spec.TerminationGracePeriodSeconds)
	}
	if spec.ServiceAccountName != "builder" || spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
		t.Errorf("service account %q (automount %v), want builder with its token", spec.ServiceAccountName, spec.AutomountServiceAccountToken)
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Errorf("enableServiceLinks %v, want false (no service variables in the step's environment)", spec.EnableServiceLinks)
	}
	if spec.NodeSelector["kubernetes.io/os"] != "linux" || len(spec.Tolerations) == 0 || spec.Tolerations[0].Key != "dedicated" {
		t.Errorf("node selector %v, tolerations %v: want the configured ones", spec.NodeSelector, spec.Tolerations)
	}
	if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "registry-credentials" {
		t.Errorf("imagePullSecrets %v", spec.ImagePullSecrets)
	}
	if a := spec.Affinity; a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != corev1.LabelHostname ||
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels[LabelBuild] != "build-42" {
		t.Errorf("affinity %+v: want the build's pods on one node (ReadWriteOnce volume)", a)
	}

	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.Name != StepContainer || c.Image != "golang:1.26" {
		t.Errorf("container %s image %s, want step golang:1.26", c.Name, c.Image)
	}
	if want := []string{"sh", ScriptPath}; !slices.Equal(c.Command, want) || len(c.Args) != 0 {
		t.Errorf("command %q args %q, want %q", c.Command, c.Args, want)
	}
	if c.WorkingDir != "/codefresh/volume/src/app" {
		t.Errorf("workingDir %q, want /codefresh/volume/src/app", c.WorkingDir)
	}
	// Exactly the step's variables, "$" escaped from the kubelet's $(VAR) expansion, and
	// CF_VOLUME_PATH fixed: nothing of the runner's environment.
	wantEnv := []corev1.EnvVar{{Name: "GOFLAGS", Value: "-mod=mod"}, {Name: "PRICE", Value: "$$(GOFLAGS) costs $$5"}, {Name: executor.VolumePathEnv, Value: "/codefresh/volume"}}
	if !slices.Equal(c.Env, wantEnv) {
		t.Errorf("env %+v, want %+v", c.Env, wantEnv)
	}
	if c.Resources.Requests.Cpu().String() != "250m" {
		t.Errorf("resources %+v, want the configured requests", c.Resources)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m := mounts[ws.Path]; m.Name != workspaceVolume || m.ReadOnly {
		t.Errorf("no writable workspace mount at %s: %+v", ws.Path, c.VolumeMounts)
	}
	if m := mounts[CFExportPath]; m.Name != scriptVolume || m.SubPath != executor.CFExportCommand {
		t.Errorf("cf_export is not mounted at %s: %+v", CFExportPath, c.VolumeMounts)
	}
	if m := mounts[ScriptDir]; m.Name != scriptVolume || !m.ReadOnly {
		t.Errorf("the script directory is not mounted read-only at %s: %+v", ScriptDir, c.VolumeMounts)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	if v := volumes[workspaceVolume]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != ws.Handle {
		t.Errorf("workspace volume %+v, want claim %s", v, ws.Handle)
	}
	if v := volumes[scriptVolume]; v.DownwardAPI == nil || len(v.DownwardAPI.Items) != 2 {
		t.Errorf("script volume %+v, want the two annotations projected", v)
	}

	if len(spec.InitContainers) != 2 {
		t.Fatalf("%d init containers, want the init and the exports sidecar", len(spec.InitContainers))
	}
	ini, side := spec.InitContainers[0], spec.InitContainers[1]
	if ini.Name != InitContainer || ini.Image != DefaultHelperImage || ini.RestartPolicy != nil {
		t.Errorf("init container %s %s restartPolicy %v", ini.Name, ini.Image, ini.RestartPolicy)
	}
	if !slices.Contains(ini.Env, corev1.EnvVar{Name: workDirEnv, Value: "/codefresh/volume/src/app"}) {
		t.Errorf("the init container is not told to create the working directory: %+v", ini.Env)
	}
	if side.Name != ExportsContainer || side.RestartPolicy == nil || *side.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("exports container %s restartPolicy %v, want a native sidecar", side.Name, side.RestartPolicy)
	}
	b, _ := json.Marshal(pod)
	if strings.Contains(string(b), "runner-secret-must-not-leak") || strings.Contains(string(b), "FRESHET_RUNNER_TOKEN") {
		t.Errorf("the runner's environment leaked into the pod")
	}

	var r ran
	select {
	case r = <-done:
	case <-time.After(testBound):
		t.Fatal("Run did not return after the pod ended")
	}
	if r.err != nil || !r.res.Succeeded() || r.res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v; want success\n%s", r.res, r.err, r.out)
	}
	// What kwok cannot show is said, not hidden: no log, no exports.
	if !strings.Contains(r.out, executor.NoticePrefix+"the step's log could not be read") || !strings.Contains(r.out, "exports") {
		t.Errorf("output %q: want notices that the log and the exports could not be read", r.out)
	}
	if left := e.pods(t, "build-42"); len(left) != 0 {
		t.Errorf("the step's pod is still there after Run: %v", left[0].Name)
	}
	checkNoGoroutines(t)
}

// TestLifecycle follows pods through Pending, Running and their end on the kwok node: the exit
// code is the container's, and each pod is deleted once its step ended.
func TestLifecycle(t *testing.T) {
	kwokOnly(t)
	e := newTestEnv(t)
	for _, tc := range []struct {
		code string
		want int
	}{{"0", 0}, {"3", 3}, {"137", 137}} {
		t.Run("exit-"+tc.code, func(t *testing.T) {
			k := e.executor(t, Options{Annotations: exitAfter(tc.code, "1s")})
			id := "lifecycle-" + tc.code
			ws := prepare(t, e, k, id, nil)
			phases := e.recordPhases(t, id)
			res, out, elapsed := run(t, k, ws, executor.Step{Name: "s", Commands: []string{"true"}})
			if res.ExitCode != tc.want || res.Succeeded() != (tc.want == 0) || res.TimedOut || res.Canceled {
				t.Errorf("result %+v, want exit code %d\n%s", res, tc.want, out)
			}
			if elapsed < time.Second || res.Duration < time.Second || res.Duration > elapsed {
				t.Errorf("Run took %s (Duration %s); the pod ran for 1s", elapsed, res.Duration)
			}
			want := []string{"Pending", "Running", map[bool]string{true: "Succeeded", false: "Failed"}[tc.want == 0], "deleted"}
			if got := phases(); !slices.Equal(got, want) {
				t.Errorf("the pod went through %v, want %v", got, want)
			}
			checkNoGoroutines(t)
		})
	}
}

// recordPhases watches the pods of build id and returns a function that returns the phases
// (and "deleted") the first of them went through, once it is gone.
func (e *testEnv) recordPhases(t *testing.T, id string) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := e.c.Client.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{LabelSelector: BuildSelector(id)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() {
		defer w.Stop()
		var phases []string
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			phase := string(p.Status.Phase)
			if ev.Type == watch.Deleted {
				phase = "deleted"
			}
			if len(phases) == 0 || phases[len(phases)-1] != phase {
				phases = append(phases, phase)
			}
			if ev.Type == watch.Deleted {
				break
			}
		}
		done <- phases
	}()
	return func() []string {
		select {
		case p := <-done:
			return p
		case <-time.After(testBound):
			t.Fatal("the pod was not deleted")
			return nil
		}
	}
}

// deletions watches the pods of build id and returns a function that returns the grace period
// each deletion asked for.
func (e *testEnv) deletions(t *testing.T, id string) func() []int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Client.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{LabelSelector: BuildSelector(id)})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		grace []int64
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.DeletionGracePeriodSeconds != nil && ev.Type == watch.Modified {
				mu.Lock()
				grace = append(grace, *p.DeletionGracePeriodSeconds)
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(grace)
	}
}

// TestCancelDeletesPod: canceling a running step deletes its pod with the kill grace period and
// Run returns promptly, Canceled, with the pod gone.
func TestCancelDeletesPod(t *testing.T) {
	kwokOnly(t)
	e := newTestEnv(t)
	k := e.executor(t, Options{Annotations: exitAfter("0", "1h")})
	ws := prepare(t, e, k, "cancel", nil)
	grace := e.deletions(t, "cancel")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ran struct {
		res executor.Result
		err error
	}
	done := make(chan ran, 1)
	var out executortest.Buffer
	go func() {
		res, err := k.Run(ctx, ws, executor.Step{Name: "forever", Commands: []string{"sleep 3600"}}, &out)
		done <- ran{res, err}
	}()
	e.runningPod(t, "cancel")
	cancel()
	canceledAt := time.Now()
	var r ran
	select {
	case r = <-done:
	case <-time.After(testBound):
		t.Fatal("Run did not return after the cancel")
	}
	// kwok removes a deleted pod at once; a kubelet would take up to the grace period.
	if elapsed := time.Since(canceledAt); elapsed > 5*time.Second {
		t.Errorf("Run returned %s after the cancel", elapsed)
	}
	if r.err != nil || !r.res.Canceled || r.res.TimedOut || r.res.Succeeded() || r.res.ExitCode == 0 {
		t.Errorf("Run = %+v, %v; want Canceled with a non-zero exit code and no error\n%s", r.res, r.err, out.String())
	}
	if left := e.pods(t, "cancel"); len(left) != 0 {
		t.Errorf("the pod is still there after Run returned: %s %s", left[0].Name, left[0].Status.Phase)
	}
	if g := grace(); !slices.Contains(g, 1) {
		t.Errorf("deletion grace periods seen %v, want the kill grace (1 s)", g)
	}
	checkNoGoroutines(t)
}

// TestTimeoutDeletesPod: a step still running at its timeout is stopped: pod deleted, TimedOut.
func TestTimeoutDeletesPod(t *testing.T) {
	kwokOnly(t)
	e := newTestEnv(t)
	k := e.executor(t, Options{Annotations: exitAfter("0", "1h")})
	ws := prepare(t, e, k, "timeout", nil)
	const timeout = 3 * time.Second
	res, out, elapsed := run(t, k, ws, executor.Step{Name: "slow", Commands: []string{"sleep 3600"}, Timeout: timeout})
	if !res.TimedOut || res.Canceled || res.Succeeded() || res.ExitCode == 0 {
		t.Errorf("result %+v, want TimedOut with a non-zero exit code", res)
	}
	if elapsed < timeout || elapsed > timeout+5*time.Second {
		t.Errorf("Run took %s, want the timeout %s plus a little", elapsed, timeout)
	}
	if !strings.Contains(out, executor.NoticePrefix+"the step timed out after 3s") {
		t.Errorf("output %q: want a notice of the timeout", out)
	}
	if left := e.pods(t, "timeout"); len(left) != 0 {
		t.Errorf("the pod is still there after Run returned: %s", left[0].Name)
	}
	checkNoGoroutines(t)
}

// TestUnschedulable: a pod that no node can take fails the step after StartTimeout, with the
// scheduler's reason in the output, and is deleted.
func TestUnschedulable(t *testing.T) {
	kwokOnly(t)
	e := newTestEnv(t)
	k := e.executor(t, Options{NodeSelector: map[string]string{"freshet.example/pool": "none"}, StartTimeout: 3 * time.Second})
	ws := prepare(t, e, k, "unschedulable", nil)
	res, out, elapsed := run(t, k, ws, executor.Step{Name: "nowhere", Commands: []string{"true"}})
	if res.ExitCode != executor.ExitCodeNotFound || res.Succeeded() || res.TimedOut || res.Canceled {
		t.Errorf("result %+v, want exit code %d", res, executor.ExitCodeNotFound)
	}
	if elapsed < 3*time.Second || elapsed > 10*time.Second {
		t.Errorf("Run took %s, want the start timeout (3s) plus a little", elapsed)
	}
	for _, want := range []string{"did not start within 3s", "not scheduled: Unschedulable", "node affinity/selector"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q does not say %q", out, want)
		}
	}
	if left := e.pods(t, "unschedulable"); len(left) != 0 {
		t.Errorf("the pod is still there after Run returned: %s", left[0].Name)
	}
	checkNoGoroutines(t)
}

// TestParallelSteps: steps run at once on one workspace, each in its own pod, all held on the
// node of the build's other pods.
func TestParallelSteps(t *testing.T) {
	kwokOnly(t)
	e := newTestEnv(t)
	k := e.executor(t, Options{Annotations: exitAfter("0", "2s")})
	ws := prepare(t, e, k, "parallel", nil)
	var wg sync.WaitGroup
	results := make([]executor.Result, 3)
	errs := make([]error, 3)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	for i := range results {
		wg.Go(func() {
			results[i], errs[i] = k.Run(ctx, ws, executor.Step{Name: fmt.Sprintf("p%d", i), Commands: []string{"true"}}, nil)
		})
	}
	e.waitFor(t, "three pods running at once", func(ctx context.Context) (bool, error) {
		n := 0
		for _, p := range e.pods(t, "parallel") {
			if p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n == 3, nil
	})
	wg.Wait()
	for i, r := range results {
		if errs[i] != nil || !r.Succeeded() {
			t.Errorf("step %d: %+v, %v", i, r, errs[i])
		}
	}
	checkNoGoroutines(t)
}

// TestPrepareAndCleanup: Prepare makes one labelled claim per build and is idempotent; Cleanup,
// by a new executor (a restarted runner), removes the build's pods, even ones no Run is
// following, and the claim, and is idempotent; the workspace is then unusable.
func TestPrepareAndCleanup(t *testing.T) {
	kwokOnly(t)
	e := newTestEnv(t)
	opts := Options{StorageClass: "fast", VolumeSize: "3Gi", Labels: map[string]string{"team": "ci"}, Annotations: exitAfter("0", "1h")}
	k := e.executor(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	b := executor.Build{ID: "Build_7/retry", Labels: map[string]string{"project": "web"}}
	ws, err := k.Prepare(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := k.Prepare(ctx, b)
	if err != nil || again != ws {
		t.Fatalf("second Prepare = %+v, %v; want %+v", again, err, ws)
	}
	other, err := k.Prepare(ctx, executor.Build{ID: "build_7/retry"})
	if err != nil || other.Handle == ws.Handle {
		t.Fatalf("Prepare of a build whose ID differs in case only = %+v, %v; want its own claim", other, err)
	}
	e.waitBound(t, ws)
	if ws.Path != DefaultWorkspacePath || ws.BuildID != b.ID || ws.Handle != ClaimName(b.ID) {
		t.Errorf("workspace %+v", ws)
	}
	pvc, err := e.c.Client.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, ws.Handle, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Labels[LabelBuild] != labelValue(b.ID) || pvc.Labels["project"] != "web" || pvc.Labels["team"] != "ci" || pvc.Annotations[AnnotationBuildID] != b.ID {
		t.Errorf("claim labels %v annotations %v", pvc.Labels, pvc.Annotations)
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "fast" || pvc.Spec.Resources.Requests.Storage().String() != "3Gi" ||
		!slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("claim spec %+v", pvc.Spec)
	}

	// Two pods of the build that nothing follows, as a runner that crashed leaves them.
	for i := range 2 {
		pod, err := k.podFor(ws, pvc, executor.Step{Name: fmt.Sprintf("orphan-%d", i), Commands: []string{"sleep 3600"}}, ws.Path, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.Client.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor(t, "the orphan pods to run", func(ctx context.Context) (bool, error) {
		pods := e.pods(t, b.ID)
		return len(pods) == 2 && pods[0].Status.Phase == corev1.PodRunning && pods[1].Status.Phase == corev1.PodRunning, nil
	})
	if running, stored := e.leftovers(t, ws); len(running) != 2 || len(stored) != 1 {
		t.Fatalf("before Cleanup: running %v stored %v", running, stored)
	}

	restarted := e.executor(t, opts)
	if err := restarted.Cleanup(ctx, ws); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if running, stored := e.leftovers(t, ws); len(running)+len(stored) > 0 {
		t.Errorf("after Cleanup: running %v stored %v", running, stored)
	}
	if _, err := e.c.Client.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, other.Handle, metav1.GetOptions{}); err != nil {
		t.Errorf("Cleanup of one build touched another's claim: %v", err)
	}
	if err := restarted.Cleanup(ctx, ws); err != nil {
		t.Errorf("second Cleanup: %v", err)
	}
	if _, err := restarted.Run(ctx, ws, executor.Step{Name: "after", Commands: []string{"true"}}, nil); !errors.Is(err, executor.ErrNoWorkspace) {
		t.Errorf("Run after Cleanup: %v, want ErrNoWorkspace", err)
	}
	if err := restarted.Cleanup(ctx, executor.Workspace{BuildID: "x", Handle: "some-other-claim"}); !errors.Is(err, executor.ErrNoWorkspace) {
		t.Errorf("Cleanup of a claim the executor did not make: %v, want ErrNoWorkspace", err)
	}
	if err := k.Cleanup(ctx, other); err != nil {
		t.Errorf("Cleanup: %v", err)
	}
}

// TestRoleIsEnough runs a build as a service account bound to RoleYAML only: the Role grants all
// the executor needs (including the pod log, which kwok then does not have) and, of secrets, only
// their creation.
func TestRoleIsEnough(t *testing.T) {
	kwokOnly(t)
	e := newTestEnv(t)
	ctx := t.Context()
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(RoleYAML), nil, nil)
	if err != nil {
		t.Fatalf("RoleYAML: %v", err)
	}
	role, ok := obj.(*rbacv1.Role)
	if !ok {
		t.Fatalf("RoleYAML is a %T, want a Role", obj)
	}
	if _, err := e.c.Client.RbacV1().Roles(e.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Role: %v", err)
	}
	if _, err := e.c.Client.CoreV1().ServiceAccounts(e.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "freshet-runner"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "runner", Namespace: e.ns}},
	}
	if _, err := e.c.Client.RbacV1().RoleBindings(e.ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := e.c.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + e.ns + ":runner"}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "the binding to take effect", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil, err
	})
	if _, err := cs.CoreV1().Secrets(e.ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets as the runner: %v, want Forbidden", err)
	}
	// Builder pods' registry Secrets: created (owned by the pod), never read or deleted.
	if _, err := cs.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "builder-creds"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("create a secret as the runner: %v", err)
	}
	for verb, err := range map[string]error{
		"get": func() error {
			_, err := cs.CoreV1().Secrets(e.ns).Get(ctx, "builder-creds", metav1.GetOptions{})
			return err
		}(),
		"delete": cs.CoreV1().Secrets(e.ns).Delete(ctx, "builder-creds", metav1.DeleteOptions{}),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s a secret as the runner: %v, want Forbidden", verb, err)
		}
	}
	k, err := New(Options{RestConfig: cfg, Namespace: e.ns, KillGrace: testGrace, Annotations: exitAfter("0", "1s")})
	if err != nil {
		t.Fatal(err)
	}
	ws := prepare(t, e, k, "rbac", nil)
	res, out, _ := run(t, k, ws, executor.Step{Name: "s", Commands: []string{"true"}})
	if !res.Succeeded() {
		t.Errorf("result %+v\n%s", res, out)
	}
	// The log request passed authorization and then found no log on the kwok node.
	if strings.Contains(strings.ToLower(out), "forbidden") || !strings.Contains(out, "could not find the requested resource") {
		t.Errorf("output %q: want the log requests authorized (and answered: no log on kwok)", out)
	}
	// Cancel, as the runner: delete with grace and watch.
	ctx2, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	k2, _ := New(Options{RestConfig: cfg, Namespace: e.ns, KillGrace: testGrace, Annotations: exitAfter("0", "1h")})
	res, err = k2.Run(ctx2, ws, executor.Step{Name: "long", Commands: []string{"sleep 3600"}}, nil)
	if err != nil || !res.Canceled {
		t.Errorf("canceled Run as the runner = %+v, %v", res, err)
	}
}

// TestNew covers how the executor finds its cluster and namespace.
func TestNew(t *testing.T) {
	e := newTestEnv(t)
	k, err := New(Options{Kubeconfig: e.c.Kubeconfig, Annotations: exitAfter("0", "")})
	if err != nil {
		t.Fatalf("New with a kubeconfig: %v", err)
	}
	if k.Namespace() != DefaultNamespace || k.Name() != Name {
		t.Errorf("namespace %q name %q, want %q %q", k.Namespace(), k.Name(), DefaultNamespace, Name)
	}
	if _, err := k.client.Discovery().ServerVersion(); err != nil {
		t.Errorf("the kubeconfig's cluster is not reachable: %v", err)
	}
	if _, err := New(Options{Kubeconfig: e.c.Kubeconfig, Context: "no-such-context"}); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "no-such-context") {
		t.Errorf("New with an unknown context: %v, want ErrInvalidOptions naming it", err)
	}
	if _, err := New(Options{Kubeconfig: "/nonexistent/kubeconfig"}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("New with a missing kubeconfig: %v, want ErrInvalidOptions", err)
	}
}

// TestCanceledBeforeStart: a context already done starts nothing.
func TestCanceledBeforeStart(t *testing.T) {
	kwokOnly(t)
	e := newTestEnv(t)
	k := e.executor(t, Options{})
	ws := prepare(t, e, k, "canceled", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := k.Run(ctx, ws, executor.Step{Name: "never", Commands: []string{"true"}}, nil)
	if err != nil || !res.Canceled || res.Succeeded() {
		t.Errorf("Run with a canceled context = %+v, %v; want Canceled", res, err)
	}
	if pods := e.pods(t, "canceled"); len(pods) != 0 {
		t.Errorf("a pod was created: %s", pods[0].Name)
	}
}

// TestPodDeletedBySomeoneElse: a pod deleted under a running step ends Run with ErrPodDeleted.
func TestPodDeletedBySomeoneElse(t *testing.T) {
	kwokOnly(t)
	e := newTestEnv(t)
	k := e.executor(t, Options{Annotations: exitAfter("0", "1h")})
	ws := prepare(t, e, k, "deleted", nil)
	type ran struct {
		res executor.Result
		err error
	}
	done := make(chan ran, 1)
	var out executortest.Buffer
	go func() {
		res, err := k.Run(context.Background(), ws, executor.Step{Name: "victim", Commands: []string{"sleep 3600"}}, &out)
		done <- ran{res, err}
	}()
	pod := e.runningPod(t, "deleted")
	if err := e.c.Client.CoreV1().Pods(e.ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if !errors.Is(r.err, ErrPodDeleted) || r.res.Succeeded() || r.res.ExitCode == 0 {
			t.Errorf("Run = %+v, %v; want ErrPodDeleted and a failed result", r.res, r.err)
		}
		if !strings.Contains(out.String(), "was deleted while the step ran") {
			t.Errorf("output %q: want a notice of the deletion", out.String())
		}
	case <-time.After(testBound):
		t.Fatal("Run did not return after its pod was deleted")
	}
	checkNoGoroutines(t)
}
