package events_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/events"
)

// TestDLQSlackAndKeptNATSOnCluster, on the loopback cluster and a real bus: a webhook event
// whose http trigger keeps failing (503) reaches the trigger's dlqTrigger, a nats trigger,
// with its data, and the Sensor says both; a nats Sensor publishes two events on one kept
// connection (the NATS server counts its clients) and a slack Sensor posts to the Slack API
// standing in on 127.0.0.1 with the token of its Secret; deleting the Sensors closes their
// connections.
func TestDLQSlackAndKeptNATSOnCluster(t *testing.T) {
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	dead, _ := nc.SubscribeSync("dead.letters")
	done, _ := nc.SubscribeSync("deploys.done")
	_ = nc.Flush()

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	t.Cleanup(failing.Close)
	var mu sync.Mutex
	var posts []map[string]any
	var auth []string
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		posts, auth = append(posts, m), append(auth, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.WriteString(w, `{"ok": true, "channel": "C1", "ts": "1.1"}`)
	}))
	t.Cleanup(slack.Close)

	e := newEnv(t, func(o *events.Options) { o.SlackAPI = slack.URL })
	e.webhookSetup()
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "slack"},
		StringData: map[string]string{"token": "xoxb-cluster"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	head := "apiVersion: argoproj.io/v1alpha1\nkind: Sensor\nmetadata: {name: NAME}\nspec:\n  dependencies: [{name: wh, eventSourceName: hook, eventName: wh}]\n  triggers:\n"
	sensor := func(name, triggers string) string { return strings.Replace(head, "NAME", name, 1) + triggers }
	e.create(events.SensorsResource, sensor("dlq", `  - template: {name: main, http: {url: '`+failing.URL+`'}}
    policy: {status: {allow: [200]}}
    retryStrategy: {steps: 2, duration: 10ms}
    atLeastOnce: true
    dlqTrigger:
      template:
        name: dead
        nats: {url: '`+srv.ClientURL()+`', subject: dead.letters, payload: [{src: {dependencyName: wh, dataKey: body.app}, dest: app}]}
`))
	e.create(events.SensorsResource, sensor("pub", `  - template:
      name: publish
      nats: {url: '`+srv.ClientURL()+`', subject: deploys.done, payload: [{src: {dependencyName: wh, dataKey: body.app}, dest: app}]}
`))
	e.create(events.SensorsResource, sensor("chat", `  - template:
      name: post
      slack: {slackToken: {name: slack, key: token}, channel: placeholder, message: deployed}
    parameters: [{src: {dependencyName: wh, dataTemplate: '#{{ .Input.body.app }}'}, dest: slack.channel}]
`))
	for _, n := range []string{"dlq", "pub", "chat"} {
		e.waitCondition(events.SensorsResource, n, events.CondDeployed, "True")
	}
	e.hook(`{"app":"shop"}`)
	if m, err := dead.NextMsg(30 * time.Second); err != nil || string(m.Data) != `{"app":"shop"}` {
		t.Fatalf("dead letter: %v (%v)", m, err)
	}
	msg := e.waitCondition(events.SensorsResource, "dlq", events.CondTriggered, "False")
	if !strings.Contains(msg, "after 2 attempts") || !strings.Contains(msg, "dlqTrigger dead ran: published") {
		t.Errorf("dlq: Triggered message %q", msg)
	}
	e.hook(`{"app":"cart"}`)
	for _, want := range []string{`{"app":"shop"}`, `{"app":"cart"}`} {
		if m, err := done.NextMsg(30 * time.Second); err != nil || string(m.Data) != want {
			t.Fatalf("published %v (%v), want %s", m, err, want)
		}
	}
	if _, err := dead.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("second dead letter: %v", err)
	}
	// The test's client, and one kept connection per Sensor publishing: pub and dlq's dead.
	if n := srv.NumClients(); n != 3 {
		t.Errorf("%d NATS clients after 4 publications, want 3", n)
	}
	e.waitFor("two slack posts", 30*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(posts) == 2, ""
	})
	mu.Lock()
	if posts[0]["channel"] != "shop" || posts[1]["channel"] != "cart" || posts[0]["text"] != "deployed" || auth[0] != "/chat.postMessage Bearer xoxb-cluster" {
		t.Errorf("slack posts %v, %v", posts, auth)
	}
	mu.Unlock()
	for _, n := range []string{"dlq", "pub", "chat"} {
		if err := e.c.Dynamic.Resource(events.SensorsResource).Namespace(e.ns).Delete(e.ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor("the Sensors' NATS connections closed", 30*time.Second, func() (bool, string) {
		return srv.NumClients() == 1, ""
	})
}
