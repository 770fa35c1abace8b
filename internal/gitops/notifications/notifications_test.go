package notifications_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/notifications"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

func problemText(errs []error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}

// Each bad key is named with what is valid; the good keys and Argo CD's catalog stay.
func TestParseConfigNamesTheKey(t *testing.T) {
	cfg, problems := notifications.ParseConfig(map[string]string{
		"service.webhook.ok":        "url: https://hooks.example.com/x\nheaders:\n- {name: Authorization, value: $token}\n",
		"service.webhook.nosec":     "url: https://hooks.example.com/y\nheaders:\n- {name: X, value: $missing}\n",
		"service.webhook.insec":     "url: https://hooks.example.com/y\ninsecureSkipVerify: true\n",
		"service.teams":             "recipientUrls: {}\n",
		"service.email.mail":        "host: smtp.example.com\nport: 587\nfrom: not-an-address\n",
		"template.bad":              "message: '{{ .app.metadata.name'\n",
		"template.my":               "message: hello {{.app.metadata.name}}\n",
		"trigger.bad-when":          "- when: app.status.sync.status ==\n  send: [my]\n",
		"trigger.no-template":       "- when: 'true'\n  send: [nope]\n",
		"trigger.on-sync-succeeded": "- when: app.status.sync.status == 'Synced'\n  send: [my]\n",
		"defaultTriggers":           "- on-sync-succeeded\n- on-nothing\n",
		"subscriptions":             "- recipients: [slack:x]\n  selector: team=web\n",
		"context":                   "argocdUrl: https://cd.example.com\n",
	}, map[string][]byte{"token": []byte("Bearer abc")}, notifications.ParseOptions{})
	text := problemText(problems)
	for _, want := range []string{
		"argocd-notifications-cm service.webhook.nosec", "$missing",
		"argocd-notifications-cm service.webhook.insec insecureSkipVerify",
		"argocd-notifications-cm service.teams", "use webhook, slack or email",
		"argocd-notifications-cm service.email.mail from",
		"argocd-notifications-cm template.bad", "Go template",
		"argocd-notifications-cm trigger.bad-when", "[0].when does not compile",
		"trigger.no-template[0].send", "names no template",
		"argocd-notifications-cm defaultTriggers", "on-nothing",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("problems do not mention %q:\n%s", want, text)
		}
	}
	for _, e := range problems {
		if !errors.Is(e, errdefs.ErrInvalid) {
			t.Errorf("%v is not errdefs.Invalid", e)
		}
	}
	if strings.Contains(text, "Bearer abc") {
		t.Errorf("a secret value is in the problems:\n%s", text)
	}
	if s := cfg.Services["ok"]; s == nil || s.Webhook.Headers[0].Value != "Bearer abc" {
		t.Errorf("service ok: %+v", s)
	}
	for _, n := range []string{"nosec", "insec", "teams", "mail"} {
		if cfg.Services[n] != nil {
			t.Errorf("bad service %s kept", n)
		}
	}
	if cfg.Templates["bad"] != nil || cfg.Templates["my"] == nil || cfg.Templates["app-deployed"] == nil {
		t.Errorf("templates: %v", cfg.Templates)
	}
	// The user's trigger replaced the catalog's; the catalog's others stay.
	if c := cfg.Triggers["on-sync-succeeded"]; len(c) != 1 || c[0].Send[0] != "my" {
		t.Errorf("on-sync-succeeded: %+v", c)
	}
	for _, n := range []string{"on-created", "on-deleted", "on-deployed", "on-health-degraded", "on-sync-failed", "on-sync-running", "on-sync-status-unknown"} {
		if len(cfg.Triggers[n]) == 0 {
			t.Errorf("catalog trigger %s missing", n)
		}
	}
	if cfg.Context["argocdUrl"] != "https://cd.example.com" || len(cfg.Subscriptions) != 1 {
		t.Errorf("context %v subscriptions %v", cfg.Context, cfg.Subscriptions)
	}
}

