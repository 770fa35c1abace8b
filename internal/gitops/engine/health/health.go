// Package health assesses the health of live Kubernetes objects the way Argo CD users expect:
// Healthy, Progressing, Degraded, Suspended, Missing or Unknown.
//
// Built-in kinds (Deployment, StatefulSet, DaemonSet, ReplicaSet, Pod, Service, Ingress,
// PersistentVolumeClaim, Job, CronJob, HorizontalPodAutoscaler) start from kstatus
// (github.com/fluxcd/cli-utils/pkg/kstatus), which is what Flux and kubectl's wait logic
// use, and follow Argo CD where it differs: a paused Deployment and a suspended Job or CronJob
// are Suspended, a LoadBalancer Service or an Ingress without an address is Progressing, a
// failed Pod is Degraded, an unbound PVC is Progressing (Lost: Degraded). Any other kind is
// assessed by a configured CEL rule (see Rule) or else by kstatus' generic conditions
// (Ready, Reconciling, Stalled, observedGeneration); a kind with no status at all is Healthy,
// except kinds whose controller always writes one (an Argo Rollout), which are Progressing
// until it has.
package health

import (
	"fmt"
	"strings"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Status is a health status code, spelled as Argo CD spells it.
type Status string

// Health statuses, from best to worst (see Worse).
const (
	Healthy     Status = "Healthy"
	Suspended   Status = "Suspended"
	Progressing Status = "Progressing"
	Missing     Status = "Missing"
	Degraded    Status = "Degraded"
	Unknown     Status = "Unknown"
)

// order is Argo CD's health order: an application is as healthy as its worst resource.
var order = map[Status]int{Healthy: 0, Suspended: 1, Progressing: 2, Missing: 3, Degraded: 4, Unknown: 5}

// Worse reports whether a is worse than b.
func Worse(a, b Status) bool { return order[a] > order[b] }

// Worst returns the worst of statuses; Healthy for none.
func Worst(statuses ...Status) Status {
	w := Healthy
	for _, s := range statuses {
		if Worse(s, w) {
			w = s
		}
	}
	return w
}

// Result is the health of one object.
type Result struct {
	Status  Status `json:"status"`
	Message string `json:"message,omitempty"`
}

// Checker assesses health with the built-in rules plus configured rules for custom kinds. The
// zero value and nil use the built-in rules only. It is safe for concurrent use.
type Checker struct {
	rules map[string][]*compiledRule // by group/kind ("" group for the core group)
	lua   *Customizations
}

// WithCustomizations returns a checker with c's rules and the Lua health checks lua (nil:
// none). Lua checks come after CEL rules and before the built-in assessment.
func (c *Checker) WithCustomizations(lua *Customizations) *Checker {
	n := &Checker{lua: lua}
	if c != nil {
		n.rules = c.rules
	}
	return n
}

// Customizations are the checker's Lua health checks (nil: none).
func (c *Checker) Customizations() *Customizations {
	if c == nil {
		return nil
	}
	return c.lua
}

// Assess returns the health of a live object; nil is Missing.
func (c *Checker) Assess(obj *unstructured.Unstructured) Result {
	if obj == nil {
		return Result{Status: Missing, Message: "the resource does not exist"}
	}
	gvk := obj.GroupVersionKind()
	if c != nil {
		if rules := c.rules[gvk.Group+"/"+gvk.Kind]; len(rules) > 0 {
			for _, r := range rules {
				if r.matches(gvk.Version) {
					return r.assess(obj)
				}
			}
		}
	}
	if obj.GetDeletionTimestamp() != nil {
		return Result{Status: Progressing, Message: "pending deletion"}
	}
	if c != nil && c.lua.Len() > 0 {
		if r, ok := c.lua.Assess(obj); ok {
			return r
		}
	}
	if fn := builtin[gvk.Group+"/"+gvk.Kind]; fn != nil {
		return fn(obj)
	}
	return fromKstatus(obj)
}

// Assess assesses obj with the built-in rules only.
func Assess(obj *unstructured.Unstructured) Result { return (*Checker)(nil).Assess(obj) }

var builtin = map[string]func(*unstructured.Unstructured) Result{
	"apps/Deployment":                     deployment,
	"apps/StatefulSet":                    fromKstatus,
	"apps/DaemonSet":                      fromKstatus,
	"apps/ReplicaSet":                     replicaSet,
	"/Pod":                                pod,
	"/Service":                            service,
	"networking.k8s.io/Ingress":           ingress,
	"/PersistentVolumeClaim":              pvc,
	"batch/Job":                           job,
	"batch/CronJob":                       cronJob,
	"autoscaling/HorizontalPodAutoscaler": hpa,
	"argoproj.io/Rollout":                 rollout,
}

// fromKstatus maps kstatus onto Argo CD's statuses.
func fromKstatus(obj *unstructured.Unstructured) Result {
	r, err := kstatus.Compute(obj)
	if err != nil {
		return Result{Status: Unknown, Message: err.Error()}
	}
	switch r.Status {
	case kstatus.CurrentStatus:
		return Result{Status: Healthy, Message: r.Message}
	case kstatus.InProgressStatus, kstatus.TerminatingStatus:
		return Result{Status: Progressing, Message: r.Message}
	case kstatus.FailedStatus:
		return Result{Status: Degraded, Message: r.Message}
	case kstatus.NotFoundStatus:
		return Result{Status: Missing, Message: r.Message}
	}
	return Result{Status: Unknown, Message: r.Message}
}

func str(obj *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, fields...)
	return s
}

