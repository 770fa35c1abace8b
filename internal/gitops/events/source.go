package events

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/webhook"
)

// PathPrefix is where the runtime serves its EventSources' webhook events:
// PathPrefix + <namespace>/<event source><endpoint>.
const PathPrefix = "/app-proxy/events/"

// route is one webhook event an EventSource serves.
type route struct {
	typ      string           // webhook, github, gitea, gitlab, bitbucket
	provider webhook.Provider // empty for a plain webhook
	event    string
	secret   SecretKeySelector
	events   map[string]bool // the provider event header values let through; nil: all
	repos    map[string]bool // owner/name in lower case; nil: all
	orgs     map[string]bool
	metadata map[string]string
	filter   *exprProgram
	maxBody  int64
}

// sourceRun is a running EventSource: its routes, calendar timers and listeners.
type sourceRun struct {
	hash      string
	bus       *busConn
	routes    map[string]*route // "METHOD /endpoint"
	listeners []*listener
	cancel    context.CancelFunc
}

func (r *sourceRun) stop() { r.cancel() }

func (c *Controller) reconcileSource(ctx context.Context, u *unstructured.Unstructured) error {
	ns, name := u.GetNamespace(), u.GetName()
	key := ns + "/" + name
	data, _ := u.MarshalJSON()
	es, err := DecodeEventSource(data)
	if es == nil || err != nil {
		c.forget(kindSource, ns, name)
		return c.writeConditions(ctx, u, connConditions(u, nil, ReasonInvalidSpec,
			Condition{Type: CondSourcesProvided, Status: "False", Reason: ReasonInvalidSpec, Message: "invalid spec: " + err.Error()},
			Condition{Type: CondDeployed, Status: "False", Reason: ReasonInvalidSpec, Message: "nothing runs: the spec is invalid"})...)
	}
	provided := Condition{Type: CondSourcesProvided, Status: "True"}
	bus, cond := c.busFor(ns, es.Spec.EventBusName)
	if cond != nil {
		c.forget(kindSource, ns, name)
		return c.writeConditions(ctx, u, connConditions(u, nil, cond.Reason, provided, *cond)...)
	}
	hash := specHash(u)
	c.mu.Lock()
	cur := c.srcs[key]
	c.mu.Unlock()
	deployed := Condition{Type: CondDeployed, Status: "True", Message: fmt.Sprintf("%d event(s) on EventBus stream %s", countEvents(&es.Spec), bus.stream)}
	if cur != nil && cur.hash == hash && cur.bus == bus {
		return c.writeConditions(ctx, u, connConditions(u, cur, "", provided, deployed)...)
	}
	if err := checkPolicy(c.opts.Policy, &es.Spec); err != nil {
		c.forget(kindSource, ns, name)
		return c.writeConditions(ctx, u, connConditions(u, nil, ReasonInvalidSpec,
			Condition{Type: CondSourcesProvided, Status: "False", Reason: ReasonInvalidSpec, Message: "invalid spec: " + err.Error()},
			Condition{Type: CondDeployed, Status: "False", Reason: ReasonInvalidSpec, Message: "nothing runs: the spec is invalid"})...)
	}
	run, cals, err := buildSource(es)
	if err != nil { // validated above; a failure here is a bug, said as such
		return c.writeConditions(ctx, u, Condition{Type: CondSourcesProvided, Status: "False", Reason: ReasonInvalidSpec, Message: "invalid spec: " + err.Error()})
	}
	run.hash, run.bus = hash, bus
	rctx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	c.mu.Lock()
	if old := c.srcs[key]; old != nil {
		old.stop()
	}
	c.srcs[key] = run
	for _, cl := range cals {
		c.wg.Go(func() { c.runCalendar(rctx, bus, ns, name, cl) })
	}
	for _, l := range run.listeners {
		c.listeners.Add(1)
		c.wg.Go(func() {
			defer c.listeners.Add(-1)
			c.runListener(rctx, &emitter{c: c, bus: bus, ns: ns, name: name, l: l})
		})
	}
	c.mu.Unlock()
	c.log.Info("event source running", logKey, key, "events", countEvents(&es.Spec))
	return c.writeConditions(ctx, u, connConditions(u, run, "", provided, deployed)...)
}

