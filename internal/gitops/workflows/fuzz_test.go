package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
)

// FuzzDecodeWorkflow: a Workflow (submitted or synced from git by anyone who can commit) is
// either refused with an error naming a field, or validates — and then one operation over it
// (the entrypoint's tree with a fake cluster) ends without panicking, within the node bound,
// and every pod it asks for has the emissary as its command and is owned by the Workflow.
func FuzzDecodeWorkflow(f *testing.F) {
	for _, y := range []string{lintHead + `
  entrypoint: main
  arguments: {parameters: [{name: p, value: v}]}
  templates:
  - name: main
    dag:
      tasks:
      - {name: A, template: t, arguments: {parameters: [{name: x, value: "{{workflow.parameters.p}}"}]}}
      - {name: B, template: t, depends: "A.Succeeded || A.Failed", withItems: [1, 2], arguments: {parameters: [{name: x, value: "{{item}}"}]}}
      - {name: C, template: s, depends: "!B", when: "{{tasks.A.status}} == Succeeded"}
  - name: t
    inputs: {parameters: [{name: x}]}
    retryStrategy: {limit: 1}
    container: {image: x, command: [echo, "{{inputs.parameters.x}}"]}
  - name: s
    steps: [[{name: w, template: wait}], [{name: seq, template: t, withSequence: {count: "2"}, arguments: {parameters: [{name: x, value: "{{item}}"}]}}]]
  - name: wait
    suspend: {duration: "5s"}`} {
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(j)
	}
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","spec":{"entrypoint":"a","templates":[{"name":"a","dag":{"tasks":[{"name":"x","template":"a","depends":"((((x"}]}}]}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","spec":{"entrypoint":"a","templates":[{"name":"a","steps":[[{"name":"s","template":"a"}]]}]}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","spec":{"entrypoint":"a","arguments":{"parameters":[{"name":"n","value":"3"}]},"templates":[{"name":"a","steps":[[{"name":"g","template":"g"}],[{"name":"e","template":"e","withParam":"{{=toJson(filter(1..asInt(workflow.parameters.n), {# > 1}))}}","when":"{{=sprig.upper(steps.g.outputs.result) != 'X'}}","arguments":{"parameters":[{"name":"x","value":"{{=item}} {{workflow.outputs.parameters.v}}"}]}}]],"outputs":{"parameters":[{"name":"o","globalName":"o","valueFrom":{"expression":"steps.g.outputs.result ?? 'none'"}}]}},{"name":"g","retryStrategy":{"limit":2,"expression":"asInt(lastRetry.exitCode) > 1"},"outputs":{"parameters":[{"name":"v","globalName":"v","valueFrom":{"path":"/v"}}]},"container":{"image":"x","command":["x","{{lastRetry.status}}"]}},{"name":"e","inputs":{"parameters":[{"name":"x"}]},"container":{"image":"x","command":["echo","{{=jsonpath(inputs.parameters.x, '$.a')}}"]}}]}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","spec":{"entrypoint":"a","templates":[{"name":"a","steps":[[{"name":"c","template":"c"}],[{"name":"p","template":"p","arguments":{"parameters":[{"name":"n","value":"{{steps.c.outputs.parameters.n}}"}]}}]]},{"name":"c","resource":{"action":"create","setOwnerReference":true,"successCondition":"status.succeeded > 0","failureCondition":"status.phase in (Failed, Error)","manifest":"apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: j-}"},"outputs":{"parameters":[{"name":"n","valueFrom":{"jsonPath":"{.metadata.name}"}},{"name":"o","globalName":"o","valueFrom":{"jqFilter":".metadata | keys"}}]}},{"name":"p","inputs":{"parameters":[{"name":"n"}]},"activeDeadlineSeconds":5,"resource":{"action":"patch","mergeStrategy":"json","flags":["jobs.batch","{{inputs.parameters.n}}"],"manifest":"[{op: add, path: /metadata/labels/x, value: y}]"}}]}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","spec":{"entrypoint":"a","hooks":{"exit":{"template":"e"},"running":{"expression":"workflow.status == 'Running'","template":"e","arguments":{"parameters":[{"name":"m","value":"{{workflow.status}}"}]}}},"templates":[{"name":"a","steps":[[{"name":"s","template":"e","onExit":"e","hooks":{"r":{"expression":"steps.s.status == 'Pending'","template":"e","arguments":{"parameters":[{"name":"m","value":"{{steps.s.status}}"}]}}}}]]},{"name":"e","inputs":{"parameters":[{"name":"m","default":"d"}]},"container":{"image":"x","command":["echo","{{inputs.parameters.m}}"]}}]}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","spec":{"entrypoint":"a","synchronization":{"mutex":{"name":"m"},"semaphores":[{"configMapKeyRef":{"name":"c","key":"k"}}]},"volumes":[{"name":"v","emptyDir":{}}],"volumeClaimTemplates":[{"metadata":{"name":"w"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}],"volumeClaimGC":{"strategy":"OnWorkflowCompletion"},"templates":[{"name":"a","synchronization":{"mutexes":[{"name":"{{workflow.name}}"}]},"volumes":[{"name":"s","emptyDir":{}}],"container":{"image":"x","command":["x"],"volumeMounts":[{"name":"w","mountPath":"/w"},{"name":"v","mountPath":"/v"},{"name":"s","mountPath":"/s"}]}}]}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","spec":{"entrypoint":"a","templates":[{"name":"a","dag":{"tasks":[{"name":"f","template":"g"},{"name":"u","template":"u","depends":"f","arguments":{"artifacts":[{"name":"i","fromExpression":"tasks.f.outputs.exitCode == '0' ? tasks.f.outputs.artifacts.o : nil"}]}}]},"outputs":{"artifacts":[{"name":"c","fromExpression":"tasks['f'].outputs.artifacts.o"}]}},{"name":"g","outputs":{"artifacts":[{"name":"o","path":"/o"}]},"container":{"image":"x","command":["x"]}},{"name":"u","inputs":{"artifacts":[{"name":"i","path":"/i","optional":true}]},"container":{"image":"x","command":["x"]}}]}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","spec":{"entrypoint":"a","artifactGC":{"strategy":"OnWorkflowDeletion"},"templates":[{"name":"a","steps":[[{"name":"g","template":"g"}],[{"name":"u","template":"u","arguments":{"artifacts":[{"name":"i","from":"{{steps.g.outputs.artifacts.o}}"}]}}]]},{"name":"g","outputs":{"artifacts":[{"name":"o","path":"/o","archive":{"zip":{}},"globalName":"x"}]},"container":{"image":"x","command":["x"]}},{"name":"u","inputs":{"artifacts":[{"name":"i","path":"/i","mode":384},{"name":"r","path":"/r","raw":{"data":"d"}},{"name":"h","path":"/h","http":{"url":"https://h/x","headers":[{"name":"A","value":"b"}]}},{"name":"s","path":"/s","s3":{"endpoint":"e:9000","bucket":"bkt","key":"k","accessKeySecret":{"name":"n","key":"a"},"secretKeySecret":{"name":"n","key":"s"}}},{"name":"git","path":"/g","git":{"repo":"https://g/r.git","revision":"main","depth":1}}]},"container":{"image":"x","command":["x"]}}]}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"CronWorkflow","spec":{"schedules":["*/5 * * * *","CRON_TZ=Asia/Tokyo 0 3 * * 1-5"],"timezone":"","concurrencyPolicy":"Forbid","startingDeadlineSeconds":30,"workflowSpec":{"entrypoint":"a","templates":[{"name":"a","suspend":{}}]}}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"CronWorkflow","metadata":{"name":"c","labels":{"t":"a"}},"spec":{"schedule":"0 * * * *","stopStrategy":{"expression":"cronworkflow.succeeded + cronworkflow.failed >= 3 || cronworkflow.labels.t == 'b'"},"workflowSpec":{"entrypoint":"a","templates":[{"name":"a","suspend":{}}]}}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"CronWorkflow","metadata":{"name":"w"},"spec":{"schedule":"* * * * *","when":"{{= cronworkflow.lastScheduledTime == nil || (now() - cronworkflow.lastScheduledTime).Seconds() > 360 }} && {{= cronworkflow.failed < 3 }}","workflowSpec":{"entrypoint":"a","templates":[{"name":"a","suspend":{}}]}}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"CronWorkflow","spec":{"schedule":"* * * * *","when":"cronworkflow.labels.x > 1","workflowSpec":{"entrypoint":"a","templates":[{"name":"a","suspend":{}}]}}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"CronWorkflow","spec":{"schedule":"@every 90s","timezone":"Europe/Berlin","workflowSpec":{"entrypoint":"a","templates":[{"name":"a","suspend":{}}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tm := time.AfterFunc(10*time.Second, func() { panic("an input took 10 s: " + string(data)) })
		defer tm.Stop()
		fuzzCron(t, data)
		wf, err := Decode(data)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("error %v does not name a field", err)
			}
			return
		}
		if wf.Spec.WorkflowTemplateRef != nil {
			return
		}
		wf.Name, wf.Namespace, wf.UID = "fz", "ns", "u"
		fc := &fakeCluster{pods: map[string]*corev1.Pod{}, templates: map[string]*WorkflowSpec{}, repo: testRepo()}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		o := &operation{ctx: ctx, cl: fc, wf: wf, spec: &wf.Spec, nodes: map[string]*NodeStatus{}, pods: fc.pods,
			now: time.Unix(1e9, 0), globals: globalScope(wf, &wf.Spec), tmplSpecs: map[string]*WorkflowSpec{}}
		var st WorkflowStatus
		o.operate(&st)
		if len(o.nodes) > maxNodes+1 {
			t.Fatalf("%d nodes", len(o.nodes))
		}
		for _, p := range fc.pods {
			if c := p.Spec.Containers[0].Command; len(c) < 3 || c[0] != binPath || c[1] != "emissary" {
				t.Fatalf("pod %s runs %q, not under the emissary", p.Name, c)
			}
			if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Name != "fz" || len(p.Name) > 63 {
				t.Fatalf("pod %s: %+v", p.Name, p.OwnerReferences)
			}
			for _, e := range p.Spec.Containers[0].Env {
				switch {
				case e.Name == emissary.EnvArtifacts:
					var spec artifacts.Spec
					if err := json.Unmarshal([]byte(e.Value), &spec); err != nil || len(e.Value) > maxArtifactSpec {
						t.Fatalf("pod %s: artifacts spec of %d bytes: %v", p.Name, len(e.Value), err)
					}
				case strings.HasPrefix(e.Name, emissary.EnvSecretPrefix):
					if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						t.Fatalf("pod %s: %s is not a Secret reference", p.Name, e.Name)
					}
				}
			}
		}
	})
}

// fuzzCron: a CronWorkflow is refused with an error naming a field, or its schedules parse and
// the due-time arithmetic over a day of them ends.
func fuzzCron(t *testing.T, data []byte) {
	cw, err := DecodeCron(data)
	if err != nil {
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
			t.Fatalf("cron error %v does not name a field", err)
		}
		return
	}
	exprs, err := cronSchedules(&cw.Spec)
	if err != nil || len(exprs) == 0 {
		t.Fatalf("decoded cron workflow has no schedule: %v", err)
	}
	now := time.Unix(1e9, 0)
	if d := latestDue(exprs, now.Add(-24*time.Hour), now); !d.IsZero() && (d.After(now) || d.Before(now.Add(-24*time.Hour))) {
		t.Fatalf("due %v outside the window", d)
	}
	if n := nextDue(exprs, now); !n.IsZero() && !n.After(now) {
		t.Fatalf("next %v not after now", n)
	}
	if name := cronWorkflowName(cw.Name, now); len(name) > 63 {
		t.Fatalf("workflow name %q longer than 63", name)
	}
	if cw.Spec.StopStrategy != nil {
		for _, n := range []int64{0, 1, 1 << 40} {
			if _, err := stopHolds(cw, n, n, &now); err != nil && errdefs.Field(err) != fieldStopExpression {
				t.Fatalf("stop expression error %v does not name its field", err)
			}
		}
	}
	for _, n := range []int64{0, 1, 1 << 40} {
		for _, last := range []*time.Time{nil, &now} {
			if _, err := whenHolds(cw, n, n, last); err != nil && errdefs.Field(err) != fieldWhen {
				t.Fatalf("when error %v does not name its field", err)
			}
		}
	}
	if s := cronScheduleString(&cw.Spec); s == "" {
		t.Fatal("a decoded cron workflow has no last-used-schedule string")
	}
}

// FuzzDecodeArtifactRepository: an artifact repository (a key of a ConfigMap anyone who may
// write ConfigMaps in the namespace sets) is refused with an error naming a field, or has a
// bucket and an endpoint, and its keyFormat renders a relative key for any node.
func FuzzDecodeArtifactRepository(f *testing.F) {
	for _, s := range []string{
		"s3:\n  bucket: arts\n  endpoint: minio:9000\n  insecure: true\n  accessKeySecret: {name: s3, key: ak}\n  secretKeySecret: {name: s3, key: sk}\n  keyFormat: \"{{workflow.creationTimestamp.Y}}/{{workflow.name}}/{{pod.name}}\"\n",
		`{"s3":{"bucket":"b","endpoint":"e","keyPrefix":"p"}}`,
		"gcs: {bucket: b}", "s3: {bucket: b}", "archiveLogs: true\ns3: {bucket: b, endpoint: e}", "s3: {bucket: b, endpoint: e, keyFormat: \"{{inputs.parameters.x}}\"}", "[]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		r, err := DecodeArtifactRepository(data, "cm")
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("error %v does not name a field", err)
			}
			return
		}
		if r.S3 == nil || r.S3.Bucket == "" || r.S3.Endpoint == "" {
			t.Fatalf("accepted %+v", r)
		}
		wf := &Workflow{}
		wf.Name, wf.Namespace = "wf", "ns"
		o := &operation{wf: wf, globals: globalScope(wf, &wf.Spec)}
		key, err := o.renderKey(r.S3, &NodeStatus{ID: "wf-1", Name: "wf[0].a"})
		if err == nil && (strings.HasPrefix(key, "/") || strings.Contains(key, "..") && strings.Contains("/"+key+"/", "/../")) {
			t.Fatalf("key %q", key)
		}
	})
}

