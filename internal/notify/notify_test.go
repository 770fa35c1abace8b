package notify_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/notify"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/testenv/fakedns"
	"github.com/freshet-dev/freshet/internal/testenv/smtpd"
)

// receiver is a real HTTP server on loopback taking webhook and Slack posts. It answers
// failFirst requests with failStatus, then 200 (or always failStatus when failAlways).
type receiver struct {
	srv        *httptest.Server
	mu         sync.Mutex
	posts      []post
	failFirst  int
	failStatus int
	failAlways bool
	seen       int
}

type post struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, failFirst, failStatus int) *receiver {
	rc := &receiver{failFirst: failFirst, failStatus: failStatus}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.seen++
		if rc.failAlways || rc.seen <= rc.failFirst {
			http.Error(w, "internal detail that must not reach the log", rc.failStatus)
			return
		}
		rc.posts = append(rc.posts, post{header: r.Header.Clone(), body: body})
		io.WriteString(w, "ok")
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) got() []post {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]post(nil), rc.posts...)
}

type env struct {
	db      *store.DB
	dsn     string
	keys    *secrets.Keyring
	policy  *netpolicy.Policy
	admin   rbac.Principal
	account string
	svc     *notify.Service
	roots   *x509.CertPool
}

func newEnv(t *testing.T, d store.Dialect, roots *x509.CertPool) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{dsn: storetest.DSN(t, d), keys: secrets.Generate(), roots: roots}
	e.open(t)
	id := identity.New(identity.Deps{Store: e.db, Audit: audit.NewLog(e.db, nil)})
	if _, err := id.Bootstrap(ctx, "acme", "admin@acme.test", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	login, err := id.Login(ctx, "admin@acme.test", "correct-horse-battery", "")
	if err != nil {
		t.Fatal(err)
	}
	e.admin, e.account = login.Principal, login.Principal.AccountID
	return e
}

