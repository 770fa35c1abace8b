package events

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/notification"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

const resourceES = esHead + `  template: {serviceAccountName: watcher}
  resource:
    cm:
      namespace: ci
      version: v1
      resource: configmaps
      eventTypes: [ADD, UPDATE]
      filter:
        prefix: build-
        labels: [{key: app, value: web}, {key: tier, operation: in, value: 'a,b'}, {key: gone, operation: '!'}]
        fields: [{key: data.mode, value: '^fast$'}, {key: metadata.namespace, operation: '!=', value: '^kube-'}]
        createdBy: '2030-01-01T00:00:00Z'
  nats:
    nn: {url: 'nats://127.0.0.1:4222', subject: 'orders.>', jsonBody: true, queue: q, auth: {token: {name: s, key: k}}, filter: {expression: 'body.x == 1'}}
  minio:
    m: {endpoint: '127.0.0.1:9000', insecure: true, bucket: {name: uploads}, events: ['s3:ObjectCreated:*'], filter: {prefix: in/, suffix: .csv}, accessKey: {name: s, key: a}, secretKey: {name: s, key: b}}
`

// TestListenersDecode: Argo's fields of the resource, nats and minio sources decode and
// compile; the label selector is the watch's, the other filters the source's own.
func TestListenersDecode(t *testing.T) {
	es, err := DecodeEventSource(toJSON(t, resourceES))
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := buildSource(es)
	if err != nil {
		t.Fatal(err)
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(toJSON(t, resourceES)); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, ev := range EventSourceSummary(&u).Events {
		listed = append(listed, ev.Type+"/"+ev.Name)
	}
	if strings.Join(listed, " ") != "minio/m nats/nn resource/cm" {
		t.Errorf("listed %v", listed)
	}
	if len(run.listeners) != 3 {
		t.Fatalf("%d listeners, want 3", len(run.listeners))
	}
	var w *resourceWatch
	for _, l := range run.listeners {
		if l.resource != nil {
			w = l.resource
			if l.sa != "watcher" {
				t.Errorf("service account %q", l.sa)
			}
		}
	}
	if w == nil || w.labels != "app=web,!gone,tier in (a,b)" {
		t.Errorf("label selector %q", w.labels)
	}
	obj := func(name, ns, mode string, created time.Time) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"mode": mode}}}
		u.SetCreationTimestamp(metav1.NewTime(created))
		return u
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		u    *unstructured.Unstructured
		want bool
	}{
		{obj("build-1", "ci", "fast", now), true},
		{obj("deploy-1", "ci", "fast", now), false},                 // prefix
		{obj("build-2", "ci", "slow", now), false},                  // field
		{obj("build-3", "kube-system", "fast", now), false},         // != field
		{obj("build-4", "ci", "fast", now.AddDate(5, 0, 0)), false}, // createdBy
	} {
		if got := w.passes("ADD", tc.u, now, now); got != tc.want {
			t.Errorf("%s/%s: passes = %v, want %v", tc.u.GetNamespace(), tc.u.GetName(), got, tc.want)
		}
	}
	w.after = true
	if w.passes("ADD", obj("build-5", "ci", "fast", now.Add(-time.Minute)), now, now) {
		t.Error("afterStart let an object created before the start through")
	}
	if !w.passes("ADD", obj("build-6", "ci", "fast", now.Add(time.Minute)), now, now) {
		t.Error("afterStart dropped an object created after the start")
	}
}

