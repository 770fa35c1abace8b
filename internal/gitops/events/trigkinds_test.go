package events

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/nats-io/nats.go"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// TestArgoTriggerKindsDecode: Argo's documented http, log, nats and argoWorkflow operation
// triggers are accepted as written.
func TestArgoTriggerKindsDecode(t *testing.T) {
	s, err := DecodeSensor(toJSON(t, snHead+okDeps+`  triggers:
  - template:
      name: http-trigger
      http:
        url: https://example.com/hook
        payload:
        - src: {dependencyName: d, dataKey: body.message}
          dest: message
        method: PUT
        headers: {Content-Type: application/json}
        secureHeaders:
        - name: Authorization
          valueFrom: {secretKeyRef: {name: tokens, key: bearer}}
        basicAuth: {username: {name: creds, key: user}, password: {name: creds, key: pass}}
        tls: {caCertSecret: {name: ca, key: ca.crt}}
        timeout: 10
    retryStrategy: {steps: 3}
    policy: {status: {allow: [200, 201]}}
  - template:
      name: log-trigger
      log: {intervalSeconds: 5}
  - template:
      name: nats-trigger
      nats:
        url: nats://nats.example.com:4222
        subject: minio-events
        payload: [{src: {dependencyName: d, dataKey: body.name}, dest: name}]
        auth: {token: {name: nats, key: token}}
  - template:
      name: resume
      argoWorkflow:
        operation: resume
        source: {resource: {apiVersion: argoproj.io/v1alpha1, kind: Workflow, metadata: {name: placeholder}}}
        parameters: [{src: {dependencyName: d, dataKey: body.workflow}, dest: metadata.name}]
  - template:
      name: from-cron
      argoWorkflow:
        operation: submit-from
        source: {resource: {apiVersion: argoproj.io/v1alpha1, kind: CronWorkflow, metadata: {name: nightly}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	h := s.Spec.Triggers[0].Template.HTTP
	if h == nil || h.Method != "PUT" || h.SecureHeaders[0].ValueFrom.SecretKeyRef.Key != "bearer" || h.TLS.CACertSecret.Name != "ca" {
		t.Errorf("http decoded as %+v", h)
	}
	run, err := compileTriggerRun("spec.triggers[0]", &s.Spec.Triggers[0])
	if err != nil || len(run.allow) != 2 || run.allow[1] != 201 {
		t.Errorf("policy.status.allow = %v (%v)", run.allow, err)
	}
	if l := s.Spec.Triggers[1].Template.Log; l == nil || l.IntervalSeconds != 5 {
		t.Errorf("log decoded as %+v", l)
	}
	if n := s.Spec.Triggers[2].Template.NATS; n == nil || n.Auth.Token.Key != "token" {
		t.Errorf("nats decoded as %+v", n)
	}
}

func event(data string) map[string]*Event {
	return map[string]*Event{"d": {Context: EventContext{ID: "1", Source: "hook", Type: "webhook", Subject: "s"}, Data: json.RawMessage(data)}}
}

func strp(s string) *string { return &s }

// TestBuildPayload: the body is built as Argo's: strings at their dest, JSON values with
// useRawData, a parameter without dest the whole body, the default when a key is missing.
func TestBuildPayload(t *testing.T) {
	evs := event(`{"body":{"msg":"hi","n":3,"obj":{"a":[1,2]}}}`)
	for _, tc := range []struct {
		name string
		ps   []TriggerParameter
		want string
		err  string
	}{
		{"strings", []TriggerParameter{{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.msg"}, Dest: "message"},
			{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.n"}, Dest: "meta.count"}}, `{"message":"hi","meta":{"count":"3"}}`, ""},
		{"raw", []TriggerParameter{{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.obj", UseRawData: true}, Dest: "o"},
			{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.n", UseRawData: true}, Dest: "n"}}, `{"o":{"a":[1,2]},"n":3}`, ""},
		{"whole", []TriggerParameter{{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.obj"}}}, `{"a":[1,2]}`, ""},
		{"template", []TriggerParameter{{Src: &TriggerParameterSource{DependencyName: "d", DataTemplate: "{{ .Input.body.msg }}!"}, Dest: "m"}}, `{"m":"hi!"}`, ""},
		{"default", []TriggerParameter{{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.none", Value: strp("x")}, Dest: "m"}}, `{"m":"x"}`, ""},
		{"missing", []TriggerParameter{{Src: &TriggerParameterSource{DependencyName: "d", DataKey: "body.none"}, Dest: "m"}}, "", "payload[0].src: the event's data has no body.none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := buildPayload("payload", tc.ps, evs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("payload = %s (%v), want %s", got, err, tc.want)
			}
		})
	}
}

// newTestController is a controller for the trigger kinds that need no cluster (http
// without Secrets, log, nats without auth), with policy p.
func newTestController(t *testing.T, p *netpolicy.Policy) *Controller {
	t.Helper()
	c, err := New(&rest.Config{Host: "http://127.0.0.1:1"}, Options{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func compiledOne(t *testing.T, trigger string) (*compiledSensor, *compiledTrigger) {
	t.Helper()
	s, err := DecodeSensor(toJSON(t, snHead+okDeps+"  triggers:\n"+trigger))
	if err != nil {
		t.Fatal(err)
	}
	run, err := compileTriggerRun("spec.triggers[0]", &s.Spec.Triggers[0])
	if err != nil {
		t.Fatal(err)
	}
	return &compiledSensor{ns: "ns", name: "sn", sa: "default"}, &compiledTrigger{t: s.Spec.Triggers[0], run: run, have: event(`{"body":{"msg":"hi","path":"deploy","code":"201"}}`)}
}

type seen struct {
	method, path, ctype, auth, custom, host string
	body                                    []byte
}

// loopback is a real HTTP server on 127.0.0.1 answering code, recording each request.
func loopback(t *testing.T, code *int) (*httptest.Server, func() []seen) {
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), r.Header.Get("X-Custom"), r.Host, b})
		c := *code
		mu.Unlock()
		w.WriteHeader(c)
		_, _ = w.Write([]byte("a body the trigger never shows"))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

// TestHTTPTrigger: the request goes to a real server on loopback with the method, headers,
// Host and JSON body the trigger builds, the template's parameters set (here the path);
// policy.status.allow decides success, a 5xx outside it is retried by redelivery, a 4xx is
// not; the runtime's network policy refuses a loopback URL before anything is sent.
func TestHTTPTrigger(t *testing.T) {
	code := http.StatusCreated
	srv, requests := loopback(t, &code)
	c := newTestController(t, nil)
	ctx := context.Background()
	cs, ct := compiledOne(t, `  - template:
      name: h
      http:
        url: `+srv.URL+`/hooks/PATH?token=abc
        method: PUT
        headers: {X-Custom: fixed}
        dynamicHeaders: [{src: {dependencyName: d, dataKey: body.msg}, dest: X-Msg}]
        host: hooks.example.com
        payload: [{src: {dependencyName: d, dataKey: body.msg}, dest: message}]
        parameters: [{src: {dependencyName: d, dataTemplate: '`+srv.URL+`/hooks/{{ .Input.body.path }}?token=abc'}, dest: url}]
        timeout: 5
    policy: {status: {allow: [200, 201]}}
`)
	what, err := c.fireHTTP(ctx, cs, ct, ct.t.Template.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(what, "abc") || !strings.Contains(what, "PUT http://127.0.0.1") || !strings.HasSuffix(what, "/hooks/deploy: 201") {
		t.Errorf("result %q", what)
	}
	got := requests()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	r := got[0]
	if r.method != "PUT" || r.path != "/hooks/deploy" || r.ctype != "application/json" || r.custom != "fixed" || r.host != "hooks.example.com" || string(r.body) != `{"message":"hi"}` {
		t.Errorf("request %+v body %s", r, r.body)
	}

	code = http.StatusServiceUnavailable
	_, err = c.fireHTTP(ctx, cs, ct, ct.t.Template.HTTP)
	var perm permanentError
	if err == nil || errors.As(err, &perm) || !strings.Contains(err.Error(), "answered 503, not one of 200, 201") {
		t.Errorf("503: err = %v, want a temporary policy.status error", err)
	}
	code = http.StatusForbidden
	_, err = c.fireHTTP(ctx, cs, ct, ct.t.Template.HTTP)
	if !errors.As(err, &perm) || strings.Contains(err.Error(), "never shows") {
		t.Errorf("403: err = %v, want a permanent policy.status error without the body", err)
	}
	// Without policy.status any answer succeeds, as in Argo.
	ct.run.allow = nil
	if what, err := c.fireHTTP(ctx, cs, ct, ct.t.Template.HTTP); err != nil || !strings.HasSuffix(what, ": 403") {
		t.Errorf("no status policy: %q, %v", what, err)
	}

	// A policy that allows public addresses only refuses the loopback URL, naming the field.
	public, err := netpolicy.Options{}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	n := len(requests())
	_, err = newTestController(t, public).fireHTTP(ctx, cs, ct, ct.t.Template.HTTP)
	var fe *errdefs.FieldError
	if !errors.As(err, &perm) || !errors.As(err, &fe) || fe.Field != "http.url" || strings.Contains(err.Error(), "abc") {
		t.Errorf("public-only policy: err = %v, want a permanent refusal of http.url without the query", err)
	}
	if len(requests()) != n {
		t.Error("a request reached the server the policy refuses")
	}
}

// TestHTTPTriggerTLS: with tls.insecureSkipVerify the request reaches a TLS server whose
// certificate is not trusted; without it, it does not.
func TestHTTPTriggerTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	c := newTestController(t, nil)
	cs, ct := compiledOne(t, "  - template: {name: h, http: {url: '"+srv.URL+"', method: GET}}\n")
	if _, err := c.fireHTTP(context.Background(), cs, ct, ct.t.Template.HTTP); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted certificate: err = %v", err)
	}
	cs, ct = compiledOne(t, "  - template: {name: h, http: {url: '"+srv.URL+"', method: GET, tls: {insecureSkipVerify: true}}}\n")
	if what, err := c.fireHTTP(context.Background(), cs, ct, ct.t.Template.HTTP); err != nil || !strings.HasSuffix(what, ": 204") {
		t.Errorf("insecureSkipVerify: %q, %v", what, err)
	}
}

// TestLogTrigger: the events are written at most once per intervalSeconds.
func TestLogTrigger(t *testing.T) {
	c := newTestController(t, nil)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.opts.Now = func() time.Time { return now }
	var buf strings.Builder
	c.log = slogTo(&buf)
	cs, ct := compiledOne(t, "  - template: {name: l, log: {intervalSeconds: 10}}\n")
	for i, want := range []string{"logged 1 event(s)", "not logged", "logged 1 event(s)"} {
		what, err := c.fireLog(cs, ct, ct.t.Template.Log)
		if err != nil || !strings.HasPrefix(what, want) {
			t.Errorf("firing %d: %q, %v; want %q", i, what, err, want)
		}
		now = now.Add(6 * time.Second)
	}
	if n := strings.Count(buf.String(), "log trigger"); n != 2 || !strings.Contains(buf.String(), `data="{\"body\":{\"msg\":\"hi\"`) {
		t.Errorf("log (%d lines):\n%s", n, buf.String())
	}
}

// natsURL is the real NATS the tests use: FRESHET_TEST_NATS_URL, else the one at
// 127.0.0.1:4222 when it answers, else one embedded in the test process (internal/bus).
func natsURL(t *testing.T) string {
	if u := os.Getenv("FRESHET_TEST_NATS_URL"); u != "" {
		return u
	}
	const local = "nats://127.0.0.1:4222"
	if nc, err := nats.Connect(local, nats.Timeout(2*time.Second)); err == nil {
		nc.Close()
		return local
	}
	b, err := bus.Open(context.Background(), bus.Options{DataDir: t.TempDir(), ListenLoopback: true}, nil)
	if err != nil {
		t.Fatalf("no NATS at %s, and none embedded: %v", local, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b.ClientURL()
}

// TestNATSTrigger: the message built from the event is published on the subject of a real
// NATS; the runtime's network policy refuses a loopback server before connecting.
func TestNATSTrigger(t *testing.T) {
	url := natsURL(t)
	nc, err := nats.Connect(url, nats.Timeout(2*time.Second))
	if err != nil {
		t.Fatalf("NATS at %s: %v", url, err)
	}
	defer nc.Close()
	subject := fmt.Sprintf("freshet.test.trigger.%d", time.Now().UnixNano())
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := newTestController(t, nil)
	cs, ct := compiledOne(t, `  - template:
      name: pub
      nats:
        url: `+url+`
        subject: `+subject+`
        payload: [{src: {dependencyName: d, dataKey: body.msg}, dest: message}, {src: {dependencyName: d, dataKey: body.code, value: '0'}, dest: code}]
`)
	what, err := c.fireNATS(context.Background(), cs, ct, ct.t.Template.NATS)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no message (%s): %v", what, err)
	}
	if string(msg.Data) != `{"message":"hi","code":"201"}` {
		t.Errorf("message %s", msg.Data)
	}
	public, _ := netpolicy.Options{}.Policy()
	_, err = newTestController(t, public).fireNATS(context.Background(), cs, ct, ct.t.Template.NATS)
	var fe *errdefs.FieldError
	if !errors.As(err, &fe) || fe.Field != "nats.url" {
		t.Errorf("public-only policy: err = %v, want a refusal of nats.url", err)
	}
	if m, err := sub.NextMsg(200 * time.Millisecond); err == nil {
		t.Errorf("a message was published despite the policy: %s", m.Data)
	}
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
