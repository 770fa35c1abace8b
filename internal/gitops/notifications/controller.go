package notifications

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/expr-lang/expr"

	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/sender"
)

// Defaults.
const (
	DefaultSendTimeout = 15 * time.Second
	DefaultResync      = time.Minute
	// maxStateEntries per application, as Argo CD keeps (the oldest go first).
	maxStateEntries = 100
	maxProblems     = 10
)

// Subject is an application as the triggers see it: Argo CD's Application object with its
// status, and its AppProject's annotations (subscriptions there apply to all its apps).
type Subject struct {
	App                map[string]any
	Project            map[string]any // the AppProject object (nil: none)
	ProjectAnnotations map[string]string
}

// Options configure a Controller.
type Options struct {
	// Lookup returns the application's current object; false when the runtime has no such app.
	Lookup func(name string) (Subject, bool)
	// StateFile keeps what was sent across restarts ("" keeps it in memory only).
	StateFile string
	// Policy checks every URL and mail server a notification goes to (nil: any).
	Policy *netpolicy.Policy
	// RootCAs checks mail servers' certificates (nil: the host's).
	RootCAs     *x509.CertPool
	SendTimeout time.Duration
	// Resync: how often every application is evaluated again without an event (so a
	// notification that failed for a while is sent).
	Resync time.Duration
	Logger *slog.Logger
}

// stateFile is what the state file holds: what was sent, and each application's last sync
// operation (the engine does not keep it across a restart; Argo CD keeps it in the
// Application's status, and triggers' oncePer values are taken from it).
type stateFile struct {
	Notified   map[string]State `json:"notified"`
	Operations map[string]any   `json:"operations,omitempty"`
}

// State is what was sent for one application: Argo CD's notified.notifications.argoproj.io
// map of state keys to the Unix time they were sent.
type State map[string]int64

// Controller evaluates triggers for applications and sends what they fire.
type Controller struct {
	opts Options
	log  *slog.Logger
	tr   transport
	cfg  atomic.Pointer[Config]

	mu       sync.Mutex
	state    map[string]State      // by application
	ops      map[string]any        // the last operationState seen, by application
	health   map[string]healthMark // by application
	last     map[string]Subject    // the last object seen, for on-deleted
	pending  map[string]bool       // queued applications
	deleted  map[string]bool       // queued deletions
	problems []problemAt           // the last problems met (newest last)
	wake     chan struct{}
}

type problemAt struct {
	msg string
	at  time.Time
}

// problemTTL is how long a problem met is shown.
const problemTTL = 15 * time.Minute

type healthMark struct {
	status string
	since  time.Time
}

