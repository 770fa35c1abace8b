package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/expr-lang/expr"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/schedule"
)

// Bounds of what a spec may hold.
const (
	maxDocBytes    = 3 << 20 // the API server's own limit
	maxExprLen     = 4096
	maxNameLen     = 253
	minInterval    = time.Second
	maxEventNames  = 100
	maxPayloadSize = 5 << 20 // webhook.DefaultMaxBodyBytes
)

// supported lists what runs, for the messages about what does not.
const (
	supportedSources  = "webhook, calendar, github, gitlab, gitea, bitbucket, resource, nats, minio, redis, redisStream, mqtt and amqp"
	supportedTriggers = "k8s, argoWorkflow, http, log, nats and slack"
)

var (
	nameRe     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	depNameRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	endpointRe = regexp.MustCompile(`^(/[A-Za-z0-9._~!$&'()*+,;=:@-]+)+/?$|^/$`)
	dnsLabelRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// DecodeEventBus reads an EventBus and validates it.
func DecodeEventBus(data []byte) (*EventBus, error) {
	var b EventBus
	if err := decodeKind(data, &b, "EventBus", &b.APIVersion, &b.Kind); err != nil {
		return nil, err
	}
	return &b, validateEventBus(&b.Spec)
}

func validateEventBus(s *EventBusSpec) error {
	n := 0
	for _, set := range []bool{s.JetStream != nil, s.JetStreamExotic != nil, len(s.NATS) > 0, len(s.Kafka) > 0} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return errdefs.Invalid("spec", "", "must set exactly one of jetstream, jetstreamExotic (nats and kafka are not supported)")
	case len(s.NATS) > 0:
		return errdefs.Invalid("spec.nats", "", "is not supported: NATS Streaming is deprecated in Argo Events; use jetstream (the runtime's NATS) or jetstreamExotic")
	case len(s.Kafka) > 0:
		return errdefs.Invalid("spec.kafka", "", "is not supported yet: use jetstream or jetstreamExotic")
	case s.JetStreamExotic != nil:
		u := s.JetStreamExotic.URL
		if u == "" {
			return errdefs.Invalid("spec.jetstreamExotic.url", "", "is required (nats://host:4222)")
		}
		for _, one := range strings.Split(u, ",") {
			p, err := url.Parse(strings.TrimSpace(one))
			if err != nil || (p.Scheme != "nats" && p.Scheme != "tls") || p.Host == "" {
				return errdefs.Invalid("spec.jetstreamExotic.url", redact(u), "is not a NATS URL: use nats://host:port or tls://host:port, comma-separated")
			}
		}
		if s.JetStreamExotic.AccessSecret != nil {
			return errdefs.Invalid("spec.jetstreamExotic.accessSecret", s.JetStreamExotic.AccessSecret.Name, "is not supported yet: put the credentials in the URL")
		}
	}
	return nil
}

// redact hides a URL's password.
func redact(u string) string {
	if p, err := url.Parse(u); err == nil && p.User != nil {
		if _, ok := p.User.Password(); ok {
			p.User = url.UserPassword(p.User.Username(), "xxxxx")
			return p.String()
		}
	}
	return u
}

// eventSourceKeys are the spec fields of an EventSource this package reads; every other
// known Argo source type is refused by name.
var eventSourceKeys = map[string]bool{"eventBusName": true, "webhook": true, "calendar": true, "github": true,
	"gitlab": true, "gitea": true, "bitbucket": true, "resource": true, "nats": true, "minio": true, "redis": true, "mqtt": true,
	"amqp": true, "redisStream": true,
	"template": true, "service": true, "replicas": true}

// DecodeEventSource reads an EventSource and validates it. A document that is not an
// EventSource is an error alone; one that decodes but is invalid is returned with a
// *errdefs.FieldError naming the field, the value and what is valid.
func DecodeEventSource(data []byte) (*EventSource, error) {
	var es EventSource
	if err := decodeKind(data, &es, "EventSource", &es.APIVersion, &es.Kind); err != nil {
		return nil, err
	}
	return &es, validateEventSource(data, &es)
}