func boolean(obj *unstructured.Unstructured, fields ...string) bool {
	b, _, _ := unstructured.NestedBool(obj.Object, fields...)
	return b
}

func integer(obj *unstructured.Unstructured, def int64, fields ...string) int64 {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if !ok {
		return def
	}
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case int32:
		return int64(n)
	case float64:
		return int64(n)
	}
	return def
}

type condition struct{ Type, Status, Reason, Message string }

func conditions(obj *unstructured.Unstructured) []condition {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	out := make([]condition, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		s := func(k string) string { v, _ := m[k].(string); return v }
		out = append(out, condition{s("type"), s("status"), s("reason"), s("message")})
	}
	return out
}

func findCondition(obj *unstructured.Unstructured, typ string) (condition, bool) {
	for _, c := range conditions(obj) {
		if c.Type == typ {
			return c, true
		}
	}
	return condition{}, false
}

// observed reports whether the controller has seen the object's latest spec.
func observed(obj *unstructured.Unstructured) (Result, bool) {
	gen := obj.GetGeneration()
	og := integer(obj, -1, "status", "observedGeneration")
	if gen > 0 && og < gen {
		return Result{Status: Progressing, Message: fmt.Sprintf("waiting for the controller to observe generation %d", gen)}, false
	}
	return Result{}, true
}

func deployment(obj *unstructured.Unstructured) Result {
	if boolean(obj, "spec", "paused") {
		return Result{Status: Suspended, Message: "Deployment is paused"}
	}
	if r, ok := observed(obj); !ok {
		return r
	}
	if c, ok := findCondition(obj, "Progressing"); ok && c.Reason == "ProgressDeadlineExceeded" {
		return Result{Status: Degraded, Message: fmt.Sprintf("Deployment %q exceeded its progress deadline", obj.GetName())}
	}
	return fromKstatus(obj)
}

// rollout follows Argo CD's health check of Argo Rollouts' Rollout: the status.phase the
// controller writes, once it has observed the current generation (status.observedGeneration
// is a string there); Paused is Suspended.
func rollout(obj *unstructured.Unstructured) Result {
	st, ok := obj.Object["status"].(map[string]any)
	if !ok {
		// Never Healthy before the controller reports (kstatus would call it Healthy).
		return Result{Status: Progressing, Message: "Waiting for rollout to finish: status has not been reconciled (spec update to be observed)."}
	}
	// observedGeneration is a string in Argo Rollouts' status (the generation's number); some
	// writers use a number.
	og := ""
	switch v := st["observedGeneration"].(type) {
	case string:
		og = v
	case int64:
		og = fmt.Sprint(v)
	case float64:
		og = fmt.Sprint(int64(v))
	}
	if og != "" && og != fmt.Sprint(obj.GetGeneration()) {
		return Result{Status: Progressing, Message: "Waiting for rollout spec update to be observed"}
	}
	msg := str(obj, "status", "message")
	switch str(obj, "status", "phase") {
	case "Paused":
		if msg != "" {
			return Result{Status: Suspended, Message: "Rollout is paused: " + msg}
		}
		return Result{Status: Suspended, Message: "Rollout is paused"}
	case "Degraded":
		return Result{Status: Degraded, Message: msg}
	case "Healthy":
		return Result{Status: Healthy, Message: msg}
	}
	return Result{Status: Progressing, Message: msg}
}

func replicaSet(obj *unstructured.Unstructured) Result {
	if r, ok := observed(obj); !ok {
		return r
	}
	if c, ok := findCondition(obj, "ReplicaFailure"); ok && c.Status == "True" {
		return Result{Status: Degraded, Message: c.Message}
	}
	return fromKstatus(obj)
}