// New builds a controller and reads its state file.
func New(opts Options) (*Controller, error) {
	if opts.Lookup == nil {
		return nil, errors.New("notifications: Lookup is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = DefaultSendTimeout
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	pol := opts.Policy
	if pol == nil {
		pol = netpolicy.Unrestricted()
	}
	c := &Controller{opts: opts, log: opts.Logger, tr: transport{policy: pol, rootCAs: opts.RootCAs, timeout: opts.SendTimeout},
		state: map[string]State{}, ops: map[string]any{}, health: map[string]healthMark{}, last: map[string]Subject{},
		pending: map[string]bool{}, deleted: map[string]bool{}, wake: make(chan struct{}, 1)}
	if opts.StateFile != "" {
		raw, err := os.ReadFile(opts.StateFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("notifications state: %w", err)
		default:
			var f stateFile
			if err := json.Unmarshal(raw, &f); err != nil {
				c.log.Warn("the notifications state file does not decode; starting afresh", "file", opts.StateFile, "err", err)
			}
			if f.Notified != nil {
				c.state = f.Notified
			}
			if f.Operations != nil {
				c.ops = f.Operations
			}
		}
	}
	return c, nil
}

// SetConfig replaces the configuration (nil: no notifications) and evaluates every known
// application again.
func (c *Controller) SetConfig(cfg *Config) {
	c.cfg.Store(cfg)
	c.mu.Lock()
	for n := range c.last {
		c.pending[n] = true
	}
	c.mu.Unlock()
	c.kick()
}

// Config is the configuration in use (nil: none).
func (c *Controller) Config() *Config { return c.cfg.Load() }

// Enqueue asks for the application to be evaluated.
func (c *Controller) Enqueue(name string) {
	c.mu.Lock()
	c.pending[name] = true
	c.mu.Unlock()
	c.kick()
}

// Deleted tells that the application was removed: on-deleted triggers see it with a
// deletionTimestamp, then its state is dropped.
func (c *Controller) Deleted(name string) {
	c.mu.Lock()
	c.deleted[name] = true
	c.mu.Unlock()
	c.kick()
}

func (c *Controller) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Problems are the problems met evaluating triggers or sending in the last quarter hour
// (newest last).
func (c *Controller) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, p := range c.problems {
		if time.Since(p.at) < problemTTL {
			out = append(out, p.msg)
		}
	}
	return out
}

func (c *Controller) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.log.Warn("notifications", "problem", msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range c.problems {
		if p.msg == msg {
			c.problems = append(c.problems[:i], c.problems[i+1:]...)
			break
		}
	}
	c.problems = append(c.problems, problemAt{msg: msg, at: time.Now()})
	if len(c.problems) > maxProblems {
		c.problems = c.problems[len(c.problems)-maxProblems:]
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTicker(c.opts.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.wake:
		case <-t.C:
			c.mu.Lock()
			for n := range c.last {
				c.pending[n] = true
			}
			c.mu.Unlock()
		}
		c.drain(ctx)
	}
}

// drain processes every queued application once.
func (c *Controller) drain(ctx context.Context) {
	for ctx.Err() == nil {
		c.mu.Lock()
		var name string
		var del bool
		for n := range c.deleted {
			name, del = n, true
			delete(c.deleted, n)
			delete(c.pending, n)
			break
		}
		if name == "" {
			for n := range c.pending {
				name = n
				delete(c.pending, n)
				break
			}
		}
		c.mu.Unlock()
		if name == "" {
			return
		}
		if del {
			c.processDeleted(ctx, name)
		} else {
			c.Process(ctx, name)
		}
	}
}

// Process evaluates the application's triggers now and sends what fires.
func (c *Controller) Process(ctx context.Context, name string) {
	subj, ok := c.opts.Lookup(name)
	if !ok {
		return
	}
	c.mu.Lock()
	c.last[name] = subj
	c.mu.Unlock()
	c.process(ctx, name, subj)
}

func (c *Controller) processDeleted(ctx context.Context, name string) {
	c.mu.Lock()
	subj, ok := c.last[name]
	delete(c.last, name)
	c.mu.Unlock()
	if ok {
		obj := maps.Clone(subj.App)
		md, _ := obj["metadata"].(map[string]any)
		md = maps.Clone(md)
		if md == nil {
			md = map[string]any{}
		}
		md["deletionTimestamp"] = time.Now().UTC().Format(time.RFC3339)
		obj["metadata"] = md
		subj.App = obj
		c.process(ctx, name, subj)
	}
	c.mu.Lock()
	delete(c.state, name)
	delete(c.ops, name)
	delete(c.health, name)
	c.mu.Unlock()
	c.persist()
}

// withHealthTime sets status.health.lastTransitionTime from the health changes seen.
func (c *Controller) withHealthTime(name string, obj map[string]any) map[string]any {
	st, _ := obj["status"].(map[string]any)
	h, _ := st["health"].(map[string]any)
	if h == nil {
		return obj
	}
	status, _ := h["status"].(string)
	c.mu.Lock()
	m, ok := c.health[name]
	if !ok || m.status != status {
		m = healthMark{status: status, since: time.Now()}
		c.health[name] = m
	}
	c.mu.Unlock()
	if _, set := h["lastTransitionTime"]; set {
		return obj
	}
	h = maps.Clone(h)
	h["lastTransitionTime"] = m.since.UTC().Format(time.RFC3339)
	st = maps.Clone(st)
	st["health"] = h
	obj = maps.Clone(obj)
	obj["status"] = st
	return obj
}

// withOperation fills in status.operationState from the last one seen when the status has
// none (after a restart), and remembers a new one; changed reports a new one.
func (c *Controller) withOperation(name string, obj map[string]any) (map[string]any, bool) {
	st, _ := obj["status"].(map[string]any)
	if st == nil {
		return obj, false
	}
	op := st["operationState"]
	c.mu.Lock()
	defer c.mu.Unlock()
	if op == nil {
		last, ok := c.ops[name]
		if !ok {
			return obj, false
		}
		st = maps.Clone(st)
		st["operationState"] = last
		obj = maps.Clone(obj)
		obj["status"] = st
		return obj, false
	}
	// Compare as JSON: the object may have been built anew.
	a, _ := json.Marshal(op)
	b, _ := json.Marshal(c.ops[name])
	if string(a) == string(b) {
		return obj, false
	}
	var cp any
	_ = json.Unmarshal(a, &cp)
	c.ops[name] = cp
	return obj, true
}

func (c *Controller) process(ctx context.Context, name string, subj Subject) {
	cfg := c.cfg.Load()
	if cfg == nil {
		return
	}
	obj, opChanged := c.withOperation(name, c.withHealthTime(name, subj.App))
	md, _ := obj["metadata"].(map[string]any)
	annotations := stringMap(md["annotations"])
	labels := stringMap(md["labels"])
	dests := c.destinations(cfg, name, annotations, subj.ProjectAnnotations, labels)
	if len(dests) == 0 {
		return
	}
	c.mu.Lock()
	st, ok := c.state[name]
	if !ok {
		// Carry over what Argo CD sent for the application.
		st = State{}
		if v := annotations[AnnotationNotified]; v != "" {
			_ = json.Unmarshal([]byte(v), &st)
		}
	}
	st = maps.Clone(st)
	if st == nil {
		st = State{}
	}
	c.mu.Unlock()
	changed := !ok || opChanged
	env := map[string]any{"app": obj}
	maps.Copy(env, helpers())
	for _, trigger := range sortedKeys(dests) {
		conds, ok := cfg.Triggers[trigger]
		if !ok {
			c.problem("application %s subscribes to trigger %s, which is not configured (trigger.%s in %s)", name, trigger, trigger, ConfigMapName)
			continue
		}
		for _, cond := range conds {
			fired, oncePer, err := evaluate(cond, env)
			if err != nil {
				c.log.Debug("notifications: condition failed", "app", name, "trigger", trigger, "err", err)
			}
			for _, d := range dests[trigger] {
				key := stateKey(trigger, cond.key, oncePer, d)
				if !fired {
					if oncePer == "" && cond.oncePer == nil {
						if _, was := st[key]; was {
							delete(st, key)
							changed = true
						}
					}
					continue
				}
				if _, sent := st[key]; sent {
					continue
				}
				svc, ok := cfg.Services[d.Service]
				if !ok {
					c.problem("application %s: notification service %s is not configured (service.<type>.%s in %s)", name, d.Service, d.Service, ConfigMapName)
					continue
				}
				err := c.send(ctx, cfg, svc, obj, subj.Project, cond.Send, d)
				if err != nil && !sender.IsPermanent(err) {
					c.problem("application %s: trigger %s to %s: %v (tried again later)", name, trigger, d, err)
					continue
				}
				if err != nil {
					c.problem("application %s: trigger %s to %s: %v", name, trigger, d, err)
				} else {
					c.log.Info("notification sent", "app", name, "trigger", trigger, "destination", d.String())
				}
				st[key] = time.Now().Unix()
				changed = true
			}
		}
	}
	if !changed {
		return
	}
	truncate(st, maxStateEntries)
	c.mu.Lock()
	if _, gone := c.last[name]; gone || len(st) > 0 {
		c.state[name] = st
	}
	c.mu.Unlock()
	c.persist()
}

// State returns what was sent for the application.
func (c *Controller) State(name string) State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.state[name])
}