func validateEventSource(data []byte, es *EventSource) error {
	var raw struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	_ = json.Unmarshal(data, &raw)
	for _, k := range sortedKeys(raw.Spec) {
		if !eventSourceKeys[k] {
			return errdefs.Invalid("spec."+k, "", "is not supported yet: event sources of type "+k+" do not run in Freshet ("+supportedSources+" do; see docs/runtimes.md)")
		}
	}
	s := &es.Spec
	if err := checkBusName("spec.eventBusName", s.EventBusName); err != nil {
		return err
	}
	total := countEvents(s)
	if total == 0 {
		return errdefs.Invalid("spec", "", "has no event source: give one of "+supportedSources)
	}
	if total > maxEventNames {
		return errdefs.Invalid("spec", strconv.Itoa(total), fmt.Sprintf("has more than %d events", maxEventNames))
	}
	names := map[string]string{}
	routes := map[string]string{}
	addName := func(typ, name string) error {
		f := "spec." + typ + "." + name
		if !nameRe.MatchString(name) || len(name) > maxNameLen {
			return errdefs.Invalid(f, name, "is not a valid event name: letters, digits, '-', '_' and '.', starting with a letter or digit")
		}
		if prev, ok := names[name]; ok {
			return errdefs.Invalid(f, name, "is also an event of spec."+prev+": event names are unique in an EventSource")
		}
		names[name] = typ
		return nil
	}
	addRoute := func(f string, w *WebhookContext) error {
		if err := validateWebhookContext(f, w); err != nil {
			return err
		}
		key := w.Method + " " + w.Endpoint
		if prev, ok := routes[key]; ok {
			return errdefs.Invalid(f+".endpoint", w.Endpoint, "is also the endpoint of "+prev+" (with method "+w.Method+"): give each event its own")
		}
		routes[key] = f
		return nil
	}
	for _, name := range sortedKeys(s.Webhook) {
		w := s.Webhook[name]
		f := "spec.webhook." + name
		if err := addName("webhook", name); err != nil {
			return err
		}
		if err := addRoute(f, &w.WebhookContext); err != nil {
			return err
		}
		if w.AuthSecret == nil {
			return errdefs.Invalid(f+".authSecret", "", "is required: Freshet serves no unauthenticated webhook (give a Secret key holding the token callers send as 'Authorization: Bearer <token>')")
		}
		if err := checkSecretRef(f+".authSecret", w.AuthSecret); err != nil {
			return err
		}
		if err := checkSourceFilter(f+".filter", w.Filter); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.Calendar) {
		c := s.Calendar[name]
		f := "spec.calendar." + name
		if err := addName("calendar", name); err != nil {
			return err
		}
		if _, err := compileCalendar(f, c); err != nil {
			return err
		}
		if err := checkSourceFilter(f+".filter", c.Filter); err != nil {
			return err
		}
	}
	for typ, m := range map[string]map[string]GitHubSource{"github": s.GitHub, "gitea": s.Gitea} {
		for _, name := range sortedKeys(m) {
			g := m[name]
			f := "spec." + typ + "." + name
			if err := addName(typ, name); err != nil {
				return err
			}
			if g.Webhook == nil {
				return errdefs.Invalid(f+".webhook", "", "is required (its endpoint and method)")
			}
			if err := addRoute(f+".webhook", g.Webhook); err != nil {
				return err
			}
			if g.WebhookSecret == nil {
				return errdefs.Invalid(f+".webhookSecret", "", "is required: every delivery's signature is verified (give the Secret key holding the webhook's secret)")
			}
			if err := checkSecretRef(f+".webhookSecret", g.WebhookSecret); err != nil {
				return err
			}
			for i, r := range g.Repositories {
				if r.Owner == "" || len(r.Names) == 0 {
					return errdefs.Invalid(fmt.Sprintf("%s.repositories[%d]", f, i), r.Owner, "needs an owner and at least one name")
				}
			}
			if err := checkEvents(f+".events", g.Events); err != nil {
				return err
			}
			if err := checkSourceFilter(f+".filter", g.Filter); err != nil {
				return err
			}
		}
	}
	for _, name := range sortedKeys(s.GitLab) {
		g := s.GitLab[name]
		f := "spec.gitlab." + name
		if err := addName("gitlab", name); err != nil {
			return err
		}
		if g.Webhook == nil {
			return errdefs.Invalid(f+".webhook", "", "is required (its endpoint and method)")
		}
		if err := addRoute(f+".webhook", g.Webhook); err != nil {
			return err
		}
		if g.SecretToken == nil {
			return errdefs.Invalid(f+".secretToken", "", "is required: every delivery's X-Gitlab-Token is checked (give the Secret key holding the webhook's secret token)")
		}
		if err := checkSecretRef(f+".secretToken", g.SecretToken); err != nil {
			return err
		}
		for i, e := range g.Events {
			if _, ok := gitLabEvents[e]; !ok {
				return errdefs.Invalid(fmt.Sprintf("%s.events[%d]", f, i), e, "is not a GitLab webhook event: use "+strings.Join(sortedKeys(gitLabEvents), ", "))
			}
		}
		if err := checkSourceFilter(f+".filter", g.Filter); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(s.Bitbucket) {
		b := s.Bitbucket[name]
		f := "spec.bitbucket." + name
		if err := addName("bitbucket", name); err != nil {
			return err
		}
		if b.Webhook == nil {
			return errdefs.Invalid(f+".webhook", "", "is required (its endpoint and method)")
		}
		if err := addRoute(f+".webhook", b.Webhook); err != nil {
			return err
		}
		if b.WebhookSecret == nil {
			return errdefs.Invalid(f+".webhookSecret", "", "is required: every delivery's X-Hub-Signature is verified (set a secret on the Bitbucket webhook and give the Secret key holding it)")
		}
		if err := checkSecretRef(f+".webhookSecret", b.WebhookSecret); err != nil {
			return err
		}
		if err := checkEvents(f+".events", b.Events); err != nil {
			return err
		}
		if err := checkSourceFilter(f+".filter", b.Filter); err != nil {
			return err
		}
	}
	if _, err := serviceAccountOf(s); err != nil {
		return err
	}
	return validateListeners(s, addName)
}

// gitLabEvents maps the event names of Argo's GitLab source (GitLab's hook options) to the
// X-Gitlab-Event header of their deliveries.
var gitLabEvents = map[string]string{
	"PushEvents": "Push Hook", "TagPushEvents": "Tag Push Hook", "MergeRequestsEvents": "Merge Request Hook",
	"IssuesEvents": "Issue Hook", "ConfidentialIssuesEvents": "Confidential Issue Hook", "NoteEvents": "Note Hook",
	"ConfidentialNoteEvents": "Confidential Note Hook", "JobEvents": "Job Hook", "PipelineEvents": "Pipeline Hook",
	"WikiPageEvents": "Wiki Page Hook", "DeploymentEvents": "Deployment Hook", "ReleasesEvents": "Release Hook",
}

func checkEvents(f string, evs []string) error {
	for i, e := range evs {
		if strings.TrimSpace(e) == "" || len(e) > 100 {
			return errdefs.Invalid(fmt.Sprintf("%s[%d]", f, i), e, "is not an event name (e.g. push, or * for every event)")
		}
	}
	return nil
}

func checkBusName(f, n string) error {
	if n != "" && (!nameRe.MatchString(n) || len(n) > maxNameLen) {
		return errdefs.Invalid(f, n, "is not a valid EventBus name")
	}
	return nil
}

func checkSecretRef(f string, s *SecretKeySelector) error {
	if s.Name == "" || !nameRe.MatchString(s.Name) {
		return errdefs.Invalid(f+".name", s.Name, "is not a Secret name")
	}
	if s.Key == "" {
		return errdefs.Invalid(f+".key", "", "is required (the Secret's key)")
	}
	return nil
}

func validateWebhookContext(f string, w *WebhookContext) error {
	if w.Endpoint == "" {
		return errdefs.Invalid(f+".endpoint", "", "is required: the path the event is served at, e.g. /push")
	}
	if len(w.Endpoint) > 200 || !endpointRe.MatchString(w.Endpoint) || strings.Contains(w.Endpoint, "/../") || strings.HasSuffix(w.Endpoint, "/..") || strings.Contains(w.Endpoint, "//") {
		return errdefs.Invalid(f+".endpoint", w.Endpoint, "is not a URL path: start with /, then letters, digits and -._~ (no .. segments)")
	}
	switch w.Method {
	case "":
		w.Method = "POST"
	case "POST", "PUT", "PATCH", "GET", "DELETE":
	default:
		return errdefs.Invalid(f+".method", w.Method, "is not supported: use POST, PUT, PATCH, GET or DELETE")
	}
	if w.MaxPayloadSize != nil && (*w.MaxPayloadSize <= 0 || *w.MaxPayloadSize > maxPayloadSize) {
		return errdefs.Invalid(f+".maxPayloadSize", strconv.FormatInt(*w.MaxPayloadSize, 10), fmt.Sprintf("must be between 1 and %d bytes", maxPayloadSize))
	}
	return nil
}

func checkSourceFilter(f string, flt *EventSourceFilter) error {
	if flt == nil || flt.Expression == "" {
		return nil
	}
	if _, err := compileSourceFilter(flt.Expression); err != nil {
		return errdefs.Invalid(f+".expression", flt.Expression, err.Error())
	}
	return nil
}

// calendar is a compiled calendar source.
type calendar struct {
	sched    schedule.Expr
	interval time.Duration
	loc      *time.Location
	excluded []time.Time // days, at midnight in loc
	// configMap keeps the last tick (empty: not kept); create makes it when missing.
	configMap string
	create    bool
	// catchup publishes the ticks missed since the kept one on start, at most maxCatchup back
	// (0: no limit).
	catchup    bool
	maxCatchup time.Duration
}

func compileCalendar(f string, c CalendarSource) (*calendar, error) {
	out := &calendar{loc: time.UTC}
	if c.Timezone != "" {
		loc, err := time.LoadLocation(c.Timezone)
		if err != nil || strings.HasPrefix(c.Timezone, "/") {
			return nil, errdefs.Invalid(f+".timezone", c.Timezone, `is not a time zone: use an IANA name such as "UTC" or "Europe/Berlin"`)
		}
		out.loc = loc
	}
	switch {
	case c.Schedule != "" && c.Interval != "":
		return nil, errdefs.Invalid(f, "", "sets both schedule and interval: give one")
	case c.Schedule != "":
		e, err := schedule.Parse(c.Schedule, c.Timezone)
		if err != nil {
			var fe *errdefs.FieldError
			if errors.As(err, &fe) {
				return nil, errdefs.Invalid(f+".schedule", c.Schedule, fe.Reason)
			}
			return nil, errdefs.Invalid(f+".schedule", c.Schedule, err.Error())
		}
		out.sched = e
	case c.Interval != "":
		d, err := time.ParseDuration(c.Interval)
		if err != nil || d < minInterval {
			return nil, errdefs.Invalid(f+".interval", c.Interval, "is not a duration of at least 1s (e.g. 10s, 5m, 1h)")
		}
		out.interval = d
	default:
		return nil, errdefs.Invalid(f+".schedule", "", "is required (a cron expression), or give interval")
	}
	for i, d := range c.ExclusionDates {
		t, err := time.ParseInLocation(time.RFC3339, d, out.loc)
		if err != nil {
			t, err = time.ParseInLocation(time.DateOnly, d, out.loc)
		}
		if err != nil {
			return nil, errdefs.Invalid(fmt.Sprintf("%s.exclusionDates[%d]", f, i), d, "is not a date: use 2006-01-02 or an RFC 3339 time")
		}
		t = t.In(out.loc)
		out.excluded = append(out.excluded, time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, out.loc))
	}
	if p := c.Persistence; p != nil {
		if cm := p.ConfigMap; cm != nil {
			if !dnsSubdomain(cm.Name) {
				return nil, errdefs.Invalid(f+".persistence.configMap.name", cm.Name, "is not a ConfigMap name (lowercase letters, digits, '-' and '.')")
			}
			out.configMap, out.create = cm.Name, cm.CreateIfNotExist
		}
		if cu := p.Catchup; cu != nil && cu.Enabled {
			if out.configMap == "" {
				return nil, errdefs.Invalid(f+".persistence.configMap", "", "is required for catchup: the last tick is kept in a ConfigMap of the EventSource's namespace")
			}
			out.catchup = true
			if cu.MaxDuration != "" {
				d, err := time.ParseDuration(cu.MaxDuration)
				if err != nil || d <= 0 {
					return nil, errdefs.Invalid(f+".persistence.catchup.maxDuration", cu.MaxDuration, "is not a positive duration (e.g. 5m, 1h)")
				}
				out.maxCatchup = d
			}
		}
	}
	return out, nil
}

