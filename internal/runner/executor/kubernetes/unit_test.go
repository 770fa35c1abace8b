package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/executortest"
)

// Tests of what needs no cluster: names, options, the pod a step becomes, how pod states are
// read, exports parsing, and the log follower against a stand-in for the apiserver's log
// endpoint.

func TestNames(t *testing.T) {
	ids := []string{"42", "build-42", "Build_7/retry", "build_7/retry", "ünïcode", "---", strings.Repeat("a", 200), strings.Repeat("a", 199) + "b", "a.b_c-D"}
	claims, values := map[string]string{}, map[string]string{}
	for _, id := range ids {
		c, v := ClaimName(id), labelValue(id)
		if errs := validation.IsDNS1123Label(c); len(errs) > 0 {
			t.Errorf("ClaimName(%q) = %q: %v", id, c, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("labelValue(%q) = %q: %v", id, v, errs)
		}
		if other, ok := claims[c]; ok {
			t.Errorf("builds %q and %q share claim %q", id, other, c)
		}
		if other, ok := values[v]; ok {
			t.Errorf("builds %q and %q share label value %q", id, other, v)
		}
		claims[c], values[v] = id, id
		if ClaimName(id) != c {
			t.Errorf("ClaimName(%q) is not stable", id)
		}
	}
	if labelValue("build-42") != "build-42" || ClaimName("build-42") != "freshet-ws-build-42" {
		t.Errorf("a valid ID is changed: %q %q", labelValue("build-42"), ClaimName("build-42"))
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (&Options{}).Validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
	for _, tc := range []struct {
		opts  Options
		field string
	}{
		{Options{Namespace: "Builds"}, "Namespace"},
		{Options{WorkspacePath: "relative"}, "WorkspacePath"},
		{Options{WorkspacePath: "/"}, "WorkspacePath"},
		{Options{WorkspacePath: "/freshet/ws"}, "WorkspacePath"},
		{Options{VolumeSize: "lots"}, "VolumeSize"},
		{Options{VolumeSize: "0"}, "VolumeSize"},
		{Options{AccessMode: corev1.ReadWriteOncePod}, "AccessMode"},
		{Options{StorageClass: "Fast SSD"}, "StorageClass"},
		{Options{ServiceAccount: "a/b"}, "ServiceAccount"},
		{Options{ImagePullSecrets: []string{"ok", "Not OK"}}, "ImagePullSecrets[1]"},
		{Options{NodeSelector: map[string]string{"pool": "a b"}}, "NodeSelector[pool]"},
		{Options{Labels: map[string]string{LabelBuild: "x"}}, "Labels key"},
		{Options{Annotations: map[string]string{annotationScript: "x"}}, "Annotations key"},
		{Options{DefaultImage: "alpine 3"}, "DefaultImage"},
		{Options{KillGrace: -time.Second}, "KillGrace"},
		{Options{StartTimeout: -time.Second}, "StartTimeout"},
		{Options{InCluster: true, Kubeconfig: "/k"}, "InCluster"},
	} {
		err := tc.opts.Validate()
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.field+" = ") {
			t.Errorf("%+v: Validate = %v, want ErrInvalidOptions naming %s", tc.opts, err, tc.field)
		}
	}
	if got := (Options{KillGrace: 300 * time.Millisecond}).graceSeconds(); got != 1 {
		t.Errorf("graceSeconds of 300ms = %d, want 1", got)
	}
	if got := (Options{KillGrace: 10 * time.Second}).graceSeconds(); got != 10 {
		t.Errorf("graceSeconds of 10s = %d, want 10", got)
	}
}

// TestPodForCommand covers the step container's command, environment and working directory for
// the kinds of steps.
func TestPodForCommand(t *testing.T) {
	k, err := NewWithClient(nil, Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	ws := executor.Workspace{BuildID: "b", Path: DefaultWorkspacePath, Handle: ClaimName("b")}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Labels: k.labels(map[string]string{"project": "p"}, "b")}}
	for _, tc := range []struct {
		name    string
		step    executor.Step
		image   string
		command []string
		workDir string
		initDir string // FRESHET_WORKDIR, "" when unset
		script  bool
	}{
		{"commands", executor.Step{Commands: []string{"echo hi"}}, DefaultImage, []string{"sh", ScriptPath}, "/codefresh/volume", "/codefresh/volume", true},
		{"shell", executor.Step{Image: "debian", Commands: []string{"echo hi"}, Shell: "bash", WorkingDir: "a/../b"}, "debian", []string{"bash", ScriptPath}, "/codefresh/volume/b", "/codefresh/volume/b", true},
		{"entry point with commands", executor.Step{Commands: []string{"x"}, EntryPoint: []string{"bash", "-x"}}, DefaultImage, []string{"bash", "-x", ScriptPath}, "/codefresh/volume", "/codefresh/volume", true},
		{"entry point only", executor.Step{EntryPoint: []string{"echo", "$(HOME)", "$5"}}, DefaultImage, []string{"echo", "$$(HOME)", "$$5"}, "/codefresh/volume", "/codefresh/volume", false},
		{"image default", executor.Step{Image: "nginx", WorkingDir: "/srv"}, "nginx", nil, "/srv", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd, in, err := executor.ResolveWorkingDir(ws.Path, tc.step.WorkingDir)
			if err != nil {
				t.Fatal(err)
			}
			pod, err := k.podFor(ws, pvc, tc.step, wd, in)
			if err != nil {
				t.Fatal(err)
			}
			c := pod.Spec.Containers[0]
			if c.Image != tc.image || !slices.Equal(c.Command, tc.command) || c.WorkingDir != tc.workDir {
				t.Errorf("image %q command %q workingDir %q; want %q %q %q", c.Image, c.Command, c.WorkingDir, tc.image, tc.command, tc.workDir)
			}
			var initDir string
			for _, e := range pod.Spec.InitContainers[0].Env {
				if e.Name == workDirEnv {
					initDir = e.Value
				}
			}
			if initDir != tc.initDir {
				t.Errorf("%s = %q, want %q", workDirEnv, initDir, tc.initDir)
			}
			_, hasScript := pod.Annotations[annotationScript]
			if hasScript != tc.script || len(pod.Spec.Volumes[1].DownwardAPI.Items) != map[bool]int{true: 2, false: 1}[tc.script] {
				t.Errorf("script annotation %v, projected files %v; want a script: %v", hasScript, pod.Spec.Volumes[1].DownwardAPI.Items, tc.script)
			}
			if pod.Labels["project"] != "p" || pod.Labels[LabelBuild] != "b" {
				t.Errorf("labels %v: want the claim's", pod.Labels)
			}
			if errs := validation.IsDNS1123Subdomain(pod.GenerateName + "abcde"); len(errs) > 0 {
				t.Errorf("generateName %q: %v", pod.GenerateName, errs)
			}
		})
	}
	big := executor.Step{Commands: []string{strings.Repeat("x", maxScriptBytes)}}
	if _, err := k.podFor(ws, pvc, big, ws.Path, true); !errors.Is(err, executor.ErrInvalidStep) || errdefs.Field(err) != "commands" {
		t.Errorf("a script over %d bytes: %v, want ErrInvalidStep for commands", maxScriptBytes, err)
	}
	rwx, _ := NewWithClient(nil, Options{AccessMode: corev1.ReadWriteMany})
	if pod, _ := rwx.podFor(ws, pvc, executor.Step{Commands: []string{"x"}}, ws.Path, true); pod.Spec.Affinity != nil {
		t.Errorf("ReadWriteMany: affinity %+v, want none (pods may spread)", pod.Spec.Affinity)
	}
}