// open (re)opens the database and builds the service on it, as a restarted server does.
func (e *env) open(t *testing.T) {
	t.Helper()
	db, err := store.Open(context.Background(), e.dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if e.policy == nil {
		if e.policy, err = (netpolicy.Options{PrivateNetworks: []string{"loopback"}}).Policy(); err != nil {
			t.Fatal(err)
		}
	}
	e.db = db
	e.svc = notify.New(notify.Deps{Store: db, Keys: e.keys, Net: e.policy, BaseURL: "https://freshet.example",
		BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Poll: 10 * time.Millisecond, SMTPRootCAs: e.roots})
}

func (e *env) channel(t *testing.T, spec notify.ChannelSpec) {
	t.Helper()
	if _, err := e.svc.CreateChannel(context.Background(), e.admin, spec); err != nil {
		t.Fatalf("create channel %s: %v", spec.Name, err)
	}
}

func (e *env) subscribe(t *testing.T, sp notify.SubscriptionSpec) {
	t.Helper()
	if _, err := e.svc.CreateSubscription(context.Background(), e.admin, sp); err != nil {
		t.Fatalf("subscribe %s: %v", sp.Channel, err)
	}
}

// runSender runs the sender until the test ends.
func (e *env) runSender(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.svc.RunSender(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitFor polls cond (every 10 ms, for at most 30 s): the outcome is what is asserted, never
// how long it took.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func (e *env) deliveries(t *testing.T, channel string) []notify.Delivery {
	t.Helper()
	ds, err := e.svc.Deliveries(context.Background(), e.admin, notify.DeliveryFilter{Channel: channel}, paging.Page{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// finishedBuild stores a pipeline web/ci and a build of it that ended with status.
func (e *env) finishedBuild(t *testing.T, project, name, status string) store.Build {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	pr := store.Project{ID: store.NewID(store.PrefixProject), AccountID: e.account, Name: project, CreatedAt: now}
	pl := store.Pipeline{ID: store.NewID(store.PrefixPipeline), AccountID: e.account, ProjectID: pr.ID, Name: name,
		SpecYAML: "version: '1.0'\n", Config: "{}", CreatedAt: now, UpdatedAt: now}
	b := store.Build{ID: store.NewID(store.PrefixBuild), AccountID: e.account, PipelineID: pl.ID, Status: status, Branch: "main",
		SHA: "0123456789abcdef0123456789abcdef01234567", CommitMessage: "Fix the login page\n\nlong text", TriggerType: "manual",
		Variables: "{}", Labels: "{}", CreatedAt: now, StartedAt: now.Add(-time.Minute), FinishedAt: now}
	err := e.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateProject(ctx, pr); err != nil {
			return err
		}
		if err := tx.CreatePipeline(ctx, pl); err != nil {
			return err
		}
		return tx.CreateBuild(ctx, &b)
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Events published on the bus the way the control plane publishes them reach the channels
// their subscriptions route them to — a signed webhook, a Slack-compatible webhook and email
// through a real SMTP server with STARTTLS and a login — filtered by pipeline and application,
// once each, and the delivery log shows every delivery.
func TestEventsReachWebhookSlackAndEmail(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			ms := smtpd.Start(t, "ci", "smtp-pass-123")
			e := newEnv(t, d, ms.Roots)
			hook, slack := newReceiver(t, 0, 0), newReceiver(t, 0, 0)
			host, port, _ := net.SplitHostPort(ms.Addr)
			var p int
			json.Unmarshal([]byte(port), &p)
			e.channel(t, notify.ChannelSpec{Name: "ops-hook", Kind: notify.KindWebhook, URL: hook.srv.URL + "/hook?token=abc", Secret: "hook-secret-1"})
			e.channel(t, notify.ChannelSpec{Name: "chat", Kind: notify.KindSlack, URL: slack.srv.URL + "/services/T000/B000/XXXXSECRET"})
			e.channel(t, notify.ChannelSpec{Name: "mail", Kind: notify.KindEmail, SMTP: &notify.SMTP{Host: host, Port: p, Username: "ci",
				Password: "smtp-pass-123", From: "ci@acme.test", To: []string{"dev@acme.test", "ops@acme.test"}}})
			e.subscribe(t, notify.SubscriptionSpec{Channel: "ops-hook", Events: []string{notify.EventBuildFailed}, Pipeline: "web/ci"})
			e.subscribe(t, notify.SubscriptionSpec{Channel: "chat", Events: []string{notify.EventDeployment, notify.EventHealthDegraded, notify.EventRolloutAborted}, Application: "shop"})
			e.subscribe(t, notify.SubscriptionSpec{Channel: "mail", Events: []string{notify.EventBuildFinished}})

			b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); e.svc.Run(rctx, b) }()
			t.Cleanup(func() { cancel(); <-done })
			e.runSender(t)

			failed := e.finishedBuild(t, "web", "ci", pipeline.StatusFailed)
			other := e.finishedBuild(t, "api", "ci", pipeline.StatusSuccess)
			pub := func(event, key string, v any) {
				t.Helper()
				if err := bus.Publish(ctx, b, "freshet."+e.account+"."+event, key, v); err != nil {
					t.Fatal(err)
				}
			}
			now := time.Now().UTC()
			pub("builds.started", "build-started/"+failed.ID+"/1", pipeline.BuildEvent{BuildID: failed.ID, Status: pipeline.StatusRunning, Attempt: 1})
			pub("builds.finished", "build-finished/"+failed.ID, pipeline.BuildEvent{BuildID: failed.ID, Status: pipeline.StatusFailed})
			pub("builds.finished", "build-finished/"+other.ID, pipeline.BuildEvent{BuildID: other.ID, Status: pipeline.StatusSuccess})
			for _, app := range []string{"shop", "blog"} {
				pub("gitops.sync-finished", "gitops-sync-finished/rt/"+app+"/1", runtimes.SyncFinished{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod",
					Application: app, SyncID: 1, Revision: "abcdef0123456789", Phase: "Succeeded", InitiatedBy: "automated", StartedAt: now.Add(-time.Minute), FinishedAt: now})
				pub("gitops.health-changed", "gitops-health-changed/rt/"+app+"/degraded", runtimes.HealthChanged{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod",
					Application: app, From: "Healthy", To: "Degraded", Message: "Deployment shop has 0/3 ready", At: now})
				pub("gitops.health-changed", "gitops-health-changed/rt/"+app+"/healthy", runtimes.HealthChanged{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod",
					Application: app, From: "Degraded", To: "Healthy", At: now.Add(time.Second)})
				pub("gitops.rollout-changed", "gitops-rollout-changed/rt/"+app+"/aborted", runtimes.RolloutChanged{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod",
					Application: app, Namespace: "shop", Rollout: "web", Kind: runtimev1.RolloutAborted, Phase: "Degraded", Revision: 3, At: now})
				pub("gitops.rollout-changed", "gitops-rollout-changed/rt/"+app+"/step", runtimes.RolloutChanged{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod",
					Application: app, Namespace: "shop", Rollout: "web", Kind: runtimev1.RolloutStepChanged, Phase: "Progressing", At: now})
			}

			waitFor(t, "the deliveries", func() bool {
				return len(hook.got()) >= 1 && len(slack.got()) >= 3 && len(ms.Mails()) >= 2 && len(e.deliveries(t, "")) >= 6 &&
					allDone(e.deliveries(t, ""))
			})
			// The webhook: only the failed build of web/ci, signed.
			hp := hook.got()
			if len(hp) != 1 {
				t.Fatalf("webhook got %d posts, want 1", len(hp))
			}
			if got, want := hp[0].header.Get(notify.HeaderSignature), notify.Sign("hook-secret-1", hp[0].body); got != want {
				t.Errorf("signature %q, want %q", got, want)
			}
			var wb notify.WebhookBody
			if err := json.Unmarshal(hp[0].body, &wb); err != nil {
				t.Fatal(err)
			}
			if wb.Event != notify.EventBuildFailed || wb.EventKey != "build-finished/"+failed.ID || !strings.Contains(wb.Title, "web/ci failed") ||
				wb.URL != "https://freshet.example/builds/"+failed.ID || hp[0].header.Get(notify.HeaderEvent) != notify.EventBuildFailed {
				t.Errorf("webhook body %+v", wb)
			}
			// Slack: shop's deployment, degraded health and aborted rollout; not blog's, not the
			// transition to Healthy, not the rollout's step.
			titles := map[string]bool{}
			for _, sp := range slack.got() {
				var body struct {
					Text   string           `json:"text"`
					Blocks []map[string]any `json:"blocks"`
				}
				if err := json.Unmarshal(sp.body, &body); err != nil || body.Text == "" || len(body.Blocks) == 0 || body.Blocks[0]["type"] != "section" {
					t.Errorf("slack body %s: %v", sp.body, err)
				}
				if strings.Contains(body.Text, "blog") {
					t.Errorf("slack got blog's event: %s", body.Text)
				}
				titles[body.Text] = true
			}
			for _, want := range []string{"Deployment of shop (prod) succeeded", "shop (prod) is Degraded", "Rollout web of shop (prod) aborted"} {
				if !titles[want] {
					t.Errorf("slack did not get %q; got %v", want, titles)
				}
			}
			if len(slack.got()) != 3 {
				t.Errorf("slack got %d posts, want 3", len(slack.got()))
			}
			// Email: both builds, to both recipients, after STARTTLS and the login.
			mails := ms.Mails()
			if len(mails) != 2 {
				t.Fatalf("got %d mails, want 2", len(mails))
			}
			for _, m := range mails {
				if m.From != "ci@acme.test" || strings.Join(m.To, ",") != "dev@acme.test,ops@acme.test" || m.User != "ci" ||
					!strings.Contains(m.Data, "Subject: Build #") || !strings.Contains(m.Data, "X-Freshet-Event: build-") {
					t.Errorf("mail %+v", m)
				}
			}
			// The log: six deliveries, each delivered at the first attempt.
			for _, dl := range e.deliveries(t, "") {
				if dl.Status != notify.StatusDelivered || len(dl.Attempts) != 1 || dl.Attempts[0].Error != "" {
					t.Errorf("delivery %+v", dl)
				}
			}
			// A redelivered event (a replica died before its ack) queues nothing more.
			raw, _ := json.Marshal(runtimes.SyncFinished{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod", Application: "shop", SyncID: 1,
				Revision: "abcdef0123456789", Phase: "Succeeded", FinishedAt: now})
			msg := bus.Message[json.RawMessage]{Subject: "freshet." + e.account + ".gitops.sync-finished", Key: "gitops-sync-finished/rt/shop/1", Data: raw, Delivered: 2}
			if err := e.svc.HandleGitOpsEvent(ctx, msg); err != nil {
				t.Fatal(err)
			}
			if n := len(e.deliveries(t, "chat")); n != 3 {
				t.Errorf("after a redelivery chat has %d deliveries, want 3", n)
			}
		})
	}
}

func allDone(ds []notify.Delivery) bool {
	for _, d := range ds {
		if d.Status == notify.StatusPending {
			return false
		}
	}
	return true
}

// A channel that fails is tried again with backoff until it answers (503, 503, then 200); one
// that refuses (404) is not tried again; one that always fails gives up after MaxAttempts. The
// log has every attempt with its status code, and no text of the remote's answer.
func TestRetriesAndDeliveryLog(t *testing.T) {
	eachBackend(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		e := newEnv(t, d, nil)
		flaky, refusing, down := newReceiver(t, 2, 503), newReceiver(t, 1, 404), newReceiver(t, 0, 500)
		down.failAlways = true
		e.channel(t, notify.ChannelSpec{Name: "flaky", Kind: notify.KindWebhook, URL: flaky.srv.URL})
		e.channel(t, notify.ChannelSpec{Name: "refusing", Kind: notify.KindWebhook, URL: refusing.srv.URL})
		e.channel(t, notify.ChannelSpec{Name: "down", Kind: notify.KindWebhook, URL: down.srv.URL})
		for _, c := range []string{"flaky", "refusing", "down"} {
			e.subscribe(t, notify.SubscriptionSpec{Channel: c, Events: []string{notify.EventHealthDegraded}})
		}
		raw, _ := json.Marshal(runtimes.HealthChanged{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod", Application: "shop", From: "Healthy", To: "Degraded", At: time.Now()})
		if err := e.svc.HandleGitOpsEvent(ctx, bus.Message[json.RawMessage]{Subject: "freshet." + e.account + ".gitops.health-changed", Key: "h1", Data: raw, Delivered: 1}); err != nil {
			t.Fatal(err)
		}
		e.runSender(t)
		waitFor(t, "every delivery to settle", func() bool { return allDone(e.deliveries(t, "")) })
		want := map[string]struct {
			status string
			codes  []int
		}{
			"flaky":    {notify.StatusDelivered, []int{503, 503, 200}},
			"refusing": {notify.StatusFailed, []int{404}},
			"down":     {notify.StatusFailed, []int{500, 500, 500, 500, 500, 500}},
		}
		for ch, w := range want {
			ds := e.deliveries(t, ch)
			if len(ds) != 1 {
				t.Fatalf("%s: %d deliveries", ch, len(ds))
			}
			var codes []int
			for _, a := range ds[0].Attempts {
				codes = append(codes, a.StatusCode)
				if strings.Contains(a.Error, "internal detail") {
					t.Errorf("%s: the log shows the remote's body: %q", ch, a.Error)
				}
				if a.StatusCode != 200 && !strings.Contains(a.Error, "answered") {
					t.Errorf("%s: attempt error %q does not say what was answered", ch, a.Error)
				}
			}
			if ds[0].Status != w.status || !equalInts(codes, w.codes) {
				t.Errorf("%s: status %s, codes %v; want %s, %v", ch, ds[0].Status, codes, w.status, w.codes)
			}
		}
		if n := len(flaky.got()); n != 1 {
			t.Errorf("flaky got %d successful posts, want 1", n)
		}
	})
}

// eachBackend runs fn once per database backend (SQLite, and PostgreSQL when configured).
func eachBackend(t *testing.T, fn func(t *testing.T, d store.Dialect)) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) { fn(t, d) })
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Deliveries are in the database: queued while the endpoint is down and the process stops,
// they are sent by the process that opens the database next.
func TestQueueSurvivesARestart(t *testing.T) {
	eachBackend(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		e := newEnv(t, d, nil)
		rc := newReceiver(t, 0, 0)
		e.channel(t, notify.ChannelSpec{Name: "hook", Kind: notify.KindWebhook, URL: rc.srv.URL, Secret: "s3cret"})
		e.subscribe(t, notify.SubscriptionSpec{Channel: "hook", Events: []string{notify.EventDeployment}})
		for _, app := range []string{"a", "b"} {
			raw, _ := json.Marshal(runtimes.SyncFinished{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod", Application: app, SyncID: 1, Phase: "Failed", FinishedAt: time.Now()})
			if err := e.svc.HandleGitOpsEvent(ctx, bus.Message[json.RawMessage]{Subject: "freshet." + e.account + ".gitops.sync-finished", Key: "sync/" + app, Data: raw, Delivered: 1}); err != nil {
				t.Fatal(err)
			}
		}
		e.db.Close() // the process stops before sending
		e.open(t)
		e.runSender(t)
		waitFor(t, "the queued deliveries", func() bool { return len(rc.got()) == 2 && allDone(e.deliveries(t, "hook")) })
		for _, p := range rc.got() {
			if p.header.Get(notify.HeaderSignature) != notify.Sign("s3cret", p.body) {
				t.Errorf("a delivery after the restart is not signed with the stored secret")
			}
		}
		ds := e.deliveries(t, "hook")
		if len(ds) != 2 || !allDone(ds) || ds[0].Status != notify.StatusDelivered {
			t.Errorf("deliveries after the restart: %+v", ds)
		}
	})
}

// Secrets are encrypted at rest and never shown: the listing masks a webhook URL's query and a
// Slack URL's path, and the stored rows carry none of them in clear.
func TestChannelSecretsAreEncryptedAndMasked(t *testing.T) {
	eachBackend(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		e := newEnv(t, d, nil)
		e.channel(t, notify.ChannelSpec{Name: "hook", Kind: notify.KindWebhook, URL: "https://hooks.example.com/in?token=QUERYSECRET", Secret: "HOOKSECRET"})
		e.channel(t, notify.ChannelSpec{Name: "chat", Kind: notify.KindSlack, URL: "https://hooks.slack.com/services/T1/B1/SLACKSECRET"})
		e.channel(t, notify.ChannelSpec{Name: "mail", Kind: notify.KindEmail, SMTP: &notify.SMTP{Host: "smtp.example.com", Username: "u", Password: "MAILSECRET",
			From: "ci@acme.test", To: []string{"dev@acme.test"}}})
		cs, err := e.svc.ListChannels(ctx, e.admin)
		if err != nil {
			t.Fatal(err)
		}
		shown, _ := json.Marshal(cs)
		rows, err := e.db.ListNotificationChannels(ctx, e.account)
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := json.Marshal(rows)
		for _, s := range []string{"HOOKSECRET", "SLACKSECRET", "MAILSECRET"} {
			if strings.Contains(string(shown), s) || strings.Contains(string(stored), s) {
				t.Errorf("%s is shown or stored in clear", s)
			}
		}
		if strings.Contains(string(shown), "QUERYSECRET") || strings.Contains(string(stored), "QUERYSECRET") {
			t.Errorf("a webhook URL's query is shown or stored in clear: %s", shown)
		}
		for _, c := range cs {
			switch c.Name {
			case "chat":
				if c.URL != "https://hooks.slack.com/…" || !c.HasSecret {
					t.Errorf("slack channel shown as %+v", c)
				}
			case "mail":
				if c.SMTP == nil || c.SMTP.Port != 587 || c.SMTP.Security != notify.SecurityStartTLS || !c.HasSecret {
					t.Errorf("email channel shown as %+v", c.SMTP)
				}
			}
		}
		// A viewer reads none of it.
		viewer := e.admin
		viewer.Role = rbac.Viewer
		if _, err := e.svc.ListChannels(ctx, viewer); !errors.Is(err, errdefs.ErrForbidden) {
			t.Errorf("a viewer lists channels: %v", err)
		}
		if _, err := e.svc.Deliveries(ctx, viewer, notify.DeliveryFilter{}, paging.Page{}); !errors.Is(err, errdefs.ErrForbidden) {
			t.Errorf("a viewer reads the delivery log: %v", err)
		}
	})
}

