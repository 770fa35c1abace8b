package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// cluster is what one operation needs from the cluster. The controller implements it; unit
// tests hand-write one with function fields.
type cluster interface {
	// createPod creates a step's pod; one that already exists is not an error.
	createPod(ctx context.Context, pod *corev1.Pod) error
	// deletePod deletes a step's pod; one that is gone is not an error.
	deletePod(ctx context.Context, ns, name string) error
	// templateSpec returns the spec of WorkflowTemplate ns/name, or with clusterScope of
	// ClusterWorkflowTemplate name.
	templateSpec(ctx context.Context, ns, name string, clusterScope bool) (*WorkflowSpec, error)
	// resource carries out a resource template's action as the workflow's service account,
	// and returns the object it left (nil after a delete) and what it did ("created pod/x").
	resource(ctx context.Context, wf *Workflow, serviceAccount string, a *resourceAction) (*unstructured.Unstructured, string, error)
	// getResource reads the object a resource node acted on, as the workflow's service account.
	getResource(ctx context.Context, wf *Workflow, serviceAccount string, r *NodeResource) (*unstructured.Unstructured, error)
	// artifactRepository resolves the artifact repository of a Workflow in namespace ns
	// (artifactRepositoryRef, else the namespace's default, else the runtime's); an error
	// wrapping errNoRepository or errdefs.ErrInvalid is permanent.
	artifactRepository(ctx context.Context, ns string, ref *ArtifactRepositoryRef) (*ArtifactRepositoryRefStatus, error)
	// createClaim creates a claim of spec.volumeClaimTemplates; one that exists already is
	// returned when the Workflow owns it, else an error wrapping errClaimTaken.
	createClaim(ctx context.Context, wf *Workflow, pvc *corev1.PersistentVolumeClaim) error
	// deleteClaim deletes a claim; one that is gone is not an error.
	deleteClaim(ctx context.Context, ns, name string) error
	// semaphoreLimit reads a semaphore's limit from ConfigMap ns/name's key; an error wrapping
	// errLockConfig is permanent.
	semaphoreLimit(ctx context.Context, ns, name, key string) (int, error)
	// imageCommand returns an image's ENTRYPOINT and CMD (workflow-controller-configmap's
	// images, else the image's config in its registry, read with the pull secrets' credentials).
	imageCommand(ctx context.Context, ns, image string, pullSecrets []corev1.LocalObjectReference) (ImageCommand, error)
	// readArtifact reads an artifact of one file (at most max bytes) in a Workflow of namespace
	// ns; env is what the location's credential variables (*Env) name: Secret keys in ns.
	readArtifact(ctx context.Context, ns string, loc artifacts.Location, env []corev1.EnvVar, max int64) ([]byte, error)
}

// Messages Argo Workflows writes, kept the same.
const (
	msgDeadline      = "Step exceeded its deadline"
	msgWfDeadline    = "Workflow exceeded its activeDeadlineSeconds"
	msgTerminated    = "Stopped with strategy 'Terminate'"
	msgStopped       = "Stopped with strategy 'Stop'"
	msgNoMoreRetries = "No more retries left"
)

// Pod layout.
const (
	mainContainer  = "main"
	initContainer  = "init"
	binVolume      = "freshet-bin"
	binDir         = "/var/run/freshet"
	binPath        = binDir + "/freshet"
	scriptVolume   = "freshet-script"
	scriptDir      = "/var/run/freshet-script"
	scriptPath     = scriptDir + "/source"
	maxScriptBytes = 200 << 10
	// maxNodes bounds a workflow's nodes (an expansion of withItems/withParam/withSequence
	// beyond it fails the node): the status lives in one object of at most 1.5 MiB.
	maxNodes = 2000
)

// podOptions shape every pod.
type podOptions struct {
	executorImage, executorPath string
	nodeSelector                map[string]string
	tolerations                 []corev1.Toleration
	policy                      *netpolicy.Policy
	// pullGrace: how long a pod may fail to pull its image or make its container's config;
	// createTimeout: how long a pod the API server refuses is tried again.
	pullGrace, createTimeout time.Duration
	// resourceCheck: how often a resource node reads its object for its conditions.
	resourceCheck time.Duration
}

// operation is one reconcile of one Workflow: it walks the template tree from the entrypoint,
// as Argo's operator does, creating nodes and pods as their turn comes and reading the phases
// of the pods it made, and leaves the new status in st.
type operation struct {
	ctx     context.Context
	cl      cluster
	wf      *Workflow
	spec    *WorkflowSpec
	nodes   map[string]*NodeStatus // by ID
	pods    map[string]*corev1.Pod // by name
	now     time.Time
	opts    podOptions
	globals scope

	requeue     time.Duration
	activePods  int64
	stopping    string // why no new node starts (deadline, shutdown); "" runs normally
	killPods    bool
	tmplSpecs   map[string]*WorkflowSpec
	err         error // a temporary error (API): the reconcile is retried
	createdPods int
	repo        *ArtifactRepositoryRefStatus // resolved once, kept in the status
	locks       *lockManager                 // the controller's (sync.go)
	sync        syncState
	claims      []corev1.Volume // status.persistentVolumeClaims
	// defaultDeadline is the activeDeadlineSeconds of a Workflow that gives none (nil: none).
	defaultDeadline *int64
	refused         *refusals // the controller's: when refused pods may be tried again
	// hooksWait: the nodes, by ID, whose hooks or exit handler still run (hooks.go).
	hooksWait map[string]bool
	// hookErrs: the nodes, by ID, a hook or exit handler of which could not start, with why.
	hookErrs map[string]string
}

type tmplCtx struct {
	spec *WorkflowSpec
	ref  string // "" the workflow's own; "[cluster/]name" of a (Cluster)WorkflowTemplate
}

type invocation struct {
	name, display string
	tmpl          string
	ref           *TemplateRef
	args          []Parameter
	arts          []Artifact
	boundary      string
	tc            tmplCtx
	attempt       int   // -1: not inside a retry node
	lastRetry     scope // an attempt's lastRetry.* variables
	depth         int   // templates above this one
}

// maxDepth bounds how deep templates call templates (Argo's limit is the same).
const maxDepth = 100

// maxAttemptsPerPass bounds the retries one operation starts for one node.
const maxAttemptsPerPass = 5

func (o *operation) after(d time.Duration) {
	if d <= 0 {
		d = time.Millisecond
	}
	if o.requeue == 0 || d < o.requeue {
		o.requeue = d
	}
}