// TestListenerRefusals: a bad resource, nats or minio source is refused naming the field.
func TestListenerRefusals(t *testing.T) {
	for _, tc := range []struct{ name, doc, field, want string }{
		{"no version", "  resource: {r: {resource: configmaps, eventTypes: [ADD]}}\n", "spec.resource.r.version", "is required"},
		{"bad version", "  resource: {r: {version: '1', resource: configmaps, eventTypes: [ADD]}}\n", "spec.resource.r.version", "not an API version"},
		{"bad resource", "  resource: {r: {version: v1, resource: ConfigMap, eventTypes: [ADD]}}\n", "spec.resource.r.resource", "plural in lower case"},
		{"bad type", "  resource: {r: {version: v1, resource: configmaps, eventTypes: [CREATE]}}\n", "spec.resource.r.eventTypes[0]", "ADD, UPDATE or DELETE"},
		{"no types", "  resource: {r: {version: v1, resource: configmaps}}\n", "spec.resource.r.eventTypes", "is required"},
		{"bad label", "  resource: {r: {version: v1, resource: configmaps, eventTypes: [ADD], filter: {labels: [{key: a, operation: '~', value: b}]}}}\n", "spec.resource.r.filter.labels[0]", "not a label requirement"},
		{"bad field re", "  resource: {r: {version: v1, resource: configmaps, eventTypes: [ADD], filter: {fields: [{key: a, value: '('}]}}}\n", "spec.resource.r.filter.fields[0].value", "regular expression"},
		{"bad field op", "  resource: {r: {version: v1, resource: configmaps, eventTypes: [ADD], filter: {fields: [{key: a, operation: in, value: b}]}}}\n", "spec.resource.r.filter.fields[0].operation", "=, == or !="},
		{"bad createdBy", "  resource: {r: {version: v1, resource: configmaps, eventTypes: [ADD], filter: {createdBy: yesterday}}}\n", "spec.resource.r.filter.createdBy", "RFC 3339"},
		{"bad sa", "  template: {serviceAccountName: 'A B'}\n  resource: {r: {version: v1, resource: configmaps, eventTypes: [ADD]}}\n", "spec.template.serviceAccountName", "service account"},
		{"nats url", "  nats: {nn: {url: 'http://u:pw@x:4222', subject: a}}\n", "spec.nats.nn.url", "xxxxx"},
		{"nats subject", "  nats: {nn: {url: 'nats://x:4222', subject: 'a b'}}\n", "spec.nats.nn.subject", "not a NATS subject"},
		{"nats wildcard", "  nats: {nn: {url: 'nats://x:4222', subject: 'a.>.b'}}\n", "spec.nats.nn.subject", "'>' the last"},
		{"nats queue", "  nats: {nn: {url: 'nats://x:4222', subject: a, queue: ''}}\n", "spec.nats.nn.queue", "queue group"},
		{"nats two auths", "  nats: {nn: {url: 'nats://x:4222', subject: a, auth: {token: {name: s, key: k}, nkey: {name: s, key: k}}}}\n", "spec.nats.nn.auth", "exactly one"},
		{"nats basic", "  nats: {nn: {url: 'nats://x:4222', subject: a, auth: {basic: {username: {name: s, key: u}}}}}\n", "spec.nats.nn.auth.basic", "password"},
		{"nats filter with auth", "  nats: {nn: {url: 'nats://x:4222', subject: a, auth: {token: {name: s, key: k}}, filter: {expression: 'body.x =='}}}\n", "spec.nats.nn.filter.expression", "body.x"},
		{"nats tls half", "  nats: {nn: {url: 'nats://x:4222', subject: a, tls: {clientCertSecret: {name: s, key: c}}}}\n", "spec.nats.nn.tls", "both"},
		{"minio scheme", "  minio: {m: {endpoint: 'http://x:9000', bucket: {name: b1b}, accessKey: {name: s, key: a}, secretKey: {name: s, key: b}}}\n", "spec.minio.m.endpoint", "no scheme"},
		{"minio bucket", "  minio: {m: {endpoint: 'x:9000', bucket: {name: B}, accessKey: {name: s, key: a}, secretKey: {name: s, key: b}}}\n", "spec.minio.m.bucket.name", "not a bucket name"},
		{"minio key", "  minio: {m: {endpoint: 'x:9000', bucket: {name: b1b}, secretKey: {name: s, key: b}}}\n", "spec.minio.m.accessKey", "is required"},
		{"minio event", "  minio: {m: {endpoint: 'x:9000', bucket: {name: b1b}, events: [put], accessKey: {name: s, key: a}, secretKey: {name: s, key: b}}}\n", "spec.minio.m.events[0]", "s3:ObjectCreated"},
		{"redis host", "  redis: {r: {hostAddress: 'redis://x:6379', channels: [a]}}\n", "spec.redis.r.hostAddress", "host:port"},
		{"redis channels", "  redis: {r: {hostAddress: 'x:6379'}}\n", "spec.redis.r.channels", "is required"},
		{"redis db", "  redis: {r: {hostAddress: 'x:6379', db: -1, channels: [a]}}\n", "spec.redis.r.db", "0 or more"},
		{"mqtt url", "  mqtt: {q: {url: 'ws://x:1883', topic: a, clientId: c}}\n", "spec.mqtt.q.url", "websockets"},
		{"mqtt topic", "  mqtt: {q: {url: 'tcp://x:1883', topic: 'a/#/b', clientId: c}}\n", "spec.mqtt.q.topic", "last level"},
		{"mqtt plus", "  mqtt: {q: {url: 'tcp://x:1883', topic: 'a/b+', clientId: c}}\n", "spec.mqtt.q.topic", "whole level"},
		{"mqtt client", "  mqtt: {q: {url: 'tcp://x:1883', topic: a}}\n", "spec.mqtt.q.clientId", "is required"},
		{"same name", "  calendar: {x: {interval: 10s}}\n  nats: {x: {url: 'nats://h:4222', subject: a}}\n", "spec.nats.x", "unique"},
		{"nats backoff", "  nats: {nb: {url: 'nats://h:4222', subject: a, connectionBackoff: {steps: -1}}}\n", "spec.nats.nb.connectionBackoff.steps", "between 1 and"},
		{"mqtt backoff", "  mqtt: {q: {url: 'tcp://x:1883', topic: a, clientId: c, connectionBackoff: {duration: soon}}}\n", "spec.mqtt.q.connectionBackoff.duration", "not a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeEventSource(toJSON(t, esHead+tc.doc))
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

// TestListenerPolicy: the nats and minio servers are checked against the operator's policy
// for tenants' URLs, naming the field.
func TestListenerPolicy(t *testing.T) {
	es, err := DecodeEventSource(toJSON(t, resourceES))
	if err != nil {
		t.Fatal(err)
	}
	strict, err := netpolicy.Options{}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	err = checkPolicy(strict, &es.Spec)
	var fe *errdefs.FieldError
	if !errors.As(err, &fe) || fe.Field != "spec.nats.nn.url" || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("nats: err = %v", err)
	}
	delete(es.Spec.NATS, "nn")
	if err := checkPolicy(strict, &es.Spec); !errors.As(err, &fe) || fe.Field != "spec.minio.m.endpoint" {
		t.Errorf("minio: err = %v", err)
	}
	delete(es.Spec.Minio, "m")
	es.Spec.Redis = map[string]RedisSource{"r": {HostAddress: "10.0.0.1:6379", Channels: []string{"a"}}}
	if err := checkPolicy(strict, &es.Spec); !errors.As(err, &fe) || fe.Field != "spec.redis.r.hostAddress" || !strings.Contains(err.Error(), "private") {
		t.Errorf("redis: err = %v", err)
	}
	if err := checkPolicy(netpolicy.Unrestricted(), &es.Spec); err != nil {
		t.Errorf("unrestricted: %v", err)
	}
}

// TestEventDataShapes: the data of resource, nats and minio events is Argo's.
func TestEventDataShapes(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}}
	w := &resourceWatch{metadata: map[string]string{"k": "v"}}
	w.gvr.Version, w.gvr.Resource = "v1", "configmaps"
	b, err := resourceEventData("ADD", u, nil, w)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"ADD","body":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},"oldBody":null,"group":"","version":"v1","resource":"configmaps","metadata":{"k":"v"}}`; string(b) != want {
		t.Errorf("resource data\n%s\nwant\n%s", b, want)
	}
	b, err = natsEventData("orders.1", map[string][]string{"X": {"y"}}, []byte(`{"id":7}`), true, nil)
	if err != nil || string(b) != `{"subject":"orders.1","body":{"id":7},"header":{"X":["y"]}}` {
		t.Errorf("nats json data %s (%v)", b, err)
	}
	b, err = redisEventData("c", "", `{"a":1}`, true, nil)
	if err != nil || string(b) != `{"channel":"c","pattern":"","body":{"a":1}}` {
		t.Errorf("redis json data %s (%v)", b, err)
	}
	b, _ = redisEventData("c", "", "hi", false, nil)
	if string(b) != `{"channel":"c","pattern":"","body":"hi"}` {
		t.Errorf("redis string data %s", b)
	}
	b, err = mqttEventData("t/1", 3, []byte(`{"v":1}`), true, nil)
	if err != nil || string(b) != `{"topic":"t/1","messageId":3,"body":{"v":1}}` {
		t.Errorf("mqtt data %s (%v)", b, err)
	}
	b, _ = natsEventData("s", nil, []byte("hi"), false, nil)
	if string(b) != `{"subject":"s","body":"aGk="}` {
		t.Errorf("nats bytes data %s", b)
	}
	if _, err := natsEventData("s", nil, []byte("{not json"), true, nil); err == nil {
		t.Error("a jsonBody message that is not JSON was taken")
	}
	var info notification.Info
	_ = json.Unmarshal([]byte(`{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"k"}}}]}`), &info)
	b, id, err := minioEventData(info, nil)
	if err != nil || !strings.HasPrefix(string(b), `{"notification":[{"eventVersion":"","eventSource":"","awsRegion":"","eventTime":"","eventName":"s3:ObjectCreated:Put"`) || len(id) != 32 {
		t.Errorf("minio data %s id %s (%v)", b, id, err)
	}
}
