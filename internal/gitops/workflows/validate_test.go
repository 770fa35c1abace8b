package workflows

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func decodeYAML(t *testing.T, y string) (*Workflow, error) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return Decode(j)
}

const lintHead = `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: w}
spec:
`

// TestLint: what `argo lint` refuses is refused, naming the field, the value and what is valid.
func TestLint(t *testing.T) {
	for _, tc := range []struct {
		name, spec, field, reason string
	}{
		{"unknown entrypoint", `
  entrypoint: nope
  templates: [{name: a, container: {image: x, command: [x]}}]`, "spec.entrypoint", `"nope" is not a template of this workflow (templates: a)`},
		{"unknown template in steps", `
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: s, template: missing}]]`, "spec.templates[0].steps[0][0].template", `"missing" is not a template`},
		{"bad podGC strategy", `
  entrypoint: a
  podGC: {strategy: Always}
  templates: [{name: a, container: {image: x, command: [x]}}]`, "spec.podGC.strategy", `"Always" must be OnPodCompletion, OnPodSuccess, OnWorkflowCompletion or OnWorkflowSuccess`},
		{"bad podGC label selector", `
  entrypoint: a
  podGC: {strategy: OnPodCompletion, labelSelector: {matchExpressions: [{key: gc, operator: Near}]}}
  templates: [{name: a, container: {image: x, command: [x]}}]`, "spec.podGC.labelSelector", `is not a label selector: "Near" is not a valid label selector operator`},
		{"bad podGC delay", `
  entrypoint: a
  podGC: {strategy: OnPodCompletion, deleteDelayDuration: soon}
  templates: [{name: a, container: {image: x, command: [x]}}]`, "spec.podGC.deleteDelayDuration", `"soon" is not a duration`},
		{"negative ttl", `
  entrypoint: a
  ttlStrategy: {secondsAfterFailure: -1}
  templates: [{name: a, container: {image: x, command: [x]}}]`, "spec.ttlStrategy.secondsAfterFailure", `"-1" must be 0 or more seconds`},
		{"bad timeout", `
  entrypoint: a
  templates: [{name: a, timeout: soon, container: {image: x, command: [x]}}]`, "spec.templates[0].timeout", `"soon" is not a duration`},
		{"timeout on steps", `
  entrypoint: a
  templates: [{name: a, timeout: 1m, steps: [[{name: b, template: b}]]}, {name: b, container: {image: x, command: [x]}}]`, "spec.templates[0].timeout", "applies to container, script and resource templates only"},
		{"cyclic DAG", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: A, template: t, depends: C}
      - {name: B, template: t, dependencies: [A]}
      - {name: C, template: t, depends: "B.Succeeded"}
  - {name: t, container: {image: x, command: [x]}}`, "spec.templates[0].dag.tasks", `"A -> C -> B -> A" is a dependency cycle`},
		{"bad depends", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: A, template: t}
      - {name: B, template: t, depends: "A.Succeeded &&"}
  - {name: t, container: {image: x, command: [x]}}`, "spec.templates[0].dag.tasks[1].depends", "ends where a task name was expected"},
		{"depends on a bad result", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: A, template: t}
      - {name: B, template: t, depends: "A.Done"}
  - {name: t, container: {image: x, command: [x]}}`, "spec.templates[0].dag.tasks[1].depends", `names the result "Done"`},
		{"depends on an unknown task", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: B, template: t, depends: "A || B2"}
  - {name: t, container: {image: x, command: [x]}}`, "spec.templates[0].dag.tasks[0].depends", `"A" is not a task of this DAG`},
		{"unknown input parameter", `
  entrypoint: main
  templates:
  - name: main
    inputs: {parameters: [{name: a, value: "1"}]}
    container: {image: x, command: [echo, "{{inputs.parameters.b}}"]}`, "spec.templates[0].container.command[1]", "inputs.parameters do not declare"},
		{"unknown workflow parameter", `
  entrypoint: main
  templates:
  - name: main
    container: {image: x, command: [echo, "{{workflow.parameters.p}}"]}`, "spec.templates[0].container.command[1]", "spec.arguments.parameters does not declare"},
		{"step output of a later step", `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: a, template: t, arguments: {parameters: [{name: x, value: "{{steps.b.outputs.result}}"}]}}
    - - {name: b, template: t, arguments: {parameters: [{name: x, value: "1"}]}}
  - name: t
    inputs: {parameters: [{name: x}]}
    script: {image: x, command: [sh], source: "echo"}`, "spec.templates[0].steps[0][0].arguments.parameters[0].value", `names "b", which is not a step of an earlier step group`},
		{"undeclared output parameter", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, template: t}
      - {name: b, template: u, depends: a, arguments: {parameters: [{name: x, value: "{{tasks.a.outputs.parameters.nope}}"}]}}
  - {name: t, container: {image: x, command: [x]}}
  - name: u
    inputs: {parameters: [{name: x}]}
    container: {image: x, command: [x]}`, "spec.templates[0].dag.tasks[1].arguments.parameters[0].value", `template "t" does not declare`},
		{"task output of a task not depended on", `
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, template: t}
      - {name: b, template: u, arguments: {parameters: [{name: x, value: "{{tasks.a.outputs.result}}"}]}}
  - {name: t, container: {image: x, command: [x]}}
  - name: u
    inputs: {parameters: [{name: x}]}
    container: {image: x, command: [x]}`, "spec.templates[0].dag.tasks[1].arguments.parameters[0].value", "not a task this task depends on"},
		{"missing argument", `
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: s, template: t}]]
  - name: t
    inputs: {parameters: [{name: msg}]}
    container: {image: x, command: [echo, "{{inputs.parameters.msg}}"]}`, "spec.templates[0].steps[0][0].arguments.parameters", `"msg" is an input parameter of template "t" without a default`},
		{"item without items", `
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: s, template: t, arguments: {parameters: [{name: x, value: "{{item}}"}]}}]]
  - name: t
    inputs: {parameters: [{name: x}]}
    container: {image: x, command: [x]}`, "spec.templates[0].steps[0][0].arguments.parameters[0].value", "no withItems"},
		{"bad when", `
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: s, template: t, when: "{{workflow.name}} == =="}]]
  - {name: t, container: {image: x, command: [x]}}`, "spec.templates[0].steps[0][0].when", "does not parse"},
		{"two kinds", `
  entrypoint: main
  templates:
  - {name: main, container: {image: x, command: [x]}, suspend: {}}`, "spec.templates[0]", `"container, suspend" must be exactly one template kind`},
		{"bad retry policy", `
  entrypoint: main
  templates:
  - {name: main, retryStrategy: {retryPolicy: Sometimes}, container: {image: x, command: [x]}}`, "spec.templates[0].retryStrategy.retryPolicy", "must be Always, OnFailure, OnError or OnTransientError"},
		{"no image", `
  entrypoint: main
  templates:
  - {name: main, container: {args: [x]}}`, "spec.templates[0].container.image", "is required"},
		{"artifact fromExpression that does not parse", `
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: b, arguments: {artifacts: [{name: x, fromExpression: "steps.a.outputs.artifacts.x ? :"}]}}]]
  - {name: b, inputs: {artifacts: [{name: x, path: /x}]}, container: {image: x, command: [x]}}`, "spec.templates[0].steps[0][0].arguments.artifacts[0].fromExpression", "does not parse"},
		{"artifact fromExpression on a container's output", `
  entrypoint: main
  templates:
  - {name: main, outputs: {artifacts: [{name: a, path: /a, fromExpression: "x"}]}, container: {image: x, command: [x]}}`, "spec.templates[0].outputs.artifacts[0].fromExpression", "is for arguments"},
		{"gcs artifacts refused", `
  entrypoint: main
  templates:
  - {name: main, inputs: {artifacts: [{name: a, path: /a, gcs: {bucket: b, key: k}}]}, container: {image: x, command: [x]}}`, "spec.templates[0].inputs.artifacts[0].gcs", "is not supported yet"},
		{"output artifact without a path", `
  entrypoint: main
  templates:
  - {name: main, outputs: {artifacts: [{name: a}]}, container: {image: x, command: [x]}}`, "spec.templates[0].outputs.artifacts[0].path", "is required"},
		{"output artifact to git", `
  entrypoint: main
  templates:
  - {name: main, outputs: {artifacts: [{name: a, path: /a, git: {repo: "https://example.com/r.git"}}]}, container: {image: x, command: [x]}}`, "spec.templates[0].outputs.artifacts[0]", "is an input location"},
		{"two artifact locations", `
  entrypoint: main
  templates:
  - {name: main, inputs: {artifacts: [{name: a, path: /a, raw: {data: x}, http: {url: "https://example.com/x"}}]}, container: {image: x, command: [x]}}`, "spec.templates[0].inputs.artifacts[0]", "at most one location"},
		{"http artifact URL", `
  entrypoint: main
  templates:
  - {name: main, inputs: {artifacts: [{name: a, path: /a, http: {url: "ftp://example.com/x"}}]}, container: {image: x, command: [x]}}`, "spec.templates[0].inputs.artifacts[0].http.url", "http or https URL"},
		{"missing input artifact", `
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: b}]]
  - {name: b, inputs: {artifacts: [{name: x, path: /x}]}, container: {image: x, command: [x]}}`, "spec.templates[0].steps[0][0].arguments.artifacts", "must be given"},
		{"undeclared output artifact", `
  entrypoint: main
  templates:
  - name: main
    steps:
    - [{name: a, template: b}]
    - [{name: c, template: c, arguments: {artifacts: [{name: x, from: "{{steps.a.outputs.artifacts.nope}}"}]}}]
  - {name: b, outputs: {artifacts: [{name: out, path: /o}]}, container: {image: x, command: [x]}}
  - {name: c, inputs: {artifacts: [{name: x, path: /x}]}, container: {image: x, command: [x]}}`, "spec.templates[0].steps[1][0].arguments.artifacts[0].from", "does not declare"},
		{"two archive strategies", `
  entrypoint: main
  templates:
  - {name: main, outputs: {artifacts: [{name: a, path: /a, archive: {none: {}, zip: {}}}]}, container: {image: x, command: [x]}}`, "spec.templates[0].outputs.artifacts[0].archive", "one of tar, none, zip"},
		{"artifactGC strategy", `
  entrypoint: main
  artifactGC: {strategy: Sometimes}
  templates:
  - {name: main, container: {image: x, command: [x]}}`, "spec.artifactGC.strategy", "OnWorkflowCompletion"},
		{"s3 endpoint with a scheme", `
  entrypoint: main
  templates:
  - {name: main, inputs: {artifacts: [{name: a, path: /a, s3: {endpoint: "https://s3", bucket: b, key: k}}]}, container: {image: x, command: [x]}}`, "spec.templates[0].inputs.artifacts[0].s3.endpoint", "no scheme"},
		{"claim template without access modes", `
  entrypoint: main
  volumeClaimTemplates: [{metadata: {name: w}}]
  templates:
  - {name: main, container: {image: x, command: [x]}}`, "spec.volumeClaimTemplates[0].spec.accessModes", "is required"},
		{"mount of an unknown volume", `
  entrypoint: main
  volumes: [{name: cfg, configMap: {name: c}}]
  volumeClaimTemplates: [{metadata: {name: work}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]
  templates:
  - {name: main, container: {image: x, command: [x], volumeMounts: [{name: cfg, mountPath: /c}, {name: wrok, mountPath: /w}]}}`, "spec.templates[0].container.volumeMounts[1].name", "is not a volume of this template"},
		{"script mount of an unknown volume", `
  entrypoint: main
  templates:
  - {name: main, volumes: [{name: a, emptyDir: {}}], script: {image: x, command: [sh], source: "true", volumeMounts: [{name: b, mountPath: /b}]}}`, "spec.templates[0].script.volumeMounts[0].name", "is not a volume"},
		{"volume named twice", `
  entrypoint: main
  volumes: [{name: w, emptyDir: {}}]
  volumeClaimTemplates: [{metadata: {name: w}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]
  templates:
  - {name: main, container: {image: x, command: [x]}}`, "spec.volumeClaimTemplates[0].metadata.name", "another volume"},
		{"mount over the emissary", `
  entrypoint: main
  volumes: [{name: w, emptyDir: {}}]
  templates:
  - {name: main, container: {image: x, command: [x], volumeMounts: [{name: w, mountPath: /var/run}]}}`, "spec.templates[0].container.volumeMounts[0].mountPath", "emissary"},
		{"volume claim GC strategy", `
  entrypoint: main
  volumeClaimGC: {strategy: Never}
  templates:
  - {name: main, container: {image: x, command: [x]}}`, "spec.volumeClaimGC.strategy", "OnWorkflowCompletion or OnWorkflowSuccess"},
		{"empty synchronization", `
  entrypoint: main
  synchronization: {}
  templates:
  - {name: main, container: {image: x, command: [x]}}`, "spec.synchronization", "names no mutex or semaphore"},
		{"mutex name", `
  entrypoint: main
  templates:
  - {name: main, synchronization: {mutex: {name: "a/b"}}, container: {image: x, command: [x]}}`, "spec.templates[0].synchronization.mutex.name", "the mutex's name"},
		{"semaphore without a ConfigMap", `
  entrypoint: main
  synchronization: {semaphores: [{namespace: ns}]}
  templates:
  - {name: main, container: {image: x, command: [x]}}`, "spec.synchronization.semaphores[0].configMapKeyRef", "is required"},
		{"database locks refused", `
  entrypoint: main
  synchronization: {mutexes: [{name: m, database: true}]}
  templates:
  - {name: main, container: {image: x, command: [x]}}`, "spec.synchronization.mutexes[0].database", "is not supported yet"},
		{"expression tag does not parse", `
  entrypoint: main
  templates:
  - {name: main, container: {image: x, command: [echo, "{{=sprig.upper('x'}}"]}}`, "spec.templates[0].container.command[1]", "does not parse as an expression"},
		{"expression tag unknown sprig function", `
  entrypoint: main
  templates:
  - {name: main, container: {image: x, command: [echo, "{{=sprig.env('HOME')}}"]}}`, "spec.templates[0].container.command[1]", "sprig.env, which is not a function Freshet provides"},
		{"expression tag undeclared input", `
  entrypoint: main
  templates:
  - {name: main, inputs: {parameters: [{name: my-p, value: "1"}]}, container: {image: x, command: [echo, "{{=asInt(inputs.parameters['my-q']) + 1}}"]}}`, "spec.templates[0].container.command[1]", "names a parameter that the template's inputs.parameters do not declare"},
		{"expression tag step not visible", `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: a, template: t, arguments: {parameters: [{name: x, value: "{{=steps.b.outputs.result}}"}]}}
    - - {name: b, template: t, arguments: {parameters: [{name: x, value: "1"}]}}
  - {name: t, inputs: {parameters: [{name: x}]}, script: {image: x, command: [sh], source: "echo"}}`, "spec.templates[0].steps[0][0].arguments.parameters[0].value", "not a step of an earlier step group"},
		{"output expression on a container", `
  entrypoint: main
  templates:
  - {name: main, outputs: {parameters: [{name: o, valueFrom: {expression: "1"}}]}, container: {image: x, command: [x]}}`, "spec.templates[0].outputs.parameters[0].valueFrom.expression", "is for steps and dag templates only"},
		{"output expression bad", `
  entrypoint: main
  templates:
  - name: main
    outputs: {parameters: [{name: o, valueFrom: {expression: "tasks.nope.outputs.result"}}]}
    dag: {tasks: [{name: a, template: t}]}
  - {name: t, script: {image: x, command: [sh], source: "echo"}}`, "spec.templates[0].outputs.parameters[0].valueFrom.expression", "not a task this task depends on"},
		{"retry expression bad variable", `
  entrypoint: main
  templates:
  - {name: main, retryStrategy: {expression: "inputs.parameters.x == '1'"}, container: {image: x, command: [x]}}`, "spec.templates[0].retryStrategy.expression", "a retry expression sees retries and lastRetry"},
		{"retry expression does not parse", `
  entrypoint: main
  templates:
  - {name: main, retryStrategy: {expression: "asInt(lastRetry.exitCode) >"}, container: {image: x, command: [x]}}`, "spec.templates[0].retryStrategy.expression", "does not parse"},
		{"bad globalName", `
  entrypoint: main
  templates:
  - {name: main, outputs: {parameters: [{name: o, globalName: "a b", valueFrom: {path: /o}}]}, container: {image: x, command: [x]}}`, "spec.templates[0].outputs.parameters[0].globalName", "must be 1-128 letters"},
		{"resource action unknown", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: update, manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].resource.action", "must be one of get, create, apply, delete, patch, replace"},
		{"resource successCondition does not parse", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: create, successCondition: "status.phase in (Failed", manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].resource.successCondition", "is not a condition"},
		{"resource failureCondition bad operator", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: create, failureCondition: "status.phase ~ x", manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].resource.failureCondition", "e.g. \"status.succeeded > 0\""},
		{"resource condition on delete", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: delete, successCondition: "a=b", manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].resource.successCondition", "not supported for the delete action"},
		{"resource mergeStrategy unknown", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: patch, mergeStrategy: yaml, manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].resource.mergeStrategy", "must be strategic, merge or json"},
		{"resource mergeStrategy not a patch", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: create, mergeStrategy: merge, manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].resource.mergeStrategy", "is for the patch action only"},
		{"resource json patch not a list", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: patch, mergeStrategy: json, flags: [configmap, x], manifest: "data: {a: b}"}}`, "spec.templates[0].resource.manifest", "must be a list of JSON patch operations"},
		{"resource json patch bad op", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: patch, mergeStrategy: json, flags: [configmap, x], manifest: "[{op: frob, path: /data}]"}}`, "spec.templates[0].resource.manifest", "operation 0 must have op"},
		{"resource json patch without target", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: patch, mergeStrategy: json, manifest: "[{op: remove, path: /data}]"}}`, "spec.templates[0].resource.flags", "are required for a json patch"},
		{"resource merge patch a list", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: patch, mergeStrategy: merge, flags: [configmap/x], manifest: "[{op: remove, path: /data}]"}}`, "spec.templates[0].resource.manifest", "must be one object for mergeStrategy merge"},
		{"resource flags other", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: get, flags: [configmap, x, --output=yaml]}}`, "spec.templates[0].resource.flags", "TYPE NAME or TYPE/NAME"},
		{"resource flags on create", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: create, flags: [--validate=false], manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].resource.flags", "not supported for the create action"},
		{"resource flags and manifest on get", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: get, flags: [configmap, x], manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].resource.flags", "not both"},
		{"resource no manifest", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: create}}`, "spec.templates[0].resource.manifest", "is required"},
		{"resource get generateName", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: get, manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}"}}`, "spec.templates[0].resource.manifest", "must have metadata.name for the get action"},
		{"resource manifestFrom unknown artifact", `
  entrypoint: main
  templates:
  - {name: main, inputs: {artifacts: [{name: cm, raw: {data: x}}]}, resource: {action: create, manifestFrom: {artifact: {name: m}}}}`, "spec.templates[0].resource.manifestFrom.artifact.name", "must name one of the template's input artifacts (cm)"},
		{"resource manifestFrom no inputs", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: create, manifestFrom: {artifact: {name: m}}}}`, "spec.templates[0].resource.manifestFrom.artifact.name", "it has none: declare it in inputs.artifacts"},
		{"resource manifestFrom no name", `
  entrypoint: main
  templates:
  - {name: main, inputs: {artifacts: [{name: m, raw: {data: x}}]}, resource: {action: apply, manifestFrom: {artifact: {}}}}`, "spec.templates[0].resource.manifestFrom.artifact.name", "is required"},
		{"resource manifest and manifestFrom", `
  entrypoint: main
  templates:
  - {name: main, inputs: {artifacts: [{name: m, raw: {data: x}}]}, resource: {action: create, manifestFrom: {artifact: {name: m}}, manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].resource.manifestFrom", "cannot be given with manifest"},
		{"resource manifestFrom and flags on get", `
  entrypoint: main
  templates:
  - {name: main, inputs: {artifacts: [{name: m, raw: {data: x}}]}, resource: {action: get, flags: [configmap, x], manifestFrom: {artifact: {name: m}}}}`, "spec.templates[0].resource.flags", "not both"},
		{"jsonPath bad", `
  entrypoint: main
  templates:
  - {name: main, outputs: {parameters: [{name: o, valueFrom: {jsonPath: "{.metadata.name"}}]}, resource: {action: get, manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].outputs.parameters[0].valueFrom.jsonPath", "is not a JSONPath template"},
		{"jqFilter bad", `
  entrypoint: main
  templates:
  - {name: main, outputs: {parameters: [{name: o, valueFrom: {jqFilter: ".data | "}}]}, resource: {action: get, manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].outputs.parameters[0].valueFrom.jqFilter", "is not a jq filter"},
		{"jqFilter and jsonPath", `
  entrypoint: main
  templates:
  - {name: main, outputs: {parameters: [{name: o, valueFrom: {jqFilter: ".data", jsonPath: "{.data}"}}]}, resource: {action: get, manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].outputs.parameters[0].valueFrom.jqFilter", "cannot be given with valueFrom.jsonPath"},
		{"jsonPath on a container", `
  entrypoint: main
  templates:
  - {name: main, outputs: {parameters: [{name: o, valueFrom: {jsonPath: "{.a}"}}]}, container: {image: x, command: [x]}}`, "spec.templates[0].outputs.parameters[0].valueFrom.jsonPath", "is for resource templates only"},
		{"jsonPath on delete", `
  entrypoint: main
  templates:
  - {name: main, outputs: {parameters: [{name: o, valueFrom: {jsonPath: "{.a}"}}]}, resource: {action: delete, manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].outputs.parameters[0].valueFrom.jsonPath", "not supported for the delete action"},
		{"jqFilter on an input", `
  entrypoint: main
  templates:
  - {name: main, inputs: {parameters: [{name: i, valueFrom: {jqFilter: ".a"}}]}, resource: {action: get, manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"}}`, "spec.templates[0].inputs.parameters[0].valueFrom", "for the output parameters of resource templates only"},
		{"resource manifest", `
  entrypoint: main
  templates:
  - {name: main, resource: {action: create, manifest: "kind: Pod"}}`, "spec.templates[0].resource.manifest", "must have apiVersion and kind"},
		{"bad suspend duration", `
  entrypoint: main
  templates:
  - {name: main, suspend: {duration: soon}}`, "spec.templates[0].suspend.duration", "is not a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf, err := decodeYAML(t, lintHead+tc.spec)
			if wf == nil || err == nil {
				t.Fatalf("got %v, want an error", err)
			}
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("%v is not a field error", err)
			}
			if fe.Field != tc.field || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("got\n  %s\nwant field %s and %q", err, tc.field, tc.reason)
			}
		})
	}
}