// nodeID is Argo's: the workflow's name for its root, else the name and an FNV-32a hash of
// the node's name.
func nodeID(wf, name string) string {
	if name == wf {
		return wf
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%s-%d", wf, h.Sum32())
}

// podName is a pod node's pod: its ID, cut to a DNS label.
func podName(id string) string {
	if len(id) <= 63 {
		return id
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	suffix := fmt.Sprintf("-%d", h.Sum32())
	return strings.TrimRight(id[:63-len(suffix)], "-.") + suffix
}

func (o *operation) get(name string) *NodeStatus { return o.nodes[nodeID(o.wf.Name, name)] }

func (o *operation) init(inv invocation, typ NodeType, phase NodePhase, tmpl string) *NodeStatus {
	n := &NodeStatus{ID: nodeID(o.wf.Name, inv.name), Name: inv.name, DisplayName: inv.display, Type: typ,
		TemplateName: tmpl, Phase: phase, BoundaryID: inv.boundary, StartedAt: metav1.NewTime(o.now)}
	if inv.ref != nil {
		n.TemplateName = ""
		r := *inv.ref
		n.TemplateRef = &r
	}
	if phase.Fulfilled() {
		n.FinishedAt = n.StartedAt
	}
	o.nodes[n.ID] = n
	return n
}

func (o *operation) finish(n *NodeStatus, phase NodePhase, msg string) {
	n.Phase, n.Message = phase, msg
	if n.FinishedAt.IsZero() {
		n.FinishedAt = metav1.NewTime(o.now)
	}
}

func (o *operation) addChild(parent, child *NodeStatus) {
	for _, c := range parent.Children {
		if c == child.ID {
			return
		}
	}
	parent.Children = append(parent.Children, child.ID)
}

// errorNode records a node that could not start, with why.
func (o *operation) errorNode(inv invocation, err error) *NodeStatus {
	n := o.get(inv.name)
	if n == nil {
		n = o.init(inv, NodeTypeSkipped, NodeError, inv.tmpl)
	}
	o.finish(n, NodeError, err.Error())
	return n
}

// resolve finds the template an invocation runs, and the context its own template names
// resolve in.
func (o *operation) resolve(inv invocation) (*Template, tmplCtx, error) {
	if inv.ref == nil {
		for i := range inv.tc.spec.Templates {
			if inv.tc.spec.Templates[i].Name == inv.tmpl {
				return &inv.tc.spec.Templates[i], inv.tc, nil
			}
		}
		where := "the workflow"
		if inv.tc.ref != "" {
			where = inv.tc.ref
		}
		return nil, inv.tc, fmt.Errorf("template %q not found in %s", inv.tmpl, where)
	}
	key := inv.ref.Name
	if inv.ref.ClusterScope {
		key = "cluster/" + key
	}
	spec, ok := o.tmplSpecs[key]
	if !ok {
		kind := "WorkflowTemplate"
		if inv.ref.ClusterScope {
			kind = "ClusterWorkflowTemplate"
		}
		s, err := o.cl.templateSpec(o.ctx, o.wf.Namespace, inv.ref.Name, inv.ref.ClusterScope)
		if err != nil {
			return nil, inv.tc, fmt.Errorf("templateRef: %s %q: %w", kind, inv.ref.Name, err)
		}
		if err := validateSpec(s, kind+" "+inv.ref.Name+": spec", false); err != nil {
			return nil, inv.tc, fmt.Errorf("templateRef: %w", err)
		}
		o.tmplSpecs[key] = s
		spec = s
	}
	for i := range spec.Templates {
		if spec.Templates[i].Name == inv.ref.Template {
			return &spec.Templates[i], tmplCtx{spec: spec, ref: key}, nil
		}
	}
	return nil, inv.tc, fmt.Errorf("templateRef: template %q not found in %s", inv.ref.Template, key)
}

var leafStrict = []string{"inputs", "workflow", "workflow.outputs", "steps", "tasks", "item", "pod", "node"}

// processInputs gives the template its input parameters (from args, else their value or
// default) and substitutes them and the workflow's variables into a copy of it.
func (o *operation) processInputs(t *Template, inv invocation) (*Template, *Inputs, error) {
	sc := scope{}
	for k, v := range o.globals {
		sc[k] = v
	}
	given := map[string]string{}
	for _, a := range inv.args {
		if a.Value != nil {
			given[a.Name] = string(*a.Value)
		}
	}
	var in *Inputs
	var all []map[string]string
	for _, p := range t.Inputs.Parameters {
		v, ok := given[p.Name]
		switch {
		case ok:
		case p.Value != nil:
			v = string(*p.Value)
		case p.Default != nil:
			v = string(*p.Default)
		default:
			return nil, nil, fmt.Errorf("inputs.parameters.%s was not supplied", p.Name)
		}
		if !ok && strings.Contains(v, "{{") {
			// The template's own value may name the workflow's variables; a given value is data.
			var err error
			if v, err = sc.expand("inputs.parameters."+p.Name, v, []string{"workflow", "workflow.outputs"}); err != nil {
				return nil, nil, err
			}
		}
		if len(p.Enum) > 0 {
			okEnum := false
			for _, e := range p.Enum {
				okEnum = okEnum || string(e) == v
			}
			if !okEnum {
				return nil, nil, fmt.Errorf("inputs.parameters.%s: %q is not one of its enum values", p.Name, v)
			}
		}
		sc["inputs.parameters."+p.Name] = v
		if in == nil {
			in = &Inputs{}
		}
		val := AnyString(v)
		in.Parameters = append(in.Parameters, Parameter{Name: p.Name, Value: &val})
		all = append(all, map[string]string{"name": p.Name, "value": v})
	}
	if b, err := json.Marshal(all); err == nil && all != nil {
		sc["inputs.parameters"] = string(b)
	}
	arts, err := o.inputArtifacts(t, inv, sc)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range arts {
		sc["inputs.artifacts."+a.Name] = artifactVar(a)
		if a.Path != "" {
			sc["inputs.artifacts."+a.Name+".path"] = a.Path
		}
	}
	if arts != nil {
		if in == nil {
			in = &Inputs{}
		}
		in.Artifacts = arts
	}
	id := nodeID(o.wf.Name, inv.name)
	sc["node.name"] = inv.name
	sc["pod.name"] = podName(id)
	strict := []string{"inputs", "workflow"}
	leaf := t.Container != nil || t.Script != nil || t.Resource != nil || t.Suspend != nil
	if inv.attempt >= 0 {
		sc["retries"] = strconv.Itoa(inv.attempt)
	}
	for k, v := range inv.lastRetry {
		sc[k] = v
	}
	if leaf {
		strict = leafStrict
		if inv.attempt >= 0 || t.RetryStrategy == nil {
			strict = append(strict, "retries")
		}
	}
	cp := *t
	// Steps and DAG keep their step and task references for later: only the outputs of a leaf
	// template and its own fields are substituted now. Their steps, tasks and outputs are
	// substituted once, when each is due, over templateScope: an input's value put in here
	// would otherwise be read for tags a second time.
	steps, dag, outs := hideComposite(&cp)
	if err := substitute(&cp, "template "+t.Name, sc, strict); err != nil {
		return nil, nil, err
	}
	restoreComposite(&cp, steps, dag, outs)
	return &cp, in, nil
}

// execute runs one invocation one step further and returns its node (nil: not started yet,
// for parallelism or while the workflow is suspended).
func (o *operation) execute(inv invocation) *NodeStatus {
	if n := o.get(inv.name); n != nil && n.Phase.Fulfilled() {
		return n
	}
	if len(o.nodes) >= maxNodes && o.get(inv.name) == nil {
		return o.errorNode(inv, fmt.Errorf("the workflow has %d nodes, the most one workflow may have", maxNodes))
	}
	if inv.depth > maxDepth {
		return o.errorNode(inv, fmt.Errorf("maximum recursion depth exceeded: templates nest deeper than %d", maxDepth))
	}
	t, tc, err := o.resolve(inv)
	if err != nil {
		return o.errorNode(inv, err)
	}
	if t.RetryStrategy != nil && inv.attempt < 0 {
		rt, _, err := o.processInputs(t, inv)
		if err != nil {
			return o.errorNode(inv, err)
		}
		return o.executeRetry(inv, rt, tc, 0)
	}
	pt, inputs, err := o.processInputs(t, inv)
	if err != nil {
		return o.errorNode(inv, err)
	}
	if pt.Synchronization != nil {
		if n, waits := o.syncNode(inv, pt, inputs); waits {
			return n
		}
	}
	var n *NodeStatus
	switch {
	case pt.Container != nil || pt.Script != nil:
		n = o.executePod(inv, pt, inputs)
	case pt.Resource != nil:
		n = o.executeResource(inv, pt, inputs)
	case pt.Suspend != nil:
		n = o.executeSuspend(inv, pt, inputs)
	case pt.Steps != nil:
		n = o.executeSteps(inv, pt, inputs, tc)
	case pt.DAG != nil:
		n = o.executeDAG(inv, pt, inputs, tc)
	}
	if pt.Synchronization != nil && n != nil && n.Phase.Fulfilled() {
		o.locks.release(holderKey(o.wf.Namespace, o.wf.Name, n.ID)) // the next waiter may start in this pass
	}
	return n
}

// leafStart is whether a leaf node that does not exist yet may start now; when the workflow
// is stopping it is recorded as failed instead (with the reason as its message).
func (o *operation) leafStart(inv invocation, typ NodeType, tmpl string) (*NodeStatus, bool) {
	if o.stopping != "" && !o.exitRuns(inv.display, inv.boundary) {
		n := o.init(inv, typ, NodeFailed, tmpl)
		n.Message = o.stopping
		return n, false
	}
	if o.wf.Spec.Suspend != nil && *o.wf.Spec.Suspend {
		return nil, false
	}
	return nil, true
}

// leafNode is the node of a leaf call that runs in the controller (suspend, resource): as
// recorded, or started now (Running, with its inputs). ok is false when it may not start:
// then n (nil, or recorded as failed) is the call's node.
func (o *operation) leafNode(inv invocation, typ NodeType, t *Template, inputs *Inputs) (n *NodeStatus, ok bool) {
	if n := o.get(inv.name); n != nil {
		return n, true
	}
	if n, ok := o.leafStart(inv, typ, t.Name); !ok {
		return n, false
	}
	n = o.init(inv, typ, NodeRunning, t.Name)
	n.Inputs = inputs
	return n, true
}

func (o *operation) executeRetry(inv invocation, t *Template, tc tmplCtx, pass int) *NodeStatus {
	n := o.get(inv.name)
	if n == nil {
		if o.stopping != "" && !o.exitRuns(inv.display, inv.boundary) {
			n = o.init(inv, NodeTypeRetry, NodeFailed, t.Name)
			n.Message = o.stopping
			return n
		}
		n = o.init(inv, NodeTypeRetry, NodeRunning, t.Name)
	}
	rs := t.RetryStrategy
	var last *NodeStatus
	tries := attempts(o.nodes, n) // its children but its hooks'
	if len(tries) > 0 {
		last = o.nodes[tries[len(tries)-1]]
	}
	next := func() *NodeStatus {
		i := len(tries)
		if last != nil && !last.Phase.Fulfilled() {
			i-- // the running attempt
		}
		child := inv
		child.name = fmt.Sprintf("%s(%d)", inv.name, i)
		child.display = fmt.Sprintf("%s(%d)", inv.display, i)
		child.boundary = inv.boundary
		child.attempt = i
		child.lastRetry = lastRetryVars(o.nodes, n, i)
		c := o.execute(child)
		if c != nil {
			o.addChild(n, c)
		}
		return c
	}
	if last == nil || !last.Phase.Fulfilled() {
		c := next()
		if c != nil && c.Phase.Fulfilled() && pass < maxAttemptsPerPass {
			return o.executeRetry(inv, t, tc, pass+1) // it ended at once (an error, a stop)
		}
		if c != nil && c.Phase != NodePending {
			n.Phase = NodeRunning
		}
		return n
	}
	if last.Phase == NodeSucceeded {
		n.Outputs = last.Outputs
		o.finish(n, NodeSucceeded, "")
		return n
	}
	policy := rs.RetryPolicy
	if policy == "" {
		policy = RetryOnFailure
		if rs.Expression != "" {
			policy = RetryAlways // Argo 3.5: the expression decides
		}
	}
	retry := false
	switch policy {
	case RetryAlways:
		retry = true
	case RetryOnFailure:
		retry = last.Phase == NodeFailed
	case RetryOnError, RetryOnTransientError:
		retry = last.Phase == NodeError
	}
	if o.stopping != "" && !o.exitRuns(n.DisplayName, n.BoundaryID) {
		retry = false
	}
	if rs.Limit != nil {
		if lim, err := intOf(rs.Limit); err != nil || int64(len(tries)) > lim {
			retry = false
		}
	}
	if retry && rs.Expression != "" {
		ok, err := evalRetryExpression(rs.Expression, lastRetryVars(o.nodes, n, len(tries)))
		if err != nil {
			n.Outputs = last.Outputs
			o.finish(n, NodeError, "retryStrategy.expression: "+err.Error())
			return n
		}
		if !ok {
			n.Outputs = last.Outputs
			o.finish(n, last.Phase, msgRetryExprFalse)
			return n
		}
	}
	if !retry {
		n.Outputs = last.Outputs
		msg := last.Message
		if msg == "" {
			msg = msgNoMoreRetries
		}
		o.finish(n, last.Phase, msg)
		return n
	}
	if b := rs.Backoff; b != nil && b.Duration != nil {
		d, _ := parseDuration(b.Duration)
		factor := int64(1)
		if b.Factor != nil {
			factor, _ = intOf(b.Factor)
		}
		wait := float64(d) * math.Pow(float64(max(factor, 1)), float64(len(tries)-1))
		if wait > float64(365*24*time.Hour) {
			wait = float64(365 * 24 * time.Hour)
		}
		at := last.FinishedAt.Add(time.Duration(wait))
		if b.MaxDuration != nil {
			maxD, _ := parseDuration(b.MaxDuration)
			if at.Sub(n.StartedAt.Time) > maxD {
				n.Outputs = last.Outputs
				o.finish(n, last.Phase, "Max duration limit exceeded")
				return n
			}
		}
		if o.now.Before(at) {
			n.Message = fmt.Sprintf("Backoff for %s", at.Sub(o.now).Round(time.Second))
			o.after(at.Sub(o.now))
			return n
		}
	}
	n.Message = ""
	last = nil
	if c := next(); c != nil && c.Phase.Fulfilled() {
		if pass < maxAttemptsPerPass {
			return o.executeRetry(inv, t, tc, pass+1)
		}
		o.after(time.Second)
	}
	return n
}

// executePod starts a container or script template's pod, or reads the phase and outputs of
// the pod it started.
func (o *operation) executePod(inv invocation, t *Template, inputs *Inputs) *NodeStatus {
	n := o.get(inv.name)
	if n == nil {
		var ok bool
		if n, ok = o.leafStart(inv, NodeTypePod, t.Name); !ok {
			return n
		}
		if p := o.spec.Parallelism; p != nil && *p > 0 && o.activePods >= *p {
			return nil
		}
		n = o.init(inv, NodeTypePod, NodePending, t.Name)
		n.Inputs = inputs
		o.activePods++
	}
	name := podName(n.ID)
	pod := o.pods[name]
	if pod == nil && n.Phase.Fulfilled() {
		return n
	}
	if o.killPods && !o.survivesStop(n) {
		if pod != nil {
			o.deletePod(name)
		}
		o.finish(n, NodeFailed, o.stopping)
		o.activePods--
		return n
	}
	limit := time.Duration(-1)
	if d := t.ActiveDeadlineSeconds; d != nil {
		if secs, err := intOf(d); err == nil {
			limit = time.Duration(secs) * time.Second
		}
	}
	if t.Timeout != "" {
		if d, err := parseDuration(&intstr.IntOrString{Type: intstr.String, StrVal: t.Timeout}); err == nil && (limit < 0 || d < limit) {
			limit = d
		}
	}
	if limit >= 0 {
		end := n.StartedAt.Add(limit)
		if !o.now.Before(end) {
			if pod != nil {
				o.deletePod(name)
			}
			o.finish(n, NodeFailed, msgDeadline)
			o.activePods--
			return n
		}
		o.after(end.Sub(o.now))
	}
	if pod == nil {
		if at := o.refused.due(name); o.now.Before(at) {
			o.after(at.Sub(o.now)) // the API server refused it: not again before then
			return n
		}
		p, err := o.buildPod(n, t)
		if err != nil && o.err != nil {
			return n // a temporary error: the reconcile is retried
		}
		if err != nil {
			o.finish(n, NodeError, err.Error())
			o.activePods--
			return n
		}
		if err := o.cl.createPod(o.ctx, p); err != nil {
			if !refusedPod(err) {
				o.err = fmt.Errorf("create pod %s: %w", name, err)
				return n
			}
			// The API server refused it (a ResourceQuota, an admission webhook): its message
			// goes on the node, and it is tried again with backoff until createTimeout has
			// passed since the node started; an invalid pod fails at once.
			msg := "pod not created: " + err.Error()
			waited := o.now.Sub(n.StartedAt.Time)
			if apierrors.IsInvalid(err) {
				// A spec the API server finds invalid (a LimitRange, a bad quantity) stays so.
				o.refused.forget(name)
				o.finish(n, NodeFailed, msg)
				o.activePods--
				return n
			}
			if waited >= o.opts.createTimeout {
				o.refused.forget(name)
				o.finish(n, NodeFailed, fmt.Sprintf("%s (tried for %s)", msg, o.opts.createTimeout.Round(time.Second)))
				o.activePods--
				return n
			}
			n.Message = msg
			wait := min(max(waited/4, time.Second), 30*time.Second, o.opts.createTimeout-waited)
			o.refused.set(name, o.now.Add(wait))
			o.after(wait)
			return n
		}
		o.refused.forget(name)
		n.Message = ""
		o.createdPods++
		return n
	}
	o.assessPod(n, t, pod)
	if n.Phase.Fulfilled() {
		o.activePods--
	}
	return n
}

// refusals remember, by pod name, when a pod the API server refused may be tried again, so
// that events of other pods do not try it sooner. It is the controller's memory only: after a
// restart a refused pod is tried at once. A nil *refusals allows every try.
type refusals struct {
	mu sync.Mutex
	at map[string]time.Time
}

// maxRefusals bounds the pods remembered; beyond it the oldest are forgotten (tried sooner).
const maxRefusals = 10000

func (r *refusals) due(name string) time.Time {
	if r == nil {
		return time.Time{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at[name]
}

func (r *refusals) set(name string, at time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[string]time.Time{}
	}
	if len(r.at) >= maxRefusals {
		oldest := ""
		for k, v := range r.at {
			if oldest == "" || v.Before(r.at[oldest]) {
				oldest = k
			}
		}
		delete(r.at, oldest)
	}
	r.at[name] = at
}

func (r *refusals) forget(name string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.at, name)
}

// refusedPod is whether the API server refused a pod for what it is, not for a passing
// failure: a ResourceQuota exceeded, an admission webhook or policy that forbids it, a
// LimitRange or a spec it finds invalid.
func refusedPod(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

func (o *operation) deletePod(name string) {
	if err := o.cl.deletePod(o.ctx, o.wf.Namespace, name); err != nil {
		o.err = fmt.Errorf("delete pod %s: %w", name, err)
	}
}

// assessPod sets a pod node's phase, message and outputs from its pod.
func (o *operation) assessPod(n *NodeStatus, t *Template, pod *corev1.Pod) {
	n.HostNodeName, n.PodIP = pod.Spec.NodeName, pod.Status.PodIP
	var main *corev1.ContainerStatus
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == mainContainer {
			main = &pod.Status.ContainerStatuses[i]
		}
	}
	switch pod.Status.Phase {
	case corev1.PodPending, "":
		n.Phase = NodePending
		n.Message = waitingMessage(pod)
		if reason, msg, at := startFailure(pod); reason != "" {
			// The pod cannot start, as Argo tells it: a bad image name at once, a pull
			// that keeps failing or a container config that cannot be made (a missing
			// Secret) after the grace period. The pod goes with the node.
			since := o.now.Sub(at)
			if reason == "InvalidImageName" || reason == "ErrImageNeverPull" || since >= o.opts.pullGrace {
				o.deletePod(pod.Name)
				o.finish(n, NodeFailed, fmt.Sprintf("%s: %s", reason, msg))
				return
			}
			o.after(o.opts.pullGrace - since)
		}
	case corev1.PodRunning:
		n.Phase, n.Message = NodeRunning, ""
	case corev1.PodSucceeded, corev1.PodFailed:
		if msg := inputError(main); msg != "" {
			// The emissary could not load an input artifact: the command never ran.
			o.finish(n, NodeError, msg)
			return
		}
		outs, errMsg := o.outputs(n, t, main)
		n.Outputs = outs
		o.globalArtifacts(n)
		o.globalParams(n)
		if pod.Status.Phase == corev1.PodSucceeded {
			if errMsg != "" {
				o.finish(n, NodeError, errMsg)
			} else {
				o.finish(n, NodeSucceeded, "")
			}
			return
		}
		msg := pod.Status.Message
		if pod.Status.Reason == "DeadlineExceeded" {
			msg = "Pod was active on the node longer than the specified deadline"
		}
		if main != nil && main.State.Terminated != nil {
			term := main.State.Terminated
			reason := term.Reason
			if reason == "" {
				reason = "Error"
			}
			msg = fmt.Sprintf("%s (exit code %d)", reason, term.ExitCode)
		}
		if msg == "" {
			msg = "pod failed"
		}
		o.finish(n, NodeFailed, msg)
	}
}

// inputError is why the emissary could not load the step's input artifacts ("" when it could).
func inputError(main *corev1.ContainerStatus) string {
	if main == nil || main.State.Terminated == nil || main.State.Terminated.Message == "" {
		return ""
	}
	var eo emissary.Outputs
	if json.Unmarshal([]byte(main.State.Terminated.Message), &eo) != nil {
		return ""
	}
	return eo.InputError
}

// startFailure is why a pending pod cannot start (a container waiting with one of the reasons
// a pod does not get over by itself: the image, its config), the kubelet's message, and since
// when the pod has existed; reason is "" for none.
func startFailure(pod *corev1.Pod) (reason, msg string, since time.Time) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			w := cs.State.Waiting
			if w == nil {
				continue
			}
			switch w.Reason {
			case "InvalidImageName", "ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError":
				m := w.Message
				if m == "" {
					m = "container " + cs.Name + " cannot start (image " + cs.Image + ")"
				}
				return w.Reason, m, pod.CreationTimestamp.Time
			}
		}
	}
	return "", "", time.Time{}
}