// Templates reach nothing outside: no environment, no DNS; repetition and output are bounded.
func TestTemplatesAreBounded(t *testing.T) {
	for name, msg := range map[string]string{
		"env":    `{{ env "HOME" }}`,
		"dns":    `{{ getHostByName "example.com" }}`,
		"expand": `{{ expandenv "$HOME" }}`,
		"keys":   `{{ genPrivateKey "rsa" }}`,
	} {
		_, problems := notifications.ParseConfig(map[string]string{"template.t": "message: '" + msg + "'\n"}, nil, notifications.ParseOptions{NoCatalog: true})
		if len(problems) != 1 || !strings.Contains(problems[0].Error(), "template.t") {
			t.Errorf("%s: %v, want the template refused", name, problems)
		}
	}
	for name, msg := range map[string]string{
		"until":  `{{ range until 100000000 }}{{ end }}`,
		"repeat": `{{ repeat 100000000 "x" }}`,
		"output": `{{ range until 10000 }}{{ repeat 1000 "x" }}{{ end }}`,
	} {
		cfg, problems := notifications.ParseConfig(map[string]string{"template.t": "message: '" + msg + "'\n"}, nil, notifications.ParseOptions{NoCatalog: true})
		if len(problems) != 0 {
			t.Fatalf("%s: %v", name, problems)
		}
		start := time.Now()
		_, err := cfg.Render(context.Background(), []string{"t"}, map[string]any{})
		if err == nil || time.Since(start) > 3*time.Second {
			t.Errorf("%s: %v after %s, want an error quickly", name, err, time.Since(start))
		}
	}
}

// receiver is a webhook receiver on 127.0.0.1.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []string
	fail int // answer 503 to this many requests first
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.fail > 0 {
			r.fail--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.got = append(r.got, req.Method+" "+req.URL.Path+" "+string(b))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func appObject(name, phase, revision, health string, annotations map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "annotations": annotations, "labels": map[string]any{"team": "web"}},
		"spec":     map[string]any{"project": "default", "source": map[string]any{"repoURL": "git@github.com:acme/web.git"}},
		"status": map[string]any{
			"sync":   map[string]any{"status": "Synced", "revision": revision},
			"health": map[string]any{"status": health},
			"operationState": map[string]any{"phase": phase, "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:05Z",
				"syncResult": map[string]any{"revision": revision}},
		},
	}
}

// A controller with a state file sends each oncePer value once, across a restart; a failing
// endpoint is tried again; a state Argo CD left in notified.notifications.argoproj.io counts.
func TestOncePerAcrossRestart(t *testing.T) {
	ctx := context.Background()
	rc := newReceiver(t)
	rc.fail = 1
	data := map[string]string{
		"service.webhook.hook":        "url: " + rc.URL + "\n",
		"template.app-sync-succeeded": "message: x\nwebhook:\n  hook:\n    method: POST\n    path: /{{.app.metadata.name}}\n    body: '{\"rev\": \"{{.app.status.sync.revision}}\", \"repo\": \"{{call .repo.FullNameByRepoURL .app.spec.source.repoURL}}\"}'\n",
		"subscriptions":               "- recipients: [hook]\n  triggers: [on-sync-succeeded]\n  selector: team=web\n",
	}
	cfg, problems := notifications.ParseConfig(data, nil, notifications.ParseOptions{})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	var mu sync.Mutex
	obj := appObject("web", "Succeeded", "aaa111", "Healthy", nil)
	lookup := func(string) (notifications.Subject, bool) {
		mu.Lock()
		defer mu.Unlock()
		return notifications.Subject{App: obj}, true
	}
	state := filepath.Join(t.TempDir(), "state.json")
	newCtl := func() *notifications.Controller {
		c, err := notifications.New(notifications.Options{Lookup: lookup, StateFile: state})
		if err != nil {
			t.Fatal(err)
		}
		c.SetConfig(cfg)
		return c
	}
	c := newCtl()
	c.Process(ctx, "web") // 503: not recorded as sent
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("%d delivered, want none yet", n)
	}
	if ps := c.Problems(); len(ps) != 1 || !strings.Contains(ps[0], "503") || !strings.Contains(ps[0], "tried again later") {
		t.Errorf("problems %v", ps)
	}
	c.Process(ctx, "web")
	c.Process(ctx, "web")
	if got := rc.requests(); len(got) != 1 || got[0] != `POST /web {"rev": "aaa111", "repo": "acme/web"}` {
		t.Fatalf("requests %q", got)
	}
	// Restart: nothing again for the same revision; a new revision is sent.
	c = newCtl()
	c.Process(ctx, "web")
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("after a restart %d requests, want 1", n)
	}
	mu.Lock()
	obj = appObject("web", "Succeeded", "bbb222", "Healthy", nil)
	mu.Unlock()
	c.Process(ctx, "web")
	if got := rc.requests(); len(got) != 2 || !strings.Contains(got[1], "bbb222") {
		t.Fatalf("requests %q", got)
	}
	// An application Argo CD already notified about (its annotation) is not notified again.
	condKey := c.Config().Triggers["on-sync-succeeded"][0]
	_ = condKey
	st := c.State("web")
	var key string
	for k := range st {
		if strings.HasPrefix(k, "bbb222:") {
			key = strings.Replace(k, "bbb222", "ccc333", 1)
		}
	}
	notified, _ := json.Marshal(map[string]int64{key: 1})
	mu.Lock()
	obj = appObject("other", "Succeeded", "ccc333", "Healthy", map[string]any{notifications.AnnotationNotified: string(notified)})
	mu.Unlock()
	c.Process(ctx, "other")
	if n := len(rc.requests()); n != 2 {
		t.Errorf("an app Argo CD notified was notified again: %q", rc.requests())
	}
}