// The test action sends one notification at once and answers what happened, logged like any.
func TestSendTest(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, store.SQLite, nil)
	ok, bad := newReceiver(t, 0, 0), newReceiver(t, 0, 503)
	bad.failAlways = true
	e.channel(t, notify.ChannelSpec{Name: "ok", Kind: notify.KindSlack, URL: ok.srv.URL + "/services/x"})
	e.channel(t, notify.ChannelSpec{Name: "bad", Kind: notify.KindWebhook, URL: bad.srv.URL})
	d, err := e.svc.SendTest(ctx, e.admin, "ok")
	if err != nil || d.Status != notify.StatusDelivered || len(d.Attempts) != 1 || d.Attempts[0].StatusCode != 200 || d.Event != notify.EventTest {
		t.Errorf("test to ok: %+v, %v", d, err)
	}
	if len(ok.got()) != 1 {
		t.Errorf("ok got %d posts", len(ok.got()))
	}
	d, err = e.svc.SendTest(ctx, e.admin, "bad")
	if err != nil || d.Status != notify.StatusFailed || len(d.Attempts) != 1 || d.Attempts[0].StatusCode != 503 || !strings.Contains(d.LastError, "503") {
		t.Errorf("test to bad: %+v, %v", d, err)
	}
	if _, err := e.svc.SendTest(ctx, e.admin, "missing"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("test to a missing channel: %v", err)
	}
	if n := len(e.deliveries(t, "")); n != 2 {
		t.Errorf("the log has %d deliveries, want 2", n)
	}
}

