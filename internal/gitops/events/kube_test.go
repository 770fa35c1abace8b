package events_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/gitops/events"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/tlog"
)

// TestMain stops the clusters, then the embedded NATS if the tests started one.
func TestMain(m *testing.M) {
	code := kube.Run(m)
	if err := containers.Teardown(); err != nil { // the real node's registry (bench_realnode_test.go)
		fmt.Fprintf(os.Stderr, "containers teardown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if embedded != nil {
		_ = embedded.Close()
		_ = os.RemoveAll(embeddedDir)
	}
	os.Exit(code)
}

// testNATS is the NATS with JetStream the tests use: FRESHET_TEST_NATS_URL, else the one at
// 127.0.0.1:4222, else a JetStream server embedded in the test process (internal/bus, on a
// random loopback port) — a real NATS in every case, never a double.
var testNATS = sync.OnceValues(func() (string, error) {
	url := os.Getenv("FRESHET_TEST_NATS_URL")
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	if nc, err := nats.Connect(url, nats.Timeout(2*time.Second)); err == nil {
		nc.Close()
		return url, nil
	}
	dir, err := os.MkdirTemp("", "events-nats-")
	if err != nil {
		return "", err
	}
	b, err := bus.Open(context.Background(), bus.Options{DataDir: dir, ListenLoopback: true}, nil)
	if err != nil {
		return "", err
	}
	embedded, embeddedDir = b, dir
	return b.ClientURL(), nil
})

// embedded is the NATS testNATS started, if it did, stopped by TestMain.
var (
	embedded    *bus.Bus
	embeddedDir string
)

type env struct {
	t    *testing.T
	c    *kube.Cluster
	ns   string
	ctrl *events.Controller
	srv  *httptest.Server
	js   jetstream.JetStream
	ctx  context.Context
	// natsURL is the test NATS (testNATS).
	natsURL string
}

// newEnv starts the events controller on the loopback cluster, watching one namespace, with
// the test NATS as the runtime's own, and serves its webhook handler on 127.0.0.1.
func newEnv(t *testing.T, opts ...func(*events.Options)) *env {
	t.Helper()
	return newEnvOn(t, kube.Shared(t), opts...)
}

// newEnvWith is newEnv with the runtime's network policy p (nil: unrestricted).
func newEnvWith(t *testing.T, p *netpolicy.Policy) *env {
	t.Helper()
	return newEnv(t, func(o *events.Options) { o.Policy = p })
}

// newEnvOn is newEnv on cluster c.
func newEnvOn(t *testing.T, c *kube.Cluster, opts ...func(*events.Options)) *env {
	t.Helper()
	natsURL, err := testNATS()
	if err != nil {
		t.Fatalf("no NATS with JetStream: %v", err)
	}
	nc, err := nats.Connect(natsURL, nats.Timeout(2*time.Second))
	if err != nil {
		t.Fatalf("NATS at %s: %v", natsURL, err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ns := c.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	if err := workflows.EnsureCRDs(ctx, c.Dynamic); err != nil {
		t.Fatal(err)
	}
	o := events.Options{Namespace: ns, Logger: slog.New(slog.NewTextHandler(tlog.New(t), nil)),
		NATS: func(context.Context) (*nats.Conn, error) { return nc, nil }}
	for _, f := range opts {
		f(&o)
	}
	ctrl, err := events.New(c.RESTConfig(), o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	srv := httptest.NewServer(ctrl.Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		_ = js.DeleteStream(dctx, "ARGOEVENTS_"+strings.ReplaceAll(ns, ".", "_")+"_default")
	})
	e := &env{t: t, c: c, ns: ns, ctrl: ctrl, srv: srv, js: js, ctx: ctx, natsURL: natsURL}
	e.waitFor("controller started", 60*time.Second, func() (bool, string) { return ctrl.Healthy(), "" })
	// The Sensor acts as its service account: this one may create Workflows and ConfigMaps.
	_, err = c.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "trigger"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflows"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "trigger"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "trigger"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "trigger", Namespace: ns}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) waitFor(what string, d time.Duration, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("timed out after %v waiting for %s; last: %s", d, what, last)
}

func (e *env) create(res schema.GroupVersionResource, y string) {
	e.t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		e.t.Fatal(err)
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(j); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Dynamic.Resource(res).Namespace(e.ns).Create(e.ctx, &u, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create %s: %v", u.GetName(), err)
	}
}

// condition is a resource's status condition of type typ: its status and message.
func (e *env) condition(res schema.GroupVersionResource, name, typ string) (string, string) {
	u, err := e.c.Dynamic.Resource(res).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return s, msg
		}
	}
	return "", fmt.Sprint(conds)
}

func (e *env) waitCondition(res schema.GroupVersionResource, name, typ, status string) string {
	e.t.Helper()
	var msg string
	e.waitFor(name+" "+typ+"="+status, 30*time.Second, func() (bool, string) {
		s, m := e.condition(res, name, typ)
		msg = m
		return s == status, s + " " + m
	})
	return msg
}

func (e *env) workflows() []unstructured.Unstructured {
	l, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

const secret = "It's a Secret to Everybody"

// push sends a GitHub push delivery signed with key.
func (e *env) push(path, key, delivery string, body []byte) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+events.PathPrefix+e.ns+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(body)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func pushBody(ref, after, repo string) []byte {
	b, _ := json.Marshal(map[string]any{"ref": ref, "before": strings.Repeat("0", 40), "after": after,
		"repository": map[string]any{"full_name": repo, "name": "app"}, "pusher": map[string]any{"name": "ann"}})
	return b
}

const githubSource = `
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: github}
spec:
  github:
    push:
      repositories: [{owner: acme, names: [app]}]
      webhook: {endpoint: /push, port: "12000", method: POST}
      events: [push]
      webhookSecret: {name: github, key: secret}
`

const buildSensor = `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: build}
spec:
  template: {serviceAccountName: trigger}
  dependencies:
  - name: main-push
    eventSourceName: github
    eventName: push
    filters:
      data:
      - {path: body.ref, type: string, value: ["^refs/heads/main$"]}
  triggers:
  - template:
      name: build
      k8s:
        operation: create
        source:
          resource:
            apiVersion: argoproj.io/v1alpha1
            kind: Workflow
            metadata: {generateName: build-}
            spec:
              entrypoint: main
              arguments:
                parameters:
                - {name: revision, value: unset}
                - {name: repo, value: unset}
              templates:
              - name: main
                container: {image: alpine, command: [echo, "{{workflow.parameters.revision}}"]}
        parameters:
        - src: {dependencyName: main-push, dataKey: body.after}
          dest: spec.arguments.parameters.0.value
        - src: {dependencyName: main-push, dataKey: body.repository.full_name}
          dest: spec.arguments.parameters.1.value
`

// setupGitHub creates the GitHub EventSource, its Secret, a native jetstream bus and the build
// Sensor, and waits until they run.
func (e *env) setupGitHub() { e.setupGitHubWith(buildSensor) }

// setupGitHubWith is setupGitHub with sensor (a Sensor named build) in place of buildSensor.
func (e *env) setupGitHubWith(sensor string) {
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "github"},
		StringData: map[string]string{"secret": secret}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.create(events.EventBusResource, "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec: {jetstream: {version: latest}}\n")
	e.create(events.EventSourcesResource, githubSource)
	e.create(events.SensorsResource, sensor)
	e.waitCondition(events.EventBusResource, "default", events.CondDeployed, "True")
	e.waitCondition(events.EventSourcesResource, "github", events.CondDeployed, "True")
	e.waitCondition(events.SensorsResource, "build", events.CondDeployed, "True")
}

// TestSignedWebhookToWorkflow: a signed GitHub push → the EventSource → JetStream → a Sensor
// whose data filter lets main through → a Workflow in the cluster with the payload's revision
// and repository as its parameters; a push to another branch, a wrong signature and a replay
// create nothing.
func TestSignedWebhookToWorkflow(t *testing.T) {
	e := newEnv(t)
	e.setupGitHub()
	// A second Sensor submits a Workflow from a WorkflowTemplate (argoWorkflow trigger).
	e.create(events.SensorsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: submit}
spec:
  template: {serviceAccountName: trigger}
  dependencies:
  - {name: push, eventSourceName: github, eventName: push, filters: {exprs: [{expr: 'ref == "refs/heads/main"', fields: [{name: ref, path: body.ref}]}]}}
  triggers:
  - template:
      name: from-template
      argoWorkflow:
        operation: submit
        source:
          resource:
            apiVersion: argoproj.io/v1alpha1
            kind: Workflow
            metadata: {generateName: from-template-}
            spec:
              workflowTemplateRef: {name: build-template}
              arguments: {parameters: [{name: revision, value: unset}]}
        parameters:
        - src: {dependencyName: push, dataKey: body.after}
          dest: spec.arguments.parameters.0.value
`)
	e.waitCondition(events.SensorsResource, "submit", events.CondDeployed, "True")

	// Refused before anything is published.
	if code, body := e.push("/github/push", "wrong secret", "d-0", pushBody("refs/heads/main", "bad", "acme/app")); code != http.StatusUnauthorized {
		t.Errorf("wrong signature: %d %s", code, body)
	}
	if code, body := e.push("/nope/push", secret, "d-0", pushBody("refs/heads/main", "bad", "acme/app")); code != http.StatusUnauthorized {
		t.Errorf("unknown event source: %d %s", code, body)
	}
	if code, body := e.push("/github/push", secret, "d-x", pushBody("refs/heads/main", "bad", "other/repo")); code != http.StatusOK || !strings.Contains(body, "ignored") {
		t.Errorf("another repository: %d %s", code, body)
	}
	// Published, then filtered out by the Sensor.
	if code, body := e.push("/github/push", secret, "d-1", pushBody("refs/heads/dev", "dev-sha", "acme/app")); code != http.StatusOK || !strings.Contains(body, "published") {
		t.Fatalf("dev push: %d %s", code, body)
	}
	sha := "3f2a9c0e1b7d4a5f6e8c9b0a1d2e3f4a5b6c7d8e"
	main := pushBody("refs/heads/main", sha, "acme/app")
	if code, body := e.push("/github/push", secret, "d-2", main); code != http.StatusOK || !strings.Contains(body, "published") {
		t.Fatalf("main push: %d %s", code, body)
	}
	if code, body := e.push("/github/push", secret, "d-3", main); code != http.StatusOK || !strings.Contains(body, "duplicate") {
		t.Errorf("replayed body: %d %s", code, body)
	}
	var wfs []unstructured.Unstructured
	e.waitFor("two workflows", 30*time.Second, func() (bool, string) {
		wfs = e.workflows()
		return len(wfs) >= 2, fmt.Sprint(len(wfs))
	})
	e.waitCondition(events.SensorsResource, "build", events.CondTriggered, "True")
	e.waitCondition(events.SensorsResource, "submit", events.CondTriggered, "True")
	// Each Sensor handles its events in stream order: the dev push came first, and the main
	// push made the one workflow of each Sensor there is.
	bySensor := map[string][]unstructured.Unstructured{}
	for _, w := range e.workflows() {
		s := w.GetLabels()["events.argoproj.io/sensor"]
		bySensor[s] = append(bySensor[s], w)
	}
	if len(bySensor["build"]) != 1 || len(bySensor["submit"]) != 1 || len(bySensor) != 2 {
		t.Fatalf("workflows by sensor %v, want one of build and one of submit (the dev push is filtered out)", bySensor)
	}
	sub := bySensor["submit"][0]
	if ref, _, _ := unstructured.NestedString(sub.Object, "spec", "workflowTemplateRef", "name"); ref != "build-template" {
		t.Errorf("submitted workflow's workflowTemplateRef %q", ref)
	}
	if ps, _, _ := unstructured.NestedSlice(sub.Object, "spec", "arguments", "parameters"); len(ps) != 1 || ps[0].(map[string]any)["value"] != sha {
		t.Errorf("submitted workflow's parameters %v", ps)
	}
	wf := bySensor["build"][0]
	params, _, _ := unstructured.NestedSlice(wf.Object, "spec", "arguments", "parameters")
	got := map[string]any{}
	for _, p := range params {
		m := p.(map[string]any)
		got[m["name"].(string)] = m["value"]
	}
	if got["revision"] != sha || got["repo"] != "acme/app" {
		t.Errorf("workflow %s parameters %v, want revision %s and repo acme/app", wf.GetName(), got, sha)
	}
	if !strings.HasPrefix(wf.GetName(), "build-") || wf.GetLabels()["events.argoproj.io/sensor"] != "build" {
		t.Errorf("workflow %s labels %v", wf.GetName(), wf.GetLabels())
	}
	// The workflow is valid for the workflow engine.
	data, _ := wf.MarshalJSON()
	if _, err := workflows.Decode(data); err != nil {
		t.Errorf("created workflow does not validate: %v", err)
	}
}

// TestInvalidSensorAndSource: a Sensor whose trigger template is invalid gets a condition
// naming the field, and no consumer is made on the bus; an EventSource without a secret is
// refused the same way, and its URL answers nothing.
func TestInvalidSensorAndSource(t *testing.T) {
	e := newEnv(t)
	e.create(events.EventBusResource, "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec: {jetstreamExotic: {url: '"+e.natsURL+"'}}\n")
	e.waitCondition(events.EventBusResource, "default", events.CondDeployed, "True")
	e.create(events.SensorsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: broken}
spec:
  dependencies: [{name: d, eventSourceName: github, eventName: push}]
  triggers:
  - template:
      name: build
      k8s:
        source:
          resource:
            apiVersion: argoproj.io/v1alpha1
            kind: Workflow
            metadata: {generateName: build-}
            spec:
              entrypoint: mian
              templates: [{name: main, container: {image: alpine, command: [echo]}}]
`)
	msg := e.waitCondition(events.SensorsResource, "broken", events.CondTriggersProvided, "False")
	want := `invalid spec: spec.triggers[0].template.k8s.source.resource.spec.entrypoint: "mian"`
	if !strings.HasPrefix(msg, want) {
		t.Errorf("message %q, want it to start with %q", msg, want)
	}
	if s, m := e.condition(events.SensorsResource, "broken", events.CondDeployed); s != "False" {
		t.Errorf("Deployed = %s %s, want False", s, m)
	}
	stream := "ARGOEVENTS_" + e.ns + "_default"
	if _, err := e.js.Consumer(e.ctx, stream, "sensor_"+e.ns+"_broken"); err == nil {
		t.Errorf("a consumer was made for an invalid Sensor")
	}
	e.create(events.EventSourcesResource, `
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: open}
spec:
  webhook:
    hook: {endpoint: /hook, method: POST, port: "12000"}
`)
	msg = e.waitCondition(events.EventSourcesResource, "open", events.CondSourcesProvided, "False")
	if !strings.Contains(msg, "spec.webhook.hook.authSecret: is required") {
		t.Errorf("message %q", msg)
	}
	resp, err := http.Post(e.srv.URL+events.PathPrefix+e.ns+"/open/hook", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the refused source's URL answered %d", resp.StatusCode)
	}
}

