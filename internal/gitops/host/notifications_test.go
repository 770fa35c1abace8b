package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/freshet-dev/freshet/internal/testenv/smtpd"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/gitops/repocreds"
)

// hookServer is a webhook receiver on 127.0.0.1.
type hookServer struct {
	*httptest.Server
	mu  sync.Mutex
	got []hookRequest
}

type hookRequest struct {
	method, path, body string
	header             http.Header
}

func newHookServer(t *testing.T) *hookServer {
	hs := &hookServer{}
	hs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hs.mu.Lock()
		hs.got = append(hs.got, hookRequest{method: r.Method, path: r.URL.Path, body: string(b), header: r.Header.Clone()})
		hs.mu.Unlock()
	}))
	t.Cleanup(hs.Close)
	return hs
}

func (hs *hookServer) requests() []hookRequest {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return append([]hookRequest(nil), hs.got...)
}

// slackServer speaks Slack's chat.postMessage: a bot token, JSON in, {"ok": …} out.
type slackServer struct {
	*httptest.Server
	mu  sync.Mutex
	got []map[string]any
}

func newSlackServer(t *testing.T, token string) *slackServer {
	ss := &slackServer{}
	ss.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/api/chat.postMessage" || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "invalid_auth"})
			return
		}
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "invalid_json"})
			return
		}
		if m["channel"] == "no-such-channel" {
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "channel_not_found"})
			return
		}
		ss.mu.Lock()
		ss.got = append(ss.got, m)
		ss.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": m["channel"], "ts": "1.2"})
	}))
	t.Cleanup(ss.Close)
	return ss
}

func (ss *slackServer) messages(channel string) []map[string]any {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []map[string]any
	for _, m := range ss.got {
		if m["channel"] == channel {
			out = append(out, m)
		}
	}
	return out
}