// The operator's policy decides where notifications may go: a loopback webhook is refused
// under a policy for a hosted runtime, and the refusal is reported, not retried.
func TestPolicyRefusesInternalAddresses(t *testing.T) {
	ctx := context.Background()
	rc := newReceiver(t)
	strict, err := netpolicy.Options{}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	cfg, problems := notifications.ParseConfig(map[string]string{
		"service.webhook.hook": "url: " + rc.URL + "\n",
	}, nil, notifications.ParseOptions{})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	obj := appObject("web", "Succeeded", "aaa", "Healthy", map[string]any{"notifications.argoproj.io/subscribe.on-sync-succeeded.hook": ""})
	c, err := notifications.New(notifications.Options{Policy: strict, Lookup: func(string) (notifications.Subject, bool) { return notifications.Subject{App: obj}, true }})
	if err != nil {
		t.Fatal(err)
	}
	c.SetConfig(cfg)
	c.Process(ctx, "web")
	c.Process(ctx, "web")
	if n := len(rc.requests()); n != 0 {
		t.Errorf("%d requests reached a loopback address", n)
	}
	if ps := c.Problems(); len(ps) != 1 || strings.Contains(ps[0], "tried again") || !strings.Contains(ps[0], "127.0.0.1") {
		t.Errorf("problems %v", ps)
	}
}

