package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// sensorRun is a running Sensor: its consumer of the bus and its triggers' state.
type sensorRun struct {
	hash, durable string
	bus           *busConn
	cs            *compiledSensor
	cancel        context.CancelFunc
	done          chan struct{}
	// fired holds, per event being retried (its stream sequence), the triggers that already
	// ran for it: a redelivery after one trigger's temporary error runs only the others.
	// Touched only by the run's one handling goroutine.
	fired map[uint64]map[string]bool
}

func (r *sensorRun) stop() {
	r.cancel()
	<-r.done
	r.cs.nats.close()
}

type compiledDep struct {
	d Dependency
	f *filters
}

type compiledTrigger struct {
	t    Trigger
	cond *conditions
	deps map[string]bool
	have map[string]*Event
	run  *triggerRun
	// lastLog is when a log trigger last wrote (its intervalSeconds).
	lastLog time.Time
	// dlq is the dlqTrigger run when this one fails (trigdlq.go); nil: none.
	dlq *compiledTrigger
}

type compiledSensor struct {
	ns, name, sa string
	bySubject    map[string][]*compiledDep
	triggers     []*compiledTrigger
	nats         natsPool     // the nats triggers' connections, closed when the run stops
	slack        slackThreads // the slack triggers' threads
}

func compileSensor(s *Sensor, bus *busConn) (*compiledSensor, error) {
	cs := &compiledSensor{ns: s.Namespace, name: s.Name, sa: "default", bySubject: map[string][]*compiledDep{}}
	if s.Spec.Template != nil && s.Spec.Template.ServiceAccountName != "" {
		cs.sa = s.Spec.Template.ServiceAccountName
	}
	all := map[string]bool{}
	for i, d := range s.Spec.Dependencies {
		f, err := compileFilters(fmt.Sprintf("spec.dependencies[%d].filters", i), d.Filters)
		if err != nil {
			return nil, err
		}
		f.op = orAnd(d.FiltersLogicalOperator)
		subj := bus.subject(d.EventSourceName, d.EventName)
		cs.bySubject[subj] = append(cs.bySubject[subj], &compiledDep{d: d, f: f})
		all[d.Name] = true
	}
	for i, t := range s.Spec.Triggers {
		run, err := compileTriggerRun(fmt.Sprintf("spec.triggers[%d]", i), &t)
		if err != nil {
			return nil, err
		}
		ct := &compiledTrigger{t: t, deps: all, have: map[string]*Event{}, run: run}
		if t.Template.Conditions != "" {
			c, err := parseConditions(t.Template.Conditions)
			if err != nil {
				return nil, fmt.Errorf("spec.triggers[%d].template.conditions: %w", i, err)
			}
			ct.cond, ct.deps = c, map[string]bool{}
			for _, n := range c.names() {
				ct.deps[n] = true
			}
		}
		if ct.dlq, err = compileDLQ(fmt.Sprintf("spec.triggers[%d].dlqTrigger", i), ct); err != nil {
			return nil, err
		}
		cs.triggers = append(cs.triggers, ct)
	}
	return cs, nil
}

func (t *compiledTrigger) satisfied() bool {
	have := map[string]bool{}
	for n := range t.have {
		have[n] = true
	}
	if t.cond != nil {
		return t.cond.eval(have)
	}
	for n := range t.deps {
		if !have[n] {
			return false
		}
	}
	return true
}

func durableName(ns, name string) string {
	return "sensor_" + subjectToken(ns) + "_" + subjectToken(name)
}