func waitingMessage(pod *corev1.Pod) string {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
				return fmt.Sprintf("%s: %s", w.Reason, w.Message)
			}
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

// outputs reads the step's outputs from the emissary's termination message; the second value
// names an output parameter that could not be collected.
func (o *operation) outputs(n *NodeStatus, t *Template, main *corev1.ContainerStatus) (*Outputs, string) {
	var eo emissary.Outputs
	out := &Outputs{}
	if main != nil && main.State.Terminated != nil {
		term := main.State.Terminated
		code := strconv.Itoa(int(term.ExitCode))
		out.ExitCode = &code
		if term.Message != "" {
			if err := json.Unmarshal([]byte(term.Message), &eo); err != nil {
				eo.Error = "the pod's outputs do not decode"
			}
		}
	}
	out.Result = eo.Result
	for _, p := range t.Outputs.Parameters {
		v, ok := eo.Parameters[p.Name]
		if !ok {
			switch {
			case p.ValueFrom != nil && p.ValueFrom.Default != nil:
				v = string(*p.ValueFrom.Default)
			case eo.Errors[p.Name] != "":
				return out, fmt.Sprintf("output parameter %q: %s", p.Name, eo.Errors[p.Name])
			case eo.Error != "":
				return out, fmt.Sprintf("output parameter %q: %s", p.Name, eo.Error)
			default:
				return out, fmt.Sprintf("output parameter %q: not collected (the pod reported no outputs)", p.Name)
			}
		}
		val := AnyString(v)
		out.Parameters = append(out.Parameters, Parameter{Name: p.Name, Value: &val, GlobalName: p.GlobalName})
	}
	reported := main != nil && main.State.Terminated != nil && main.State.Terminated.Message != ""
	arts, msg := o.collectArtifacts(n, t, &eo, reported)
	out.Artifacts = arts
	if out.Result == nil && out.ExitCode == nil && out.Parameters == nil && out.Artifacts == nil {
		return nil, msg
	}
	return out, msg
}