// evaluate runs a condition: whether it fired and, when it did, its oncePer value.
func evaluate(cond Condition, env map[string]any) (fired bool, oncePer string, err error) {
	defer func() {
		if r := recover(); r != nil {
			fired, oncePer, err = false, "", fmt.Errorf("%v", r)
		}
	}()
	v, err := expr.Run(cond.when, env)
	if err != nil {
		return false, "", err
	}
	b, _ := v.(bool)
	if !b {
		return false, "", nil
	}
	if cond.oncePer != nil {
		ov, err := expr.Run(cond.oncePer, env)
		if err != nil {
			return true, "", err
		}
		if ov != nil {
			oncePer = fmt.Sprintf("%v", ov)
		} else {
			oncePer = "<nil>"
		}
	}
	return true, oncePer, nil
}

// stateKey is Argo CD's key of a notification in its state.
func stateKey(trigger, condKey, oncePer string, d Destination) string {
	k := fmt.Sprintf("%s:%s:%s:%s", trigger, condKey, d.Service, d.Recipient)
	if oncePer != "" {
		k = oncePer + ":" + k
	}
	return k
}

func truncate(s State, max int) {
	if len(s) <= max {
		return
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return s[keys[i]] < s[keys[j]] })
	for _, k := range keys[:len(s)-max] {
		delete(s, k)
	}
}

func (c *Controller) send(ctx context.Context, cfg *Config, svc *Service, obj, project map[string]any, templates []string, d Destination) error {
	if project == nil {
		project = map[string]any{}
	}
	vars := map[string]any{
		"app":         obj,
		"context":     cfg.Context,
		"secrets":     cfg.Secrets,
		"serviceType": d.Service,
		"recipient":   d.Recipient,
		"appProject":  project,
	}
	maps.Copy(vars, helpers())
	maps.Copy(vars, appHelpers(obj))
	n, err := cfg.Render(ctx, templates, vars)
	if err != nil {
		return sender.Permanentf(0, "%v", err)
	}
	return c.tr.send(ctx, svc, n, d)
}