func pod(obj *unstructured.Unstructured) Result {
	switch str(obj, "status", "phase") {
	case "Succeeded":
		return Result{Status: Healthy, Message: "Pod completed successfully"}
	case "Failed":
		msg := str(obj, "status", "message")
		if msg == "" {
			msg = terminatedMessage(obj)
		}
		return Result{Status: Degraded, Message: msg}
	case "Running":
		if waiting, reason := podWaiting(obj); waiting && reason != "" {
			return Result{Status: Degraded, Message: reason}
		}
		restart := str(obj, "spec", "restartPolicy")
		if restart != "" && restart != "Always" {
			// A Pod meant to run to completion is progressing until it finishes.
			return Result{Status: Progressing, Message: "Pod is running"}
		}
	case "Unknown":
		return Result{Status: Unknown, Message: str(obj, "status", "message")}
	}
	return fromKstatus(obj)
}

// podWaiting reports a container stuck waiting for a reason that means failure.
func podWaiting(obj *unstructured.Unstructured) (bool, string) {
	statuses, _, _ := unstructured.NestedSlice(obj.Object, "status", "containerStatuses")
	for _, s := range statuses {
		m, _ := s.(map[string]any)
		reason, _, _ := unstructured.NestedString(m, "state", "waiting", "reason")
		switch reason {
		case "CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError", "InvalidImageName", "CreateContainerError", "RunContainerError":
			msg, _, _ := unstructured.NestedString(m, "state", "waiting", "message")
			name, _ := m["name"].(string)
			return true, strings.TrimSpace(fmt.Sprintf("container %s: %s %s", name, reason, msg))
		}
	}
	return false, ""
}

func terminatedMessage(obj *unstructured.Unstructured) string {
	statuses, _, _ := unstructured.NestedSlice(obj.Object, "status", "containerStatuses")
	for _, s := range statuses {
		m, _ := s.(map[string]any)
		if code, ok, _ := unstructured.NestedFieldNoCopy(m, "state", "terminated", "exitCode"); ok {
			if n, _ := code.(int64); n != 0 {
				name, _ := m["name"].(string)
				return fmt.Sprintf("container %s exited with code %d", name, n)
			}
		}
	}
	return "Pod failed"
}

func lbIngress(obj *unstructured.Unstructured) bool {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "loadBalancer", "ingress")
	return len(list) > 0
}

func service(obj *unstructured.Unstructured) Result {
	if str(obj, "spec", "type") == "LoadBalancer" && !lbIngress(obj) {
		return Result{Status: Progressing, Message: "waiting for the load balancer to get an address"}
	}
	return Result{Status: Healthy}
}

func ingress(obj *unstructured.Unstructured) Result {
	if !lbIngress(obj) {
		return Result{Status: Progressing, Message: "waiting for the ingress controller to assign an address"}
	}
	return Result{Status: Healthy}
}

func pvc(obj *unstructured.Unstructured) Result {
	switch str(obj, "status", "phase") {
	case "Bound":
		return Result{Status: Healthy}
	case "Lost":
		return Result{Status: Degraded, Message: "the claim lost its volume"}
	case "Pending":
		return Result{Status: Progressing, Message: "waiting for the claim to be bound"}
	}
	return Result{Status: Progressing, Message: "waiting for the claim to be bound"}
}

func job(obj *unstructured.Unstructured) Result {
	for _, c := range conditions(obj) {
		if c.Status != "True" {
			continue
		}
		switch c.Type {
		case "Failed", "FailureTarget":
			msg := c.Message
			if msg == "" {
				msg = c.Reason
			}
			return Result{Status: Degraded, Message: msg}
		case "Complete", "SuccessCriteriaMet":
			return Result{Status: Healthy, Message: "Job completed"}
		}
	}
	if boolean(obj, "spec", "suspend") {
		return Result{Status: Suspended, Message: "Job is suspended"}
	}
	return Result{Status: Progressing, Message: fmt.Sprintf("Job running: %d active, %d succeeded, %d failed",
		integer(obj, 0, "status", "active"), integer(obj, 0, "status", "succeeded"), integer(obj, 0, "status", "failed"))}
}

func cronJob(obj *unstructured.Unstructured) Result {
	if boolean(obj, "spec", "suspend") {
		return Result{Status: Suspended, Message: "CronJob is suspended"}
	}
	return Result{Status: Healthy}
}

// hpa follows Argo CD: a condition that is False for a Failed* reason is Degraded; before the
// controller has reported, the autoscaler is Progressing.
func hpa(obj *unstructured.Unstructured) Result {
	conds := conditions(obj)
	if len(conds) == 0 {
		return Result{Status: Progressing, Message: "waiting for the autoscaler to report"}
	}
	for _, c := range conds {
		if c.Status == "False" && (strings.HasPrefix(c.Reason, "Failed") || strings.HasPrefix(c.Reason, "Invalid")) {
			return Result{Status: Degraded, Message: c.Message}
		}
	}
	for _, c := range conds {
		if c.Type == "AbleToScale" && c.Status == "True" {
			return Result{Status: Healthy, Message: c.Message}
		}
	}
	return Result{Status: Progressing, Message: "waiting for the autoscaler to be able to scale"}
}