func (o *operation) executeSuspend(inv invocation, t *Template, inputs *Inputs) *NodeStatus {
	n, ok := o.leafNode(inv, NodeTypeSuspend, t, inputs)
	if !ok {
		return n
	}
	if o.killPods && !o.survivesStop(n) {
		o.finish(n, NodeFailed, o.stopping)
		return n
	}
	done := func() {
		for _, p := range t.Outputs.Parameters {
			if p.ValueFrom != nil && p.ValueFrom.Default != nil {
				if n.Outputs == nil {
					n.Outputs = &Outputs{}
				}
				v := *p.ValueFrom.Default
				n.Outputs.Parameters = append(n.Outputs.Parameters, Parameter{Name: p.Name, Value: &v, GlobalName: p.GlobalName})
			}
		}
		o.globalParams(n)
		o.finish(n, NodeSucceeded, "")
	}
	if d := t.Suspend.Duration; d != nil {
		dur, err := parseDuration(d)
		if err != nil {
			o.finish(n, NodeError, "suspend.duration: "+err.Error())
			return n
		}
		end := n.StartedAt.Add(dur)
		if !o.now.Before(end) {
			done()
			return n
		}
		o.after(end.Sub(o.now))
	}
	return n
}

// expansion is one child of a step or task with withItems, withParam or withSequence.
type expansion struct {
	suffix string
	vars   scope
}