// FuzzHoldsFromStatus: a Workflow's status.synchronization (which anyone who may update the
// Workflow can write) is read back at a controller's start to rebuild the locks. Only holds of
// that Workflow come back — never another's — with lock keys that parse back to themselves,
// at most maxNodes of them, each once.
func FuzzHoldsFromStatus(f *testing.F) {
	f.Add([]byte(`{"mutex":{"holding":[{"mutex":"ns/Mutex/m","holder":"ns/wf"}]},"semaphore":{"holding":[{"semaphore":"ns/ConfigMap/c/k","holders":["ns/wf/wf-1","ns/other"]}]}}`))
	f.Add([]byte(`{"mutex":{"holding":[{"mutex":"ns/Mutex/","holder":"ns/wf/"},{"mutex":"a/Mutex/b/c","holder":"ns/wfx"}]}}`))
	f.Add([]byte(`{"semaphore":{"holding":[{"semaphore":"//","holders":["ns/wf/a/b"]}],"waiting":[{"semaphore":"x","holders":["ns/wf"]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var st SynchronizationStatus
		if json.Unmarshal(data, &st) != nil {
			return
		}
		holds := holdsFromStatus("ns", "wf", &st)
		if len(holds) > maxNodes {
			t.Fatalf("%d holds", len(holds))
		}
		m := newLockManager(nil, nil, time.Now)
		seen := map[hold]bool{}
		for _, h := range holds {
			if seen[h] {
				t.Fatalf("hold %v twice", h)
			}
			seen[h] = true
			if h.holder != "ns/wf" && (!strings.HasPrefix(h.holder, "ns/wf/") || strings.Count(h.holder, "/") != 2 || h.holder == "ns/wf/") {
				t.Fatalf("holder %q is not the workflow's", h.holder)
			}
			r, ok := parseLockKey(h.lock)
			if !ok || r.key != h.lock {
				t.Fatalf("lock key %q", h.lock)
			}
			m.reacquire(h)
		}
		if got := m.holdsOf("ns/wf"); len(got) != len(holds) {
			t.Fatalf("rebuilt %d holds of %d", len(got), len(holds))
		}
		m.commit("ns/wf", nil, nil, true)
		if len(m.locks) != 0 {
			t.Fatalf("locks left after release: %d", len(m.locks))
		}
	})
}

// FuzzExpressionTags: the tag scanner and the expression evaluator over any text (a workflow's
// field) and any output value. Nothing panics or runs long; what comes out is bounded by the
// tags' result bound; and a value is data: a tag naming it gives exactly the value, whatever
// tags or operators it holds. The lint check of every tag ends too.
func FuzzExpressionTags(f *testing.F) {
	for _, s := range []string{
		"{{=asInt(inputs.parameters['my-param']) + 1}}",
		"a {{=sprig.trim(inputs.parameters.name)}} {{workflow.name}} {{=item.k}}",
		"{{=jsonpath(inputs.parameters.doc, '$..name')}}",
		"{{=toJson(filter(1..10, {# > 1}))}}",
		"{{=reduce(1..30, #acc + #acc, 'x')}}",
		"{{=steps.a.outputs.result ?? 'fb'}}{{=let x = 1; x + 1}}",
		"{{={{=1}}}} {{ {{=}} }}",
	} {
		f.Add(s, `{{=workflow.name}}' + 'x`)
	}
	f.Fuzz(func(t *testing.T, s, value string) {
		tm := time.AfterFunc(10*time.Second, func() { panic("an input took 10 s: " + s) })
		defer tm.Stop()
		sc := exprScope()
		sc["steps.a.outputs.result"] = value
		out, err := sc.expand("f", s, leafStrict)
		if err == nil {
			if limit := len(s) + len(findTags(s))*(maxExprResult+len(value)+len(sc["inputs.parameters.doc"])); len(out) > limit {
				t.Fatalf("%d bytes out of %q", len(out), s)
			}
		}
		for _, tg := range findTags(s) {
			if body, ok := strings.CutPrefix(tg.name, "="); ok {
				_ = checkExprTag(body, func(string) error { return nil })
			}
		}
		got, err := sc.expand("f", "{{=steps.a.outputs.result}}", leafStrict)
		if len(value) <= maxExprResult && (err != nil || got != value) {
			t.Fatalf("the value %q came out as %q, %v", value, got, err)
		}
		if got, _ := sc.expand("f", "{{steps.a.outputs.result}}", leafStrict); got != value {
			t.Fatalf("the value %q came out as %q", value, got)
		}
	})
}