// next is when the calendar fires after t.
func (c *calendar) next(t time.Time) time.Time {
	for range 1000 {
		var n time.Time
		if c.interval > 0 {
			n = t.Add(c.interval)
		} else {
			n = c.sched.Next(t)
		}
		if n.IsZero() || !c.isExcluded(n) {
			return n
		}
		t = n
	}
	return time.Time{}
}

func (c *calendar) isExcluded(t time.Time) bool {
	t = t.In(c.loc)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, c.loc)
	return slices.ContainsFunc(c.excluded, day.Equal)
}

// triggerKinds are the fields of a trigger template this package reads; any other (a trigger
// kind) is refused by name.
var triggerKinds = map[string]bool{"name": true, "conditions": true, "conditionsReset": true, "k8s": true, "argoWorkflow": true,
	"http": true, "log": true, "nats": true, "slack": true}

// DecodeSensor reads a Sensor and validates it. As DecodeEventSource: an error alone for a
// document that is not a Sensor, the Sensor and a *errdefs.FieldError for an invalid one.
func DecodeSensor(data []byte) (*Sensor, error) {
	var s Sensor
	if err := decodeKind(data, &s, "Sensor", &s.APIVersion, &s.Kind); err != nil {
		return nil, err
	}
	var raw struct {
		Spec struct {
			Triggers []struct {
				Template   map[string]json.RawMessage `json:"template"`
				DlqTrigger *struct {
					Template map[string]json.RawMessage `json:"template"`
				} `json:"dlqTrigger"`
			} `json:"triggers"`
		} `json:"spec"`
	}
	_ = json.Unmarshal(data, &raw)
	for i, t := range raw.Spec.Triggers {
		if i < len(s.Spec.Triggers) {
			otherKinds(s.Spec.Triggers[i].Template, t.Template)
			if d := s.Spec.Triggers[i].DlqTrigger; d != nil && t.DlqTrigger != nil {
				otherKinds(d.Template, t.DlqTrigger.Template)
			}
		}
	}
	return &s, validateSensor(&s)
}

