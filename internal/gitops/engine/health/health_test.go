package health_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	// Numbers as the API machinery decodes them.
	return &unstructured.Unstructured{Object: normalize(m).(map[string]any)}
}

func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	}
	return v
}

func TestAssess(t *testing.T) {
	now := time.Now().UTC().Format(time.RFC3339)
	tests := []struct {
		name string
		doc  string
		want health.Status
		msg  string // substring of the message
	}{
		// Argo Rollout: no status is not Healthy (Argo CD's built-in check).
		{"rollout without status", "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, generation: 1}\nspec: {replicas: 1}\n", health.Progressing, "observed"},
		{"rollout not observed", "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, generation: 2}\nspec: {}\nstatus: {observedGeneration: 1, phase: Healthy}\n", health.Progressing, "observed"},
		{"rollout healthy", "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, generation: 2}\nspec: {}\nstatus: {observedGeneration: 2, phase: Healthy}\n", health.Healthy, ""},
		{"rollout paused", "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, generation: 2}\nspec: {}\nstatus: {observedGeneration: 2, phase: Paused, message: CanaryPauseStep}\n", health.Suspended, "CanaryPauseStep"},
		{"rollout degraded", "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, generation: 2}\nspec: {}\nstatus: {observedGeneration: 2, phase: Degraded, message: ProgressDeadlineExceeded}\n", health.Degraded, "Deadline"},
		// Deployment
		{"deployment available", `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 2}
spec: {replicas: 2, progressDeadlineSeconds: 600}
status:
  observedGeneration: 2
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True"}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}`, health.Healthy, ""},
		{"deployment rolling", `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 2}
spec: {replicas: 2}
status: {observedGeneration: 2, replicas: 2, updatedReplicas: 1, readyReplicas: 2, availableReplicas: 2}`, health.Progressing, "Updated: 1/2"},
		{"deployment not observed", `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 3}
spec: {replicas: 1}
status: {observedGeneration: 2, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1}`, health.Progressing, "generation 3"},
		{"deployment paused", `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 1}
spec: {replicas: 1, paused: true}
status: {observedGeneration: 1}`, health.Suspended, "paused"},
		{"deployment deadline exceeded", `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 1}
spec: {replicas: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded}`, health.Degraded, "progress deadline"},
		{"deployment scaled to zero", `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 1}
spec: {replicas: 0}
status:
  observedGeneration: 1
  conditions:
  - {type: Available, status: "True"}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}`, health.Healthy, ""},
		// StatefulSet
		{"statefulset ready", `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, readyReplicas: 2, currentReplicas: 2, updatedReplicas: 2, currentRevision: a, updateRevision: a}`, health.Healthy, ""},
		{"statefulset rolling", `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, readyReplicas: 1, currentReplicas: 2, updatedReplicas: 1, currentRevision: a, updateRevision: b}`, health.Progressing, "Ready: 1/2"},
		// DaemonSet
		{"daemonset ready", `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3, numberReady: 3}`, health.Healthy, ""},
		{"daemonset rolling", `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 1, numberAvailable: 3, numberReady: 3}`, health.Progressing, ""},
		// ReplicaSet
		{"replicaset ready", `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, generation: 1}
spec: {replicas: 1}
status: {observedGeneration: 1, replicas: 1, readyReplicas: 1, availableReplicas: 1, fullyLabeledReplicas: 1}`, health.Healthy, ""},
		{"replicaset failure", `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, generation: 1}
spec: {replicas: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: ReplicaFailure, status: "True", message: "pods \"x\" is forbidden: exceeded quota"}`, health.Degraded, "exceeded quota"},
		// Pod
		{"pod running ready", `apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {restartPolicy: Always}
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]`, health.Healthy, ""},
		{"pod pending", `apiVersion: v1
kind: Pod
metadata: {name: p}
status: {phase: Pending}`, health.Progressing, ""},
		{"pod succeeded", `apiVersion: v1
kind: Pod
metadata: {name: p}
status: {phase: Succeeded}`, health.Healthy, ""},
		{"pod failed", `apiVersion: v1
kind: Pod
metadata: {name: p}
status:
  phase: Failed
  containerStatuses:
  - name: main
    state: {terminated: {exitCode: 3}}`, health.Degraded, "exited with code 3"},
		{"pod crashlooping", `apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {restartPolicy: Always}
status:
  phase: Running
  containerStatuses:
  - name: web
    state: {waiting: {reason: CrashLoopBackOff, message: back-off 5m}}`, health.Degraded, "CrashLoopBackOff"},
		{"job pod running", `apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {restartPolicy: Never}
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]`, health.Progressing, ""},
		// Service
		{"service clusterip", `apiVersion: v1
kind: Service
metadata: {name: s}
spec: {type: ClusterIP, clusterIP: 10.0.0.1}`, health.Healthy, ""},
		{"service lb pending", `apiVersion: v1
kind: Service
metadata: {name: s}
spec: {type: LoadBalancer, clusterIP: 10.0.0.1}
status: {loadBalancer: {}}`, health.Progressing, "load balancer"},
		{"service lb ready", `apiVersion: v1
kind: Service
metadata: {name: s}
spec: {type: LoadBalancer, clusterIP: 10.0.0.1}
status: {loadBalancer: {ingress: [{ip: 1.2.3.4}]}}`, health.Healthy, ""},
		// Ingress
		{"ingress pending", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: i}
status: {loadBalancer: {}}`, health.Progressing, "address"},
		{"ingress ready", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: i}
status: {loadBalancer: {ingress: [{hostname: lb.example.com}]}}`, health.Healthy, ""},
		// PVC
		{"pvc bound", `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: c}
status: {phase: Bound}`, health.Healthy, ""},
		{"pvc pending", `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: c}
status: {phase: Pending}`, health.Progressing, ""},
		{"pvc lost", `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: c}
status: {phase: Lost}`, health.Degraded, ""},
		// Job
		{"job complete", `apiVersion: batch/v1
kind: Job
metadata: {name: j}
status:
  succeeded: 1
  conditions: [{type: Complete, status: "True"}]`, health.Healthy, ""},
		{"job failed", `apiVersion: batch/v1
kind: Job
metadata: {name: j}
status:
  failed: 1
  conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}]`, health.Degraded, "backoff limit"},
		{"job running", `apiVersion: batch/v1
kind: Job
metadata: {name: j}
status: {active: 1}`, health.Progressing, "1 active"},
		{"job suspended", `apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec: {suspend: true}`, health.Suspended, ""},
		// CronJob
		{"cronjob", `apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec: {schedule: "* * * * *"}`, health.Healthy, ""},
		{"cronjob suspended", `apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec: {schedule: "* * * * *", suspend: true}`, health.Suspended, ""},
		// HPA
		{"hpa healthy", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: h}
status:
  conditions:
  - {type: AbleToScale, status: "True", reason: ReadyForNewScale}
  - {type: ScalingActive, status: "True", reason: ValidMetricFound}`, health.Healthy, ""},
		{"hpa degraded", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: h}
status:
  conditions:
  - {type: AbleToScale, status: "True", reason: SucceededGetScale}
  - {type: ScalingActive, status: "False", reason: FailedGetResourceMetric, message: missing request for cpu}`, health.Degraded, "missing request"},
		{"hpa new", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: h}`, health.Progressing, ""},
		// Others, through kstatus
		{"configmap", `apiVersion: v1
