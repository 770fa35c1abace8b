package events

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/minio/minio-go/v7/pkg/notification"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// FuzzDecodeEventSource: an EventSource (synced from git by anyone who can commit) is refused
// with an error naming a field, or validates — and then compiles into routes and calendars
// without panicking, every route verified (a secret named) and every calendar firing in the
// future.
func FuzzDecodeEventSource(f *testing.F) {
	for _, y := range []string{
		esHead + "  webhook: {a: {endpoint: /a, method: POST, authSecret: {name: s, key: k}, filter: {expression: 'body.x == 1'}}}\n",
		esHead + "  calendar: {a: {schedule: '*/5 * * * *', timezone: Europe/Berlin, exclusionDates: ['2026-01-01']}, b: {interval: 10s}}\n",
		esHead + "  calendar: {a: {interval: 1s, persistence: {catchup: {enabled: true, maxDuration: 5m}, configMap: {name: cal, createIfNotExist: true}}}}\n",
		esHead + "  calendar: {a: {schedule: '0 * * * *', persistence: {catchup: {enabled: false}, configMap: {name: cal}}}}\n",
		esHead + "  github: {a: {webhook: {endpoint: /gh}, repositories: [{owner: o, names: [n]}], events: [push], webhookSecret: {name: s, key: k}}}\n" +
			"  gitlab: {b: {webhook: {endpoint: /gl}, projects: ['1'], events: [PushEvents], secretToken: {name: s, key: k}}}\n" +
			"  bitbucket: {c: {webhook: {endpoint: /bb}, events: ['repo:push'], webhookSecret: {name: s, key: k}}}\n" +
			"  gitea: {d: {webhook: {endpoint: /gt}, webhookSecret: {name: s, key: k}}}\n",
		resourceES,
		amqpES,
		esHead + "  nats: {nb: {url: 'nats://h:4222', subject: a, connectionBackoff: {duration: 2s, factor: 1.5, jitter: '0.2', steps: 4}}}\n" +
			"  mqtt: {q: {url: 'tcp://x:1883', topic: a, clientId: c, connectionBackoff: {duration: 1000000000, steps: 2}}}\n",
	} {
		f.Add(toJSON(f, y))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := DecodeEventSource(data)
		if err != nil {
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("refusal names no field: %v", err)
			}
			return
		}
		run, cals, err := buildSource(es)
		if err != nil {
			t.Fatalf("valid event source does not build: %v", err)
		}
		for k, r := range run.routes {
			if r.secret.Name == "" || r.secret.Key == "" {
				t.Fatalf("route %s has no secret", k)
			}
		}
		for _, c := range cals {
			if c.cal.interval == 0 && c.cal.sched.String() == "" {
				t.Fatalf("calendar %s neither schedule nor interval", c.event)
			}
			if c.cal.catchup && c.cal.configMap == "" || c.cal.maxCatchup < 0 {
				t.Fatalf("calendar %s catches up from nowhere: %+v", c.event, c.cal)
			}
		}
		for _, l := range run.listeners {
			if r := l.resource; r != nil && (r.gvr.Version == "" || r.gvr.Resource == "" || len(r.types) == 0 || l.sa == "") {
				t.Fatalf("resource %s watches nothing: %+v", l.event, r)
			}
			if a := l.amqp; a != nil && (a.ExchangeName == "" || a.ExchangeType == "" || a.RoutingKey == "" || (a.URL == "") == (a.URLSecret == nil)) {
				t.Fatalf("amqp %s consumes nothing: %+v", l.event, a)
			}
			if r := l.stream; r != nil && (r.HostAddress == "" || len(r.Streams) == 0) {
				t.Fatalf("redisStream %s reads nothing: %+v", l.event, r)
			}
		}
		if err := checkPolicy(netpolicy.Unrestricted(), &es.Spec); err != nil {
			t.Fatalf("a valid source's URLs do not parse: %v", err)
		}
	})
}