// TestCalendarCreatesResource: a calendar source with an interval fires through the bus, and a
// Sensor's k8s trigger creates a ConfigMap holding the event's time.
func TestCalendarCreatesResource(t *testing.T) {
	e := newEnv(t)
	e.create(events.EventBusResource, "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec: {jetstreamExotic: {url: '"+e.natsURL+"'}}\n")
	e.create(events.SensorsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: tick}
spec:
  template: {serviceAccountName: trigger}
  dependencies: [{name: t, eventSourceName: cal, eventName: every-second}]
  triggers:
  - template:
      name: record
      k8s:
        operation: create
        source:
          resource:
            apiVersion: v1
            kind: ConfigMap
            metadata: {generateName: tick-}
            data: {at: unset, team: unset}
        parameters:
        - src: {dependencyName: t, dataKey: eventTime}
          dest: data.at
        - src: {dependencyName: t, dataKey: metadata.team}
          dest: data.team
`)
	e.waitCondition(events.SensorsResource, "tick", events.CondDeployed, "True")
	// The same trigger as the default service account, which may create nothing.
	e.create(events.SensorsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: denied}
spec:
  dependencies: [{name: t, eventSourceName: cal, eventName: every-second}]
  triggers:
  - template:
      name: record
      k8s:
        source:
          resource: {apiVersion: v1, kind: ConfigMap, metadata: {generateName: denied-}}
`)
	e.waitCondition(events.SensorsResource, "denied", events.CondDeployed, "True")
	e.create(events.EventSourcesResource, `
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: cal}
spec:
  calendar:
    every-second: {interval: 1s, timezone: Europe/Berlin, metadata: {team: platform}}
`)
	e.waitCondition(events.EventSourcesResource, "cal", events.CondDeployed, "True")
	var cm corev1.ConfigMap
	e.waitFor("a ConfigMap from a calendar event", 30*time.Second, func() (bool, string) {
		l, err := e.c.Client.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "events.argoproj.io/sensor=tick"})
		if err != nil || len(l.Items) == 0 {
			return false, fmt.Sprint(err)
		}
		cm = l.Items[0]
		return true, ""
	})
	if cm.Data["team"] != "platform" || cm.Data["at"] == "unset" || cm.Data["at"] == "" {
		t.Errorf("configmap data %v", cm.Data)
	}
	msg := e.waitCondition(events.SensorsResource, "denied", events.CondTriggered, "False")
	if !strings.Contains(msg, "trigger record: create configmap/") || !strings.Contains(msg, "forbidden") {
		t.Errorf("denied sensor's Triggered message %q", msg)
	}
}