// persist writes the state file (atomically).
func (c *Controller) persist() {
	if c.opts.StateFile == "" {
		return
	}
	c.mu.Lock()
	raw, err := json.Marshal(stateFile{Notified: c.state, Operations: c.ops})
	c.mu.Unlock()
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(c.opts.StateFile), 0o700); err != nil {
		c.log.Warn("notifications state", "err", err)
		return
	}
	tmp := c.opts.StateFile + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		c.log.Warn("notifications state", "err", err)
		return
	}
	if err := os.Rename(tmp, c.opts.StateFile); err != nil {
		c.log.Warn("notifications state", "err", err)
	}
}

func stringMap(v any) map[string]string {
	switch m := v.(type) {
	case map[string]string:
		return m
	case map[string]any:
		out := make(map[string]string, len(m))
		for k, e := range m {
			if s, ok := e.(string); ok {
				out[k] = s
			}
		}
		return out
	}
	return nil
}

// destinations are the application's subscriptions by trigger: its annotations, its
// project's, and the ConfigMap's subscriptions whose selector matches its labels. A
// subscription without a trigger takes the default triggers.
func (c *Controller) destinations(cfg *Config, app string, annotations, projectAnnotations, labels map[string]string) map[string][]Destination {
	out := map[string][]Destination{}
	seen := map[string]bool{}
	add := func(trigger string, d Destination) {
		k := trigger + "\x00" + d.Service + "\x00" + d.Recipient
		if !seen[k] {
			seen[k] = true
			out[trigger] = append(out[trigger], d)
		}
	}
	defaults := func(service string) []string {
		if ts, ok := cfg.ServiceDefaultTriggers[service]; ok {
			return ts
		}
		return cfg.DefaultTriggers
	}
	fromAnnotations := func(ann map[string]string, owner string) {
		for _, k := range sortedKeys(ann) {
			v := ann[k]
			switch {
			case strings.HasPrefix(k, AnnotationPrefix+"/subscribe."):
				rest := strings.TrimPrefix(k, AnnotationPrefix+"/subscribe.")
				trigger, service, ok := strings.Cut(rest, ".")
				if !ok {
					trigger, service = "", rest
				}
				if service == "" {
					c.problem("%s: annotation %s names no service", owner, k)
					continue
				}
				recipients := splitRecipients(v)
				triggers := []string{trigger}
				if trigger == "" {
					triggers = defaults(service)
				}
				for _, t := range triggers {
					for _, r := range recipients {
						add(t, Destination{Service: service, Recipient: r})
					}
				}
			case k == AnnotationPrefix+"/subscriptions":
				var subs []struct {
					Trigger      []string `json:"trigger"`
					Destinations []struct {
						Service    string   `json:"service"`
						Recipients []string `json:"recipients"`
					} `json:"destinations"`
				}
				if err := decodeYAML(v, &subs); err != nil {
					c.problem("%s: annotation %s: want a list of trigger and destinations: %v", owner, k, err)
					continue
				}
				for _, s := range subs {
					for _, d := range s.Destinations {
						triggers := s.Trigger
						if len(triggers) == 0 {
							triggers = defaults(d.Service)
						}
						rs := d.Recipients
						if len(rs) == 0 {
							rs = []string{""}
						}
						for _, t := range triggers {
							for _, r := range rs {
								add(t, Destination{Service: d.Service, Recipient: strings.TrimSpace(r)})
							}
						}
					}
				}
			}
		}
	}
	fromAnnotations(annotations, "application "+app)
	fromAnnotations(projectAnnotations, "the project of application "+app)
	for _, s := range cfg.Subscriptions {
		if !s.matches(labels) {
			continue
		}
		triggers := s.Triggers
		if len(triggers) == 0 {
			triggers = cfg.DefaultTriggers
		}
		for _, t := range triggers {
			for _, r := range s.Recipients {
				svc, rcpt, _ := strings.Cut(r, ":")
				add(t, Destination{Service: strings.TrimSpace(svc), Recipient: strings.TrimSpace(rcpt)})
			}
		}
	}
	return out
}

// splitRecipients splits an annotation's value at ";" (an empty value is one empty recipient,
// for services such as webhooks that need none).
func splitRecipients(v string) []string {
	if strings.TrimSpace(v) == "" {
		return []string{""}
	}
	var out []string
	for _, r := range strings.Split(v, ";") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
		if len(out) == maxRecipients {
			break
		}
	}
	return out
}