func countEvents(s *EventSourceSpec) int {
	return len(s.Webhook) + len(s.Calendar) + len(s.GitHub) + len(s.GitLab) + len(s.Gitea) + len(s.Bitbucket) +
		len(s.Resource) + len(s.NATS) + len(s.Minio) + len(s.Redis) + len(s.MQTT) + len(s.AMQP) + len(s.RedisStream)
}

type calendarRun struct {
	event    string
	cal      *calendar
	metadata map[string]string
	filter   *exprProgram
	sa       string // who keeps the last tick (persistence.configMap)
}

func lowerSet(vs []string) map[string]bool {
	if len(vs) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, v := range vs {
		if v == "*" {
			return nil
		}
		m[strings.ToLower(v)] = true
	}
	return m
}

func filterOf(f *EventSourceFilter) *exprProgram {
	if f == nil || f.Expression == "" {
		return nil
	}
	p, _ := compileSourceFilter(f.Expression)
	return p
}

func method(m string) string {
	if m == "" {
		return http.MethodPost
	}
	return m
}

func maxBody(n *int64) int64 {
	if n == nil {
		return webhook.DefaultMaxBodyBytes
	}
	return *n
}

// buildSource compiles a validated EventSource into its routes and calendars.
func buildSource(es *EventSource) (*sourceRun, []calendarRun, error) {
	run := &sourceRun{routes: map[string]*route{}}
	s := &es.Spec
	add := func(w *WebhookContext, r *route) {
		r.maxBody = maxBody(w.MaxPayloadSize)
		run.routes[method(w.Method)+" "+w.Endpoint] = r
	}
	for name, w := range s.Webhook {
		add(&w.WebhookContext, &route{typ: "webhook", event: name, secret: *w.AuthSecret, metadata: w.Metadata, filter: filterOf(w.Filter)})
	}
	for typ, m := range map[string]map[string]GitHubSource{"github": s.GitHub, "gitea": s.Gitea} {
		for name, g := range m {
			r := &route{typ: typ, provider: webhook.Provider(typ), event: name, secret: *g.WebhookSecret, metadata: g.Metadata,
				filter: filterOf(g.Filter), events: lowerSet(g.Events), orgs: lowerSet(g.Organizations)}
			var repos []string
			for _, rp := range g.Repositories {
				for _, n := range rp.Names {
					repos = append(repos, rp.Owner+"/"+n)
				}
			}
			if g.Owner != "" && g.Repository != "" {
				repos = append(repos, g.Owner+"/"+g.Repository)
			}
			r.repos = lowerSet(repos)
			add(g.Webhook, r)
		}
	}
	for name, g := range s.GitLab {
		r := &route{typ: "gitlab", provider: webhook.GitLab, event: name, secret: *g.SecretToken, metadata: g.Metadata, filter: filterOf(g.Filter)}
		var evs []string
		for _, e := range g.Events {
			evs = append(evs, gitLabEvents[e])
		}
		r.events = lowerSet(evs)
		projects := append([]string(nil), g.Projects...)
		if g.ProjectID != "" {
			projects = append(projects, g.ProjectID)
		}
		r.repos = lowerSet(projects)
		add(g.Webhook, r)
	}
	for name, b := range s.Bitbucket {
		r := &route{typ: "bitbucket", provider: webhook.Bitbucket, event: name, secret: *b.WebhookSecret, metadata: b.Metadata,
			filter: filterOf(b.Filter), events: lowerSet(b.Events)}
		var repos []string
		for _, rp := range b.Repositories {
			repos = append(repos, rp.Owner+"/"+rp.RepositorySlug)
		}
		if b.Owner != "" && b.RepositorySlug != "" {
			repos = append(repos, b.Owner+"/"+b.RepositorySlug)
		}
		r.repos = lowerSet(repos)
		add(b.Webhook, r)
	}
	sa, err := serviceAccountOf(s)
	if err != nil {
		return nil, nil, err
	}
	for name, r := range s.Resource {
		w, err := compileResource("spec.resource."+name, r)
		if err != nil {
			return nil, nil, err
		}
		run.listeners = append(run.listeners, &listener{typ: "resource", event: name, resource: w, sa: sa})
	}
	for name, n := range s.NATS {
		b, err := compileBackoff("spec.nats."+name+".connectionBackoff", n.ConnectionBackoff)
		if err != nil {
			return nil, nil, err
		}
		run.listeners = append(run.listeners, &listener{typ: "nats", event: name, nats: &n, filter: filterOf(n.Filter), backoff: b})
	}
	for name, m := range s.Minio {
		run.listeners = append(run.listeners, &listener{typ: "minio", event: name, minio: &m})
	}
	for name, m := range s.MQTT {
		b, err := compileBackoff("spec.mqtt."+name+".connectionBackoff", m.ConnectionBackoff)
		if err != nil {
			return nil, nil, err
		}
		run.listeners = append(run.listeners, &listener{typ: "mqtt", event: name, mqtt: &m, filter: filterOf(m.Filter), backoff: b})
	}
	for name, r := range s.Redis {
		run.listeners = append(run.listeners, &listener{typ: "redis", event: name, redis: &r, filter: filterOf(r.Filter)})
	}
	for name, a := range s.AMQP {
		b, err := compileBackoff("spec.amqp."+name+".connectionBackoff", a.ConnectionBackoff)
		if err != nil {
			return nil, nil, err
		}
		run.listeners = append(run.listeners, &listener{typ: "amqp", event: name, amqp: &a, filter: filterOf(a.Filter), backoff: b})
	}
	for name, r := range s.RedisStream {
		run.listeners = append(run.listeners, &listener{typ: "redisStream", event: name, stream: &r, filter: filterOf(r.Filter)})
	}
	var cals []calendarRun
	for name, cs := range s.Calendar {
		cal, err := compileCalendar("spec.calendar."+name, cs)
		if err != nil {
			return nil, nil, err
		}
		cals = append(cals, calendarRun{event: name, cal: cal, metadata: cs.Metadata, filter: filterOf(cs.Filter), sa: sa})
	}
	return run, cals, nil
}