// TestProvidersAndWebhook: GitLab (token), Gitea and Bitbucket (signatures) and a plain webhook
// (bearer authSecret) each reach a Sensor whose condition takes any of them, and each creates a
// ConfigMap naming the event's type and a value of its body; unsigned deliveries are refused.
func TestProvidersAndWebhook(t *testing.T) {
	e := newEnv(t)
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hooks"},
		StringData: map[string]string{"secret": secret}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.create(events.EventBusResource, "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec: {jetstreamExotic: {url: '"+e.natsURL+"'}}\n")
	e.create(events.EventSourcesResource, `
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: git}
spec:
  gitlab:
    gl: {webhook: {endpoint: /gitlab}, projects: [acme/app], events: [PushEvents], secretToken: {name: hooks, key: secret}}
  gitea:
    gt: {webhook: {endpoint: /gitea}, events: [push], webhookSecret: {name: hooks, key: secret}}
  bitbucket:
    bb: {webhook: {endpoint: /bitbucket}, events: ["repo:push"], webhookSecret: {name: hooks, key: secret}}
  webhook:
    wh: {endpoint: /hook, method: POST, authSecret: {name: hooks, key: secret}}
`)
	e.create(events.SensorsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: any}
spec:
  template: {serviceAccountName: trigger}
  dependencies:
  - {name: gl, eventSourceName: git, eventName: gl}
  - {name: gt, eventSourceName: git, eventName: gt}
  - {name: bb, eventSourceName: git, eventName: bb}
  - {name: wh, eventSourceName: git, eventName: wh}
  triggers:
  - template:
      name: record
      conditions: "gl || gt || bb || wh"
      k8s:
        source:
          resource: {apiVersion: v1, kind: ConfigMap, metadata: {generateName: ev-}}
        parameters:
        # As in Argo, a parameter of a dependency without an event takes its value (default).
        - {src: {dependencyName: gl, dataKey: body.project.path_with_namespace, value: "-"}, dest: data.gl}
        - {src: {dependencyName: gt, dataKey: body.repository.full_name, value: "-"}, dest: data.gt}
        - {src: {dependencyName: bb, dataKey: body.repository.full_name, value: "-"}, dest: data.bb}
        - {src: {dependencyName: wh, dataKey: body.message, value: "-"}, dest: data.wh}
`)
	e.waitCondition(events.EventSourcesResource, "git", events.CondDeployed, "True")
	e.waitCondition(events.SensorsResource, "any", events.CondDeployed, "True")
	mac := func(body []byte) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	send := func(path string, body []byte, h map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+events.PathPrefix+e.ns+"/git"+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	gl := []byte(`{"object_kind":"push","project":{"id":7,"path_with_namespace":"acme/app"}}`)
	gt := []byte(`{"ref":"refs/heads/main","repository":{"full_name":"acme/gitea-app"}}`)
	bb := []byte(`{"push":{"changes":[]},"repository":{"full_name":"acme/bb-app"}}`)
	wh := []byte(`{"message":"hello"}`)
	for _, c := range []struct {
		name, path string
		body       []byte
		h          map[string]string
		want       int
	}{
		{"gitlab without token", "/gitlab", gl, map[string]string{"X-Gitlab-Event": "Push Hook"}, 401},
		{"gitea unsigned", "/gitea", gt, map[string]string{"X-Gitea-Event": "push"}, 401},
		{"bitbucket badly signed", "/bitbucket", bb, map[string]string{"X-Event-Key": "repo:push", "X-Hub-Signature": "sha256=" + mac(gl)}, 401},
		{"webhook without token", "/hook", wh, nil, 401},
		{"webhook wrong token", "/hook", wh, map[string]string{"Authorization": "Bearer nope"}, 401},
		{"gitlab", "/gitlab", gl, map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret}, 200},
		{"gitea", "/gitea", gt, map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": mac(gt)}, 200},
		{"bitbucket", "/bitbucket", bb, map[string]string{"X-Event-Key": "repo:push", "X-Hub-Signature": "sha256=" + mac(bb)}, 200},
		{"webhook", "/hook", wh, map[string]string{"Authorization": "Bearer " + secret}, 200},
	} {
		if code, body := send(c.path, c.body, c.h); code != c.want || (code == 200 && !strings.Contains(body, "published")) {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	want := map[string]bool{"acme/app": true, "acme/gitea-app": true, "acme/bb-app": true, "hello": true}
	e.waitFor("four ConfigMaps", 30*time.Second, func() (bool, string) {
		l, err := e.c.Client.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "events.argoproj.io/sensor=any"})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]bool{}
		for _, cm := range l.Items {
			for _, k := range []string{"gl", "gt", "bb", "wh"} {
				if v := cm.Data[k]; v != "-" {
					got[v] = true
				}
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
}

// TestRetryRunsOnlyTheTriggersLeft: a Sensor with two triggers, one of which fails with a
// temporary error (its kind's CRD is not installed yet). The event is delivered again until
// the CRD comes; the trigger that succeeded the first time must not run again.
func TestRetryRunsOnlyTheTriggersLeft(t *testing.T) {
	e := newEnv(t)
	group := e.ns + ".retry.freshet.dev"
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hooks"},
		StringData: map[string]string{"secret": secret}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().Roles(e.ns).Create(e.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{"widgets"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().RoleBindings(e.ns).Create(e.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "widgets"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "trigger", Namespace: e.ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.create(events.EventBusResource, "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec: {jetstreamExotic: {url: '"+e.natsURL+"'}}\n")
	e.create(events.EventSourcesResource, `
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: hook}
spec:
  webhook:
    wh: {endpoint: /hook, method: POST, authSecret: {name: hooks, key: secret}}
