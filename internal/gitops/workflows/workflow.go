package workflows

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// operate runs the workflow one step further: the entrypoint's tree, then the exit handler,
// then the workflow's own phase; deadlines and shutdown stop it.
func (o *operation) operate(st *WorkflowStatus) {
	if o.locks == nil {
		o.locks = newLockManager(o.cl.semaphoreLimit, nil, func() time.Time { return o.now })
	}
	o.sync = syncState{waiting: map[string]string{}}
	defer o.syncStatus(st)
	if !o.workflowLock(st) {
		return
	}
	if !o.createClaims(st) {
		return
	}
	defer o.gcClaims(st)
	if st.Phase == WorkflowUnknown || st.Phase == WorkflowPending {
		st.Phase = WorkflowRunning
		st.StartedAt = metav1.NewTime(o.now)
	}
	exitInv, exitArgs, runExit := o.workflowExit(tmplCtx{spec: o.spec})
	wfMsg := ""
	switch o.spec.Shutdown {
	case "Terminate":
		o.stopping, o.killPods, runExit, wfMsg = msgTerminated, true, false, msgTerminated
	case "Stop":
		o.stopping, o.killPods, wfMsg = msgStopped, true, msgStopped
	}
	d := o.spec.ActiveDeadlineSeconds
	if d == nil {
		d = o.defaultDeadline // the runtime's default
	}
	if d != nil && o.stopping == "" {
		end := st.StartedAt.Add(time.Duration(*d) * time.Second)
		if !o.now.Before(end) {
			o.stopping, o.killPods, wfMsg = msgDeadline, true, msgWfDeadline
		} else {
			o.after(end.Sub(o.now))
		}
	}
	for _, n := range o.nodes {
		if n.Type == NodeTypePod && !n.Phase.Fulfilled() && n.SynchronizationStatus == nil {
			o.activePods++
		}
	}
	for _, n := range o.nodes {
		if n.Phase == NodeSucceeded {
			o.globalArtifacts(n)
		}
	}
	o.loadGlobalParams()
	defer o.workflowOutputs(st)
	defer o.workflowOutputParams(st)
	if o.repo == nil {
		o.repo = st.ArtifactRepositoryRef
	}
	defer func() { st.ArtifactRepositoryRef = o.repo }()
	tc := tmplCtx{spec: o.spec}
	o.globals["workflow.status"] = string(st.Phase) // Running, as Argo's while the workflow runs
	root := o.execute(invocation{name: o.wf.Name, display: o.wf.Name, tmpl: o.spec.Entrypoint,
		args: o.spec.Arguments.Parameters, arts: o.spec.Arguments.Artifacts, tc: tc, attempt: -1})
	hooksDone, hookErr := o.workflowHooks(root, tc)
	o.progress(st)
	if root == nil || !root.Phase.Fulfilled() || !hooksDone {
		return
	}
	if hookErr != "" && root.Phase != NodeError {
		o.finish(root, NodeError, hookErr) // Argo's operate: markNodeError on the root
	}
	phase, msg := WorkflowSucceeded, root.Message
	switch root.Phase {
	case NodeFailed:
		phase = WorkflowFailed
	case NodeError:
		phase = WorkflowError
	}
	if runExit {
		o.stopping = ""
		o.globals["workflow.status"] = string(phase)
		o.globals["workflow.failures"] = o.failures()
		o.globals["workflow.duration"] = strconv.FormatFloat(o.now.Sub(st.StartedAt.Time).Seconds(), 'f', 6, 64) // Argo's %f
		exit, _ := o.runHookNode(exitInv, exitArgs, o.globals, nil)
		o.progress(st)
		if exit == nil || !exit.Phase.Fulfilled() {
			return
		}
		if (exit.Phase == NodeFailed || exit.Phase == NodeError) && phase == WorkflowSucceeded {
			phase, msg = WorkflowFailed, exit.Message
			if exit.Phase == NodeError {
				phase = WorkflowError // as Argo: the exit handler's error is the workflow's
			}
		}
	}
	if wfMsg != "" && phase != WorkflowSucceeded {
		msg = wfMsg
	}
	st.Phase, st.Message = phase, msg
	st.FinishedAt = metav1.NewTime(o.now)
	o.requeue = 0
}