// runCalendar publishes a calendar event at each of its times until ctx ends. With
// persistence it keeps the last tick in a ConfigMap and, with catchup, first publishes the
// ticks missed since then (at most maxCatchupTicks), each with the id it would have had.
func (c *Controller) runCalendar(ctx context.Context, bus *busConn, ns, source string, cr calendarRun) {
	logName := ns + "/" + source + "/" + cr.event
	st, err := c.tickStoreFor(ns, source, cr)
	if err != nil {
		c.log.Warn("calendar ticks not kept", logKey, logName, logErr, err)
	}
	start := c.opts.Now()
	t := c.catchupFrom(ctx, st, cr, start, logName)
	missed := 0
	for {
		n := cr.cal.next(t)
		if n.IsZero() {
			return
		}
		if !n.After(start) {
			if missed++; missed > maxCatchupTicks {
				c.log.Warn("calendar catch-up stopped", logKey, logName, "ticks", maxCatchupTicks, "resumeAt", start)
				t, missed = start, 0
				continue
			}
		}
		timer := time.NewTimer(n.Sub(c.opts.Now()))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		t = n
		data, _ := json.Marshal(map[string]any{"eventTime": n.String(), "metadata": cr.metadata})
		if cr.filter == nil || passes(cr.filter, data) {
			ev := &Event{Context: EventContext{ID: fmt.Sprint(n.UnixNano()), Source: source, Subject: cr.event, Type: "calendar",
				SpecVersion: "1.0", DataContentType: "application/json", Time: metav1.NewTime(n)}, Data: data}
			if err := c.publishTick(ctx, bus, ev, logName); err != nil {
				continue // not kept: the next start catches it up
			}
		}
		if st != nil {
			if err := st.save(ctx, data); err != nil && ctx.Err() == nil {
				c.log.Warn("calendar tick not kept", logKey, logName, logErr, err)
			}
		}
	}
}

// publishTick publishes a calendar event, trying three times.
func (c *Controller) publishTick(ctx context.Context, bus *busConn, ev *Event, logName string) error {
	var err error
	for attempt := range 3 {
		err = bus.publish(ctx, ev)
		if err == nil || ctx.Err() != nil {
			return err
		}
		c.log.Warn("calendar event not published", logKey, logName, "attempt", attempt+1, logErr, err)
		time.Sleep(nakDelay(uint64(attempt + 1)))
	}
	return err
}