`)
	e.create(events.SensorsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: two}
spec:
  template: {serviceAccountName: trigger}
  dependencies: [{name: wh, eventSourceName: hook, eventName: wh}]
  triggers:
  - template:
      name: record
      k8s:
        source:
          resource: {apiVersion: v1, kind: ConfigMap, metadata: {generateName: once-}}
  - template:
      name: widget
      k8s:
        source:
          resource: {apiVersion: `+group+`/v1, kind: Widget, metadata: {generateName: w-}}
`)
	e.waitCondition(events.EventSourcesResource, "hook", events.CondDeployed, "True")
	e.waitCondition(events.SensorsResource, "two", events.CondDeployed, "True")
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+events.PathPrefix+e.ns+"/hook/hook", strings.NewReader(`{"n":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook: %d", resp.StatusCode)
	}
	configMaps := func() int {
		l, err := e.c.Client.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "events.argoproj.io/sensor=two"})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	e.waitFor("the first trigger's ConfigMap", 30*time.Second, func() (bool, string) { return configMaps() > 0, "" })
	// The second trigger failed (no such kind yet) and its event waits for a redelivery; let
	// one happen before the kind exists, then install it.
	time.Sleep(1500 * time.Millisecond)
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if _, err := e.c.Dynamic.Resource(crdGVR).Create(e.ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.c.Dynamic.Resource(crdGVR).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	e.waitFor("the second trigger's Widget, on a redelivery", 60*time.Second, func() (bool, string) {
		l, err := e.c.Dynamic.Resource(widgets).Namespace(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 1, fmt.Sprint(len(l.Items), " widgets")
	})
	if n := configMaps(); n != 1 {
		t.Errorf("the first trigger ran %d times for one event, want once", n)
	}
	if s, _ := e.condition(events.SensorsResource, "two", events.CondTriggered); s != "True" {
		t.Errorf("Triggered = %q after the retry succeeded", s)
	}
}

// grant lets service account sa do verbs on ConfigMaps (a Role and its binding, named name).
func (e *env) grant(name, sa string, verbs ...string) {
	e.t.Helper()
	if _, err := e.c.Client.RbacV1().Roles(e.ns).Create(e.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().RoleBindings(e.ns).Create(e.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: e.ns}}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// webhookSetup makes the bus, the hooks Secret and a webhook EventSource "hook" (/hook).
func (e *env) webhookSetup() {
	e.t.Helper()
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hooks"},
		StringData: map[string]string{"secret": secret}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.create(events.EventBusResource, "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec: {jetstreamExotic: {url: '"+e.natsURL+"'}}\n")
	e.create(events.EventSourcesResource, `
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: hook}
spec:
  webhook:
    wh: {endpoint: /hook, method: POST, authSecret: {name: hooks, key: secret}}