// expand lists the children of a call; nil without items.
func expand(c call, sc scope) ([]expansion, error) {
	var items []json.RawMessage
	switch {
	case c.items != nil:
		for _, it := range c.items {
			items = append(items, it.RawMessage)
		}
	case c.param != "":
		s, err := sc.expand("withParam", c.param, leafStrict)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(s), &items); err != nil {
			return nil, fmt.Errorf("withParam: %q is not a JSON list", cut(s, 80))
		}
	case c.seq != nil:
		nums, format, err := sequence(c.seq, sc)
		if err != nil {
			return nil, err
		}
		for _, n := range nums {
			s := strconv.FormatInt(n, 10)
			if format != "" {
				s = fmt.Sprintf(format, n)
			}
			b, _ := json.Marshal(s)
			items = append(items, b)
		}
	default:
		return nil, nil
	}
	if len(items) > maxNodes {
		return nil, fmt.Errorf("expands to %d items; at most %d", len(items), maxNodes)
	}
	out := make([]expansion, 0, len(items))
	for i, raw := range items {
		v := scope{"item": renderJSON(raw)}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil {
			for k, x := range m {
				v["item."+k] = renderJSON(x)
			}
		}
		out = append(out, expansion{suffix: fmt.Sprintf("(%d:%s)", i, cut(renderJSON(raw), 60)), vars: v})
	}
	if out == nil {
		out = []expansion{}
	}
	return out, nil
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func sequence(s *Sequence, sc scope) ([]int64, string, error) {
	num := func(f string, v *Sequence, x interface{ String() string }) (int64, error) {
		str, missing := sc.replace(x.String(), leafStrict)
		if len(missing) > 0 {
			return 0, fmt.Errorf("withSequence.%s: failed to resolve {{%s}}", f, missing[0])
		}
		n, err := strconv.ParseInt(strings.TrimSpace(str), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("withSequence.%s: %q is not a whole number", f, str)
		}
		return n, nil
	}
	var start int64
	var err error
	if s.Start != nil {
		if start, err = num("start", s, s.Start); err != nil {
			return nil, "", err
		}
	}
	var out []int64
	switch {
	case s.Count != nil:
		cnt, err := num("count", s, s.Count)
		if err != nil {
			return nil, "", err
		}
		if cnt < 0 || cnt > maxNodes {
			return nil, "", fmt.Errorf("withSequence.count: %d is not 0 to %d", cnt, maxNodes)
		}
		for i := int64(0); i < cnt; i++ {
			out = append(out, start+i)
		}
	case s.End != nil:
		end, err := num("end", s, s.End)
		if err != nil {
			return nil, "", err
		}
		if d := end - start; d > maxNodes || d < -maxNodes {
			return nil, "", fmt.Errorf("withSequence: %d to %d is more than %d items", start, end, maxNodes)
		}
		step := int64(1)
		if end < start {
			step = -1
		}
		for i := start; ; i += step {
			out = append(out, i)
			if i == end {
				break
			}
		}
	}
	if s.Format != "" && (strings.Count(s.Format, "%") != 1 || !strings.ContainsAny(s.Format[strings.Index(s.Format, "%"):], "dxXo")) {
		return nil, "", fmt.Errorf("withSequence.format: %q must hold one integer verb such as %%02d", s.Format)
	}
	return out, s.Format, nil
}

// childScope is the scope of a step or task: the template's, the outputs of the nodes before
// it, and the item.
func merge(scopes ...scope) scope {
	out := scope{}
	for _, s := range scopes {
		for k, v := range s {
			out[k] = v
		}
	}
	return out
}

// nodeVars are the variables a finished step or task gives the ones after it.
func nodeVars(prefix string, n *NodeStatus, sc scope) {
	sc[prefix+".id"] = n.ID
	sc[prefix+".status"] = string(n.Phase)
	sc[prefix+".startedAt"] = n.StartedAt.UTC().Format(time.RFC3339)
	sc[prefix+".finishedAt"] = n.FinishedAt.UTC().Format(time.RFC3339)
	if n.PodIP != "" {
		sc[prefix+".ip"] = n.PodIP
	}
	if n.Outputs == nil {
		return
	}
	if n.Outputs.Result != nil {
		sc[prefix+".outputs.result"] = *n.Outputs.Result
	}
	if n.Outputs.ExitCode != nil {
		sc[prefix+".exitCode"] = *n.Outputs.ExitCode
	}
	for _, p := range n.Outputs.Parameters {
		if p.Value != nil {
			sc[prefix+".outputs.parameters."+p.Name] = string(*p.Value)
		}
	}
	for _, a := range n.Outputs.Artifacts {
		sc[prefix+".outputs.artifacts."+a.Name] = artifactVar(a)
	}
}

// aggregateVars are the variables of an expanded step or task: its children's outputs as JSON
// lists.
func aggregateVars(prefix string, children []*NodeStatus, sc scope) {
	var params []map[string]string
	var results []string
	hasResult := false
	for _, c := range children {
		m := map[string]string{}
		if c.Outputs != nil {
			for _, p := range c.Outputs.Parameters {
				if p.Value != nil {
					m[p.Name] = string(*p.Value)
				}
			}
			if c.Outputs.Result != nil {
				hasResult = true
				results = append(results, *c.Outputs.Result)
			}
		}
		params = append(params, m)
	}
	b, _ := json.Marshal(params)
	sc[prefix+".outputs.parameters"] = string(b)
	if hasResult {
		b, _ := json.Marshal(results)
		sc[prefix+".outputs.result"] = string(b)
	}
}

// templateScope is the scope of a steps or DAG template's own steps and tasks.
func (o *operation) templateScope(n *NodeStatus) scope {
	sc := merge(o.globals)
	sc["node.name"] = n.Name
	if n.Inputs != nil {
		var all []map[string]string
		for _, p := range n.Inputs.Parameters {
			if p.Value != nil {
				sc["inputs.parameters."+p.Name] = string(*p.Value)
				all = append(all, map[string]string{"name": p.Name, "value": string(*p.Value)})
			}
		}
		if b, err := json.Marshal(all); err == nil && all != nil {
			sc["inputs.parameters"] = string(b)
		}
		for _, a := range n.Inputs.Artifacts {
			sc["inputs.artifacts."+a.Name] = artifactVar(a)
		}
	}
	return sc
}