// Bad input is refused naming the field and what is valid, and nothing is stored.
func TestBadInputNamesTheField(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, store.SQLite, nil)
	okSMTP := func(f func(m *notify.SMTP)) *notify.SMTP {
		m := &notify.SMTP{Host: "smtp.example.com", Port: 587, Username: "u", Password: "p", From: "ci@acme.test", To: []string{"a@acme.test"}}
		f(m)
		return m
	}
	for _, c := range []struct {
		spec        notify.ChannelSpec
		field, text string
	}{
		{notify.ChannelSpec{Name: "Bad Name", Kind: "webhook", URL: "https://x.example"}, "name", "channel name"},
		{notify.ChannelSpec{Name: "a", Kind: "pager", URL: "https://x.example"}, "kind", "webhook, slack or email"},
		{notify.ChannelSpec{Name: "a", Kind: "webhook"}, "url", "required"},
		{notify.ChannelSpec{Name: "a", Kind: "webhook", URL: "ftp://x.example/a"}, "url", "http(s) URL"},
		{notify.ChannelSpec{Name: "a", Kind: "webhook", URL: "https://user:pw@x.example/a"}, "url", "credentials"},
		{notify.ChannelSpec{Name: "a", Kind: "slack", URL: "https://x.example", Secret: "s"}, "secret", "not used"},
		{notify.ChannelSpec{Name: "a", Kind: "email", SMTP: okSMTP(func(m *notify.SMTP) { m.From = "not an address" })}, "smtp.from", "email address"},
		{notify.ChannelSpec{Name: "a", Kind: "email", SMTP: okSMTP(func(m *notify.SMTP) { m.To = []string{"a@acme.test", "Bob <b@acme.test>"} })}, "smtp.to[1]", "email address"},
		{notify.ChannelSpec{Name: "a", Kind: "email", SMTP: okSMTP(func(m *notify.SMTP) { m.To = nil })}, "smtp.to", "1 to 20"},
		{notify.ChannelSpec{Name: "a", Kind: "email", SMTP: okSMTP(func(m *notify.SMTP) { m.Host = "smtp://x" })}, "smtp.host", "host name"},
		{notify.ChannelSpec{Name: "a", Kind: "email", SMTP: okSMTP(func(m *notify.SMTP) { m.Port = 70000 })}, "smtp.port", "TCP port"},
		{notify.ChannelSpec{Name: "a", Kind: "email", SMTP: okSMTP(func(m *notify.SMTP) { m.Security = "ssl" })}, "smtp.security", "starttls, tls or none"},
		{notify.ChannelSpec{Name: "a", Kind: "email", SMTP: okSMTP(func(m *notify.SMTP) { m.Security = "none" })}, "smtp.security", "in clear"},
		{notify.ChannelSpec{Name: "a", Kind: "email"}, "smtp", "required"},
	} {
		_, err := e.svc.CreateChannel(ctx, e.admin, c.spec)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != c.field || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%+v: %v (field %q), want field %q saying %q", c.spec, err, errdefs.Field(err), c.field, c.text)
		}
	}
	e.channel(t, notify.ChannelSpec{Name: "hook", Kind: "webhook", URL: "https://hooks.example.com/x"})
	for _, c := range []struct {
		spec        notify.SubscriptionSpec
		field, text string
	}{
		{notify.SubscriptionSpec{Channel: "hook"}, "events", "build-finished, build-failed, deployment, rollout-aborted, health-degraded"},
		{notify.SubscriptionSpec{Channel: "hook", Events: []string{"deployment", "build-exploded"}}, "events[1]", "not an event kind"},
		{notify.SubscriptionSpec{Channel: "hook", Events: []string{"deployment", "deployment"}}, "events[1]", "twice"},
		{notify.SubscriptionSpec{Channel: "nope", Events: []string{"deployment"}}, "channel", "not a notification channel"},
		{notify.SubscriptionSpec{Channel: "hook", Events: []string{"build-failed"}, Pipeline: "ci"}, "pipeline", "project/pipeline"},
	} {
		_, err := e.svc.CreateSubscription(ctx, e.admin, c.spec)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != c.field || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%+v: %v (field %q), want field %q saying %q", c.spec, err, errdefs.Field(err), c.field, c.text)
		}
	}
	if subs, _ := e.svc.ListSubscriptions(ctx, e.admin); len(subs) != 0 {
		t.Errorf("refused subscriptions were stored: %+v", subs)
	}
	if cs, _ := e.svc.ListChannels(ctx, e.admin); len(cs) != 1 {
		t.Errorf("refused channels were stored: %+v", cs)
	}
}