`)
	e.waitCondition(events.EventSourcesResource, "hook", events.CondDeployed, "True")
}

func (e *env) hook(body string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+events.PathPrefix+e.ns+"/hook/hook", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("webhook: %d", resp.StatusCode)
	}
}

func (e *env) configMaps(sensor string) []corev1.ConfigMap {
	e.t.Helper()
	l, err := e.c.Client.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "events.argoproj.io/sensor=" + sensor})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

// hookSensor is a Sensor on the webhook acting as sa whose one trigger creates a ConfigMap
// (with labels) and has the trigger fields extra.
func hookSensor(name, sa, labels, extra string) string {
	return `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: ` + name + `}
spec:
  template: {serviceAccountName: ` + sa + `}
  dependencies: [{name: wh, eventSourceName: hook, eventName: wh}]
  triggers:
  - template:
      name: record
      k8s:
        source:
          resource: {apiVersion: v1, kind: ConfigMap, metadata: {generateName: ` + name + `-, labels: {` + labels + `}}}
` + extra
}

// TestTriggerRetryStrategy: a trigger the API server refuses (its service account may not
// create ConfigMaps) is retried with its retryStrategy and creates the ConfigMap once it may,
// while the same trigger without one fails at once and creates nothing.
func TestTriggerRetryStrategy(t *testing.T) {
	e := newEnv(t)
	e.webhookSetup()
	e.create(events.SensorsResource, hookSensor("retried", "late", "", "    retryStrategy: {steps: 300, duration: 100ms, factor: 1, jitter: 0}\n"))
	e.create(events.SensorsResource, hookSensor("once", "late", "", ""))
	e.waitCondition(events.SensorsResource, "retried", events.CondDeployed, "True")
	e.waitCondition(events.SensorsResource, "once", events.CondDeployed, "True")
	e.hook(`{"n":1}`)
	msg := e.waitCondition(events.SensorsResource, "once", events.CondTriggered, "False")
	if !strings.Contains(msg, "forbidden") {
		t.Errorf("once: Triggered message %q, want forbidden", msg)
	}
	if s, m := e.condition(events.SensorsResource, "retried", events.CondTriggered); s != "" {
		t.Errorf("retried: Triggered = %s (%s) while it still retries", s, m)
	}
	e.grant("late", "late", "create")
	e.waitFor("the retried trigger's ConfigMap", 30*time.Second, func() (bool, string) {
		return len(e.configMaps("retried")) == 1, ""
	})
	e.waitCondition(events.SensorsResource, "retried", events.CondTriggered, "True")
	if n := len(e.configMaps("once")); n != 0 {
		t.Errorf("the trigger without retryStrategy made %d ConfigMaps after its refusal", n)
	}
}

// TestTriggerPolicyLabels: with policy.k8s a trigger succeeds once its resource has the
// labels (here set by hand after the create), and with errorOnBackoffTimeout fails when they
// do not come; without errorOnBackoffTimeout a timeout counts as success.
func TestTriggerPolicyLabels(t *testing.T) {
	e := newEnv(t)
	e.grant("policy", "trigger", "get", "patch")
	e.webhookSetup()
	e.create(events.SensorsResource, hookSensor("waits", "trigger", "", "    policy: {k8s: {labels: {done: 'yes'}, backoff: {steps: 300, duration: 100ms, factor: 1, jitter: 0}, errorOnBackoffTimeout: true}}\n"))
	e.create(events.SensorsResource, hookSensor("never", "trigger", "done: 'no'", "    policy: {k8s: {labels: {done: 'yes'}, backoff: {steps: 3, duration: 50ms}, errorOnBackoffTimeout: true}}\n"))
	e.create(events.SensorsResource, hookSensor("lenient", "trigger", "", "    policy: {k8s: {labels: {done: 'yes'}, backoff: {steps: 2, duration: 50ms}}}\n"))
	for _, n := range []string{"waits", "never", "lenient"} {
		e.waitCondition(events.SensorsResource, n, events.CondDeployed, "True")
	}
	e.hook(`{"n":1}`)
	msg := e.waitCondition(events.SensorsResource, "never", events.CondTriggered, "False")
	if !strings.Contains(msg, "did not get the labels done=yes after 3 checks") {
		t.Errorf("never: Triggered message %q", msg)
	}
	e.waitCondition(events.SensorsResource, "lenient", events.CondTriggered, "True")
	var cm corev1.ConfigMap
	e.waitFor("the waiting trigger's ConfigMap", 30*time.Second, func() (bool, string) {
		l := e.configMaps("waits")
		if len(l) == 0 {
			return false, ""
		}
		cm = l[0]
		return true, ""
	})
	if s, m := e.condition(events.SensorsResource, "waits", events.CondTriggered); s != "" {
		t.Errorf("waits: Triggered = %s (%s) before its resource has the labels", s, m)
	}
	if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Patch(e.ctx, cm.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"done":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(events.SensorsResource, "waits", events.CondTriggered, "True")
	if n := len(e.configMaps("waits")); n != 1 {
		t.Errorf("waits: %d ConfigMaps, want 1", n)
	}
}

// TestTriggerRateLimit: three events within a moment, to a trigger limited to one execution a
// second, all create their ConfigMap (none dropped), spaced a second apart at least.
func TestTriggerRateLimit(t *testing.T) {
	e := newEnv(t)
	e.webhookSetup()
	e.create(events.SensorsResource, hookSensor("limited", "trigger", "", "    rateLimit: {unit: Second, requestsPerUnit: 1}\n"))
	e.waitCondition(events.SensorsResource, "limited", events.CondDeployed, "True")
	for i := range 3 {
		e.hook(fmt.Sprintf(`{"n":%d}`, i))
	}
	var l []corev1.ConfigMap
	e.waitFor("three ConfigMaps", 30*time.Second, func() (bool, string) {
		l = e.configMaps("limited")
		return len(l) == 3, fmt.Sprint(len(l))
	})
	first, last := l[0].CreationTimestamp.Time, l[0].CreationTimestamp.Time
	for _, cm := range l[1:] {
		if c := cm.CreationTimestamp.Time; c.Before(first) {
			first = c
		} else if c.After(last) {
			last = c
		}
	}
	// Two seconds at least between the first and the third; timestamps are whole seconds.
	if last.Sub(first) < time.Second {
		t.Errorf("three executions of a trigger limited to 1/s created from %v to %v", first, last)
	}
}

// grantWorkflows lets service account sa act on Workflows, their templates and CronWorkflows
// as the argoWorkflow operations need.
func (e *env) grantWorkflows(name, sa string) {
	e.t.Helper()
	if _, err := e.c.Client.RbacV1().Roles(e.ns).Create(e.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflows"}, Verbs: []string{"get", "create", "patch", "update"}},
			{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflowtemplates", "cronworkflows"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().RoleBindings(e.ns).Create(e.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: e.ns}}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// TestArgoWorkflowOperations: one event runs suspend, terminate and resubmit on the Workflow
// its data names, and submit-from a WorkflowTemplate and a CronWorkflow, as the Sensor's
// service account with the workflow engine's operations; the same operations as an account
// without the rights fail as forbidden and change nothing.
func TestArgoWorkflowOperations(t *testing.T) {
	e := newEnv(t)
	e.grantWorkflows("ops", "operator")
	e.webhookSetup()
	e.create(workflows.WorkflowsResource, "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: target}\nspec: {entrypoint: main, templates: [{name: main, container: {image: alpine, command: [echo]}}]}\n")
	e.create(workflows.WorkflowTemplatesResource, "apiVersion: argoproj.io/v1alpha1\nkind: WorkflowTemplate\nmetadata: {name: tmpl}\nspec: {entrypoint: main, templates: [{name: main, container: {image: alpine, command: [echo]}}]}\n")
	e.create(workflows.CronWorkflowsResource, "apiVersion: argoproj.io/v1alpha1\nkind: CronWorkflow\nmetadata: {name: nightly}\nspec: {schedule: '0 3 * * *', suspend: true, workflowMetadata: {labels: {from: cron}}, workflowSpec: {entrypoint: main, templates: [{name: main, container: {image: alpine, command: [echo]}}]}}\n")
	// The Workflow acted on is named by the event (a parameter); the template and the
	// CronWorkflow by the source.
	op := func(name, op, kind, res string) string {
		y := `
  - template:
      name: ` + name + `
      argoWorkflow:
        operation: ` + op + `
        source: {resource: {apiVersion: argoproj.io/v1alpha1, kind: ` + kind + `, metadata: {name: ` + res + `}}}`
		if kind == "Workflow" {
			y += `
        parameters: [{src: {dependencyName: wh, dataKey: body.workflow}, dest: metadata.name}]`
		}
		return y
	}
	sensor := func(name, sa string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: ` + name + `}
spec:
  template: {serviceAccountName: ` + sa + `}
  dependencies: [{name: wh, eventSourceName: hook, eventName: wh}]
  triggers:` + op("suspend", "suspend", "Workflow", "") + op("terminate", "terminate", "Workflow", "") +
			op("resubmit", "resubmit", "Workflow", "") + op("from-template", "submit-from", "WorkflowTemplate", "tmpl") +
			op("from-cron", "submit-from", "CronWorkflow", "nightly") + "\n"
	}
	e.create(events.SensorsResource, sensor("denied", "nobody"))
	e.waitCondition(events.SensorsResource, "denied", events.CondDeployed, "True")
	e.hook(`{"workflow":"target"}`)
	msg := e.waitCondition(events.SensorsResource, "denied", events.CondTriggered, "False")
	if !strings.Contains(msg, "forbidden") {
		t.Errorf("denied: Triggered message %q, want forbidden", msg)
	}
	if n := len(e.workflows()); n != 1 {
		t.Fatalf("%d workflows after the denied operations, want 1", n)
	}
	if err := e.c.Dynamic.Resource(events.SensorsResource).Namespace(e.ns).Delete(e.ctx, "denied", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	e.create(events.SensorsResource, sensor("ops", "operator"))
	e.waitCondition(events.SensorsResource, "ops", events.CondDeployed, "True")
	e.hook(`{"workflow":"target"}`)
	var resubmitted, fromTemplate, fromCron *unstructured.Unstructured
	e.waitFor("the resubmitted and submitted workflows", 30*time.Second, func() (bool, string) {
		resubmitted, fromTemplate, fromCron = nil, nil, nil
		for _, w := range e.workflows() {
			l := w.GetLabels()
			switch {
			case l[workflows.LabelResubmittedFrom] == "target":
				resubmitted = &w
			case l[workflows.LabelWorkflowTemplate] == "tmpl":
				fromTemplate = &w
			case l[workflows.LabelCronWorkflow] == "nightly":
				fromCron = &w
			}
		}
		return resubmitted != nil && fromTemplate != nil && fromCron != nil, fmt.Sprint(len(e.workflows()), " workflows")
	})
	if ref, _, _ := unstructured.NestedString(fromTemplate.Object, "spec", "workflowTemplateRef", "name"); ref != "tmpl" {
		t.Errorf("submitted from the template: workflowTemplateRef %q", ref)
	}
	if fromCron.GetLabels()["from"] != "cron" || len(fromCron.GetOwnerReferences()) != 1 || fromCron.GetOwnerReferences()[0].Name != "nightly" {
		t.Errorf("submitted from the CronWorkflow: labels %v, owners %v", fromCron.GetLabels(), fromCron.GetOwnerReferences())
	}
	e.waitFor("target suspended and terminated", 30*time.Second, func() (bool, string) {
		u, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Get(e.ctx, "target", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		susp, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
		shut, _, _ := unstructured.NestedString(u.Object, "spec", "shutdown")
		return susp && shut == "Terminate", fmt.Sprint(susp, shut)
	})
	e.waitCondition(events.SensorsResource, "ops", events.CondTriggered, "True")
}

// TestHTTPTriggerSecrets: a webhook event becomes a request to a real server on loopback,
// its body built from the event, its secure header from a Secret and another from a
// ConfigMap, its basic auth from a Secret; an answer outside policy.status.allow fails the
// trigger.
func TestHTTPTriggerSecrets(t *testing.T) {
	e := newEnv(t)
	e.webhookSetup()
	type got struct {
		auth, token, tenant, body string
	}
	reqs := make(chan got, 10)
	code := make(chan int, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		user, pass, _ := r.BasicAuth()
		reqs <- got{user + ":" + pass, r.Header.Get("X-Token"), r.Header.Get("X-Tenant"), string(b)}
		w.WriteHeader(<-code)
	}))
	t.Cleanup(srv.Close)
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "http-creds"},
		StringData: map[string]string{"token": "s3cr3t-token", "user": "bot", "pass": "pw"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "http-conf"},
		Data: map[string]string{"tenant": "acme"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.create(events.SensorsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: notify}
spec:
  dependencies: [{name: wh, eventSourceName: hook, eventName: wh}]
  triggers:
  - template:
      name: post
      http:
        url: `+srv.URL+`/notify
        payload:
        - {src: {dependencyName: wh, dataKey: body.version}, dest: release.version}
        - {src: {dependencyName: wh, dataKey: body.meta, useRawData: true}, dest: release.meta}
        secureHeaders:
        - {name: X-Token, valueFrom: {secretKeyRef: {name: http-creds, key: token}}}
        - {name: X-Tenant, valueFrom: {configMapKeyRef: {name: http-conf, key: tenant}}}
        basicAuth: {username: {name: http-creds, key: user}, password: {name: http-creds, key: pass}}
    policy: {status: {allow: [200]}}
`)
	e.waitCondition(events.SensorsResource, "notify", events.CondDeployed, "True")
	code <- http.StatusOK
	e.hook(`{"version":"1.2.3","meta":{"by":"ci"}}`)
	select {
	case r := <-reqs:
		if r.auth != "bot:pw" || r.token != "s3cr3t-token" || r.tenant != "acme" || r.body != `{"release":{"version":"1.2.3","meta":{"by":"ci"}}}` {
			t.Errorf("request %+v", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no request")
	}
	e.waitCondition(events.SensorsResource, "notify", events.CondTriggered, "True")
	code <- http.StatusNotFound
	e.hook(`{"version":"1.2.4","meta":{}}`)
	<-reqs
	msg := e.waitCondition(events.SensorsResource, "notify", events.CondTriggered, "False")
	if !strings.Contains(msg, "answered 404, not one of 200") || strings.Contains(msg, "s3cr3t") {
		t.Errorf("Triggered message %q", msg)
	}
}

// TestTriggerURLRefusedByPolicy: under a policy that allows public addresses only, a Sensor
// whose http trigger names a loopback URL is refused when read (TriggersProvided=False naming
// the field, the URL shown without its query) and runs nothing.
func TestTriggerURLRefusedByPolicy(t *testing.T) {
	// The test's bus is at 127.0.0.1 (the policy checks an EventBus's URL too); the trigger's
	// 127.0.0.2 is loopback as well, and refused.
	public, err := netpolicy.Options{PrivateNetworks: []string{"127.0.0.1/32"}}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, public)
	e.webhookSetup()
	e.create(events.SensorsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: internal}
spec:
  dependencies: [{name: wh, eventSourceName: hook, eventName: wh}]
  triggers:
  - template:
      name: post
      http: {url: 'http://127.0.0.2:9/x?token=abc'}
`)
	msg := e.waitCondition(events.SensorsResource, "internal", events.CondTriggersProvided, "False")
	if !strings.Contains(msg, "spec.triggers[0].template.http.url") || !strings.Contains(msg, "loopback") || strings.Contains(msg, "abc") {
		t.Errorf("TriggersProvided message %q", msg)
	}
	if s, _ := e.condition(events.SensorsResource, "internal", events.CondDeployed); s != "False" {
		t.Errorf("Deployed = %q for a refused Sensor", s)
	}
}