func TestEscape(t *testing.T) {
	// The kubelet reads "$$" as "$" and "$(NAME)" as a reference; "$" alone stays.
	for in, want := range map[string]string{"": "", "plain": "plain", "$(HOME)": "$$(HOME)", "a$": "a$$", "$$": "$$$$"} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func terminated(code int32, reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg}}
}

func TestExitStatus(t *testing.T) {
	pod := func(phase corev1.PodPhase, reason string, step *corev1.ContainerState, init ...corev1.ContainerStatus) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase, Reason: reason, InitContainerStatuses: init}}
		if step != nil {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: StepContainer, State: *step}}
		}
		return p
	}
	st := func(s corev1.ContainerState) *corev1.ContainerState { return &s }
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		code  int
		known bool
		note  string
	}{
		{"success", pod(corev1.PodSucceeded, "", st(terminated(0, "Completed", ""))), 0, true, ""},
		{"failure", pod(corev1.PodFailed, "", st(terminated(42, "Error", ""))), 42, true, ""},
		{"signal", pod(corev1.PodFailed, "", st(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Signal: 15}})), 143, true, ""},
		{"oom", pod(corev1.PodFailed, "", st(terminated(137, "OOMKilled", ""))), 137, true, "OOMKilled"},
		{"no shell", pod(corev1.PodFailed, "", st(terminated(128, "StartError", `exec: "bash": executable file not found in $PATH`))), 127, true, "executable file not found"},
		{"init failed", pod(corev1.PodFailed, "", st(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}),
			corev1.ContainerStatus{Name: InitContainer, State: terminated(1, "Error", "")}), 127, false, "freshet-init container failed with exit code 1"},
		{"evicted", pod(corev1.PodFailed, "Evicted", nil), 127, false, "Evicted"},
	} {
		code, notes, known := exitStatus(tc.pod)
		if code != tc.code || known != tc.known || (tc.note == "") != (len(notes) == 0) || !strings.Contains(strings.Join(notes, "\n"), tc.note) {
			t.Errorf("%s: exitStatus = %d, %q, %v; want %d, a note with %q, %v", tc.name, code, notes, known, tc.code, tc.note, tc.known)
		}
	}
}