func eventually(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited too long for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const notificationsCM = `
context: |
  argocdUrl: https://cd.example.com
service.webhook.hooks: |
  url: %s
  headers:
  - name: X-Token
    value: $hook-token
service.slack: |
  token: $slack-token
  apiURL: %s/api/
  username: freshet
  icon: ":rocket:"
service.email.mail: |
  host: 127.0.0.1
  port: %s
  from: cd@example.com
  username: cd
  password: $email-password
template.app-sync-succeeded: |
  message: "{{.app.metadata.name}} synced to {{.app.status.operationState.syncResult.revision | trunc 7}} ({{.context.argocdUrl}})"
  email:
    subject: "Synced {{.app.metadata.name}}"
  slack:
    attachments: |
      [{"title": "{{.app.metadata.name}}", "color": "#18be52", "fields": [{"title": "Sync", "value": "{{.app.status.sync.status}}"}]}]
  webhook:
    hooks:
      method: POST
      path: /sync/{{.app.metadata.name}}
      body: |
        {"app": "{{.app.metadata.name}}", "phase": "{{.app.status.operationState.phase}}", "repo": "{{call .repo.RepoURLToHTTPS .app.spec.source.repoURL}}", "type": "{{.serviceType}}"}
template.broken: |
  message: "{{ .app.metadata.name"
trigger.on-broken: |
  - when: app.status.sync.status == 'Synced'
    send: [app-sync-succeeded]
  - when: app.status.sync.status ==
    send: [app-sync-succeeded]
`

// TestArgoCDNotifications: argocd-notifications-cm and its Secret in the runtime's namespace,
// subscriptions by annotation: a sync that succeeds reaches a webhook, a Slack-compatible API
// and an SMTP server with the templates rendered; a degraded app fires on-health-degraded;
// what was sent is not sent again after a restart; a template or trigger that does not parse
// is named in the component's health while the rest works.
func TestArgoCDNotifications(t *testing.T) {
	hooks := newHookServer(t)
	slack := newSlackServer(t, "xoxb-test-token")
	ms := smtpd.Start(t, "cd", "smtp-pass-123")
	_, mailPort, _ := net.SplitHostPort(ms.Addr)
	var nsName string
	w := newWorldWith(t, func(ns string, o *host.Options) {
		nsName = ns
		kc := mustKube(t, o)
		ctx := context.Background()
		data := map[string]string{}
		body := fmt.Sprintf(notificationsCM, hooks.URL, slack.URL, mailPort)
		// Split the ConfigMap text into keys (each key starts a line without indentation).
		var key string
		for _, line := range strings.Split(strings.TrimPrefix(body, "\n"), "\n") {
			if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ": |") {
				key = strings.TrimSuffix(line, ": |")
				continue
			}
			if key != "" {
				data[key] += strings.TrimPrefix(line, "  ") + "\n"
			}
		}
		if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "argocd-notifications-cm"}, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "argocd-notifications-secret"},
			StringData: map[string]string{"slack-token": "xoxb-test-token", "email-password": "smtp-pass-123", "hook-token": "tok-42"}}
		if _, err := kc.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		acm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm"}, Data: map[string]string{
			"resource.customizations.health.ConfigMap": `if obj.data ~= nil and obj.data.color == "red" then return {status = "Degraded", message = "red"} end
return {status = "Healthy"}`}}
		if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, acm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		o.RepoCreds = repocreds.Secrets{Client: kc, Namespace: ns}
		o.MailRootCAs = ms.Roots
	})
	_ = nsName
	ctx := context.Background()

	hc := w.h.Health()
	for _, want := range []string{"argocd-notifications-cm template.broken", "argocd-notifications-cm trigger.on-broken"} {
		if !strings.Contains(hc.Message, want) {
			t.Errorf("health %q does not name %q", hc.Message, want)
		}
	}

	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue")}, "first")
	a := strings.Replace(appYAML("web", w.source.URL(), w.ns, true), "  labels: {team: web}\n", `  labels: {team: web}
  annotations:
    notifications.argoproj.io/subscribe.on-sync-succeeded.hooks: ""
    notifications.argoproj.io/subscribe.on-sync-succeeded.slack: deploys
    notifications.argoproj.io/subscribe.on-sync-succeeded.mail: dev@example.com, ops@example.com
    notifications.argoproj.io/subscribe.on-health-degraded.slack: alerts
    notifications.argoproj.io/subscribe.on-sync-succeeded.nosuch: x
`, 1)
	if code := w.call("member", "POST", "applications", a, nil); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	w.waitApp("web", func(st engine.AppStatus) bool {
		return synced(st) && st.Operation != nil && st.Operation.Phase == engine.PhaseSucceeded
	})
	eventually(t, "the webhook, Slack and email notifications", 30*time.Second, func() bool {
		return len(hooks.requests()) >= 1 && len(slack.messages("deploys")) >= 1 && len(ms.Mails()) >= 1
	})
	st, _ := w.h.Engine().Status("web")
	rev := st.Operation.Revision
	req := hooks.requests()[0]
	if req.method != http.MethodPost || req.path != "/sync/web" || req.header.Get("X-Token") != "tok-42" {
		t.Errorf("webhook request %s %s X-Token=%q", req.method, req.path, req.header.Get("X-Token"))
	}
	var hb map[string]string
	if err := json.Unmarshal([]byte(req.body), &hb); err != nil || hb["app"] != "web" || hb["phase"] != "Succeeded" || hb["type"] != "hooks" || !strings.HasPrefix(hb["repo"], "http") {
		t.Errorf("webhook body %q: %v", req.body, err)
	}
	sm := slack.messages("deploys")[0]
	if sm["text"] != "web synced to "+rev[:7]+" (https://cd.example.com)" || sm["username"] != "freshet" || sm["icon_emoji"] != ":rocket:" {
		t.Errorf("slack message %v", sm)
	}
	if att, _ := sm["attachments"].([]any); len(att) != 1 || att[0].(map[string]any)["title"] != "web" {
		t.Errorf("slack attachments %v", sm["attachments"])
	}
	m := ms.Mails()[0]
	if m.From != "cd@example.com" || strings.Join(m.To, ",") != "dev@example.com,ops@example.com" || !strings.Contains(m.Data, "Subject: Synced web") || !strings.Contains(m.Data, "web synced to "+rev[:7]) {
		t.Errorf("mail from %s to %v:\n%s", m.From, m.To, m.Data)
	}
	// The unknown service is named; the others were sent all the same.
	eventually(t, "the unknown service named in health", 10*time.Second, func() bool {
		return strings.Contains(w.h.Health().Message, "service nosuch is not configured")
	})

	// A new commit makes the app degraded: on-sync-succeeded fires for the new revision, and
	// on-health-degraded to the alerts channel.
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "red")}, "red")
	w.h.Engine().Notify(w.source.URL(), "")
	eventually(t, "on-health-degraded", 60*time.Second, func() bool { return len(slack.messages("alerts")) >= 1 })
	deg := slack.messages("alerts")[0]
	if text, _ := deg["text"].(string); !strings.Contains(text, "Application web has degraded") || !strings.Contains(text, "https://cd.example.com/applications/web") {
		t.Errorf("degraded message %v", deg["text"])
	}
	eventually(t, "the second on-sync-succeeded", 60*time.Second, func() bool { return len(slack.messages("deploys")) >= 2 })

	// A restart: the state file says what was sent, so nothing is sent again.
	time.Sleep(500 * time.Millisecond)
	nHooks, nDeploys, nAlerts, nMails := len(hooks.requests()), len(slack.messages("deploys")), len(slack.messages("alerts")), len(ms.Mails())
	w.stop()
	h2, err := host.New(w.opts)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = h2.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, "the restarted engine to compare the app", 60*time.Second, func() bool {
		st, err := h2.Engine().Status("web")
		return err == nil && st.Health.Status == "Degraded" && st.Sync == engine.Synced
	})
	h2.Notifications().Process(ctx, "web")
	time.Sleep(time.Second)
	if a, b, c, d := len(hooks.requests()), len(slack.messages("deploys")), len(slack.messages("alerts")), len(ms.Mails()); a != nHooks || b != nDeploys || c != nAlerts || d != nMails {
		t.Errorf("after a restart: hooks %d→%d, deploys %d→%d, alerts %d→%d, mails %d→%d", nHooks, a, nDeploys, b, nAlerts, c, nMails, d)
	}
	if st := h2.Notifications().State("web"); len(st) == 0 {
		t.Errorf("no state after the restart")
	}
}

func mustKube(t *testing.T, o *host.Options) kubernetes.Interface {
	t.Helper()
	kc, err := kubernetes.NewForConfig(o.InCluster)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}