func validateSensor(s *Sensor) error {
	sp := &s.Spec
	if err := checkBusName("spec.eventBusName", sp.EventBusName); err != nil {
		return err
	}
	if sp.Template != nil && sp.Template.ServiceAccountName != "" && !dnsSubdomain(sp.Template.ServiceAccountName) {
		return errdefs.Invalid("spec.template.serviceAccountName", sp.Template.ServiceAccountName, "is not a service account name")
	}
	if len(sp.Dependencies) == 0 {
		return errdefs.Invalid("spec.dependencies", "", "is required: at least one event the Sensor waits for")
	}
	if len(sp.Dependencies) > maxEventNames {
		return errdefs.Invalid("spec.dependencies", strconv.Itoa(len(sp.Dependencies)), fmt.Sprintf("has more than %d dependencies", maxEventNames))
	}
	deps := map[string]bool{}
	for i, d := range sp.Dependencies {
		f := fmt.Sprintf("spec.dependencies[%d]", i)
		switch {
		case !depNameRe.MatchString(d.Name) || len(d.Name) > maxNameLen:
			return errdefs.Invalid(f+".name", d.Name, "is not a dependency name: letters, digits, '-' and '_', starting with a letter or '_'")
		case deps[d.Name]:
			return errdefs.Invalid(f+".name", d.Name, "is the name of an earlier dependency: names are unique")
		case d.EventSourceName == "" || !nameRe.MatchString(d.EventSourceName):
			return errdefs.Invalid(f+".eventSourceName", d.EventSourceName, "is required: the name of an EventSource")
		case d.EventName == "" || !nameRe.MatchString(d.EventName):
			return errdefs.Invalid(f+".eventName", d.EventName, "is required: the name of an event of the EventSource")
		case len(d.Transform) > 0:
			return errdefs.Invalid(f+".transform", "", "is not supported yet")
		}
		deps[d.Name] = true
		if err := checkLogical(f+".filtersLogicalOperator", d.FiltersLogicalOperator); err != nil {
			return err
		}
		if _, err := compileFilters(f+".filters", d.Filters); err != nil {
			return err
		}
	}
	if len(sp.Triggers) == 0 {
		return errdefs.Invalid("spec.triggers", "", "is required: at least one trigger")
	}
	names := map[string]bool{}
	for i := range sp.Triggers {
		t := &sp.Triggers[i]
		f := fmt.Sprintf("spec.triggers[%d]", i)
		if t.Template == nil {
			return errdefs.Invalid(f+".template", "", "is required")
		}
		if t.Template.Name == "" || !nameRe.MatchString(t.Template.Name) {
			return errdefs.Invalid(f+".template.name", t.Template.Name, "is required: letters, digits, '-', '_' and '.'")
		}
		if names[t.Template.Name] {
			return errdefs.Invalid(f+".template.name", t.Template.Name, "is the name of an earlier trigger: names are unique")
		}
		names[t.Template.Name] = true
		if err := checkParameters(f+".parameters", t.Parameters, deps); err != nil {
			return err
		}
		if err := validateTemplate(f+".template", t.Template, deps, len(t.Parameters) > 0); err != nil {
			return err
		}
		if _, err := compileTriggerRun(f, t); err != nil {
			return err
		}
		if err := validateDLQ(f+".dlqTrigger", t.DlqTrigger, deps); err != nil {
			return err
		}
	}
	return nil
}

func dnsSubdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, p := range strings.Split(s, ".") {
		if !dnsLabelRe.MatchString(p) {
			return false
		}
	}
	return true
}

// validateTemplate checks a trigger's template; tparams says the trigger has parameters on
// the template (which may set what the template leaves empty).
func validateTemplate(f string, t *TriggerTemplate, deps map[string]bool, tparams bool) error {
	for _, k := range sortedKeys(t.Other) {
		return refuseKind(f+"."+k, k)
	}
	if len(t.ConditionsReset) > 0 {
		return errdefs.Invalid(f+".conditionsReset", "", "is not supported yet")
	}
	if t.Conditions != "" {
		c, err := parseConditions(t.Conditions)
		if err != nil {
			return errdefs.Invalid(f+".conditions", t.Conditions, err.Error())
		}
		for _, n := range c.names() {
			if !deps[n] {
				return errdefs.Invalid(f+".conditions", t.Conditions, "names "+strconv.Quote(n)+", which is not a dependency of the Sensor")
			}
		}
	}
	var kinds []string
	for k, set := range map[string]bool{"k8s": t.K8s != nil, "argoWorkflow": t.ArgoWorkflow != nil, "http": t.HTTP != nil, "log": t.Log != nil, "nats": t.NATS != nil, "slack": t.Slack != nil} {
		if set {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) > 1 {
		slices.Sort(kinds)
		return errdefs.Invalid(f, "", "sets "+strings.Join(kinds, " and ")+": give one trigger kind")
	}
	switch {
	case t.K8s != nil:
		switch t.K8s.Operation {
		case "", "create", "update", "delete":
		case "patch":
			return errdefs.Invalid(f+".k8s.operation", "patch", "is not supported yet: use create, update or delete")
		default:
			return errdefs.Invalid(f+".k8s.operation", t.K8s.Operation, "is not an operation: use create, update or delete")
		}
		if t.K8s.LiveObject {
			return errdefs.Invalid(f+".k8s.liveObject", "true", "is not supported yet")
		}
		if err := checkParameters(f+".k8s.parameters", t.K8s.Parameters, deps); err != nil {
			return err
		}
		_, err := checkSource(f+".k8s.source", t.K8s.Source, false)
		return err
	case t.ArgoWorkflow != nil:
		return validateArgoWorkflow(f+".argoWorkflow", t.ArgoWorkflow, deps, tparams)
	case t.HTTP != nil:
		return validateHTTP(f+".http", t.HTTP, deps)
	case t.Log != nil:
		return nil
	case t.NATS != nil:
		return validateNATSTrigger(f+".nats", t.NATS, deps)
	case t.Slack != nil:
		return validateSlack(f+".slack", t.Slack, deps, tparams)
	}
	return errdefs.Invalid(f, "", "has no trigger: give one of "+supportedTriggers)
}

// checkSource validates a trigger's resource and returns it as an object. A Workflow is
// checked as `argo lint` checks it (package workflows).
func checkSource(f string, src *ArtifactLocation, workflowOnly bool) (map[string]any, error) {
	obj, raw, err := sourceObject(f, src)
	if err != nil {
		return nil, err
	}
	rf := f + ".resource"
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	gen, _ := md["generateName"].(string)
	if name == "" && gen == "" {
		return nil, errdefs.Invalid(rf+".metadata", "", "needs a name or a generateName")
	}
	isWorkflow := apiVersion == Group+"/"+Version && kind == "Workflow"
	if workflowOnly && !isWorkflow {
		return nil, errdefs.Invalid(rf+".kind", apiVersion+" "+kind, "is not "+Group+"/"+Version+" Workflow: argoWorkflow triggers submit Workflows (use a k8s trigger for other kinds)")
	}
	if isWorkflow {
		if _, err := workflows.Decode(raw); err != nil {
			var fe *errdefs.FieldError
			if errors.As(err, &fe) {
				return nil, errdefs.Invalid(rf+"."+fe.Field, fe.Value, fe.Reason)
			}
			return nil, errdefs.Invalid(rf, "", err.Error())
		}
	}
	return obj, nil
}

// sourceObject is a trigger's inline resource as an object with an apiVersion and a kind, and
// as JSON.
func sourceObject(f string, src *ArtifactLocation) (map[string]any, json.RawMessage, error) {
	if src == nil {
		return nil, nil, errdefs.Invalid(f, "", "is required: give the resource inline (source.resource)")
	}
	for k, set := range map[string]bool{"s3": len(src.S3) > 0, "file": len(src.File) > 0, "url": len(src.URL) > 0,
		"configmap": len(src.ConfigMap) > 0, "git": len(src.Git) > 0} {
		if set {
			return nil, nil, errdefs.Invalid(f+"."+k, "", "is not supported yet: give the resource inline (source.resource)")
		}
	}
	raw := src.Resource
	if src.Inline != nil {
		if len(raw) > 0 {
			return nil, nil, errdefs.Invalid(f, "", "sets both resource and inline: give one")
		}
		j, err := yamlToJSON([]byte(*src.Inline))
		if err != nil {
			return nil, nil, errdefs.Invalid(f+".inline", "", "is not YAML or JSON: "+err.Error())
		}
		raw = j
	}
	if len(raw) == 0 {
		return nil, nil, errdefs.Invalid(f+".resource", "", "is required: the Kubernetes object the trigger creates")
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, nil, errdefs.Invalid(f+".resource", "", "is not an object")
	}
	rf := f + ".resource"
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" {
		return nil, nil, errdefs.Invalid(rf+".apiVersion", "", "is required")
	}
	if kind == "" {
		return nil, nil, errdefs.Invalid(rf+".kind", "", "is required")
	}
	return obj, raw, nil
}