func TestStartFailureAndPending(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{
		Phase:      corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: InitContainer, Image: "busybox:1.37", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "pull access denied"}}}},
	}}
	if why := startFailure(p); why != "" {
		t.Errorf("ErrImagePull (retried by the kubelet) is fatal: %q", why)
	}
	if why := pending(p); !strings.Contains(why, "freshet-init waiting: ErrImagePull: pull access denied") {
		t.Errorf("pending = %q", why)
	}
	p.Status.InitContainerStatuses[0].State.Waiting.Reason = "ImagePullBackOff"
	if why := startFailure(p); !strings.Contains(why, `image "busybox:1.37": ImagePullBackOff: pull access denied`) {
		t.Errorf("startFailure = %q", why)
	}
	u := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available:\n3 Insufficient cpu."}}}}
	if why := pending(u); why != "not scheduled: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu." {
		t.Errorf("pending = %q", why)
	}
}

func TestParseExportsLog(t *testing.T) {
	vars, perr, ok := parseExportsLog([]byte(exportsHeader + "\nA=1\nnot an assignment\nB=two words\nA=3"))
	want := []executor.EnvVar{{Name: "A", Value: "3"}, {Name: "B", Value: "two words"}}
	if !ok || !slices.Equal(vars, want) || perr == nil || !strings.Contains(perr.Error(), "line 2") {
		t.Errorf("parseExportsLog = %v, %v, %v; want %v and line 2 reported", vars, perr, ok, want)
	}
	if vars, perr, ok := parseExportsLog([]byte(exportsHeader + "\n")); !ok || len(vars) != 0 || perr != nil {
		t.Errorf("an empty export file: %v, %v, %v", vars, perr, ok)
	}
	if _, _, ok := parseExportsLog([]byte("A=1\n")); ok {
		t.Error("a log without the header was taken for exports")
	}
}