func passes(p *exprProgram, data []byte) bool {
	var env map[string]any
	if err := json.Unmarshal(data, &env); err != nil {
		return false
	}
	ok, err := p.eval(env)
	return ok && err == nil
}

// Handler serves the EventSources' webhook events under PathPrefix. Every delivery is
// verified before its body is read: the git providers' signatures (internal/webhook), a
// plain webhook's bearer token. Any delivery that is not verified for an event at its URL —
// no such event, a wrong or missing signature — gets the same 401 answer.
func (c *Controller) Handler() http.Handler { return http.HandlerFunc(c.serveEvent) }

// errNotVerified is the one answer to a delivery that is not verified for an event at its URL.
var errNotVerified = fmt.Errorf("the delivery is not verified for an event at this URL (a git provider's signature, or 'Authorization: Bearer <token>' for a webhook): %w", errdefs.ErrUnauthenticated)

// hiddenHeaders are left out of an event's data: they carry the secret itself.
var hiddenHeaders = []string{"Authorization", "X-Gitlab-Token", "Cookie", "Proxy-Authorization"}

func (c *Controller) serveEvent(w http.ResponseWriter, req *http.Request) {
	rest, ok := strings.CutPrefix(req.URL.Path, PathPrefix)
	ns, rest, _ := strings.Cut(rest, "/")
	name, endpoint, _ := strings.Cut(rest, "/")
	c.mu.Lock()
	run := c.srcs[ns+"/"+name]
	c.mu.Unlock()
	var rt *route
	if ok && run != nil {
		rt = run.routes[req.Method+" /"+endpoint]
	}
	if rt == nil {
		errdefs.WriteHTTP(w, errNotVerified, "")
		return
	}
	key := ns + "/" + name + "/" + rt.event
	body, err := webhook.ReadBody(req.Body, rt.maxBody)
	if err != nil {
		errdefs.WriteHTTP(w, err, "")
		return
	}
	secret, err := c.readSecret(req.Context(), ns, rt.secret)
	if err != nil {
		c.log.Warn("event source secret unreadable: deliveries are refused", logKey, key, logErr, err)
		errdefs.WriteHTTP(w, errNotVerified, "")
		return
	}
	if rt.provider == "" {
		scheme, token, _ := strings.Cut(req.Header.Get("Authorization"), " ")
		a, b := sha256.Sum256([]byte(strings.TrimSpace(token))), sha256.Sum256([]byte(secret))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
			c.log.Info("webhook event refused: bad or missing bearer token", logKey, key)
			errdefs.WriteHTTP(w, errNotVerified, "")
			return
		}
	} else if err := webhook.Verify(rt.provider, req.Header, body, secret); err != nil {
		c.log.Info("webhook event refused", logKey, key, logErr, err)
		errdefs.WriteHTTP(w, errNotVerified, "")
		return
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("null")
	}
	if !json.Valid(body) {
		errdefs.WriteHTTP(w, errdefs.Invalid("body", "", "is not JSON: events carry a JSON body (set the webhook's content type to application/json)"), "")
		return
	}
	id, ignored := rt.admit(req.Header, body)
	if ignored != "" {
		errdefs.WriteJSON(w, http.StatusOK, map[string]string{"status": "ignored", "reason": ignored})
		return
	}
	if rt.provider != "" {
		digest := webhook.Digest(rt.provider, key, body)
		if !c.recent.First(digest, c.opts.Now()) {
			errdefs.WriteJSON(w, http.StatusOK, map[string]string{"status": "duplicate", "reason": "this delivery was received before"})
			return
		}
		if id == "" {
			id = digest[:32]
		}
	}
	if id == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	h := req.Header.Clone()
	for _, k := range hiddenHeaders {
		h.Del(k)
	}
	data, err := json.Marshal(struct {
		Header   http.Header       `json:"header"`
		Body     json.RawMessage   `json:"body"`
		Metadata map[string]string `json:"metadata,omitempty"`
	}{h, body, rt.metadata})
	if err != nil {
		errdefs.WriteHTTP(w, err, "")
		return
	}
	if rt.filter != nil && !passes(rt.filter, data) {
		errdefs.WriteJSON(w, http.StatusOK, map[string]string{"status": "ignored", "reason": "the event source's filter did not pass"})
		return
	}
	ev := &Event{Context: EventContext{ID: id, Source: name, Subject: rt.event, Type: rt.typ, SpecVersion: "1.0",
		DataContentType: "application/json", Time: metav1.NewTime(c.opts.Now().UTC())}, Data: data}
	if err := run.bus.publish(req.Context(), ev); err != nil {
		c.log.Warn("event not published", logKey, key, logErr, err)
		errdefs.WriteHTTP(w, fmt.Errorf("the event bus did not store the event; retry: %w", errdefs.ErrUnavailable), "")
		return
	}
	errdefs.WriteJSON(w, http.StatusOK, map[string]string{"status": "published", "id": id})
}