// FuzzNATSEventData: a NATS message (anyone who can publish on the subject sends it) becomes
// event data that is JSON with the message's subject, or — a jsonBody message that is not
// JSON — is refused; never a panic.
func FuzzNATSEventData(f *testing.F) {
	f.Add("orders.1", []byte(`{"id":7}`), true)
	f.Add("s", []byte("\xff\x00"), false)
	f.Add("s", []byte(`{"a":`), true)
	f.Fuzz(func(t *testing.T, subject string, body []byte, jsonBody bool) {
		data, err := natsEventData(subject, map[string][]string{"K": {"v"}}, body, jsonBody, map[string]string{"m": "1"})
		if err != nil {
			if !jsonBody || json.Valid(body) && len(body) > 0 {
				t.Fatalf("message refused: %v", err)
			}
			return
		}
		var got struct {
			Subject string          `json:"subject"`
			Body    json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(data, &got); err != nil || !json.Valid(data) {
			t.Fatalf("data is not JSON: %s", data)
		}
		if utf8.ValidString(subject) && got.Subject != subject {
			t.Fatalf("subject %q became %q", subject, got.Subject)
		}
	})
}

// FuzzRedisEventData: a Redis message (anyone who can publish on the channel sends it) becomes
// event data that is JSON with its channel, or — a jsonBody payload that is not JSON — is
// refused; never a panic.
func FuzzRedisEventData(f *testing.F) {
	f.Add("jobs", `{"job":"j-7"}`, true)
	f.Add("jobs", "\xff", false)
	f.Add("jobs", `[1,`, true)
	f.Fuzz(func(t *testing.T, channel, payload string, jsonBody bool) {
		data, err := redisEventData(channel, "", payload, jsonBody, nil)
		if err != nil {
			if !jsonBody || json.Valid([]byte(payload)) && payload != "" {
				t.Fatalf("message refused: %v", err)
			}
			return
		}
		var got struct {
			Channel string `json:"channel"`
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("data is not JSON: %s", data)
		}
		if utf8.ValidString(channel) && got.Channel != channel {
			t.Fatalf("channel %q became %q", channel, got.Channel)
		}
	})
}

// FuzzMQTTEventData: an MQTT message (anyone who can publish on the topic sends it) becomes
// event data that is JSON with its topic, or — a jsonBody payload that is not JSON — is
// refused; never a panic.
func FuzzMQTTEventData(f *testing.F) {
	f.Add("t/1", []byte(`{"v":1}`), true)
	f.Add("t/1", []byte("\x00\xff"), false)
	f.Fuzz(func(t *testing.T, topic string, payload []byte, jsonBody bool) {
		data, err := mqttEventData(topic, 1, payload, jsonBody, nil)
		if err != nil {
			if !jsonBody || json.Valid(payload) && len(payload) > 0 {
				t.Fatalf("message refused: %v", err)
			}
			return
		}
		var got struct {
			Topic string `json:"topic"`
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("data is not JSON: %s", data)
		}
		if utf8.ValidString(topic) && got.Topic != topic {
			t.Fatalf("topic %q became %q", topic, got.Topic)
		}
	})
}

// FuzzMinioNotification: a bucket notification line (the S3 server sends it; minio-go decodes
// it) becomes event data that is JSON with its records, and an id; never a panic.
func FuzzMinioNotification(f *testing.F) {
	f.Add([]byte(`{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"k","size":3,"userMetadata":{"a":"b"}}}}]}`))
	f.Add([]byte(`{"Records":[{"eventTime":"x","source":{"host":"h"}}, {}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var info notification.Info
		if err := json.Unmarshal(line, &info); err != nil {
			return
		}
		data, id, err := minioEventData(info, nil)
		if err != nil {
			t.Fatalf("notification refused: %v", err)
		}
		var got struct {
			Notification []json.RawMessage `json:"notification"`
		}
		if err := json.Unmarshal(data, &got); err != nil || len(got.Notification) != len(info.Records) || len(id) != 32 {
			t.Fatalf("data %s id %q (%v)", data, id, err)
		}
	})
}

// FuzzDecodeSensor: a Sensor is refused with an error naming a field, or validates and
// compiles: its conditions parse and name only its dependencies.
func FuzzDecodeSensor(f *testing.F) {
	f.Add(toJSON(f, snHead+okDeps+"  triggers: [{template: {name: t, conditions: 'd || (d && !d)', k8s: {source: {resource: {"+wfRes+"}}, parameters: [{src: {dependencyName: d, dataKey: body.a}, dest: spec.arguments.parameters.0.value}]}}}]\n"))
	f.Add(toJSON(f, snHead+"  dependencies: [{name: d, eventSourceName: es, eventName: e, filters: {data: [{path: body.n, type: number, comparator: '>=', value: ['1']}], exprs: [{expr: 'a == 1', fields: [{name: a, path: body.a}]}], time: {start: '01:00:00', stop: '02:00:00'}}}]\n"+
		"  triggers: [{template: {name: t, argoWorkflow: {operation: submit, source: {resource: {"+wfRes+"}}}}}]\n"))
	f.Add(toJSON(f, snHead+okDeps+"  triggers: [{template: {name: t, k8s: {source: {resource: {"+wfRes+"}}}}, retryStrategy: {steps: 3, duration: 1s, factor: 2, jitter: '0.5'}, rateLimit: {unit: Minute, requestsPerUnit: 10},"+
		" policy: {k8s: {labels: {done: 'yes'}, backoff: {duration: 1000000, steps: 2}, errorOnBackoffTimeout: true}, status: {allow: [200]}}}]\n"))
	f.Add(toJSON(f, snHead+okDeps+"  triggers: [{template: {name: t, http: {url: 'https://x/y', method: PUT, headers: {A: b}, secureHeaders: [{name: C, valueFrom: {configMapKeyRef: {name: c, key: k}}}],"+
		" basicAuth: {password: {name: s, key: p}}, tls: {caCertSecret: {name: s, key: ca}}, timeout: 5, payload: [{src: {dependencyName: d}}], dynamicHeaders: [{src: {dependencyName: d, dataKey: a}, dest: X-A}]}},"+
		" policy: {status: {allow: [200, 204]}}}, {template: {name: l, log: {intervalSeconds: 3}}},"+
		" {template: {name: n1, nats: {url: 'nats://h:4222', subject: a.b, payload: [{src: {dependencyName: d}, dest: x}], auth: {nkey: {name: s, key: k}}}}},"+
		" {template: {name: w, argoWorkflow: {operation: submit-from, source: {resource: {apiVersion: argoproj.io/v1alpha1, kind: WorkflowTemplate, metadata: {name: t}}}}}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSensor(data)
		if err != nil {
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("refusal names no field: %v", err)
			}
			return
		}
		bus := &busConn{root: busRoot("ns", "default")}
		cs, err := compileSensor(s, bus)
		if err != nil {
			t.Fatalf("valid sensor does not compile: %v", err)
		}
		deps := map[string]bool{}
		for _, d := range s.Spec.Dependencies {
			deps[d.Name] = true
		}
		for _, tr := range cs.triggers {
			for n := range tr.deps {
				if !deps[n] {
					t.Fatalf("trigger %s waits for %q, not a dependency", tr.t.Template.Name, n)
				}
			}
			tr.satisfied()
			if tr.run == nil || tr.run.retry.steps < 1 {
				t.Fatalf("trigger %s runs no attempt: %+v", tr.t.Template.Name, tr.run)
			}
		}
	})
}

// FuzzBuildPayload: a body built from an event's data (anything a webhook sender chose) and
// a parameter's keys is JSON when it sets a dest, is bounded, and never panics; a missing key
// is an error naming the parameter.
func FuzzBuildPayload(f *testing.F) {
	f.Add([]byte(`{"body":{"a":"x","n":[1,{"b":2}]}}`), "body.a", "message", false)
	f.Add([]byte(`{"body":{"a":"x","n":[1,{"b":2}]}}`), "body.n", "meta.list", true)
	f.Add([]byte(`"just a string"`), "", "a.b.0", true)
	f.Add([]byte(`{"a":{"b":"c"}}`), "a|@reverse", "x\\.y", false)
	f.Fuzz(func(t *testing.T, data []byte, key, dest string, raw bool) {
		if len(dest) > 1000 || len(key) > 1000 {
			return
		}
		evs := map[string]*Event{"d": {Data: data}}
		ps := []TriggerParameter{{Src: &TriggerParameterSource{DependencyName: "d", DataKey: key, UseRawData: raw}, Dest: dest},
			{Src: &TriggerParameterSource{DependencyName: "d", DataKey: key, Value: &key}, Dest: "fixed"}}
		out, err := buildPayload("payload", ps, evs)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "payload[") {
				t.Fatalf("error names no parameter: %v", err)
			}
			return
		}
		if len(out) > maxPayloadBytes {
			t.Fatalf("payload of %d bytes", len(out))
		}
		if dest != "" && json.Valid(data) && !json.Valid(out) {
			t.Fatalf("payload %q is not JSON (data %q, key %q, dest %q)", out, data, key, dest)
		}
	})
}

// FuzzLastTick: the last tick kept in a ConfigMap (anyone who may write the ConfigMap writes
// it) reads as a time or is refused; never a panic, and what is read prints back to the same
// instant.
func FuzzLastTick(f *testing.F) {
	for _, v := range []string{
		`{"eventTime":"2026-11-28 05:00:01.0000005 +0100 CET m=+683.567066901","metadata":{"a":"b"}}`,
		`{"eventTime":"2026-11-28 05:00:01 +0000 UTC"}`,
		`{"eventTime":""}`, `{}`, `null`, `x`,
	} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := parseLastTick(v)
		if err != nil {
			return
		}
		again, err := time.Parse(lastTickLayout, got.Format(lastTickLayout))
		if err != nil || !again.Equal(got) {
			t.Fatalf("%q read as %v, which reads back as %v, %v", v, got, again, err)
		}
	})
}