func TestLintAcceptsArgoExamples(t *testing.T) {
	for name, y := range map[string]string{
		"k8s-jobs (resource conditions and outputs)": `
  entrypoint: rand-num
  templates:
  - name: rand-num
    resource:
      action: create
      successCondition: status.succeeded > 2
      failureCondition: status.failed > 1
      setOwnerReference: true
      manifest: |
        apiVersion: batch/v1
        kind: Job
        metadata:
          generateName: rand-num-
        spec:
          completions: 3
          template:
            spec:
              containers: [{name: rand, image: python:alpine3.23, command: [python, -c, "print(1)"]}]
              restartPolicy: Never
    outputs:
      parameters:
      - {name: job-name, valueFrom: {jsonPath: '{.metadata.name}'}}
      - {name: job-obj, valueFrom: {jqFilter: '.'}}`,
		"manifestFrom (resource from an input artifact)": `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: make
        template: make
        arguments:
          artifacts:
          - name: manifest
            raw:
              data: |
                apiVersion: v1
                kind: ConfigMap
                metadata: {name: from-artifact}
  - name: make
    inputs:
      artifacts:
      - name: manifest
    resource:
      action: apply
      manifestFrom:
        artifact:
          name: manifest`,
		"k8s-wait-wf": `
  entrypoint: k8s-wait-wf
  templates:
  - name: k8s-wait-wf
    steps:
    - - {name: create-wf, template: create-wf}
    - - name: wait-wf
        template: wait-wf
        arguments: {parameters: [{name: wf-name, value: '{{steps.create-wf.outputs.parameters.wf-name}}'}]}
  - name: create-wf
    resource:
      action: create
      manifest: |
        apiVersion: argoproj.io/v1alpha1
        kind: Workflow
        metadata:
          generateName: sleep-
        spec:
          entrypoint: sleep
          templates:
          - name: sleep
            container: {image: alpine:3.23, command: [sleep, "20"]}
    outputs:
      parameters:
      - {name: wf-name, valueFrom: {jsonPath: '{.metadata.name}'}}
  - name: wait-wf
    inputs: {parameters: [{name: wf-name}]}
    resource:
      action: get
      successCondition: status.phase == Succeeded
      failureCondition: status.phase in (Failed, Error)
      manifest: |
        apiVersion: argoproj.io/v1alpha1
        kind: Workflow
        metadata:
          name: {{inputs.parameters.wf-name}}`,
		"k8s-patch-json-pod, k8s-patch-merge-pod, k8s-patch-pod": `
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: json, template: json}, {name: merge, template: merge}, {name: strategic, template: strategic}]]
  - name: json
    resource:
      action: patch
      mergeStrategy: json
      flags: [pod, "{{pod.name}}"]
      manifest: |
        - op: add
          path: /metadata/annotations/foo
          value: bar
  - name: merge
    resource:
      action: patch
      mergeStrategy: merge
      flags: [pod, "{{pod.name}}"]
      manifest: |
        metadata:
          annotations:
            foo: bar
  - name: strategic
    resource:
      action: patch
      manifest: |
        apiVersion: v1
        kind: Pod
        metadata:
          name: {{pod.name}}
          annotations:
            foo: bar`,
		"resource-delete-with-flags": `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: delete-resource, template: delete-resource, arguments: {parameters: [{name: selector, value: cleanup=true}]}}
  - name: delete-resource
    inputs: {parameters: [{name: selector}]}
    resource:
      action: delete
      flags: [configmap, --selector, "{{inputs.parameters.selector}}"]`,
		"coinflip": `
  entrypoint: coinflip
  templates:
  - name: coinflip
    steps:
    - - name: flip-coin
        template: flip-coin
    - - name: heads
        template: heads
        when: "{{steps.flip-coin.outputs.result}} == heads"
      - name: tails
        template: tails
        when: "{{steps.flip-coin.outputs.result}} == tails"
  - name: flip-coin
    script:
      image: python:alpine3.6
      command: [python]
      source: |
        import random
        result = "heads" if random.randint(0,1) == 0 else "tails"
        print(result)
  - name: heads
    container: {image: alpine:3.6, command: [sh, -c], args: ["echo \"it was heads\""]}
  - name: tails
    container: {image: alpine:3.6, command: [sh, -c], args: ["echo \"it was tails\""]}`,
		"dag-diamond with exit handler": `
  entrypoint: diamond
  onExit: exit-handler
  arguments: {parameters: [{name: message, value: hi}]}
  templates:
  - name: echo
    inputs: {parameters: [{name: message}]}
    container: {image: alpine:3.7, command: [echo, "{{inputs.parameters.message}}"]}
  - name: diamond
    dag:
      tasks:
      - {name: A, template: echo, arguments: {parameters: [{name: message, value: "{{workflow.parameters.message}}"}]}}
      - {name: B, depends: "A", template: echo, arguments: {parameters: [{name: message, value: B}]}}
      - {name: C, depends: "A", template: echo, arguments: {parameters: [{name: message, value: C}]}}
      - {name: D, depends: "B && C", template: echo, arguments: {parameters: [{name: message, value: D}]}}
  - name: exit-handler
    container: {image: alpine:3.6, command: [sh, -c], args: ["echo {{workflow.status}} {{workflow.failures}}"]}`,
		"templateRef and loops": `
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: lib
        templateRef: {name: lib, template: hello}
        withItems: [{os: linux}, {os: windows}]
        arguments: {parameters: [{name: os, value: "{{item.os}}"}]}
    - - name: seq
        template: print
        withSequence: {count: "3"}
        arguments: {parameters: [{name: num, value: "{{item}}"}]}
  - name: print
    inputs: {parameters: [{name: num}]}
    retryStrategy: {limit: "2", retryPolicy: Always, backoff: {duration: "1s", factor: "2", maxDuration: "1m"}}
    container: {image: x, command: [echo, "{{inputs.parameters.num}} {{retries}} {{pod.name}}"]}`,
		"expression tags (Argo's expression-tag-template-workflow)": `
  entrypoint: main
  templates:
    - name: main
      dag:
        tasks:
          - name: task-0
            template: pod-0
            arguments: {parameters: [{name: foo, value: "{{=item}}"}]}
            withParam: "{{=toJson(filter([1, 3], {# > 1}))}}"
    - name: pod-0
      inputs: {parameters: [{name: foo}]}
      container:
        image: argoproj/argosay:v2
        command: [/argosay]
        args: [echo, "hello {{=asInt(inputs.parameters.foo) * 10}} @ {{=sprig.date('2006', workflow.creationTimestamp)}}", /output]
      outputs: {parameters: [{name: output, valueFrom: {path: /output}}]}`,
		"global outputs (Argo's global-outputs)": `
  entrypoint: generate-globals
  onExit: consume-globals
  templates:
  - name: generate-globals
    steps:
    - - {name: generate, template: global-output}
    - - {name: consume-globals, template: consume-globals}
  - name: global-output
    container: {image: alpine:3.23, command: [sh, -c], args: ["echo -n hello world > /tmp/hello_world.txt"]}
    outputs:
      parameters: [{name: hello-param, valueFrom: {path: /tmp/hello_world.txt}, globalName: my-global-param}]
  - name: consume-globals
    steps:
    - - {name: consume-global-param, template: consume-global-param}
  - name: consume-global-param
    inputs: {parameters: [{name: param, value: "{{workflow.outputs.parameters.my-global-param}}"}]}
    container: {image: alpine:3.23, command: [sh, -c], args: ["echo {{inputs.parameters.param}}"]}`,
		"retry expression (Argo's retry-conditional)": `
  entrypoint: main
  templates:
    - name: main
      steps:
        - - {name: safe-to-retry, template: safe-to-retry}
        - - name: retry
            template: retry-script
            arguments: {parameters: [{name: safe-to-retry, value: "{{steps.safe-to-retry.outputs.result}}"}]}
    - name: safe-to-retry
      script: {image: python:alpine3.23, command: [python], source: "print('true')"}
    - name: retry-script
      inputs: {parameters: [{name: safe-to-retry}]}
      retryStrategy:
        limit: "10"
        expression: >-
          asInt(lastRetry.exitCode) > 1 &&
          lastRetry.status != "Error" &&
          asInt(lastRetry.duration) < 120 &&
          ({{inputs.parameters.safe-to-retry}} == true || lastRetry.message matches 'imminent node shutdown|pod deleted')
      script: {image: python:alpine3.23, command: [python], source: "import sys; sys.exit(2)"}`,
		"conditional parameters (Argo's conditional-parameters)": `
  entrypoint: main
  templates:
    - name: main
      steps:
        - - {name: flip-coin, template: flip-coin}
        - - {name: heads, template: heads, when: "{{steps.flip-coin.outputs.result}} == heads"}
          - {name: tails, template: tails, when: "{{steps.flip-coin.outputs.result}} == tails"}
      outputs:
        parameters:
          - name: stepresult
            valueFrom:
              expression: "steps['flip-coin'].outputs.result == 'heads' ? steps.heads.outputs.result : steps.tails.outputs.result"
    - {name: flip-coin, script: {image: python:alpine3.23, command: [python], source: "print('heads')"}}
    - {name: heads, script: {image: python:alpine3.23, command: [python], source: "print('heads')"}}
    - {name: tails, script: {image: python:alpine3.23, command: [python], source: "print('tails')"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeYAML(t, lintHead+y); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLongNameRefused(t *testing.T) {
	_, err := decodeYAML(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: `+strings.Repeat("w", 64)+`}
spec:
  entrypoint: a
  templates: [{name: a, container: {image: x, command: [x]}}]`)
	if errdefs.Field(err) != "metadata.name" {
		t.Fatalf("got %v", err)
	}
}

