package events_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/events"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/s3env"
)

// recordSensor is a Sensor named name whose trigger creates a ConfigMap (generateName
// seen-<name>-, labelled with the Sensor) with data.a and data.b from the event's data at
// pathA and pathB, on event eventName of EventSource source.
func recordSensor(name, source, eventName, pathA, pathB string) string {
	return fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: %[1]s}
spec:
  template: {serviceAccountName: trigger}
  dependencies: [{name: d, eventSourceName: %[2]s, eventName: %[3]s}]
  triggers:
  - template:
      name: record
      k8s:
        operation: create
        source:
          resource:
            apiVersion: v1
            kind: ConfigMap
            metadata: {generateName: seen-%[1]s-}
            data: {a: unset, b: unset}
        parameters:
        - {src: {dependencyName: d, dataKey: '%[4]s'}, dest: data.a}
        - {src: {dependencyName: d, dataKey: '%[5]s'}, dest: data.b}
`, name, source, eventName, pathA, pathB)
}

// seen is what the Sensor's trigger recorded: data a and b of its ConfigMaps.
func (e *env) seen(sensor string) [][2]string {
	l, err := e.c.Client.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "events.argoproj.io/sensor=" + sensor})
	if err != nil {
		e.t.Fatal(err)
	}
	var out [][2]string
	for _, cm := range l.Items {
		out = append(out, [2]string{cm.Data["a"], cm.Data["b"]})
	}
	return out
}

func (e *env) waitSeen(sensor, a, b string) {
	e.t.Helper()
	e.waitFor(sensor+" records "+a+" "+b, 30*time.Second, func() (bool, string) {
		got := e.seen(sensor)
		for _, s := range got {
			if s[0] == a && s[1] == b {
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})
}

func (e *env) exoticBus() {
	e.create(events.EventBusResource, "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec: {jetstreamExotic: {url: '"+e.natsURL+"'}}\n")
	e.waitCondition(events.EventBusResource, "default", events.CondDeployed, "True")
}

func (e *env) secret(name string, data map[string]string) {
	e.t.Helper()
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitListeners waits until n listeners run in the controller (its test hook).
func (e *env) waitListeners(n int64) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%d listeners", n), 30*time.Second, func() (bool, string) {
		got := e.ctrl.Listeners()
		return got == n, fmt.Sprint(got)
	})
}

func (e *env) deleteSource(name string) {
	e.t.Helper()
	if err := e.c.Dynamic.Resource(events.EventSourcesResource).Namespace(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// TestResourceSourceToTrigger: a ConfigMap created in the namespace → the resource
// EventSource (watching as its service account, labels and prefix filtering) → a Sensor's
// trigger records the event's type and the object's name; the source stops when changed and
// when deleted, its goroutines gone.
func TestResourceSourceToTrigger(t *testing.T) {
	e := newEnv(t)
	e.exoticBus()
	// The EventSource's service account may watch ConfigMaps in the namespace.
	_, err := e.c.Client.RbacV1().Roles(e.ns).Create(e.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "watcher"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.Client.RbacV1().RoleBindings(e.ns).Create(e.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "watcher"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "watcher"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "watcher", Namespace: e.ns}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.create(events.SensorsResource, recordSensor("cms", "cms", "inputs", "type", "body.metadata.name"))
	e.waitCondition(events.SensorsResource, "cms", events.CondDeployed, "True")
	source := func(types string) string {
		return fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: cms}
spec:
  template: {serviceAccountName: watcher}
  resource:
    inputs:
      namespace: %s
      version: v1
      resource: configmaps
      eventTypes: [%s]
      filter:
        prefix: input-
        labels: [{key: app, value: input}]
        fields: [{key: data.mode, operation: '!=', value: '^skip$'}]
`, e.ns, types)
	}
	e.create(events.EventSourcesResource, source("ADD"))
	e.waitCondition(events.EventSourcesResource, "cms", events.CondDeployed, "True")
	e.waitListeners(1)
	cm := func(name string, labels map[string]string, mode string) {
		t.Helper()
		if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Data: map[string]string{"mode": mode}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	input := map[string]string{"app": "input"}
	cm("input-unlabelled", nil, "go")
	cm("input-skipped", input, "skip")
	cm("other-1", input, "go")
	cm("input-1", input, "go")
	e.waitSeen("cms", "ADD", "input-1")
	if got := e.seen("cms"); len(got) != 1 {
		t.Errorf("recorded %v, want only input-1 (the others are filtered out)", got)
	}

	// Changed to watch updates: the old watch stops, the new one sends UPDATE.
	u, err := e.c.Dynamic.Resource(events.EventSourcesResource).Namespace(e.ns).Get(e.ctx, "cms", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructuredSet(u.Object, []any{"UPDATE"}, "spec", "resource", "inputs", "eventTypes")
	if _, err := e.c.Dynamic.Resource(events.EventSourcesResource).Namespace(e.ns).Update(e.ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitListeners(1)
	// The new watch is running once an update reaches it: update until one does.
	e.waitFor("an UPDATE event", 30*time.Second, func() (bool, string) {
		c, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(e.ctx, "input-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c.Data["n"] = strconv.FormatInt(time.Now().UnixNano(), 10)
		_, _ = e.c.Client.CoreV1().ConfigMaps(e.ns).Update(e.ctx, c, metav1.UpdateOptions{})
		for _, s := range e.seen("cms") {
			if s[0] == "UPDATE" && s[1] == "input-1" {
				return true, ""
			}
		}
		return false, fmt.Sprint(e.seen("cms"))
	})
	cm("input-2", input, "go") // an ADD: no longer watched
	e.deleteSource("cms")
	e.waitListeners(0)
	for _, s := range e.seen("cms") {
		if s[1] == "input-2" {
			t.Errorf("an ADD was recorded after the source stopped watching ADD: %v", s)
		}
	}
}

func unstructuredSet(obj map[string]any, v any, path ...string) error {
	m := obj
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			return fmt.Errorf("no %s", p)
		}
		m = next
	}
	m[path[len(path)-1]] = v
	return nil
}

// TestNATSSourceToTrigger: a message on the test NATS's subject → the nats EventSource (JSON
// body) → a Sensor's trigger records its subject and a body field.
func TestNATSSourceToTrigger(t *testing.T) {
	e := newEnv(t)
	e.exoticBus()
	subject := "freshet-test." + e.ns + ".orders"
	e.create(events.SensorsResource, recordSensor("orders", "msgs", "orders", "subject", "body.id"))
	e.waitCondition(events.SensorsResource, "orders", events.CondDeployed, "True")
	e.create(events.EventSourcesResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: msgs}
spec:
  nats:
    orders: {url: '%s', subject: '%s.*', jsonBody: true, queue: freshet, filter: {expression: 'body.id != "skip"'}}
`, e.natsURL, subject))
	e.waitCondition(events.EventSourcesResource, "msgs", events.CondDeployed, "True")
	e.waitListeners(1)
	nc, err := nats.Connect(e.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The subscription is made when the listener connects: publish until it is seen.
	e.waitFor("the message recorded", 30*time.Second, func() (bool, string) {
		_ = nc.Publish(subject+".new", []byte(`{"id":"skip"}`))
		_ = nc.Publish(subject+".new", []byte(`{"id":"o-42"}`))
		_ = nc.Flush()
		got := e.seen("orders")
		for _, s := range got {
			if s == [2]string{subject + ".new", "o-42"} {
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})
	for _, s := range e.seen("orders") {
		if s[1] == "skip" {
			t.Errorf("the source filter let %v through", s)
		}
	}
	e.deleteSource("msgs")
	e.waitListeners(0)
}

// natsServer runs a NATS server (the real one, in-process) with token auth on port.
func natsServer(t *testing.T, port int, token string) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, Authorization: token, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	return s
}

// TestNATSSourceReconnects: the nats source authenticates with a token from a Secret; when
// its server goes away and comes back it connects again and subscribes again, its status
// (SourcesConnected) False meanwhile; deleted, it stops.
func TestNATSSourceReconnects(t *testing.T) {
	e := newEnv(t)
	e.exoticBus()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	srv := natsServer(t, port, "tok-123")
	t.Cleanup(func() { srv.Shutdown() })
	e.secret("nats", map[string]string{"token": "tok-123"})
	e.create(events.SensorsResource, recordSensor("pings", "remote", "pings", "subject", "body"))
	e.waitCondition(events.SensorsResource, "pings", events.CondDeployed, "True")
	e.create(events.EventSourcesResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: remote}
spec:
  nats:
    pings: {url: 'nats://127.0.0.1:%d', subject: pings, auth: {token: {name: nats, key: token}}}
`, port))
	e.waitCondition(events.EventSourcesResource, "remote", events.CondDeployed, "True")
	publishUntil := func(body, b64 string) {
		t.Helper()
		nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port), nats.Token("tok-123"))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		e.waitFor("message "+body+" recorded", 45*time.Second, func() (bool, string) {
			_ = nc.Publish("pings", []byte(body))
			_ = nc.Flush()
			got := e.seen("pings")
			for _, s := range got {
				if s == [2]string{"pings", b64} {
					return true, ""
				}
			}
			return false, fmt.Sprint(got)
		})
	}
	publishUntil("one", "b25l") // base64: the body is bytes without jsonBody, as in Argo
	e.waitCondition(events.EventSourcesResource, "remote", events.CondSourcesConnected, "True")
	srv.Shutdown()
	srv.WaitForShutdown()
	// The status says which source lost its server, and that it connects again.
	msg := e.waitCondition(events.EventSourcesResource, "remote", events.CondSourcesConnected, "False")
	if !strings.Contains(msg, "spec.nats.pings") {
		t.Errorf("SourcesConnected message %q", msg)
	}
	srv = natsServer(t, port, "tok-123")
	publishUntil("two", "dHdv")
	e.waitCondition(events.EventSourcesResource, "remote", events.CondSourcesConnected, "True")
	e.deleteSource("remote")
	e.waitListeners(0)
	e.waitFor("the source's connection closed", 10*time.Second, func() (bool, string) {
		n := srv.NumClients()
		return n == 0, fmt.Sprint(n, " clients")
	})
}