func checkParameters(f string, ps []TriggerParameter, deps map[string]bool) error {
	return checkParams(f, ps, deps, true)
}

// checkParams checks parameters; a payload's (destRequired false) may leave dest empty.
func checkParams(f string, ps []TriggerParameter, deps map[string]bool, destRequired bool) error {
	for i, p := range ps {
		pf := fmt.Sprintf("%s[%d]", f, i)
		if p.Src == nil {
			return errdefs.Invalid(pf+".src", "", "is required")
		}
		if !deps[p.Src.DependencyName] {
			return errdefs.Invalid(pf+".src.dependencyName", p.Src.DependencyName, "is not a dependency of the Sensor")
		}
		if (destRequired && p.Dest == "") || len(p.Dest) > 1000 {
			return errdefs.Invalid(pf+".dest", p.Dest, "is required: the path of the field to set, e.g. spec.arguments.parameters.0.value")
		}
		switch p.Operation {
		case "", "overwrite", "append", "prepend":
		default:
			return errdefs.Invalid(pf+".operation", p.Operation, "is not an operation: use overwrite, append or prepend")
		}
		for _, tf := range []struct{ name, v string }{{"dataTemplate", p.Src.DataTemplate}, {"contextTemplate", p.Src.ContextTemplate}} {
			if tf.v == "" {
				continue
			}
			if _, err := parseTemplate(tf.v); err != nil {
				return errdefs.Invalid(pf+".src."+tf.name, tf.v, "does not parse as a template: "+err.Error())
			}
		}
	}
	return nil
}