// URLs from tenants go through the operator's policy: a loopback, private or metadata address
// (or a name for one) is refused with what the operator allows, when the channel is created and
// again when connecting (a name that resolves there later).
func TestNetworkPolicyRefusesInternalAddresses(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, store.SQLite, nil)
	dns := fakedns.Start(t, map[string][]string{"hooks.tenant.example": {"127.0.0.1"}})
	strict, err := netpolicy.Options{Resolver: dns.Resolver()}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	e.policy = strict
	e.open(t)
	for _, c := range []struct {
		spec  notify.ChannelSpec
		field string
	}{
		{notify.ChannelSpec{Name: "a", Kind: "webhook", URL: "http://127.0.0.1:8080/hook"}, "url"},
		{notify.ChannelSpec{Name: "b", Kind: "slack", URL: "http://169.254.169.254/latest/meta-data"}, "url"},
		{notify.ChannelSpec{Name: "c", Kind: "webhook", URL: "http://localhost/hook"}, "url"},
		{notify.ChannelSpec{Name: "d", Kind: "email", SMTP: &notify.SMTP{Host: "10.0.0.5", From: "ci@acme.test", To: []string{"a@acme.test"}}}, "smtp.host"},
	} {
		_, err := e.svc.CreateChannel(ctx, e.admin, c.spec)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != c.field || !strings.Contains(err.Error(), "public addresses only") {
			t.Errorf("%s: %v, want a refusal of %s saying what is allowed", c.spec.Name, err, c.field)
		}
	}
	// A name passes the check when created; connecting to what it resolves to is refused, and
	// the delivery fails at once saying why.
	rc := newReceiver(t, 0, 0)
	_, port, _ := net.SplitHostPort(rc.srv.Listener.Addr().String())
	e.channel(t, notify.ChannelSpec{Name: "named", Kind: "webhook", URL: "http://hooks.tenant.example:" + port + "/"})
	d, err := e.svc.SendTest(ctx, e.admin, "named")
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != notify.StatusFailed || len(d.Attempts) != 1 || len(rc.got()) != 0 || !strings.Contains(d.LastError, "loopback") {
		t.Errorf("a name resolving to loopback: %+v (posts %d)", d, len(rc.got()))
	}
}