// TestMinioSourceToTrigger: an object put in a bucket of a real MinIO → the minio EventSource
// (keys from a Secret, prefix and suffix filter) → a Sensor's trigger records the event name
// and the object's key.
func TestMinioSourceToTrigger(t *testing.T) {
	s3 := s3env.Start(t, s3env.Options{})
	s3.Bucket(t, "uploads")
	e := newEnv(t)
	e.exoticBus()
	e.secret("s3", map[string]string{"access": s3.AccessKey, "secret": s3.SecretKey})
	e.create(events.SensorsResource, recordSensor("uploads", "bucket", "csv", "notification.0.eventName", "notification.0.s3.object.key"))
	e.waitCondition(events.SensorsResource, "uploads", events.CondDeployed, "True")
	e.create(events.EventSourcesResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: bucket}
spec:
  minio:
    csv:
      endpoint: '%s'
      insecure: true
      bucket: {name: uploads}
      events: ['s3:ObjectCreated:*']
      filter: {prefix: in/, suffix: .csv}
      accessKey: {name: s3, key: access}
      secretKey: {name: s3, key: secret}
`, s3.Endpoint))
	e.waitCondition(events.EventSourcesResource, "bucket", events.CondDeployed, "True")
	e.waitListeners(1)
	cl := s3.Client(t)
	put := func(key string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := cl.PutObject(ctx, "uploads", key, bytes.NewReader([]byte("a,b\n")), 4, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The listen request is made when the listener connects: put until one is seen.
	n := 0
	e.waitFor("a notification recorded", 30*time.Second, func() (bool, string) {
		put("out/skip.csv")
		n++
		put("in/data-" + strconv.Itoa(n) + ".csv")
		got := e.seen("uploads")
		for _, s := range got {
			if s[0] == "s3:ObjectCreated:Put" && strings.HasPrefix(s[1], "in/data-") {
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})
	for _, s := range e.seen("uploads") {
		if !strings.HasPrefix(s[1], "in/") {
			t.Errorf("the filter let %v through", s)
		}
	}
	e.deleteSource("bucket")
	e.waitListeners(0)
}

// TestRedisSourceToTrigger (FRESHET_TEST_REDIS=1: the Redis at 127.0.0.1:6379, or
// FRESHET_TEST_REDIS_ADDR): a message published on a channel → the redis EventSource (JSON
// body) → a Sensor's trigger records its channel and a body field; deleted, the source stops.
func TestRedisSourceToTrigger(t *testing.T) {
	if os.Getenv("FRESHET_TEST_REDIS") != "1" {
		t.Skip("needs FRESHET_TEST_REDIS=1 and a Redis (127.0.0.1:6379 or FRESHET_TEST_REDIS_ADDR)")
	}
	addr := os.Getenv("FRESHET_TEST_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	e := newEnv(t)
	e.exoticBus()
	channel := "freshet-test." + e.ns
	e.create(events.SensorsResource, recordSensor("jobs", "cache", "jobs", "channel", "body.job"))
	e.waitCondition(events.SensorsResource, "jobs", events.CondDeployed, "True")
	e.create(events.EventSourcesResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: cache}
spec:
  redis:
    jobs: {hostAddress: '%s', channels: ['%s'], jsonBody: true}
`, addr, channel))
	e.waitCondition(events.EventSourcesResource, "cache", events.CondDeployed, "True")
	e.waitListeners(1)
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	e.waitFor("the message recorded", 30*time.Second, func() (bool, string) {
		if err := rc.Publish(e.ctx, channel, `{"job":"j-7"}`).Err(); err != nil {
			return false, err.Error()
		}
		got := e.seen("jobs")
		for _, s := range got {
			if s == [2]string{channel, "j-7"} {
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})
	e.deleteSource("cache")
	e.waitListeners(0)
	e.waitFor("the subscription gone", 10*time.Second, func() (bool, string) {
		n, err := rc.PubSubNumSub(e.ctx, channel).Result()
		return err == nil && n[channel] == 0, fmt.Sprint(n, err)
	})
}

// TestMQTTSourceToTrigger (FRESHET_TEST_MQTT=1: the Mosquitto at 127.0.0.1:1883, or
// FRESHET_TEST_MQTT_URL): a message published on a topic → the mqtt EventSource (JSON body,
// wildcard topic) → a Sensor's trigger records its topic and a body field; deleted, it stops.
func TestMQTTSourceToTrigger(t *testing.T) {
	if os.Getenv("FRESHET_TEST_MQTT") != "1" {
		t.Skip("needs FRESHET_TEST_MQTT=1 and an MQTT broker (tcp://127.0.0.1:1883 or FRESHET_TEST_MQTT_URL)")
	}
	broker := os.Getenv("FRESHET_TEST_MQTT_URL")
	if broker == "" {
		broker = "tcp://127.0.0.1:1883"
	}
	e := newEnv(t)
	e.exoticBus()
	topic := "freshet-test/" + e.ns + "/readings"
	e.create(events.SensorsResource, recordSensor("readings", "broker", "readings", "topic", "body.v"))
	e.waitCondition(events.SensorsResource, "readings", events.CondDeployed, "True")
	e.create(events.EventSourcesResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: broker}
spec:
  mqtt:
    readings: {url: '%s', topic: 'freshet-test/%s/+', clientId: 'freshet-%s', jsonBody: true}
`, broker, e.ns, e.ns))
	e.waitCondition(events.EventSourcesResource, "broker", events.CondDeployed, "True")
	e.waitListeners(1)
	pub := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(broker).SetClientID("freshet-pub-" + e.ns))
	if tok := pub.Connect(); tok.WaitTimeout(10*time.Second) && tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer pub.Disconnect(100)
	e.waitFor("the message recorded", 30*time.Second, func() (bool, string) {
		pub.Publish(topic, 0, false, `{"v":"21.5"}`).WaitTimeout(5 * time.Second)
		got := e.seen("readings")
		for _, s := range got {
			if s == [2]string{topic, "21.5"} {
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})
	e.deleteSource("broker")
	e.waitListeners(0)
}

// TestListenerURLPolicy: with the operator's policy of a hosted runtime (public addresses
// only), a nats source whose url reaches loopback is refused in its status, naming the field,
// and nothing of it runs.
func TestListenerURLPolicy(t *testing.T) {
	// The test's bus is at 127.0.0.1 (the policy checks an EventBus's URL too); the source's
	// 127.0.0.2 is loopback as well, and refused.
	strict, err := netpolicy.Options{PrivateNetworks: []string{"127.0.0.1/32"}}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *events.Options) { o.Policy = strict })
	e.exoticBus()
	e.create(events.EventSourcesResource, `
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: inside}
spec:
  nats:
    orders: {url: 'nats://127.0.0.2:4222', subject: orders}
`)
	msg := e.waitCondition(events.EventSourcesResource, "inside", events.CondSourcesProvided, "False")
	if !strings.Contains(msg, "spec.nats.orders.url") || !strings.Contains(msg, "loopback") {
		t.Errorf("SourcesProvided message %q", msg)
	}
	if n := e.ctrl.Listeners(); n != 0 {
		t.Errorf("%d listeners run for a refused source", n)
	}
}