// resolveArgs substitutes the references of a call's arguments over s. A parameter's
// reference that does not resolve is an error when its prefix is in strict; an artifact's from
// that does not resolve is left as it is: the input it feeds decides whether that is an error
// (it is unless the input is optional).
func resolveArgs(a Arguments, s scope, strict []string) ([]Parameter, []Artifact, error) {
	args := Arguments{Parameters: append([]Parameter(nil), a.Parameters...)}
	if err := substitute(&args, "arguments", s, strict); err != nil {
		return nil, nil, err
	}
	if len(a.Artifacts) == 0 {
		return args.Parameters, nil, nil
	}
	arts := Arguments{Artifacts: append([]Artifact(nil), a.Artifacts...)}
	if err := substitute(&arts, "arguments", s, nil); err != nil {
		return nil, nil, err
	}
	for i, x := range arts.Artifacts {
		if x.FromExpression == "" {
			continue
		}
		v, ok, err := evalFromExpression(x.FromExpression, s)
		if err != nil {
			return nil, nil, fmt.Errorf("arguments.artifacts.%s.fromExpression %q: %v", x.Name, x.FromExpression, err)
		}
		if !ok {
			v = "{{=" + x.FromExpression + "}}" // names nothing: the input decides
		}
		arts.Artifacts[i].From, arts.Artifacts[i].FromExpression = v, ""
	}
	return args.Parameters, arts.Artifacts, nil
}

// runCall runs one step or task (and its expansion) under parent; it returns the nodes that
// stand for it (one, or the expanded children) and whether it was started.
func (o *operation) runCall(c call, base string, display string, parent *NodeStatus, sc scope, tc tmplCtx, boundary string, depth int) (nodes []*NodeStatus, started bool) {
	exp, err := expand(c, sc)
	inv := invocation{name: base, display: display, tmpl: c.template, ref: c.ref, boundary: boundary, tc: tc, attempt: -1, depth: depth + 1}
	if err != nil {
		n := o.errorNode(inv, err)
		o.addChild(parent, n)
		return []*NodeStatus{n}, true
	}
	start := func(name, display string, vars scope) *NodeStatus {
		inv := inv
		inv.name, inv.display = name, display
		if n := o.get(name); n != nil && n.Phase.Fulfilled() {
			return n
		}
		s := merge(sc, o.outputGlobals(), vars)
		if c.when != "" && o.get(name) == nil {
			w, err := s.expand("when", c.when, leafStrict)
			if err != nil {
				return o.errorNode(inv, err)
			}
			ok, err := evalWhen(w)
			if err != nil {
				return o.errorNode(inv, fmt.Errorf("when %q: %v", w, err))
			}
			if !ok {
				n := o.init(inv, NodeTypeSkipped, NodeSkipped, c.template)
				n.Message = fmt.Sprintf("when '%s' evaluated false", w)
				return n
			}
		}
		var err error
		if inv.args, inv.arts, err = resolveArgs(c.args, s, leafStrict); err != nil {
			return o.errorNode(inv, err)
		}
		return o.execute(inv)
	}
	one := func(name, display string, vars scope) *NodeStatus {
		n := start(name, display, vars)
		if n != nil && (c.onExit != "" || len(c.hooks) > 0) {
			hinv := inv
			hinv.name, hinv.display = name, display
			// An expanded task's expression hooks are its TaskGroup's (executeDAG). A step its
			// when skipped runs none: Argo's step group keeps no step for it (a DAG task's run).
			expr := exp == nil
			if c.kind == "steps" {
				expr = n.Type != NodeTypeSkipped || n.Phase != NodeSkipped
			}
			o.runHooks(c, n, merge(sc, o.outputGlobals(), vars), hinv, expr, true)
		}
		return n
	}
	if exp == nil {
		n := one(base, display, nil)
		if n == nil {
			return nil, false
		}
		o.addChild(parent, n)
		return []*NodeStatus{n}, true
	}
	for i, e := range exp {
		_ = i
		n := one(base+e.suffix, display+e.suffix, e.vars)
		if n == nil {
			continue
		}
		o.addChild(parent, n)
		nodes = append(nodes, n)
	}
	return nodes, len(nodes) == len(exp)
}

func failedUnhandled(n *NodeStatus, cont *ContinueOn) bool {
	switch n.Phase {
	case NodeFailed:
		return cont == nil || !cont.Failed
	case NodeError:
		return cont == nil || !cont.Error
	}
	return false
}

func (o *operation) executeSteps(inv invocation, t *Template, inputs *Inputs, tc tmplCtx) *NodeStatus {
	n := o.get(inv.name)
	if n == nil {
		n = o.init(inv, NodeTypeSteps, NodeRunning, t.Name)
		n.Inputs = inputs
	}
	sc := o.templateScope(n)
	var prev []*NodeStatus // the step nodes of the group before
	for g, group := range t.Steps {
		gname := fmt.Sprintf("%s[%d]", inv.name, g)
		gn := o.get(gname)
		if gn == nil {
			gn = o.init(invocation{name: gname, display: fmt.Sprintf("[%d]", g), boundary: n.ID}, NodeTypeStepGroup, NodeRunning, "")
		}
		if g == 0 {
			o.addChild(n, gn)
		} else {
			for _, p := range prev {
				o.addChild(p, gn)
			}
		}
		running, failed := 0, ""
		var groupNodes []*NodeStatus
		add := scope{}
		for _, st := range group {
			if p := t.Parallelism; p != nil && *p > 0 && int64(running) >= *p && o.get(gname+"."+st.Name) == nil {
				running++ // waits for a slot
				continue
			}
			c := stepCall(st)
			nodes, started := o.runCall(c, gname+"."+st.Name, st.Name, gn, sc, tc, n.ID, inv.depth)
			if !started {
				running++
			}
			done := true
			for _, x := range nodes {
				if msg := o.hookErr(x); msg != "" && !gn.Phase.Fulfilled() {
					o.finish(gn, NodeError, msg) // Argo's executeStepGroup: markNodeError
				}
				groupNodes = append(groupNodes, x)
				if !x.Phase.Fulfilled() || o.hooksPending(x) { // its hooks and exit handler too
					done = false
					running++
				} else if failedUnhandled(x, st.ContinueOn) && failed == "" {
					failed = fmt.Sprintf("child '%s' failed", x.ID)
				}
			}
			if done && started {
				if c.hasItems() {
					aggregateVars("steps."+st.Name, nodes, add)
				} else if len(nodes) == 1 {
					nodeVars("steps."+st.Name, nodes[0], add)
				}
			}
		}
		if running > 0 {
			return n
		}
		for i, x := range groupNodes {
			groupNodes[i] = o.outbound(x) // the next group hangs off a retry's last attempt
		}
		if gn.Phase == NodeError { // a hook could not start
			o.finish(n, NodeFailed, gn.Message)
			return n
		}
		if failed != "" {
			o.finish(gn, NodeFailed, failed)
			o.finish(n, NodeFailed, failed)
			return n
		}
		if !gn.Phase.Fulfilled() {
			o.finish(gn, NodeSucceeded, "")
		}
		for k, v := range add {
			sc[k] = v
		}
		prev = groupNodes
	}
	o.finishComposite(n, t, sc)
	return n
}