kind: ConfigMap
metadata: {name: c}`, health.Healthy, ""},
		{"custom resource ready", `apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 1}
status:
  observedGeneration: 1
  conditions: [{type: Ready, status: "True"}]`, health.Healthy, ""},
		{"custom resource stalled", `apiVersion: example.com/v1
kind: Widget
metadata: {name: w, generation: 1}
status:
  observedGeneration: 1
  conditions: [{type: Stalled, status: "True", message: quota}]`, health.Degraded, "quota"},
		// Argo Rollouts' Rollout: Argo CD's rules over status.phase.
		{"rollout paused", `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: r, generation: 2}
status: {observedGeneration: "2", phase: Paused, message: CanaryPauseStep}`, health.Suspended, "Rollout is paused"},
		{"rollout aborted", `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: r, generation: 2}
status: {observedGeneration: "2", phase: Degraded, message: "RolloutAborted: Rollout aborted update to revision 2"}`, health.Degraded, "RolloutAborted"},
		{"rollout healthy", `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: r, generation: 2}
status: {observedGeneration: "2", phase: Healthy}`, health.Healthy, ""},
		{"rollout not observed", `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: r, generation: 3}
status: {observedGeneration: "2", phase: Healthy}`, health.Progressing, "spec update to be observed"},
		{"rollout without status", `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: r, generation: 1}`, health.Progressing, "not been reconciled"},
		{"being deleted", `apiVersion: v1
