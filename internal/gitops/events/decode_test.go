package events

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func toJSON(t testing.TB, y string) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func readYAML(t *testing.T, name string) string {
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestArgoExamplesDecode: Argo's documented YAML is accepted as is.
func TestArgoExamplesDecode(t *testing.T) {
	es, err := DecodeEventSource(toJSON(t, readYAML(t, "github-eventsource.yaml")))
	if err != nil {
		t.Fatalf("github event source: %v", err)
	}
	if g := es.Spec.GitHub["example"]; g.Webhook.Endpoint != "/push" || len(g.Repositories[0].Names) != 2 {
		t.Errorf("decoded %+v", g)
	}
	s, err := DecodeSensor(toJSON(t, readYAML(t, "sensor.yaml")))
	if err != nil {
		t.Fatalf("sensor: %v", err)
	}
	if s.Spec.Triggers[0].Template.K8s.Parameters[0].Dest != "spec.arguments.parameters.0.value" {
		t.Errorf("decoded %+v", s.Spec.Triggers[0].Template.K8s)
	}
	if _, err := DecodeEventBus(toJSON(t, "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec:\n  jetstream:\n    version: latest\n")); err != nil {
		t.Errorf("eventbus: %v", err)
	}
}

const esHead = "apiVersion: argoproj.io/v1alpha1\nkind: EventSource\nmetadata: {name: es}\nspec:\n"
const snHead = "apiVersion: argoproj.io/v1alpha1\nkind: Sensor\nmetadata: {name: sn}\nspec:\n"
const okDeps = "  dependencies: [{name: d, eventSourceName: es, eventName: e}]\n"
const wfRes = "apiVersion: argoproj.io/v1alpha1, kind: Workflow, metadata: {generateName: x-}, spec: {entrypoint: main, templates: [{name: main, container: {image: alpine, command: [echo]}}]}"

// TestRefusals: every refusal names the field, the value and what is valid.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, doc, field, want string
		kind                   string
	}{
		{"no source", esHead + "  eventBusName: default\n", "spec", "has no event source", "es"},
		{"unknown source", esHead + "  kafka: {a: {url: x}}\n", "spec.kafka", "not supported yet", "es"},
		{"webhook no secret", esHead + "  webhook: {a: {endpoint: /a, method: POST, port: '12000'}}\n", "spec.webhook.a.authSecret", "is required", "es"},
		{"bad endpoint", esHead + "  webhook: {a: {endpoint: 'x/../y', method: POST, authSecret: {name: s, key: k}}}\n", "spec.webhook.a.endpoint", "not a URL path", "es"},
		{"bad method", esHead + "  webhook: {a: {endpoint: /a, method: TRACE, authSecret: {name: s, key: k}}}\n", "spec.webhook.a.method", "POST", "es"},
		{"same endpoint", esHead + "  webhook: {a: {endpoint: /a, method: POST, authSecret: {name: s, key: k}}, b: {endpoint: /a, method: POST, authSecret: {name: s, key: k}}}\n", "spec.webhook.b.endpoint", "also the endpoint", "es"},
		{"github no secret", esHead + "  github: {a: {webhook: {endpoint: /a, method: POST}, events: [push]}}\n", "spec.github.a.webhookSecret", "is required", "es"},
		{"gitlab bad event", esHead + "  gitlab: {a: {webhook: {endpoint: /a, method: POST}, events: [Pushes], secretToken: {name: s, key: k}}}\n", "spec.gitlab.a.events[0]", "PushEvents", "es"},
		{"bitbucket no secret", esHead + "  bitbucket: {a: {webhook: {endpoint: /a, method: POST}, events: ['repo:push']}}\n", "spec.bitbucket.a.webhookSecret", "is required", "es"},
		{"calendar both", esHead + "  calendar: {a: {schedule: '* * * * *', interval: 10s}}\n", "spec.calendar.a", "give one", "es"},
		{"calendar bad cron", esHead + "  calendar: {a: {schedule: '61 * * * *'}}\n", "spec.calendar.a.schedule", "", "es"},
		{"calendar bad tz", esHead + "  calendar: {a: {schedule: '0 * * * *', timezone: Mars/Olympus}}\n", "spec.calendar.a.timezone", "IANA", "es"},
		{"calendar short interval", esHead + "  calendar: {a: {interval: 10ms}}\n", "spec.calendar.a.interval", "at least 1s", "es"},
		{"source filter", esHead + "  calendar: {a: {interval: 10s, filter: {expression: 'a +'}}}\n", "spec.calendar.a.filter.expression", "does not compile", "es"},
		{"catchup bad maxDuration", esHead + "  calendar: {a: {interval: 10s, persistence: {catchup: {enabled: true, maxDuration: 5 minutes}, configMap: {name: cal}}}}\n", "spec.calendar.a.persistence.catchup.maxDuration", "positive duration", "es"},
		{"persistence configMap no name", esHead + "  calendar: {a: {interval: 10s, persistence: {configMap: {createIfNotExist: true}}}}\n", "spec.calendar.a.persistence.configMap.name", "ConfigMap name", "es"},
		{"catchup without configMap", esHead + "  calendar: {a: {interval: 10s, persistence: {catchup: {enabled: true}}}}\n", "spec.calendar.a.persistence.configMap", "is required", "es"},
		{"no deps", snHead + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}}]\n", "spec.dependencies", "is required", "sn"},
		{"dup dep", snHead + "  dependencies: [{name: d, eventSourceName: es, eventName: e}, {name: d, eventSourceName: es, eventName: e}]\n", "spec.dependencies[1].name", "unique", "sn"},
		{"bad data type", snHead + "  dependencies: [{name: d, eventSourceName: es, eventName: e, filters: {data: [{path: body.a, type: float, value: ['1']}]}}]\n", "spec.dependencies[0].filters.data[0].type", "string, number or bool", "sn"},
		{"bad regex", snHead + "  dependencies: [{name: d, eventSourceName: es, eventName: e, filters: {data: [{path: body.a, type: string, value: ['(']}]}}]\n", "spec.dependencies[0].filters.data[0].value[0]", "regular expression", "sn"},
		{"string comparator", snHead + "  dependencies: [{name: d, eventSourceName: es, eventName: e, filters: {data: [{path: body.a, type: string, comparator: '>', value: [a]}]}}]\n", "spec.dependencies[0].filters.data[0].comparator", "= or !=", "sn"},
		{"bad expr", snHead + "  dependencies: [{name: d, eventSourceName: es, eventName: e, filters: {exprs: [{expr: 'a ==', fields: [{name: a, path: body.a}]}]}}]\n", "spec.dependencies[0].filters.exprs[0].expr", "does not compile", "sn"},
		{"bad time", snHead + "  dependencies: [{name: d, eventSourceName: es, eventName: e, filters: {time: {start: '25:00:00', stop: '01:00:00'}}}]\n", "spec.dependencies[0].filters.time.start", "HH:MM:SS", "sn"},
		{"script", snHead + "  dependencies: [{name: d, eventSourceName: es, eventName: e, filters: {script: 'return true'}}]\n", "spec.dependencies[0].filters.script", "no scripts", "sn"},
		{"no triggers", snHead + okDeps, "spec.triggers", "is required", "sn"},
		{"condition unknown dep", snHead + okDeps + "  triggers: [{template: {name: t, conditions: 'd && x', k8s: {source: {resource: {" + wfRes + "}}}}}]\n", "spec.triggers[0].template.conditions", `"x"`, "sn"},
		{"condition syntax", snHead + okDeps + "  triggers: [{template: {name: t, conditions: 'd &&', k8s: {source: {resource: {" + wfRes + "}}}}}]\n", "spec.triggers[0].template.conditions", "dependency name is expected", "sn"},
		{"kafka trigger", snHead + okDeps + "  triggers: [{template: {name: t, kafka: {url: x}}}]\n", "spec.triggers[0].template.kafka", "not supported yet", "sn"},
		{"two kinds", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x'}, log: {}}}]\n", "spec.triggers[0].template", "http and log", "sn"},
		{"http no url", snHead + okDeps + "  triggers: [{template: {name: t, http: {method: POST}}}]\n", "spec.triggers[0].template.http.url", "is required", "sn"},
		{"http url scheme", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'ftp://u:pw@x/y'}}}]\n", "spec.triggers[0].template.http.url", "http or https URL", "sn"},
		{"http method", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x', method: TRACE}}}]\n", "spec.triggers[0].template.http.method", "GET, POST", "sn"},
		{"http timeout", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x', timeout: -3}}}]\n", "spec.triggers[0].template.http.timeout", "seconds", "sn"},
		{"http header", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x', headers: {'Bad Name': v}}}}]\n", "spec.triggers[0].template.http.headers.Bad Name", "header name", "sn"},
		{"http header value", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x', headers: {X-A: \"a\\r\\nB: c\"}}}}]\n", "spec.triggers[0].template.http.headers.X-A", "line breaks", "sn"},
		{"http secure header", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x', secureHeaders: [{name: Authorization}]}}}]\n", "spec.triggers[0].template.http.secureHeaders[0].valueFrom", "secretKeyRef or configMapKeyRef", "sn"},
		{"http secure both", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x', secureHeaders: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}, configMapKeyRef: {name: c, key: k}}}]}}}]\n", "spec.triggers[0].template.http.secureHeaders[0].valueFrom", "give one", "sn"},
		{"http basic", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x', basicAuth: {username: {name: s}}}}}]\n", "spec.triggers[0].template.http.basicAuth.username.key", "is required", "sn"},
		{"http tls pair", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'https://x', tls: {clientCertSecret: {name: s, key: c}}}}}]\n", "spec.triggers[0].template.http.tls", "clientKeySecret", "sn"},
		{"http payload dep", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x', payload: [{src: {dependencyName: nope, dataKey: body}, dest: a}]}}}]\n", "spec.triggers[0].template.http.payload[0].src.dependencyName", "not a dependency", "sn"},
		{"http dynamic header", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x', dynamicHeaders: [{src: {dependencyName: d, dataKey: body.a}, dest: 'a b'}]}}}]\n", "spec.triggers[0].template.http.dynamicHeaders[0].dest", "header name", "sn"},
		{"status allow", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x'}}, policy: {status: {allow: [200, 42]}}}]\n", "spec.triggers[0].policy.status.allow[1]", "100 to 599", "sn"},
		{"status allow type", snHead + okDeps + "  triggers: [{template: {name: t, http: {url: 'http://x'}}, policy: {status: {allow: ok}}}]\n", "spec.triggers[0].policy.status.allow", "response codes", "sn"},
		{"nats url", snHead + okDeps + "  triggers: [{template: {name: t, nats: {url: 'http://x', subject: a, payload: [{src: {dependencyName: d}, dest: a}]}}}]\n", "spec.triggers[0].template.nats.url", "NATS URL", "sn"},
		{"nats subject", snHead + okDeps + "  triggers: [{template: {name: t, nats: {url: 'nats://x:4222', subject: 'a.>', payload: [{src: {dependencyName: d}, dest: a}]}}}]\n", "spec.triggers[0].template.nats.subject", "wildcards", "sn"},
		{"nats payload", snHead + okDeps + "  triggers: [{template: {name: t, nats: {url: 'nats://x:4222', subject: a}}}]\n", "spec.triggers[0].template.nats.payload", "is required", "sn"},
		{"nats auth", snHead + okDeps + "  triggers: [{template: {name: t, nats: {url: 'nats://x:4222', subject: a, payload: [{src: {dependencyName: d}, dest: a}], auth: {token: {name: s, key: k}, nkey: {name: s, key: nk}}}}}]\n", "spec.triggers[0].template.nats.auth", "exactly one", "sn"},
		{"argo op unknown", snHead + okDeps + "  triggers: [{template: {name: t, argoWorkflow: {operation: restart, source: {resource: {" + wfRes + "}}}}}]\n", "spec.triggers[0].template.argoWorkflow.operation", "submit-from", "sn"},
		{"argo op no name", snHead + okDeps + "  triggers: [{template: {name: t, argoWorkflow: {operation: retry, source: {resource: {" + wfRes + "}}}}}]\n", "spec.triggers[0].template.argoWorkflow.source.resource.metadata.name", "is required", "sn"},
		{"argo op kind", snHead + okDeps + "  triggers: [{template: {name: t, argoWorkflow: {operation: resume, source: {resource: {apiVersion: argoproj.io/v1alpha1, kind: WorkflowTemplate, metadata: {name: w}}}}}}]\n", "spec.triggers[0].template.argoWorkflow.source.resource.kind", "Workflow by name", "sn"},
		{"argo submit-from kind", snHead + okDeps + "  triggers: [{template: {name: t, argoWorkflow: {operation: submit-from, source: {resource: {apiVersion: argoproj.io/v1alpha1, kind: Workflow, metadata: {name: w}}}}}}]\n", "spec.triggers[0].template.argoWorkflow.source.resource.kind", "CronWorkflow or WorkflowTemplate", "sn"},
		{"argo args", snHead + okDeps + "  triggers: [{template: {name: t, argoWorkflow: {args: [--serviceaccount, x], source: {resource: {" + wfRes + "}}}}}]\n", "spec.triggers[0].template.argoWorkflow.args", "no argo CLI", "sn"},
		{"no resource", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {operation: create, source: {}}}}]\n", "spec.triggers[0].template.k8s.source.resource", "is required", "sn"},
		{"git source", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {git: {url: x}}}}}]\n", "spec.triggers[0].template.k8s.source.git", "inline", "sn"},
		{"no kind", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {apiVersion: v1, metadata: {name: x}}}}}}]\n", "spec.triggers[0].template.k8s.source.resource.kind", "is required", "sn"},
		{"workflow lint", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {apiVersion: argoproj.io/v1alpha1, kind: Workflow, metadata: {generateName: x-}, spec: {entrypoint: nope, templates: [{name: main, container: {image: a, command: [b]}}]}}}}}}]\n", "spec.triggers[0].template.k8s.source.resource.spec.entrypoint", "nope", "sn"},
		{"argo not workflow", snHead + okDeps + "  triggers: [{template: {name: t, argoWorkflow: {source: {resource: {apiVersion: v1, kind: Pod, metadata: {name: p}}}}}}]\n", "spec.triggers[0].template.argoWorkflow.source.resource.kind", "Workflow", "sn"},
		{"param dep", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}, parameters: [{src: {dependencyName: nope, dataKey: body}, dest: metadata.name}]}}}]\n", "spec.triggers[0].template.k8s.parameters[0].src.dependencyName", "not a dependency", "sn"},
		{"param template", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}, parameters: [{src: {dependencyName: d, dataTemplate: '{{ .Input'}, dest: metadata.name}]}}}]\n", "spec.triggers[0].template.k8s.parameters[0].src.dataTemplate", "does not parse", "sn"},
		{"rate unit", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}, rateLimit: {unit: Day, requestsPerUnit: 1}}]\n", "spec.triggers[0].rateLimit.unit", "Second, Minute or Hour", "sn"},
		{"rate none", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}, rateLimit: {unit: Minute}}]\n", "spec.triggers[0].rateLimit.requestsPerUnit", "1 or more", "sn"},
		{"rate field", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}, rateLimit: {unit: Minute, requestsPerUnt: 3}}]\n", "spec.triggers[0].rateLimit.requestsPerUnt", "unit, requestsPerUnit", "sn"},
		{"retry duration", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}, retryStrategy: {steps: 3, duration: 2 seconds}}]\n", "spec.triggers[0].retryStrategy.duration", "like 1s", "sn"},
		{"retry steps", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}, retryStrategy: {steps: -1}}]\n", "spec.triggers[0].retryStrategy.steps", "1 or more", "sn"},
		{"retry factor", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}, retryStrategy: {factor: x}}]\n", "spec.triggers[0].retryStrategy.factor", "a number", "sn"},
		{"retry not object", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}, retryStrategy: 3}]\n", "spec.triggers[0].retryStrategy", "duration, factor, jitter, steps", "sn"},
		{"policy labels", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}, policy: {k8s: {labels: [a]}}}]\n", "spec.triggers[0].policy.k8s.labels", "map of label", "sn"},
		{"policy backoff", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}, policy: {k8s: {labels: {a: b}, backoff: {jitter: -1}}}}]\n", "spec.triggers[0].policy.k8s.backoff.jitter", "0 or more", "sn"},
		{"policy field", snHead + okDeps + "  triggers: [{template: {name: t, k8s: {source: {resource: {" + wfRes + "}}}}, policy: {k8s: {labels: {a: b}, errorOnTimeout: true}}}]\n", "spec.triggers[0].policy.k8s.errorOnTimeout", "errorOnBackoffTimeout", "sn"},
		{"bus nats", "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec: {nats: {native: {}}}\n", "spec.nats", "jetstream", "eb"},
		{"bus url", "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec: {jetstreamExotic: {url: 'http://u:pw@x'}}\n", "spec.jetstreamExotic.url", "xxxxx", "eb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			switch tc.kind {
			case "es":
				_, err = DecodeEventSource(toJSON(t, tc.doc))
			case "sn":
				_, err = DecodeSensor(toJSON(t, tc.doc))
			default:
				_, err = DecodeEventBus(toJSON(t, tc.doc))
			}
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a field error", err)
			}
			if fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (field %s), want field %s and %q", err, fe.Field, tc.field, tc.want)
			}
			if strings.Contains(err.Error(), ":pw@") {
				t.Errorf("a password is in the message: %v", err)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	c, err := parseConditions("a && (b || !c-1)")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		have map[string]bool
		want bool
	}{
		{map[string]bool{"a": true}, true},
		{map[string]bool{"a": true, "c-1": true}, false},
		{map[string]bool{"a": true, "b": true, "c-1": true}, true},
		{map[string]bool{"b": true}, false},
	} {
		if got := c.eval(tc.have); got != tc.want {
			t.Errorf("eval(%v) = %v, want %v", tc.have, got, tc.want)
		}
	}
	for _, bad := range []string{"", "a &&", "(a", "a b", "a ; b", strings.Repeat("(", 60) + "a" + strings.Repeat(")", 60)} {
		if _, err := parseConditions(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestFilters(t *testing.T) {
	f, err := compileFilters("f", &EventFilters{
		Data: []DataFilter{
			{Path: "body.ref", Type: "string", Value: []string{"^refs/heads/main$"}},
			{Path: "body.size", Type: "number", Comparator: ">=", Value: []string{"10"}},
			{Path: "body.labels", Type: "string", Value: []string{"^deploy$"}},
			{Path: "body.draft", Type: "bool", Comparator: "!=", Value: []string{"true"}},
		},
		Exprs: []ExprFilter{{Expr: `author == "ann" && n > 1`, Fields: []PayloadField{{Name: "author", Path: "body.author"}, {Name: "n", Path: "body.size"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ev := func(body string) *Event {
		return &Event{Data: []byte(`{"body":` + body + `}`), Context: EventContext{}}
	}
	pass := `{"ref":"refs/heads/main","size":12,"labels":["x","deploy"],"draft":false,"author":"ann"}`
	if ok, why := f.match(ev(pass)); !ok {
		t.Errorf("passing event filtered out: %s", why)
	}
	for _, body := range []string{
		`{"ref":"refs/heads/dev","size":12,"labels":["deploy"],"draft":false,"author":"ann"}`,
		`{"ref":"refs/heads/main","size":9,"labels":["deploy"],"draft":false,"author":"ann"}`,
		`{"ref":"refs/heads/main","size":12,"labels":["x"],"draft":false,"author":"ann"}`,
		`{"ref":"refs/heads/main","size":12,"labels":["deploy"],"draft":true,"author":"ann"}`,
		`{"ref":"refs/heads/main","size":12,"labels":["deploy"],"draft":false,"author":"bob"}`,
		`{"size":12,"labels":["deploy"],"draft":false,"author":"ann"}`,
	} {
		if ok, _ := f.match(ev(body)); ok {
			t.Errorf("event passed: %s", body)
		}
	}
	tf, _ := compileFilters("f", &EventFilters{Time: &TimeFilter{Start: "22:00:00", Stop: "02:00:00"}})
	for h, want := range map[int]bool{23: true, 1: true, 2: false, 12: false} {
		e := &Event{Context: EventContext{}}
		e.Context.Time.Time = time.Date(2026, 1, 1, h, 30, 0, 0, time.UTC)
		if ok, _ := tf.match(e); ok != want {
			t.Errorf("time filter at %02d:30 = %v, want %v", h, ok, want)
		}
	}
}

func TestParams(t *testing.T) {
	v := "fallback"
	evs := map[string]*Event{"d": {Context: EventContext{ID: "42", Source: "github"}, Data: []byte(`{"body":{"ref":"refs/heads/main","commits":[{"id":"abc"}],"repo":{"name":"x"}}}`)}}
	doc := []byte(`{"spec":{"arguments":{"parameters":[{"name":"ref","value":"?"},{"name":"sha","value":"?"}]}},"metadata":{"generateName":"build-"}}`)
	out, err := applyParams("p", doc, []TriggerParameter{
		{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.ref"}, Dest: "spec.arguments.parameters.0.value"},
		{Src: &TriggerParameterSource{DependencyName: "d", DataTemplate: "{{ (index .Input.body.commits 0).id }}"}, Dest: "spec.arguments.parameters.1.value"},
		{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.repo.name"}, Dest: "metadata.generateName", Operation: "append"},
		{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.missing", Value: &v}, Dest: "metadata.labels.x"},
		{Src: &TriggerParameterSource{DependencyName: "d", ContextKey: "id"}, Dest: "metadata.labels.id"},
		{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.repo", UseRawData: true}, Dest: "metadata.annotations"},
	}, evs)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"arguments":{"parameters":[{"name":"ref","value":"refs/heads/main"},{"name":"sha","value":"abc"}]}},"metadata":{"generateName":"build-x","labels":{"x":"fallback","id":"42"},"annotations":{"name":"x"}}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, err := applyParams("p", doc, []TriggerParameter{{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.nope"}, Dest: "x"}}, evs); err == nil || !strings.Contains(err.Error(), "p[0].src") {
		t.Errorf("missing key without default: %v", err)
	}
}

func TestCalendarNext(t *testing.T) {
	c, err := compileCalendar("c", CalendarSource{Schedule: "30 9 * * *", Timezone: "Europe/Berlin", ExclusionDates: []string{"2026-07-02"}})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	got := c.next(from)
	want := time.Date(2026, 7, 3, 7, 30, 0, 0, time.UTC) // 09:30 CEST, the 2nd excluded
	if !got.Equal(want) {
		t.Errorf("next = %v, want %v", got, want)
	}
}

func TestRefuseOnHosted(t *testing.T) {
	for _, k := range []string{"EventSource", "Sensor", "EventBus"} {
		err := RefuseOnHosted(Group, k)
		if err == nil || !strings.Contains(err.Error(), "Argo Events' "+k+" runs on hybrid runtimes only") {
			t.Errorf("%s: %v", k, err)
		}
	}
	if err := RefuseOnHosted(Group, "Rollout"); err != nil {
		t.Errorf("Rollout refused: %v", err)
	}
	if err := RefuseOnHosted("example.com", "Sensor"); err != nil {
		t.Errorf("another group's Sensor refused: %v", err)
	}
}

// TestParseLastTick: a tick kept by Argo Events (with the monotonic clock reading) or by
// Freshet reads back as its instant; anything else is refused.
func TestParseLastTick(t *testing.T) {
	at := time.Date(2026, 11, 28, 5, 0, 1, 500, time.FixedZone("CET", 3600))
	for _, v := range []string{
		`{"eventTime":"` + at.String() + `","metadata":{"a":"b"}}`,
		`{"eventTime":"2026-11-28 05:00:01.0000005 +0100 CET m=+683.567066901"}`,
	} {
		got, err := parseLastTick(v)
		if err != nil || !got.Equal(at) {
			t.Errorf("parseLastTick(%s) = %v, %v; want %v", v, got, err, at)
		}
	}
	for _, v := range []string{``, `{}`, `{"eventTime":"yesterday"}`, `"2026-11-28"`} {
		if _, err := parseLastTick(v); err == nil {
			t.Errorf("parseLastTick(%q) accepted", v)
		}
	}
}