func TestDecodeKinds(t *testing.T) {
	j, _ := yaml.YAMLToJSON([]byte(`
apiVersion: argoproj.io/v1alpha1
kind: ClusterWorkflowTemplate
metadata: {name: lib}
spec:
  templates:
  - {name: hello, container: {image: x, command: [echo, hi]}}
`))
	if _, err := DecodeTemplate(j, "ClusterWorkflowTemplate"); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeTemplate(j, "WorkflowTemplate"); errdefs.Field(err) != "apiVersion/kind" {
		t.Fatalf("kind mismatch: %v", err)
	}
	j, _ = yaml.YAMLToJSON([]byte(`
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: c}
spec:
  schedule: "*/5 * * * *"
  concurrencyPolicy: Sometimes
  workflowSpec:
    entrypoint: a
    templates: [{name: a, container: {image: x, command: [x]}}]
`))
	if _, err := DecodeCron(j); errdefs.Field(err) != "spec.concurrencyPolicy" {
		t.Fatalf("cron: %v", err)
	}
	for _, tc := range []struct{ spec, field, reason string }{
		{`schedule: "* * * * * *"`, "spec.schedule", "seconds field is not supported"},
		{`schedule: "@every 10s"`, "spec.schedule", "more often than once a minute"},
		{`schedules: ["0 3 * * *", "nope"]`, "spec.schedules[1]", "want 5"},
		{`{schedule: "0 3 * * *", schedules: ["0 4 * * *"]}`, "spec.schedules", "cannot be given with spec.schedule"},
		{`{schedule: "0 3 * * *", timezone: "Nowhere/Land"}`, "spec.timezone", "is not a known time zone"},
		{`{schedule: "0 3 * * *", stopStrategy: {}}`, "spec.stopStrategy.expression", "is required"},
		{`{schedule: "0 3 * * *", stopStrategy: {expression: "cronworkflow.faild >= 1"}}`, "spec.stopStrategy.expression", "names cronworkflow.faild, which is not a variable here"},
		{`{schedule: "0 3 * * *", stopStrategy: {expression: "workflow.failed >= 1"}}`, "spec.stopStrategy.expression", "does not compile"},
		{`{schedule: "0 3 * * *", stopStrategy: {expression: "cronworkflow.succeeded +"}}`, "spec.stopStrategy.expression", "does not compile"},
		{`{schedule: "0 3 * * *", stopStrategy: {expression: "cronworkflow.name"}}`, "spec.stopStrategy.expression", "does not compile to a boolean"},
		{`{suspend: false}`, "spec.schedule", "is required"},
	} {
		spec := tc.spec
		if !strings.HasPrefix(spec, "{") {
			spec = "{" + spec + "}"
		}
		j, err := yaml.YAMLToJSON([]byte("apiVersion: argoproj.io/v1alpha1\nkind: CronWorkflow\nmetadata: {name: c}\nspec: " +
			strings.TrimSuffix(spec, "}") + ", workflowSpec: {entrypoint: a, templates: [{name: a, suspend: {}}]}}"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeCron(j)
		if errdefs.Field(err) != tc.field || !strings.Contains(fmt.Sprint(err), tc.reason) {
			t.Errorf("%s: got %v, want field %s and %q", tc.spec, err, tc.field, tc.reason)
		}
	}
}

func TestDependsExpressions(t *testing.T) {
	phases := map[string]string{"A": "Succeeded", "B": "Failed", "C": "Skipped"}
	res := func(task, r string) bool { return phases[task] == r }
	for expr, want := range map[string]bool{
		"A":                           true,
		"B":                           false,
		"C":                           true, // skipped counts, as in Argo
		"A && B.Failed":               true,
		"!(A.Succeeded) || B.Errored": false,
		"(A || B) && !B.Succeeded":    true,
		"A.Succeeded&&(B.Failed||C)":  true,
	} {
		e, err := parseDepends(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got := e.eval(res); got != want {
			t.Errorf("%s = %v, want %v", expr, got, want)
		}
	}
	for _, bad := range []string{"", "A &&", "(A", "A B", "A.", "A || || B", "A & B", "!"} {
		if _, err := parseDepends(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestWhen(t *testing.T) {
	for expr, want := range map[string]bool{
		"heads == heads":          true,
		"heads == tails":          false,
		"5 > 3":                   true,
		"'a b' == 'a b'":          true,
		"true && !false":          true,
		"heads != tails && 1 < 2": true,
	} {
		got, err := evalWhen(expr)
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
	for _, bad := range []string{"1 +", "heads", "len('x') > 0", "5"} {
		if _, err := evalWhen(bad); err == nil {
			t.Errorf("%q evaluated", bad)
		}
	}
}