// workflowLock takes the locks of spec.synchronization; while they are held by others the
// workflow stays Pending with Argo's message, and false is returned (nothing runs).
func (o *operation) workflowLock(st *WorkflowStatus) bool {
	s := o.spec.Synchronization
	if s == nil {
		return true
	}
	// Every pass, not only while Pending: a retried Workflow (Running again) takes its locks
	// again; one that holds them already is let through at once.
	sub := *s
	err := substitute(&sub, "spec.synchronization", o.globals, []string{"workflow"})
	ok, msg := false, ""
	if err == nil {
		ok, _, msg, err = o.acquire(o.wfKey(), &sub)
	}
	if err != nil {
		st.Phase, st.Message = WorkflowFailed, msgLockFailed+err.Error()
		o.finishWaiting(st)
		return false
	}
	if ok {
		if strings.HasPrefix(st.Message, "Waiting for ") {
			st.Message = ""
		}
		return true
	}
	if o.err == nil {
		if st.Phase == WorkflowUnknown {
			st.Phase = WorkflowPending
		}
		st.Message = msg
	}
	switch o.spec.Shutdown {
	case "Terminate":
		st.Phase, st.Message = WorkflowFailed, msgTerminated
		o.finishWaiting(st)
	case "Stop":
		st.Phase, st.Message = WorkflowFailed, msgStopped
		o.finishWaiting(st)
	}
	return false
}

// finishWaiting ends a workflow that never started.
func (o *operation) finishWaiting(st *WorkflowStatus) {
	if st.StartedAt.IsZero() {
		st.StartedAt = metav1.NewTime(o.now)
	}
	st.FinishedAt = metav1.NewTime(o.now)
	o.requeue = 0
}