// logServer stands in for the apiserver's pod log endpoint: each request gets the next of
// responses, a function writing the stream.
func logServer(t *testing.T, responses ...func(w http.ResponseWriter)) (*Kubernetes, func() int) {
	var (
		mu sync.Mutex
		n  int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/ns/pods/p/log" || r.URL.Query().Get("container") != StepContainer || r.URL.Query().Get("follow") != "true" {
			http.Error(w, "unexpected request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if i >= len(responses) {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no more","reason":"NotFound","code":404}`, http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
		responses[i](w)
	}))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewWithClient(cs, Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	return k, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func follow(t *testing.T, k *Kubernetes, ended chan struct{}) (*logFollower, *executortest.Buffer) {
	var buf executortest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	l := &logFollower{k: k, name: "p", out: executor.NewOutput(&buf), ended: ended, done: make(chan struct{}), cancel: cancel}
	go l.run(ctx)
	t.Cleanup(func() { cancel(); <-l.done })
	return l, &buf
}

func flushed(w http.ResponseWriter, s string) {
	fmt.Fprint(w, s)
	w.(http.Flusher).Flush()
}

// TestLogFollowerResumes: a stream that breaks while the container runs is reopened, and what
// was already written is not written again.
func TestLogFollowerResumes(t *testing.T) {
	k, requests := logServer(t,
		func(w http.ResponseWriter) {
			flushed(w, "line 1\nline 2\npart")
			panic(http.ErrAbortHandler) // the connection breaks mid-stream
		},
		func(w http.ResponseWriter) {
			flushed(w, "line 1\nline 2\npartial line\n")
			time.Sleep(50 * time.Millisecond)
			flushed(w, "line 3\nno newline")
		})
	ended := make(chan struct{})
	l, buf := follow(t, k, ended)
	deadline := time.Now().Add(5 * time.Second)
	for requests() < 2 || !strings.HasSuffix(buf.String(), "no newline") {
		if time.Now().After(deadline) {
			t.Fatalf("after %d requests the output is %q", requests(), buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(ended) // the container exited: the clean end of the stream was its end
	select {
	case <-l.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the follower did not stop after the container ended")
	}
	if got, want := buf.String(), "line 1\nline 2\npartial line\nline 3\nno newline"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if l.err != nil || requests() != 2 {
		t.Errorf("err %v after %d requests, want none after 2", l.err, requests())
	}
}

// TestLogFollowerGivesUp: a log that cannot be read is retried while the container runs, tried
// once more after it ended, and the error kept for a notice.
func TestLogFollowerGivesUp(t *testing.T) {
	k, requests := logServer(t)
	ended := make(chan struct{})
	l, buf := follow(t, k, ended)
	time.Sleep(700 * time.Millisecond)
	before := requests()
	if before < 2 || before > 5 {
		t.Errorf("%d requests in 0.7 s, want a few retries with backoff", before)
	}
	close(ended)
	select {
	case <-l.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the follower did not give up after the container ended")
	}
	if requests() < before+1 || l.err == nil || !strings.Contains(l.err.Error(), "could not find the requested resource") || buf.String() != "" {
		t.Errorf("requests %d→%d, err %v, output %q; want one more attempt and its error", before, requests(), l.err, buf.String())
	}
}

func TestTolerationFlag(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("runner", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--kube-toleration", "freshet.dev/real-node=true:NoSchedule", "--kube-toleration=gpu:NoExecute"}); err != nil {
		t.Fatal(err)
	}
	want := []corev1.Toleration{
		{Key: "freshet.dev/real-node", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}
	if !slices.Equal(o.Tolerations, want) {
		t.Errorf("tolerations = %+v, want %+v", o.Tolerations, want)
	}
	for _, bad := range []string{"gpu", "gpu:Never", ":NoSchedule", "=v:NoSchedule"} {
		err := fs.Parse([]string{"--kube-toleration", bad})
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("--kube-toleration %q: %v, want an error naming it", bad, err)
		}
	}
}