// finishComposite ends a steps or DAG node that succeeded: its outputs from valueFrom.parameter.
func (o *operation) finishComposite(n *NodeStatus, t *Template, sc scope) {
	sc = merge(sc, o.outputGlobals())
	for _, p := range t.Outputs.Parameters {
		if p.ValueFrom == nil || (p.ValueFrom.Parameter == "" && p.ValueFrom.Expression == "") {
			continue
		}
		v, err := compositeParam(p, sc)
		if err != nil {
			o.finish(n, NodeError, err.Error())
			return
		}
		if n.Outputs == nil {
			n.Outputs = &Outputs{}
		}
		val := AnyString(v)
		n.Outputs.Parameters = append(n.Outputs.Parameters, Parameter{Name: p.Name, Value: &val, GlobalName: sc.globalName(p.GlobalName)})
	}
	for _, a := range t.Outputs.Artifacts {
		from, _ := sc.replace(a.From, leafStrict)
		if a.FromExpression != "" {
			v, ok, err := evalFromExpression(a.FromExpression, sc)
			if err != nil {
				o.finish(n, NodeError, fmt.Sprintf("outputs.artifacts.%s.fromExpression %q: %v", a.Name, a.FromExpression, err))
				return
			}
			from = v
			if !ok {
				from = "{{=" + a.FromExpression + "}}"
			}
		}
		got, ok, err := resolveFrom(from)
		if err != nil {
			o.finish(n, NodeError, fmt.Sprintf("outputs.artifacts.%s: from: %v", a.Name, err))
			return
		}
		if !ok {
			if a.Optional {
				continue
			}
			o.finish(n, NodeError, fmt.Sprintf("outputs.artifacts.%s: %s did not resolve (the step or task did not produce it)", a.Name, from))
			return
		}
		res := a
		res.From = ""
		res.ArtifactLocation = got.ArtifactLocation
		if n.Outputs == nil {
			n.Outputs = &Outputs{}
		}
		n.Outputs.Artifacts = append(n.Outputs.Artifacts, res)
	}
	o.globalParams(n)
	o.finish(n, NodeSucceeded, "")
}

// dagTask is one task's state in one pass.
type dagTask struct {
	task  *DAGTask
	deps  []string
	expr  depExpr
	nodes []*NodeStatus // its node, or its expanded children
	group *NodeStatus   // the TaskGroup of an expanded task
	node  *NodeStatus   // what stands for it: its node or its group
	hooks bool          // its hooks or exit handlers still run: the tasks after it wait
}

func (o *operation) executeDAG(inv invocation, t *Template, inputs *Inputs, tc tmplCtx) *NodeStatus {
	n := o.get(inv.name)
	if n == nil {
		n = o.init(inv, NodeTypeDAG, NodeRunning, t.Name)
		n.Inputs = inputs
	}
	sc := o.templateScope(n)
	tasks := map[string]*dagTask{}
	var order []string
	for i := range t.DAG.Tasks {
		tk := &t.DAG.Tasks[i]
		dt := &dagTask{task: tk}
		if tk.Depends != "" {
			e, err := parseDepends(tk.Depends)
			if err != nil {
				o.finish(n, NodeError, fmt.Sprintf("task %s: depends: %v", tk.Name, err))
				return n
			}
			dt.expr, dt.deps = e, dependsOf(e)
		} else if len(tk.Dependencies) > 0 {
			dt.deps = tk.Dependencies
		}
		tasks[tk.Name] = dt
	}
	for _, tk := range t.DAG.Tasks {
		if len(tk.Dependencies) > 0 {
			tasks[tk.Name].expr = dependenciesExpr(tk.Dependencies, func(d string) *ContinueOn {
				if x := tasks[d]; x != nil {
					return x.task.ContinueOn
				}
				return nil
			})
		}
	}
	// Topological order (validation refused cycles; a cycle here only leaves tasks unstarted).
	seen := map[string]bool{}
	var visit func(string)
	visit = func(name string) {
		if seen[name] || tasks[name] == nil {
			return
		}
		seen[name] = true
		for _, d := range tasks[name].deps {
			visit(d)
		}
		order = append(order, name)
	}
	for _, tk := range t.DAG.Tasks {
		visit(tk.Name)
	}
	handled := map[string]bool{} // tasks whose failure another task's depends expects
	for _, dt := range tasks {
		if dt.task.Depends == "" {
			continue
		}
		for _, d := range dt.deps {
			if strings.Contains(dt.task.Depends, d+".Failed") || strings.Contains(dt.task.Depends, d+".Errored") ||
				strings.Contains(dt.task.Depends, d+".AllFailed") || strings.Contains(dt.task.Depends, d+".AnySucceeded") {
				handled[d] = true
			}
		}
	}
	failFast := t.DAG.FailFast == nil || *t.DAG.FailFast
	stopNew := false
	dagErr := "" // why a task's hook could not start: the DAG's error
	running := 0
	// First pass: what exists already (so that fail-fast and parallelism see it).
	for _, name := range order {
		dt := tasks[name]
		base := inv.name + "." + name
		dt.node = o.get(base)
		if (dt.task.WithItems != nil || dt.task.WithParam != "" || dt.task.WithSequence != nil) && !omitted(dt.node) {
			dt.group = dt.node
		}
		if dt.node != nil && dt.node.Phase.Fulfilled() && failedUnhandled(dt.node, dt.task.ContinueOn) && !handled[name] && failFast {
			stopNew = true
		}
		if msg := o.failedHookOf(dt.node); msg != "" && dagErr == "" {
			dagErr, stopNew = msg, true // a hook of a task could not start in an earlier pass
		}
		if dt.node != nil && !dt.node.Phase.Fulfilled() {
			running++
		}
	}
	result := func(task, res string) bool {
		dt := tasks[task]
		if dt == nil || dt.node == nil {
			return false
		}
		p := dt.node.Phase
		switch res {
		case "Succeeded":
			return p == NodeSucceeded
		case "Failed":
			return p == NodeFailed
		case "Errored":
			return p == NodeError
		case "Skipped":
			return p == NodeSkipped
		case "Omitted":
			return p == NodeOmitted
		case "Daemoned":
			return false
		case "AnySucceeded", "AllFailed":
			any, all := false, len(dt.nodes) > 0
			for _, c := range dt.nodes {
				any = any || c.Phase == NodeSucceeded
				all = all && c.Phase == NodeFailed
			}
			if res == "AnySucceeded" {
				return any
			}
			return all
		}
		return false
	}
	pending := 0
	for _, name := range order {
		dt := tasks[name]
		base := inv.name + "." + name
		ready := true
		for _, d := range dt.deps {
			if x := tasks[d]; x == nil || x.node == nil || !x.node.Phase.Fulfilled() || x.hooks {
				ready = false
			}
		}
		exists := dt.node != nil
		if !exists && !ready {
			pending++
			continue
		}
		if !exists && (stopNew || (o.stopping != "" && !o.exitRuns(n.DisplayName, n.BoundaryID))) {
			continue // never starts: fail fast, or the workflow is stopping
		}
		ts := merge(sc)
		for _, d := range ancestors(tasks, name) {
			x := tasks[d]
			if x.node == nil {
				continue
			}
			if x.group != nil {
				aggregateVars("tasks."+d, x.nodes, ts)
				nodeVars("tasks."+d, x.group, ts)
			} else {
				nodeVars("tasks."+d, x.node, ts)
			}
		}
		if !exists && dt.expr != nil && !dt.expr.eval(result) {
			dt.node = o.init(invocation{name: base, display: name, boundary: n.ID, tmpl: dt.task.Template, ref: dt.task.TemplateRef}, NodeTypeSkipped, NodeOmitted, dt.task.Template)
			dt.node.Message = "omitted: depends condition not met"
			o.addDAGChild(n, dt, tasks)
		}
		if omitted(dt.node) {
			// It never runs; its expression hooks see it Omitted, its exit handler does not run.
			if c := taskCall(*dt.task); len(c.hooks) > 0 {
				hinv := invocation{name: base, display: name, boundary: n.ID, tc: tc, attempt: -1, depth: inv.depth + 1}
				o.runHooks(c, dt.node, merge(ts, o.outputGlobals()), hinv, true, false)
				dt.hooks = o.hooksPending(dt.node)
				dagErr, stopNew = o.taskHookErr(dt, dagErr, stopNew)
			}
			continue
		}
		if !exists {
			if p := t.Parallelism; p != nil && *p > 0 && int64(running) >= *p {
				pending++
				continue
			}
		}
		c := taskCall(*dt.task)
		if c.hasItems() {
			if dt.group == nil {
				dt.group = o.init(invocation{name: base, display: name, boundary: n.ID, tmpl: dt.task.Template, ref: dt.task.TemplateRef}, NodeTypeTaskGroup, NodeRunning, dt.task.Template)
			}
			dt.node = dt.group
			nodes, started := o.runCall(c, base, name, dt.group, ts, tc, n.ID, inv.depth)
			dt.nodes = nodes
			o.addDAGChild(n, dt, tasks)
			if !started {
				running++
				continue
			}
			done, failedMsg := true, ""
			for _, x := range nodes {
				if !x.Phase.Fulfilled() {
					done = false
				} else if failedUnhandled(x, dt.task.ContinueOn) && failedMsg == "" {
					failedMsg = fmt.Sprintf("child '%s' failed", x.ID)
				}
				dt.hooks = dt.hooks || o.hooksPending(x)
			}
			if len(c.hooks) > 0 {
				// An expanded task's expression hooks see its TaskGroup, as Argo's.
				ginv := invocation{name: base, display: name, boundary: n.ID, tc: tc, depth: inv.depth + 1}
				o.runHooks(c, dt.group, merge(ts, o.outputGlobals()), ginv, true, false)
				dt.hooks = dt.hooks || o.hooksPending(dt.group)
			}
			dagErr, stopNew = o.taskHookErr(dt, dagErr, stopNew)
			if !done {
				running++
				continue
			}
			if !dt.group.Phase.Fulfilled() {
				if failedMsg != "" {
					o.finish(dt.group, NodeFailed, failedMsg)
				} else {
					o.finish(dt.group, NodeSucceeded, "")
				}
			}
		} else {
			nodes, started := o.runCall(c, base, name, &NodeStatus{}, ts, tc, n.ID, inv.depth)
			if !started || len(nodes) == 0 {
				if !exists {
					pending++
				}
				continue
			}
			dt.node = nodes[0]
			dt.hooks = o.hooksPending(dt.node)
			dagErr, stopNew = o.taskHookErr(dt, dagErr, stopNew)
			o.addDAGChild(n, dt, tasks)
			if !dt.node.Phase.Fulfilled() {
				if !exists {
					running++
				}
				continue
			}
		}
		if failedUnhandled(dt.node, dt.task.ContinueOn) && !handled[name] && failFast {
			stopNew = true
		}
	}
	for _, name := range order {
		if dt := tasks[name]; dt.node != nil && (!dt.node.Phase.Fulfilled() || dt.hooks) {
			return n
		}
	}
	if dagErr != "" { // Argo's executeDAG: markNodeError
		o.finish(n, NodeError, dagErr)
		return n
	}
	if pending > 0 && !stopNew && (o.stopping == "" || o.exitRuns(n.DisplayName, n.BoundaryID)) {
		return n
	}
	// Every task has ended or will never start: the DAG's phase is its target tasks'.
	targets := strings.Fields(t.DAG.Target)
	if len(targets) == 0 {
		dependedOn := map[string]bool{}
		for _, dt := range tasks {
			for _, d := range dt.deps {
				dependedOn[d] = true
			}
		}
		for _, name := range order {
			if !dependedOn[name] {
				targets = append(targets, name)
			}
		}
	}
	for _, name := range targets {
		if ph, msg := branchPhase(tasks, name, map[string]bool{}); ph == NodeFailed || ph == NodeError {
			o.finish(n, ph, msg)
			return n
		}
	}
	all := merge(sc)
	for _, name := range order {
		dt := tasks[name]
		if dt.node == nil {
			continue
		}
		if dt.group != nil {
			aggregateVars("tasks."+name, dt.nodes, all)
		}
		nodeVars("tasks."+name, dt.node, all)
	}
	o.finishComposite(n, t, all)
	return n
}