kind: ConfigMap
metadata: {name: c, deletionTimestamp: "` + now + `"}`, health.Progressing, "deletion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := health.Assess(obj(t, tt.doc))
			if got.Status != tt.want || !strings.Contains(got.Message, tt.msg) {
				t.Errorf("got %s %q, want %s containing %q", got.Status, got.Message, tt.want, tt.msg)
			}
		})
	}
	if got := health.Assess(nil); got.Status != health.Missing {
		t.Errorf("nil: %s", got.Status)
	}
}

func TestWorst(t *testing.T) {
	if w := health.Worst(health.Healthy, health.Suspended, health.Progressing); w != health.Progressing {
		t.Errorf("worst %s", w)
	}
	if w := health.Worst(health.Missing, health.Degraded, health.Healthy); w != health.Degraded {
		t.Errorf("worst %s", w)
	}
	if w := health.Worst(); w != health.Healthy {
		t.Errorf("worst of none %s", w)
	}
	if !health.Worse(health.Unknown, health.Degraded) || health.Worse(health.Healthy, health.Suspended) {
		t.Error("order")
	}
}

func TestCELRules(t *testing.T) {
	c, err := health.NewChecker([]health.Rule{{
		APIVersion: "example.com/v1", Kind: "Database",
		Suspended: "has(spec.paused) && spec.paused",
		Degraded:  "has(status.conditions) && status.conditions.exists(c, c.type == 'Ready' && c.status == 'False' && c.reason == 'Failed')",
		Healthy:   "has(status.conditions) && status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
		Message:   "has(status.message) ? status.message : ''",
	}, {
		APIVersion: "example.com", Kind: "Cache", Healthy: "status.phase == 'Up'",
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		doc  string
		want health.Status
		msg  string
	}{
		{"apiVersion: example.com/v1\nkind: Database\nmetadata: {name: d}\nstatus:\n  message: all good\n  conditions: [{type: Ready, status: 'True'}]", health.Healthy, "all good"},
		{"apiVersion: example.com/v1\nkind: Database\nmetadata: {name: d}\nstatus:\n  conditions: [{type: Ready, status: 'False', reason: Failed}]", health.Degraded, ""},
		{"apiVersion: example.com/v1\nkind: Database\nmetadata: {name: d}\nspec: {paused: true}", health.Suspended, ""},
		{"apiVersion: example.com/v1\nkind: Database\nmetadata: {name: d}", health.Progressing, "no health rule matched"},
		{"apiVersion: example.com/v2\nkind: Cache\nmetadata: {name: c}\nstatus: {phase: Up}", health.Healthy, ""},
		// A field that is absent makes the expression fail: Unknown, saying why.
		{"apiVersion: example.com/v2\nkind: Cache\nmetadata: {name: c}", health.Unknown, "no such key"},
		// Kinds without a rule keep the built-in assessment.
		{"apiVersion: example.com/v1\nkind: Other\nmetadata: {name: o}", health.Healthy, ""},
	}
	for _, tt := range tests {
		got := c.Assess(obj(t, tt.doc))
		if got.Status != tt.want || !strings.Contains(got.Message, tt.msg) {
			t.Errorf("%s\ngot %s %q, want %s containing %q", tt.doc, got.Status, got.Message, tt.want, tt.msg)
		}
	}
	_, err = health.NewChecker([]health.Rule{{APIVersion: "x/v1", Kind: "Y", Healthy: "status.("}, {APIVersion: "x/v1", Kind: "Z", Healthy: "'a string'"}, {Kind: ""}})
	if err == nil || !strings.Contains(err.Error(), "healthRules[0].healthy") || !strings.Contains(err.Error(), "healthRules[1].healthy") || !strings.Contains(err.Error(), "healthRules[2].kind") {
		t.Errorf("bad rules: %v", err)
	}
}