// on-deleted fires when an application goes; on-created once.
func TestCreatedAndDeleted(t *testing.T) {
	ctx := context.Background()
	rc := newReceiver(t)
	cfg, problems := notifications.ParseConfig(map[string]string{
		"service.webhook.hook": "url: " + rc.URL + "\n",
		"defaultTriggers":      "[on-created, on-deleted]\n",
	}, nil, notifications.ParseOptions{})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	obj := appObject("web", "Running", "aaa", "Progressing", map[string]any{"notifications.argoproj.io/subscribe.hook": ""})
	c, err := notifications.New(notifications.Options{Lookup: func(string) (notifications.Subject, bool) { return notifications.Subject{App: obj}, true }})
	if err != nil {
		t.Fatal(err)
	}
	c.SetConfig(cfg)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	c.Enqueue("web")
	c.Enqueue("web")
	waitFor(t, func() bool { return len(rc.requests()) == 1 })
	c.Deleted("web")
	waitFor(t, func() bool { return len(rc.requests()) == 2 })
	got := rc.requests()
	if !strings.Contains(got[0], "has been created") || !strings.Contains(got[1], "has been deleted") {
		t.Errorf("requests %q", got)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatal("waited too long")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// After a restart the engine no longer has the last sync operation; the state file keeps it,
// so a oncePer on the operation's revision does not change and nothing is resent.
func TestOperationKeptAcrossRestart(t *testing.T) {
	ctx := context.Background()
	rc := newReceiver(t)
	cfg, problems := notifications.ParseConfig(map[string]string{"service.webhook.hook": "url: " + rc.URL + "\n"}, nil, notifications.ParseOptions{})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	ann := map[string]any{"notifications.argoproj.io/subscribe.on-health-degraded.hook": ""}
	obj := appObject("web", "Succeeded", "aaa", "Degraded", ann)
	var mu sync.Mutex
	lookup := func(string) (notifications.Subject, bool) {
		mu.Lock()
		defer mu.Unlock()
		return notifications.Subject{App: obj}, true
	}
	state := filepath.Join(t.TempDir(), "state.json")
	c, err := notifications.New(notifications.Options{Lookup: lookup, StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	c.SetConfig(cfg)
	c.Process(ctx, "web")
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
	mu.Lock()
	obj = appObject("web", "Succeeded", "aaa", "Degraded", ann)
	delete(obj["status"].(map[string]any), "operationState")
	mu.Unlock()
	c2, err := notifications.New(notifications.Options{Lookup: lookup, StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	c2.SetConfig(cfg)
	c2.Process(ctx, "web")
	if n := len(rc.requests()); n != 1 {
		t.Errorf("after a restart without the operation: %d requests, want 1", n)
	}
}

// A subscription on the AppProject applies to its applications; templates see the project.
func TestProjectSubscription(t *testing.T) {
	ctx := context.Background()
	rc := newReceiver(t)
	cfg, problems := notifications.ParseConfig(map[string]string{
		"service.webhook.hook":        "url: " + rc.URL + "\n",
		"template.app-sync-succeeded": "message: '{{.app.metadata.name}} in {{.appProject.metadata.name}}'\n",
	}, nil, notifications.ParseOptions{})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	subj := notifications.Subject{
		App:                appObject("web", "Succeeded", "aaa", "Healthy", nil),
		Project:            map[string]any{"metadata": map[string]any{"name": "payments"}},
		ProjectAnnotations: map[string]string{"notifications.argoproj.io/subscribe.on-sync-succeeded.hook": ""},
	}
	c, err := notifications.New(notifications.Options{Lookup: func(string) (notifications.Subject, bool) { return subj, true }})
	if err != nil {
		t.Fatal(err)
	}
	c.SetConfig(cfg)
	c.Process(ctx, "web")
	if got := rc.requests(); len(got) != 1 || got[0] != "GET / web in payments" {
		t.Errorf("requests %q", got)
	}
}

// Argo CD's on-deployed condition (time.Parse, durations, method calls) evaluates as in Argo CD.
func TestOnDeployedCatalogTrigger(t *testing.T) {
	ctx := context.Background()
	rc := newReceiver(t)
	cfg, problems := notifications.ParseConfig(map[string]string{"service.webhook.hook": "url: " + rc.URL + "\n"}, nil, notifications.ParseOptions{})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	ann := map[string]any{"notifications.argoproj.io/subscribe.on-deployed.hook": ""}
	obj := appObject("web", "Running", "aaa", "Progressing", ann)
	var mu sync.Mutex
	c, err := notifications.New(notifications.Options{Lookup: func(string) (notifications.Subject, bool) {
		mu.Lock()
		defer mu.Unlock()
		return notifications.Subject{App: obj}, true
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.SetConfig(cfg)
	c.Process(ctx, "web")
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("deployed while running: %q", rc.requests())
	}
	mu.Lock()
	obj = appObject("web", "Succeeded", "aaa", "Healthy", ann)
	mu.Unlock()
	c.Process(ctx, "web")
	c.Process(ctx, "web")
	if got := rc.requests(); len(got) != 1 || !strings.Contains(got[0], "is now running new version") {
		t.Errorf("requests %q", got)
	}
}