func (c *Controller) reconcileSensor(ctx context.Context, u *unstructured.Unstructured) error {
	ns, name := u.GetNamespace(), u.GetName()
	key := ns + "/" + name
	data, _ := u.MarshalJSON()
	s, err := DecodeSensor(data)
	if s != nil && err == nil {
		err = c.checkTriggerURLs(s)
	}
	if s == nil || err != nil {
		c.forget(kindSensor, ns, name) // its consumer too: nothing of an invalid Sensor stays
		deps := Condition{Type: CondDependenciesProvided, Status: "True"}
		var trig Condition
		bad := Condition{Status: "False", Reason: ReasonInvalidSpec, Message: "invalid spec: " + err.Error()}
		if f := errdefs.Field(err); strings.HasPrefix(f, "spec.triggers") {
			bad.Type = CondTriggersProvided
			trig = bad
		} else {
			bad.Type = CondDependenciesProvided
			deps = bad
			trig = Condition{Type: CondTriggersProvided, Status: "Unknown", Reason: ReasonInvalidSpec, Message: "not checked: the dependencies are invalid"}
		}
		return c.writeConditions(ctx, u, deps, trig,
			Condition{Type: CondDeployed, Status: "False", Reason: ReasonInvalidSpec, Message: "nothing runs: the spec is invalid"})
	}
	provided := []Condition{{Type: CondDependenciesProvided, Status: "True"}, {Type: CondTriggersProvided, Status: "True"}}
	bus, cond := c.busFor(ns, s.Spec.EventBusName)
	if cond != nil {
		c.stopSensor(key)
		return c.writeConditions(ctx, u, append(provided, *cond)...)
	}
	hash := specHash(u)
	c.mu.Lock()
	cur := c.sens[key]
	c.mu.Unlock()
	deployed := Condition{Type: CondDeployed, Status: "True", Message: fmt.Sprintf("consuming %d dependency(ies) from EventBus stream %s", len(s.Spec.Dependencies), bus.stream)}
	if cur != nil && cur.hash == hash && cur.bus == bus {
		return c.writeConditions(ctx, u, append(provided, deployed)...)
	}
	cs, err := compileSensor(s, bus)
	if err != nil {
		return c.writeConditions(ctx, u, Condition{Type: CondDependenciesProvided, Status: "False", Reason: ReasonInvalidSpec, Message: "invalid spec: " + err.Error()})
	}
	c.stopSensor(key)
	var subjects []string
	for subj := range cs.bySubject {
		subjects = append(subjects, subj)
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       durableName(ns, name),
		Description:   "Sensor " + key + " (Freshet runtime)",
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       consumerAckWait,
		MaxDeliver:    consumerMaxDelivr,
	}
	// One filter subject (servers before NATS 2.10 take no more): the dependency's, else the
	// event source's when they share one, else the whole bus; events of no dependency are
	// acknowledged and left.
	cfg.FilterSubject = bus.root + ".>"
	sources := map[string]bool{}
	for _, d := range s.Spec.Dependencies {
		sources[d.EventSourceName] = true
	}
	switch {
	case len(subjects) == 1:
		cfg.FilterSubject = subjects[0]
	case len(sources) == 1:
		cfg.FilterSubject = bus.root + "." + subjectToken(s.Spec.Dependencies[0].EventSourceName) + ".>"
	}
	cons, err := bus.js.CreateOrUpdateConsumer(ctx, bus.stream, cfg)
	if err != nil {
		_ = c.writeConditions(ctx, u, append(provided, Condition{Type: CondDeployed, Status: "False", Reason: ReasonEventBusFailed, Message: "consumer not created: " + err.Error()})...)
		return err
	}
	run := &sensorRun{hash: hash, durable: cfg.Durable, bus: bus, cs: cs, done: make(chan struct{}), fired: map[uint64]map[string]bool{}}
	rctx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	it, err := cons.Messages()
	if err != nil {
		cancel()
		return err
	}
	go func() {
		<-rctx.Done()
		it.Stop()
	}()
	go func() {
		defer close(run.done)
		for {
			msg, err := it.Next()
			if err != nil {
				if rctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
					return
				}
				c.log.Warn("sensor: fetch failed", logKey, key, logErr, err)
				select {
				case <-rctx.Done():
					return
				case <-time.After(time.Second):
				}
				continue
			}
			c.handle(rctx, run, msg)
		}
	}()
	c.mu.Lock()
	c.sens[key] = run
	c.mu.Unlock()
	c.log.Info("sensor running", logKey, key, "dependencies", len(s.Spec.Dependencies), "triggers", len(s.Spec.Triggers))
	return c.writeConditions(ctx, u, append(provided, deployed)...)
}