// Master-key rotation re-encrypts channels' secrets: after the old key is retired, a webhook
// is still signed with its secret.
func TestChannelSecretsSurviveKeyRotation(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, store.SQLite, nil)
	rc := newReceiver(t, 0, 0)
	e.channel(t, notify.ChannelSpec{Name: "hook", Kind: notify.KindWebhook, URL: rc.srv.URL, Secret: "rotate-me"})
	e.channel(t, notify.ChannelSpec{Name: "plain", Kind: notify.KindWebhook, URL: rc.srv.URL})
	old := e.keys.Primary()
	if _, err := e.keys.Rotate(); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := e.db.Tx(ctx, func(tx *store.Tx) (err error) {
		n, err = notify.ReencryptSecrets(ctx, tx, e.keys)
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("ReencryptSecrets = %d, %v; want 2 (a webhook's URL is a secret too, with or without a signing secret)", n, err)
	}
	if err := e.keys.Retire(old); err != nil {
		t.Fatal(err)
	}
	d, err := e.svc.SendTest(ctx, e.admin, "hook")
	if err != nil || d.Status != notify.StatusDelivered {
		t.Fatalf("after rotation: %+v, %v", d, err)
	}
	if p := rc.got()[0]; p.header.Get(notify.HeaderSignature) != notify.Sign("rotate-me", p.body) {
		t.Error("the body is not signed with the secret after rotation")
	}
}