// deliveryHeaders carry each provider's delivery id.
var deliveryHeaders = map[webhook.Provider][]string{
	webhook.GitHub: {"X-GitHub-Delivery"}, webhook.Gitea: {"X-Gitea-Delivery", "X-Forgejo-Delivery"},
	webhook.GitLab: {"X-Gitlab-Event-UUID"}, webhook.Bitbucket: {"X-Request-UUID", "X-Hook-UUID"},
}

var eventHeaders = map[webhook.Provider][]string{
	webhook.GitHub: {"X-GitHub-Event"}, webhook.Gitea: {"X-Gitea-Event", "X-Forgejo-Event"},
	webhook.GitLab: {"X-Gitlab-Event"}, webhook.Bitbucket: {"X-Event-Key"},
}

func firstHeader(h http.Header, names []string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// admit applies a git source's events and repositories: it returns the delivery id, or why
// the delivery is ignored.
func (r *route) admit(h http.Header, body []byte) (id, ignored string) {
	if r.provider == "" {
		return "", ""
	}
	id = firstHeader(h, deliveryHeaders[r.provider])
	if len(id) > 200 {
		id = id[:200]
	}
	ev := firstHeader(h, eventHeaders[r.provider])
	if ev == "ping" && (r.provider == webhook.GitHub || r.provider == webhook.Gitea) {
		return id, "ping"
	}
	if r.events != nil && !r.events[strings.ToLower(ev)] {
		return id, fmt.Sprintf("event %q is not one this event source takes", ev)
	}
	if r.repos == nil && r.orgs == nil {
		return id, ""
	}
	var repo, org string
	switch r.provider {
	case webhook.GitLab:
		p := gjson.GetBytes(body, "project")
		if r.repos[strings.ToLower(p.Get("id").String())] || r.repos[strings.ToLower(p.Get("path_with_namespace").String())] {
			return id, ""
		}
		return id, "the project is not one this event source takes"
	default:
		repo = gjson.GetBytes(body, "repository.full_name").String()
		org = gjson.GetBytes(body, "organization.login").String()
	}
	if r.repos[strings.ToLower(repo)] || (org != "" && r.orgs[strings.ToLower(org)]) {
		return id, ""
	}
	return id, fmt.Sprintf("repository %q is not one this event source takes", repo)
}

// secretCache keeps read Secrets' values briefly: one read per delivery would be a request to
// the API server per webhook.
type secretCache struct {
	mu sync.Mutex
	m  map[string]secretEntry
}

type secretEntry struct {
	v  string
	at time.Time
}

const secretTTL = 10 * time.Second

func (c *Controller) readSecret(ctx context.Context, ns string, ref SecretKeySelector) (string, error) {
	k := ns + "/" + ref.Name + "/" + ref.Key
	now := time.Now()
	c.secrets.mu.Lock()
	if e, ok := c.secrets.m[k]; ok && now.Sub(e.at) < secretTTL {
		c.secrets.mu.Unlock()
		return e.v, nil
	}
	c.secrets.mu.Unlock()
	s, err := c.kube.CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("secret %s: %w", ref.Name, err)
	}
	v, ok := s.Data[ref.Key]
	if !ok || len(v) == 0 {
		return "", fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
	}
	c.secrets.mu.Lock()
	if c.secrets.m == nil || len(c.secrets.m) > 1000 {
		c.secrets.m = map[string]secretEntry{}
	}
	c.secrets.m[k] = secretEntry{v: strings.TrimSpace(string(v)), at: now}
	c.secrets.mu.Unlock()
	return strings.TrimSpace(string(v)), nil
}