// checkTriggerURLs checks the URLs of a Sensor's http and nats triggers (their dlqTriggers'
// too), as written, against the runtime's network policy (they are checked again, once the
// parameters are set, before every request).
func (c *Controller) checkTriggerURLs(s *Sensor) error {
	var all []Trigger
	var fields []string
	for i, t := range s.Spec.Triggers {
		all, fields = append(all, t), append(fields, fmt.Sprintf("spec.triggers[%d].template", i))
		if d := t.DlqTrigger; d != nil && d.Template != nil {
			all, fields = append(all, *d), append(fields, fmt.Sprintf("spec.triggers[%d].dlqTrigger.template", i))
		}
	}
	for i, t := range all {
		f := fields[i]
		switch {
		case t.Template.HTTP != nil:
			if err := c.opts.Policy.CheckServerURL(f+".http.url", shownURL(t.Template.HTTP.URL)); err != nil {
				return err
			}
		case t.Template.NATS != nil:
			for _, one := range strings.Split(t.Template.NATS.URL, ",") {
				if err := c.opts.Policy.CheckServerURL(f+".nats.url", redact(strings.TrimSpace(one))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (c *Controller) stopSensor(key string) {
	c.mu.Lock()
	r := c.sens[key]
	delete(c.sens, key)
	c.mu.Unlock()
	if r != nil {
		r.stop()
	}
}

// permanentError is a trigger failure that retrying does not mend.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// handle runs one event through the Sensor's dependencies and triggers, and settles it.
func (c *Controller) handle(ctx context.Context, run *sensorRun, msg jetstream.Msg) {
	cs := run.cs
	key := cs.ns + "/" + cs.name
	var ev Event
	if err := json.Unmarshal(msg.Data(), &ev); err != nil {
		c.log.Warn("sensor: event does not decode; dropped", logKey, key, "subject", msg.Subject(), logErr, err)
		_ = msg.Term()
		return
	}
	var matched []string
	for _, d := range cs.bySubject[msg.Subject()] {
		if ok, why := d.f.match(&ev); ok {
			matched = append(matched, d.d.Name)
		} else {
			c.log.Info("sensor: event filtered out", logKey, key, "dependency", d.d.Name, "event", ev.Context.ID, "why", why)
		}
	}
	md, _ := msg.Metadata()
	var seq uint64
	if md != nil {
		seq = md.Sequence.Stream
	}
	fired := run.fired[seq]
	if fired == nil {
		fired = map[string]bool{}
	}
	var failed error
	for _, t := range cs.triggers {
		if fired[t.t.Template.Name] {
			continue // ran on an earlier delivery of this event
		}
		touched := false
		for _, m := range matched {
			if t.deps[m] {
				t.have[m] = &ev
				touched = true
			}
		}
		if !touched || !t.satisfied() {
			continue
		}
		// Long waits (backoff, rate limit, policy) tell the bus the event is in progress,
		// so it is not redelivered meanwhile.
		wait := func(ctx context.Context, d time.Duration) error {
			for d > 0 {
				step := min(d, consumerAckWait/3)
				if err := sleep(ctx, step); err != nil {
					return err
				}
				d -= step
				_ = msg.InProgress()
			}
			return ctx.Err()
		}
		what, err := c.execute(ctx, cs, t, wait)
		var perm permanentError
		switch {
		case err == nil:
			clear(t.have)
			fired[t.t.Template.Name] = true
			c.log.Info("sensor: triggered", logKey, key, "trigger", t.t.Template.Name, "result", what)
			c.setTriggered(ctx, cs, Condition{Type: CondTriggered, Status: "True", Reason: "Triggered", Message: "trigger " + t.t.Template.Name + " last succeeded"})
		case errors.As(err, &perm):
			clear(t.have)
			fired[t.t.Template.Name] = true
			c.log.Warn("sensor: trigger failed", logKey, key, "trigger", t.t.Template.Name, logErr, err)
			c.setTriggered(ctx, cs, Condition{Type: CondTriggered, Status: "False", Reason: ReasonTriggerFailed, Message: "trigger " + t.t.Template.Name + ": " + err.Error()})
		default:
			failed = err
		}
	}
	if failed == nil {
		delete(run.fired, seq)
		_ = msg.Ack()
		return
	}
	n := uint64(1)
	if md != nil {
		n = md.NumDelivered
	}
	if n >= consumerMaxDelivr {
		c.log.Error("sensor: trigger failed on the last delivery; event dropped", logKey, key, logErr, failed)
		c.setTriggered(ctx, cs, Condition{Type: CondTriggered, Status: "False", Reason: ReasonTriggerFailed, Message: failed.Error()})
		delete(run.fired, seq)
		_ = msg.Term()
		return
	}
	if md != nil {
		run.fired[seq] = fired
	}
	c.log.Warn("sensor: trigger failed; retrying", logKey, key, logErr, failed, "in", nakDelay(n))
	_ = msg.NakWithDelay(nakDelay(n))
}

func (c *Controller) setTriggered(ctx context.Context, cs *compiledSensor, cond Condition) {
	obj, err := c.sensors.ByNamespace(cs.ns).Get(cs.name)
	if err != nil {
		return
	}
	if err := c.writeConditions(ctx, obj.(*unstructured.Unstructured), cond); err != nil {
		c.log.Warn("sensor status not written", logKey, cs.ns+"/"+cs.name, logErr, err)
	}
}

// fire makes a trigger's resource from its template and the events, and creates (updates,
// deletes) it as the Sensor's service account.
func (c *Controller) fire(ctx context.Context, cs *compiledSensor, t *compiledTrigger, wait waitFunc) (string, error) {
	tmpl := t.t.Template
	if len(t.t.Parameters) > 0 {
		b, _ := json.Marshal(tmpl)
		b, err := applyParams("parameters", b, t.t.Parameters, t.have)
		if err != nil {
			return "", permanentError{err}
		}
		var nt TriggerTemplate
		if err := json.Unmarshal(b, &nt); err != nil {
			return "", permanentError{fmt.Errorf("parameters: the template does not decode once set: %v", err)}
		}
		tmpl = &nt
	}
	var (
		src    *ArtifactLocation
		params []TriggerParameter
		op     = "create"
		field  string
		wfOnly bool
	)
	switch {
	case tmpl.HTTP != nil:
		return c.fireHTTP(ctx, cs, t, tmpl.HTTP)
	case tmpl.Log != nil:
		return c.fireLog(cs, t, tmpl.Log)
	case tmpl.NATS != nil:
		return c.fireNATS(ctx, cs, t, tmpl.NATS)
	case tmpl.Slack != nil:
		return c.fireSlack(ctx, cs, t, tmpl.Slack)
	case tmpl.ArgoWorkflow != nil && tmpl.ArgoWorkflow.Operation != "" && tmpl.ArgoWorkflow.Operation != "submit":
		return c.fireWorkflowOp(ctx, cs, t, tmpl.ArgoWorkflow, wait)
	case tmpl.K8s != nil:
		src, params, field = tmpl.K8s.Source, tmpl.K8s.Parameters, "k8s"
		if tmpl.K8s.Operation != "" {
			op = tmpl.K8s.Operation
		}
	case tmpl.ArgoWorkflow != nil:
		src, params, field, wfOnly = tmpl.ArgoWorkflow.Source, tmpl.ArgoWorkflow.Parameters, "argoWorkflow", true
	default:
		return "", permanentError{errors.New("the template has no trigger kind")}
	}
	obj, err := checkSource(field+".source", src, false)
	if err != nil {
		return "", permanentError{err}
	}
	raw, _ := json.Marshal(obj)
	raw, err = applyParams(field+".parameters", raw, params, t.have)
	if err != nil {
		return "", permanentError{err}
	}
	if wfOnly || strings.Contains(string(raw), `"kind":"Workflow"`) {
		// Check the resource as it will be created: what the parameters set must keep it valid.
		if _, err := checkSource(field+".source", &ArtifactLocation{Resource: raw}, wfOnly); err != nil {
			return "", permanentError{fmt.Errorf("once the parameters are set: %w", err)}
		}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return "", permanentError{fmt.Errorf("%s.source.resource: %v", field, err)}
	}
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return "", fmt.Errorf("resource %s: %w", gvk, err) // the CRD may come: retried
	}
	dyn, err := c.clientAs(cs.ns, cs.sa)
	if err != nil {
		return "", err
	}
	var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if u.GetNamespace() == "" {
			u.SetNamespace(cs.ns)
		}
		ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	} else {
		u.SetNamespace("")
	}
	lbl := u.GetLabels()
	if lbl == nil {
		lbl = map[string]string{}
	}
	lbl["events.argoproj.io/sensor"] = cs.name
	lbl["events.argoproj.io/trigger"] = t.t.Template.Name
	u.SetLabels(lbl)
	what := strings.ToLower(gvk.Kind) + "/" + u.GetName()
	switch op {
	case "create":
		out, err := ri.Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return "", classify(fmt.Errorf("create %s: %w", what, err))
		}
		what = strings.ToLower(gvk.Kind) + "/" + out.GetName()
		if err := c.applyPolicy(ctx, t.run.policy, ri, out.GetName(), what, wait); err != nil {
			return "", err
		}
		return "created " + what, nil
	case "update":
		body, _ := json.Marshal(u.Object)
		force := true
		if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
			return "", classify(fmt.Errorf("apply %s: %w", what, err))
		}
		if err := c.applyPolicy(ctx, t.run.policy, ri, u.GetName(), what, wait); err != nil {
			return "", err
		}
		return "applied " + what, nil
	case "delete":
		err := ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return what + " not found: nothing to delete", nil
		}
		if err != nil {
			return "", classify(fmt.Errorf("delete %s: %w", what, err))
		}
		return "deleted " + what, nil
	}
	return "", permanentError{fmt.Errorf("operation %q is not supported", op)}
}