// parseTemplate parses a dataTemplate or contextTemplate: Go's text/template with no
// functions beyond its builtins (Argo adds sprig's; they are not available here).
func parseTemplate(s string) (*template.Template, error) {
	if len(s) > maxExprLen {
		return nil, fmt.Errorf("is longer than %d characters", maxExprLen)
	}
	return template.New("t").Option("missingkey=zero").Parse(s)
}

func checkLogical(f, v string) error {
	switch v {
	case "", "and", "or":
		return nil
	}
	return errdefs.Invalid(f, v, "is not a logical operator: use and or or")
}

// compileSourceFilter compiles an EventSource filter's expression over the event's data.
func compileSourceFilter(s string) (*exprProgram, error) {
	if len(s) > maxExprLen {
		return nil, fmt.Errorf("is longer than %d characters", maxExprLen)
	}
	p, err := expr.Compile(s, expr.AllowUndefinedVariables(), expr.AsBool())
	if err != nil {
		return nil, fmt.Errorf("does not compile as a boolean expression: %v", err)
	}
	return &exprProgram{p}, nil
}

func decodeKind(data []byte, v any, kind string, apiVersion, gotKind *string) error {
	if len(data) > maxDocBytes {
		return errdefs.Invalid(strings.ToLower(kind), "", "is larger than 3 MiB")
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = strings.ToLower(kind)
			}
			return errdefs.Invalid(field, te.Value, "is not a valid "+te.Type.String())
		}
		return errdefs.Invalid(strings.ToLower(kind), "", "does not decode: "+err.Error())
	}
	if *apiVersion != Group+"/"+Version || *gotKind != kind {
		return errdefs.Invalid("apiVersion/kind", *apiVersion+" "+*gotKind, "is not "+Group+"/"+Version+" "+kind)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