// progress is Argo's status.progress: finished pods / all pods.
func (o *operation) progress(st *WorkflowStatus) {
	done, all := 0, 0
	for _, n := range o.nodes {
		if n.Type != NodeTypePod {
			continue
		}
		all++
		if n.Phase.Fulfilled() {
			done++
		}
	}
	st.Progress = itoa(done) + "/" + itoa(all)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// failures is {{workflow.failures}}: the failed and errored pod nodes, as JSON.
func (o *operation) failures() string {
	type failure struct {
		DisplayName  string `json:"displayName"`
		Message      string `json:"message"`
		TemplateName string `json:"templateName"`
		Phase        string `json:"phase"`
		PodName      string `json:"podName"`
		FinishedAt   string `json:"finishedAt"`
	}
	var out []failure
	for _, n := range o.nodes {
		if (n.Phase == NodeFailed || n.Phase == NodeError) && n.Type == NodeTypePod {
			out = append(out, failure{n.DisplayName, n.Message, n.TemplateName, string(n.Phase), podName(n.ID), n.FinishedAt.UTC().Format(time.RFC3339)})
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// globalScope is the workflow's variables.
func globalScope(wf *Workflow, spec *WorkflowSpec) scope {
	sc := scope{
		"workflow.name":               wf.Name,
		"workflow.namespace":          wf.Namespace,
		"workflow.uid":                string(wf.UID),
		"workflow.serviceAccountName": spec.ServiceAccountName,
		"workflow.creationTimestamp":  wf.CreationTimestamp.UTC().Format(time.RFC3339),
		"workflow.mainEntrypoint":     spec.Entrypoint,
	}
	var all []map[string]string
	for _, p := range spec.Arguments.Parameters {
		v := ""
		switch {
		case p.Value != nil:
			v = string(*p.Value)
		case p.Default != nil:
			v = string(*p.Default)
		}
		sc["workflow.parameters."+p.Name] = v
		all = append(all, map[string]string{"name": p.Name, "value": v})
	}
	if spec.Priority != nil {
		sc["workflow.priority"] = strconv.Itoa(int(*spec.Priority)) // Argo sets it only when given
	}
	b, _ := json.Marshal(all)
	sc["workflow.parameters"] = string(b)
	sc["workflow.parameters.json"] = string(b)
	for k, v := range wf.Labels {
		sc["workflow.labels."+k] = v
	}
	for k, v := range wf.Annotations {
		sc["workflow.annotations."+k] = v
	}
	b, _ = json.Marshal(wf.Labels)
	sc["workflow.labels.json"] = string(b)
	b, _ = json.Marshal(wf.Annotations)
	sc["workflow.annotations.json"] = string(b)
	if t := wf.Annotations[AnnotationScheduledTime]; t != "" {
		sc["workflow.scheduledTime"] = t // a CronWorkflow's run: when it was due
	}
	return sc
}

// mergeSpec is a Workflow's spec over its WorkflowTemplate's (workflowTemplateRef): the
// Workflow's arguments replace the template's of the same name, and the fields it sets win.
func mergeSpec(wf, tmpl *WorkflowSpec) *WorkflowSpec {
	b, _ := json.Marshal(tmpl)
	var out WorkflowSpec
	_ = json.Unmarshal(b, &out)
	out.WorkflowTemplateRef = nil
	params := out.Arguments.Parameters
	for _, p := range wf.Arguments.Parameters {
		replaced := false
		for i := range params {
			if params[i].Name == p.Name {
				params[i], replaced = p, true
			}
		}
		if !replaced {
			params = append(params, p)
		}
	}
	out.Arguments.Parameters = params
	arts := out.Arguments.Artifacts
	for _, a := range wf.Arguments.Artifacts {
		replaced := false
		for i := range arts {
			if arts[i].Name == a.Name {
				arts[i], replaced = a, true
			}
		}
		if !replaced {
			arts = append(arts, a)
		}
	}
	out.Arguments.Artifacts = arts
	if wf.ArtifactGC != nil {
		out.ArtifactGC = wf.ArtifactGC
	}
	if wf.ArtifactRepositoryRef != nil {
		out.ArtifactRepositoryRef = wf.ArtifactRepositoryRef
	}
	if wf.Entrypoint != "" {
		out.Entrypoint = wf.Entrypoint
	}
	if wf.ServiceAccountName != "" {
		out.ServiceAccountName = wf.ServiceAccountName
	}
	if wf.ActiveDeadlineSeconds != nil {
		out.ActiveDeadlineSeconds = wf.ActiveDeadlineSeconds
	}
	if wf.OnExit != "" {
		out.OnExit = wf.OnExit
	}
	for name, h := range wf.Hooks { // the Workflow's hooks replace the template's of their name
		if out.Hooks == nil {
			out.Hooks = LifecycleHooks{}
		}
		out.Hooks[name] = h
	}
	if wf.Parallelism != nil {
		out.Parallelism = wf.Parallelism
	}
	if wf.PodMetadata != nil {
		out.PodMetadata = wf.PodMetadata
	}
	if wf.NodeSelector != nil {
		out.NodeSelector = wf.NodeSelector
	}
	if wf.Tolerations != nil {
		out.Tolerations = wf.Tolerations
	}
	if wf.ImagePullSecrets != nil {
		out.ImagePullSecrets = wf.ImagePullSecrets
	}
	if wf.PodGC != nil {
		out.PodGC = wf.PodGC
	}
	if wf.TTLStrategy != nil {
		out.TTLStrategy = wf.TTLStrategy
	}
	if wf.Volumes != nil {
		out.Volumes = wf.Volumes
	}
	if wf.VolumeClaimTemplates != nil {
		out.VolumeClaimTemplates = wf.VolumeClaimTemplates
	}
	if wf.VolumeClaimGC != nil {
		out.VolumeClaimGC = wf.VolumeClaimGC
	}
	if wf.Synchronization != nil {
		out.Synchronization = wf.Synchronization
	}
	out.Suspend, out.Shutdown = wf.Suspend, wf.Shutdown
	return &out
}