// omitted reports whether n is the node of a task its depends omitted.
func omitted(n *NodeStatus) bool { return n != nil && n.Phase == NodeOmitted }

// taskHookErr folds why a hook or exit handler of task dt could not start into the DAG's
// error (the first one's is kept); no new task starts after it.
func (o *operation) taskHookErr(dt *dagTask, dagErr string, stopNew bool) (string, bool) {
	for _, x := range append([]*NodeStatus{dt.node, dt.group}, dt.nodes...) {
		if msg := o.hookErr(x); msg != "" {
			if dagErr == "" {
				dagErr = msg
			}
			return dagErr, true
		}
	}
	return dagErr, stopNew
}

// failedHookOf is why a hook or exit handler of task node x (or, for a TaskGroup, of one of
// its children) could not start ("": none did not).
func (o *operation) failedHookOf(x *NodeStatus) string {
	if x == nil {
		return ""
	}
	for _, id := range x.Children {
		c := o.nodes[id]
		if c == nil {
			continue
		}
		if isHooked(c) && notStarted(c) {
			return hookError(c)
		}
		if x.Type == NodeTypeTaskGroup {
			if msg := o.failedHookOf(c); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// addDAGChild links a task's node under the DAG (no dependencies) or under the nodes of its
// dependencies, as Argo draws the graph.
func (o *operation) addDAGChild(dag *NodeStatus, dt *dagTask, tasks map[string]*dagTask) {
	if len(dt.deps) == 0 {
		o.addChild(dag, dt.node)
		return
	}
	for _, d := range dt.deps {
		if x := tasks[d]; x != nil && x.node != nil {
			if x.group != nil && len(x.nodes) > 0 {
				for _, c := range x.nodes {
					o.addChild(c, dt.node)
				}
				continue
			}
			o.addChild(o.outbound(x.node), dt.node)
		}
	}
}

// outbound is the node a next step or task hangs off: a retry node's last attempt, else the
// node itself.
func (o *operation) outbound(n *NodeStatus) *NodeStatus {
	if tries := attempts(o.nodes, n); n.Type == NodeTypeRetry && len(tries) > 0 {
		if last := o.nodes[tries[len(tries)-1]]; last != nil {
			return last
		}
	}
	return n
}

func ancestors(tasks map[string]*dagTask, name string) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(string)
	walk = func(n string) {
		if tasks[n] == nil {
			return
		}
		for _, d := range tasks[n].deps {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
				walk(d)
			}
		}
	}
	walk(name)
	sort.Strings(out)
	return out
}

// branchPhase is the phase of the branch that ends in task name: its own when it ran (a
// continueOn failure counts as success), else (omitted, never started) its dependencies' worst.
func branchPhase(tasks map[string]*dagTask, name string, seen map[string]bool) (NodePhase, string) {
	dt := tasks[name]
	if dt == nil || seen[name] {
		return NodeSucceeded, ""
	}
	seen[name] = true
	if n := dt.node; n != nil && n.Phase != NodeOmitted {
		if failedUnhandled(n, dt.task.ContinueOn) {
			return n.Phase, fmt.Sprintf("task '%s' %s", n.Name, strings.ToLower(string(n.Phase)))
		}
		return NodeSucceeded, ""
	}
	for _, d := range dt.deps {
		if ph, msg := branchPhase(tasks, d, seen); ph == NodeFailed || ph == NodeError {
			return ph, msg
		}
	}
	if dt.node == nil {
		return NodeFailed, fmt.Sprintf("task '%s' did not run", name)
	}
	return NodeSucceeded, ""
}