// Two replicas — two services on one database, both consuming the bus and both sending — share
// the work: every event is delivered once, none twice, whichever replica queued or sent it.
func TestReplicasDeliverEachEventOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		e := newEnv(t, d, nil)
		rc := newReceiver(t, 0, 0)
		e.channel(t, notify.ChannelSpec{Name: "hook", Kind: notify.KindWebhook, URL: rc.srv.URL})
		e.subscribe(t, notify.SubscriptionSpec{Channel: "hook", Events: []string{notify.EventDeployment}})
		b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		first := e.svc
		e.open(t) // a second replica: its own pool and service on the same database
		for _, svc := range []*notify.Service{first, e.svc} {
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{}, 2)
			go func() { svc.Run(rctx, b); done <- struct{}{} }()
			go func() { svc.RunSender(rctx); done <- struct{}{} }()
			t.Cleanup(func() { cancel(); <-done; <-done })
		}
		const events = 40
		now := time.Now().UTC()
		for i := range events {
			app := "app-" + strconv.Itoa(i)
			if err := bus.Publish(ctx, b, "freshet."+e.account+".gitops.sync-finished", "gitops-sync-finished/rt/"+app+"/1",
				runtimes.SyncFinished{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod", Application: app, SyncID: 1, Phase: "Succeeded", FinishedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "every event's delivery", func() bool { return len(rc.got()) >= events && allDone(e.deliveries(t, "")) })
		seen := map[string]int{}
		for _, p := range rc.got() {
			seen[p.header.Get(notify.HeaderDelivery)]++
		}
		if len(rc.got()) != events || len(seen) != events {
			t.Errorf("%d posts of %d deliveries, want %d of %d", len(rc.got()), len(seen), events, events)
		}
		for _, dl := range e.deliveries(t, "") {
			if len(dl.Attempts) != 1 {
				t.Errorf("delivery %s was attempted %d times", dl.ID, len(dl.Attempts))
			}
		}
	})
}