// TestNATSTriggerToken: a webhook event is published, as the message its payload builds, to a
// real NATS server (started by the test on loopback) that requires a token, the token read
// from a Secret of the Sensor's namespace; a wrong token fails the trigger.
func TestNATSTriggerToken(t *testing.T) {
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, Authorization: "t0ken-for-nats", NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL(), nats.Token("t0ken-for-nats"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("deploys.done")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.webhookSetup()
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nats-auth"},
		StringData: map[string]string{"token": "t0ken-for-nats", "wrong": "not-the-token"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sensor := func(name, key string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Sensor
metadata: {name: ` + name + `}
spec:
  dependencies: [{name: wh, eventSourceName: hook, eventName: wh}]
  triggers:
  - template:
      name: publish
      nats:
        url: ` + srv.ClientURL() + `
        subject: deploys.done
        payload: [{src: {dependencyName: wh, dataKey: body.app}, dest: app}]
        auth: {token: {name: nats-auth, key: ` + key + `}}
`
	}
	e.create(events.SensorsResource, sensor("good", "token"))
	e.create(events.SensorsResource, sensor("bad", "wrong"))
	e.waitCondition(events.SensorsResource, "good", events.CondDeployed, "True")
	e.waitCondition(events.SensorsResource, "bad", events.CondDeployed, "True")
	e.hook(`{"app":"shop"}`)
	msg, err := sub.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatalf("no message: %v", err)
	}
	if string(msg.Data) != `{"app":"shop"}` {
		t.Errorf("message %s", msg.Data)
	}
	e.waitCondition(events.SensorsResource, "good", events.CondTriggered, "True")
	m := e.waitCondition(events.SensorsResource, "bad", events.CondTriggered, "False")
	if !strings.Contains(m, "Authorization Violation") || strings.Contains(m, "not-the-token") {
		t.Errorf("bad: Triggered message %q", m)
	}
}

// TestEventBusURLRefusedByPolicy: under a policy that allows public addresses only, an
// EventBus whose jetstreamExotic.url is a loopback server is not connected to: Deployed=False
// names the field, and the URL's credentials are not shown.
func TestEventBusURLRefusedByPolicy(t *testing.T) {
	public, err := netpolicy.Options{}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, public)
	e.create(events.EventBusResource, "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: inside}\nspec: {jetstreamExotic: {url: 'nats://u:s3cret@"+strings.TrimPrefix(e.natsURL, "nats://")+"'}}\n")
	msg := e.waitCondition(events.EventBusResource, "inside", events.CondDeployed, "False")
	if !strings.Contains(msg, "spec.jetstreamExotic.url") || !strings.Contains(msg, "loopback") || strings.Contains(msg, "s3cret") {
		t.Errorf("Deployed message %q", msg)
	}
}