// applyPolicy waits, with the policy's backoff, until the resource name has the policy's
// labels (Argo's policy.k8s): checked at once, then after each wait, steps times in all. Not
// getting them is an error only with errorOnBackoffTimeout, and then a permanent one.
func (c *Controller) applyPolicy(ctx context.Context, p *labelPolicy, ri dynamic.ResourceInterface, name, what string, wait waitFunc) error {
	if p == nil {
		return nil
	}
	for i := range p.backoff.steps {
		if i > 0 {
			if err := wait(ctx, p.backoff.delay(i-1)); err != nil {
				return fmt.Errorf("policy: %s: %w", what, err)
			}
		}
		obj, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return classify(fmt.Errorf("policy: get %s: %w", what, err))
		}
		if p.matches(obj.GetLabels()) {
			return nil
		}
	}
	if p.errOnTimeout {
		return permanentError{fmt.Errorf("policy: %s did not get the labels %s after %d checks (errorOnBackoffTimeout)", what, p, p.backoff.steps)}
	}
	c.log.Info("sensor: trigger policy timed out; counted as success (errorOnBackoffTimeout is false)", "resource", what, "labels", p.String())
	return nil
}

// classify tells the API server's refusals (retrying changes nothing) from the rest.
func classify(err error) error {
	switch {
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsAlreadyExists(err), apierrors.IsBadRequest(err),
		apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err):
		return permanentError{err}
	}
	return err
}