// A slow endpoint does not hold up the others: while one webhook has not answered, another
// channel's notification of the same event is delivered.
func TestSlowEndpointDoesNotHoldOthers(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, store.SQLite, nil)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	fast := newReceiver(t, 0, 0)
	// Attempts wait an hour for an answer: sent one after the other, the fast channel's would
	// wait behind the slow one's for longer than the test.
	e.svc = notify.New(notify.Deps{Store: e.db, Keys: e.keys, Net: e.policy, SendTimeout: time.Hour, Poll: 10 * time.Millisecond})
	e.channel(t, notify.ChannelSpec{Name: "a-slow", Kind: notify.KindWebhook, URL: slow.URL})
	e.channel(t, notify.ChannelSpec{Name: "b-fast", Kind: notify.KindWebhook, URL: fast.srv.URL})
	for _, c := range []string{"a-slow", "b-fast"} {
		e.subscribe(t, notify.SubscriptionSpec{Channel: c, Events: []string{notify.EventHealthDegraded}})
	}
	raw, _ := json.Marshal(runtimes.HealthChanged{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod", Application: "shop", From: "Healthy", To: "Degraded", At: time.Now()})
	if err := e.svc.HandleGitOpsEvent(ctx, bus.Message[json.RawMessage]{Subject: "freshet." + e.account + ".gitops.health-changed", Key: "h1", Data: raw, Delivered: 1}); err != nil {
		t.Fatal(err)
	}
	e.runSender(t)
	waitFor(t, "the fast channel's delivery while the slow one hangs", func() bool { return len(fast.got()) == 1 })
	// An event queued later is not held up either.
	raw, _ = json.Marshal(runtimes.HealthChanged{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod", Application: "cart", From: "Healthy", To: "Degraded", At: time.Now()})
	if err := e.svc.HandleGitOpsEvent(ctx, bus.Message[json.RawMessage]{Subject: "freshet." + e.account + ".gitops.health-changed", Key: "h2", Data: raw, Delivered: 1}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a later event's delivery while the slow one hangs", func() bool { return len(fast.got()) == 2 })
	if ds := e.deliveries(t, "a-slow"); len(ds) != 2 || ds[1].Status != notify.StatusPending || len(ds[1].Attempts) != 0 {
		t.Errorf("the slow channel's deliveries: %+v", ds)
	}
}

// The log keeps settled deliveries for the retention: older delivered and failed ones go with
// their attempts; pending ones stay whatever their age.
func TestPruneKeepsTheRetention(t *testing.T) {
	eachBackend(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		e := newEnv(t, d, nil)
		ok, down := newReceiver(t, 0, 0), newReceiver(t, 0, 503)
		down.failAlways = true
		e.channel(t, notify.ChannelSpec{Name: "ok", Kind: notify.KindWebhook, URL: ok.srv.URL})
		e.channel(t, notify.ChannelSpec{Name: "down", Kind: notify.KindWebhook, URL: down.srv.URL})
		for _, c := range []string{"ok", "down"} {
			if _, err := e.svc.SendTest(ctx, e.admin, c); err != nil {
				t.Fatal(err)
			}
		}
		e.subscribe(t, notify.SubscriptionSpec{Channel: "ok", Events: []string{notify.EventHealthDegraded}})
		raw, _ := json.Marshal(runtimes.HealthChanged{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod", Application: "shop", From: "Healthy", To: "Degraded", At: time.Now()})
		if err := e.svc.HandleGitOpsEvent(ctx, bus.Message[json.RawMessage]{Subject: "freshet." + e.account + ".gitops.health-changed", Key: "h1", Data: raw, Delivered: 1}); err != nil {
			t.Fatal(err)
		}
		fresh := notify.New(notify.Deps{Store: e.db, Keys: e.keys, Net: e.policy, Retention: time.Hour})
		if n, err := fresh.Prune(ctx); err != nil || n != 0 {
			t.Fatalf("prune of a fresh log: %d, %v", n, err)
		}
		later := notify.New(notify.Deps{Store: e.db, Keys: e.keys, Net: e.policy, Retention: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
		if n, err := later.Prune(ctx); err != nil || n != 2 {
			t.Fatalf("prune two hours later: %d, %v; want the delivered and the failed test", n, err)
		}
		ds := e.deliveries(t, "")
		if len(ds) != 1 || ds[0].Status != notify.StatusPending {
			t.Errorf("after pruning: %+v", ds)
		}
		if atts, err := e.db.NotificationAttempts(ctx, e.account, []string{ds[0].ID}); err != nil || len(atts) != 0 {
			t.Errorf("attempts: %+v, %v", atts, err)
		}
	})
}
