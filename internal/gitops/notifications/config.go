// Package notifications runs Argo CD Notifications in a runtime, next to the applications it
// watches, as Argo CD's notifications controller does: the argocd-notifications-cm ConfigMap
// (services, templates, triggers, default triggers, subscriptions, context) with $key
// references into the argocd-notifications-secret Secret, subscriptions by annotation
// (notifications.argoproj.io/subscribe.<trigger>.<service>) on Applications and AppProjects,
// trigger conditions in expr-lang, templates in Go text/template with Argo CD's variables and
// functions, and the notified.notifications.argoproj.io state so that a notification is sent
// once. Webhook, Slack (chat.postMessage, Slack-compatible through apiURL) and email services
// send through internal/sender under the operator's network policy.
//
// The ConfigMap is the team's: it is data. Templates have no function that reaches the
// environment, the network or a shell; their execution is bounded in time and size; URLs and
// mail servers are checked against the operator's policy when a notification is sent.
package notifications

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/internal/yamlx"
	"github.com/freshet-dev/freshet/internal/sender"
)

// Names of Argo CD's notifications objects and annotations.
const (
	ConfigMapName = "argocd-notifications-cm"
	SecretName    = "argocd-notifications-secret"
	// AnnotationPrefix is the prefix of subscription annotations:
	// notifications.argoproj.io/subscribe.<trigger>.<service>: <recipient>;<recipient>.
	AnnotationPrefix = "notifications.argoproj.io"
	// AnnotationNotified is where Argo CD keeps what was sent; read to carry its state over.
	AnnotationNotified = "notified." + AnnotationPrefix
)

// Service types.
const (
	TypeWebhook = "webhook"
	TypeSlack   = "slack"
	TypeEmail   = "email"
)

// Bounds on what the ConfigMap may ask for.
const (
	maxKeyValue   = 256 << 10 // one key's value
	maxConditions = 50        // per trigger
	maxExprLen    = 4096
	maxRecipients = 50
)

// Service is a configured notification service (service.<type>[.<name>]).
type Service struct {
	Name string
	Type string
	Key  string // the ConfigMap key, for messages

	Webhook *WebhookService
	Slack   *SlackService
	Email   *EmailService
}

// Header is a webhook service's header.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// BasicAuth is a webhook service's basic authentication.
type BasicAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// WebhookService is service.webhook.<name>.
type WebhookService struct {
	URL                string     `json:"url"`
	Headers            []Header   `json:"headers"`
	BasicAuth          *BasicAuth `json:"basicAuth"`
	InsecureSkipVerify bool       `json:"insecureSkipVerify"`
}

// SlackService is service.slack (chat.postMessage with a bot token; apiURL for a
// Slack-compatible server).
type SlackService struct {
	Token              string   `json:"token"`
	APIURL             string   `json:"apiURL"`
	Username           string   `json:"username"`
	Icon               string   `json:"icon"`
	Channels           []string `json:"channels"`
	SigningSecret      string   `json:"signingSecret"`
	DisableUnfurl      bool     `json:"disableUnfurl"`
	InsecureSkipVerify bool     `json:"insecureSkipVerify"`
}

// EmailService is service.email[.<name>].
type EmailService struct {
	Host               string `json:"host"`
	Port               int    `json:"port"`
	Username           string `json:"username"`
	Password           string `json:"password"`
	From               string `json:"from"`
	HTML               bool   `json:"html"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify"`
	// Security is Freshet's: starttls (the default), tls (port 465) or none.
	Security string `json:"security"`
}

// DefaultSlackAPI is Slack's Web API base.
const DefaultSlackAPI = "https://slack.com/api/"

// TemplateSpec is template.<name> as written.
type TemplateSpec struct {
	Message string                     `json:"message"`
	Email   *EmailTemplate             `json:"email"`
	Slack   *SlackTemplate             `json:"slack"`
	Webhook map[string]WebhookTemplate `json:"webhook"`
}

// EmailTemplate is a template's email part.
type EmailTemplate struct {
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// SlackTemplate is a template's slack part.
type SlackTemplate struct {
	Username    string `json:"username"`
	Icon        string `json:"icon"`
	Attachments string `json:"attachments"`
	Blocks      string `json:"blocks"`
	GroupingKey string `json:"groupingKey"`
}

// WebhookTemplate is a template's request to one webhook service.
type WebhookTemplate struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Body   string `json:"body"`
}

// Condition is one of a trigger's conditions.
type Condition struct {
	When        string   `json:"when"`
	OncePer     string   `json:"oncePer"`
	Send        []string `json:"send"`
	Description string   `json:"description"`

	when    *vm.Program
	oncePer *vm.Program
	key     string
}

// Subscription is an entry of the ConfigMap's subscriptions key.
type Subscription struct {
	Recipients []string          `json:"recipients"`
	Triggers   []string          `json:"triggers"`
	Selector   string            `json:"selector"`
	selector   map[string]string // key=value pairs, all required
}

// Config is a parsed argocd-notifications-cm with its secret references resolved.
type Config struct {
	Services        map[string]*Service
	Templates       map[string]*Template
	Triggers        map[string][]Condition
	DefaultTriggers []string
	// ServiceDefaultTriggers are defaultTriggers.<service>.
	ServiceDefaultTriggers map[string][]string
	Subscriptions          []Subscription
	Context                map[string]string
	Secrets                map[string]string
}

// ParseOptions change what ParseConfig accepts.
type ParseOptions struct {
	// NoCatalog leaves out Argo CD's built-in triggers and templates (which a key of the same
	// name replaces).
	NoCatalog bool
}

var (
	secretRef = regexp.MustCompile(`[$][\w-]+`)
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)
)

// resolveSecrets replaces $key references in v with the secret's values; an unknown key stays.
func resolveSecrets(v string, secret map[string]string, missing *[]string) string {
	return secretRef.ReplaceAllStringFunc(v, func(ref string) string {
		if s, ok := secret[ref[1:]]; ok {
			return s
		}
		*missing = append(*missing, ref)
		return ref
	})
}

// decodeYAML decodes one YAML document into out (bounded aliases and depth).
func decodeYAML(s string, out any) error {
	docs, err := yamlx.SplitDocuments([]byte(s))
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return nil
	}
	v, err := yamlx.ToValue(docs[0].Node)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// walkStrings applies f to every string in v (a YAML value).
func walkStrings(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case map[string]any:
		for k, e := range t {
			t[k] = walkStrings(e, f)
		}
	case []any:
		for i, e := range t {
			t[i] = walkStrings(e, f)
		}
	}
	return v
}

// ParseConfig reads argocd-notifications-cm's data with argocd-notifications-secret's. Each
// problem names the key at fault and what is valid; what is valid is kept, so one bad
// template or trigger leaves the others working. Argo CD's catalog of triggers and templates
// is the base a key of the same name replaces.
func ParseConfig(data map[string]string, secret map[string][]byte, opts ParseOptions) (*Config, []error) {
	cfg := &Config{
		Services: map[string]*Service{}, Templates: map[string]*Template{}, Triggers: map[string][]Condition{},
		ServiceDefaultTriggers: map[string][]string{}, Context: map[string]string{}, Secrets: map[string]string{},
	}
	for k, v := range secret {
		cfg.Secrets[k] = string(v)
	}
	var problems []error
	bad := func(key, value, valid string) {
		problems = append(problems, errdefs.Invalid(ConfigMapName+" "+key, value, valid))
	}
	merged := map[string]string{}
	if !opts.NoCatalog {
		for k, v := range catalog {
			merged[k] = v
		}
	}
	for k, v := range data {
		merged[k] = v
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := merged[k]
		if len(v) > maxKeyValue {
			bad(k, fmt.Sprintf("%d bytes", len(v)), fmt.Sprintf("is longer than %d bytes", maxKeyValue))
			continue
		}
		switch {
		case k == "context":
			var ctx map[string]string
			if err := decodeYAML(v, &ctx); err != nil {
				bad(k, short(v), "want a map of names to strings: "+err.Error())
				continue
			}
			for n, s := range ctx {
				cfg.Context[n] = s
			}
		case k == "defaultTriggers":
			if err := decodeYAML(v, &cfg.DefaultTriggers); err != nil {
				bad(k, short(v), "want a list of trigger names: "+err.Error())
			}
		case strings.HasPrefix(k, "defaultTriggers."):
			var ts []string
			if err := decodeYAML(v, &ts); err != nil {
				bad(k, short(v), "want a list of trigger names: "+err.Error())
				continue
			}
			cfg.ServiceDefaultTriggers[strings.TrimPrefix(k, "defaultTriggers.")] = ts
		case k == "subscriptions":
			subs, err := parseSubscriptions(v)
			if err != nil {
				bad(k, short(v), err.Error())
				continue
			}
			cfg.Subscriptions = subs
		case strings.HasPrefix(k, "service."):
			s, err := parseService(k, v, cfg.Secrets)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			cfg.Services[s.Name] = s
		case strings.HasPrefix(k, "template."):
			name := strings.TrimPrefix(k, "template.")
			var spec TemplateSpec
			if err := decodeYAML(v, &spec); err != nil {
				bad(k, short(v), "want a template (message, email, slack, webhook): "+err.Error())
				continue
			}
			t, err := compileTemplate(name, spec)
			if err != nil {
				bad(k, short(v), "does not parse as a Go template: "+err.Error())
				continue
			}
			cfg.Templates[name] = t
		case strings.HasPrefix(k, "trigger."):
			name := strings.TrimPrefix(k, "trigger.")
			conds, err := parseTrigger(v)
			if err != nil {
				bad(k, short(v), err.Error())
				continue
			}
			cfg.Triggers[name] = conds
		}
	}
	// Triggers that send templates that do not exist fail when they fire: say so now.
	for _, name := range sortedKeys(cfg.Triggers) {
		for i, c := range cfg.Triggers[name] {
			for _, t := range c.Send {
				if _, ok := cfg.Templates[t]; !ok {
					bad(fmt.Sprintf("trigger.%s[%d].send", name, i), t, "names no template: define template."+t)
				}
			}
		}
	}
	for _, t := range cfg.DefaultTriggers {
		if _, ok := cfg.Triggers[t]; !ok {
			bad("defaultTriggers", t, "names no trigger: define trigger."+t)
		}
	}
	return cfg, problems
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// short is v for a message: one line, bounded.
func short(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, '\n'); i >= 0 {
		v = v[:i] + " …"
	}
	if len(v) > 80 {
		v = v[:80] + "…"
	}
	return v
}

func parseService(key, v string, secret map[string]string) (*Service, error) {
	parts := strings.Split(key, ".")
	var typ, name string
	switch len(parts) {
	case 2:
		typ, name = parts[1], parts[1]
	case 3:
		typ, name = parts[1], parts[2]
	default:
		return nil, errdefs.Invalid(ConfigMapName+" "+key, key, "want service.<type> or service.<type>.<name>")
	}
	if !nameRE.MatchString(name) {
		return nil, errdefs.Invalid(ConfigMapName+" "+key, name, "is not a service name")
	}
	var raw any
	if err := decodeYAML(v, &raw); err != nil {
		return nil, errdefs.Invalid(ConfigMapName+" "+key, short(v), "does not parse as YAML: "+err.Error())
	}
	var missing []string
	raw = walkStrings(raw, func(s string) string { return resolveSecrets(s, secret, &missing) })
	if len(missing) > 0 {
		return nil, errdefs.Invalid(ConfigMapName+" "+key, strings.Join(missing, ", "), "names keys that "+SecretName+" does not have")
	}
	b, _ := json.Marshal(raw)
	s := &Service{Name: name, Type: typ, Key: key}
	field := func(f string) string { return ConfigMapName + " " + key + " " + f }
	insecure := func(on bool, f string) error {
		if on {
			return errdefs.Invalid(field(f), "true", "is not allowed: certificates are always checked (give the server a certificate the runtime trusts)")
		}
		return nil
	}
	switch typ {
	case TypeWebhook:
		var w WebhookService
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, errdefs.Invalid(ConfigMapName+" "+key, short(v), "want url, headers, basicAuth: "+err.Error())
		}
		if err := checkURL(field("url"), w.URL); err != nil {
			return nil, err
		}
		for _, h := range w.Headers {
			if h.Name == "" || strings.ContainsAny(h.Name+h.Value, "\r\n") {
				return nil, errdefs.Invalid(field("headers"), h.Name, "want a header name and a one-line value")
			}
		}
		if err := insecure(w.InsecureSkipVerify, "insecureSkipVerify"); err != nil {
			return nil, err
		}
		s.Webhook = &w
	case TypeSlack:
		var sl SlackService
		if err := json.Unmarshal(b, &sl); err != nil {
			return nil, errdefs.Invalid(ConfigMapName+" "+key, short(v), "want token, apiURL, username, icon: "+err.Error())
		}
		if sl.Token == "" {
			return nil, errdefs.Invalid(field("token"), "", "is required (a bot token, usually $slack-token from "+SecretName+")")
		}
		if sl.APIURL == "" {
			sl.APIURL = DefaultSlackAPI
		}
		if err := checkURL(field("apiURL"), sl.APIURL); err != nil {
			return nil, err
		}
		if err := insecure(sl.InsecureSkipVerify, "insecureSkipVerify"); err != nil {
			return nil, err
		}
		s.Slack = &sl
	case TypeEmail:
		var e EmailService
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, errdefs.Invalid(ConfigMapName+" "+key, short(v), "want host, port, from, username, password: "+err.Error())
		}
		if e.Host == "" || strings.ContainsAny(e.Host, "/ @\r\n") {
			return nil, errdefs.Invalid(field("host"), e.Host, "want a host name")
		}
		if e.Port == 0 {
			e.Port = 587
		}
		if e.Port < 1 || e.Port > 65535 {
			return nil, errdefs.Invalid(field("port"), strconv.Itoa(e.Port), "want 1 to 65535")
		}
		if !validAddress(e.From) {
			return nil, errdefs.Invalid(field("from"), e.From, "want an email address")
		}
		switch e.Security {
		case "":
			e.Security = sender.SecurityStartTLS
			if e.Port == 465 {
				e.Security = sender.SecurityTLS
			}
		case sender.SecurityStartTLS, sender.SecurityTLS, sender.SecurityNone:
		default:
			return nil, errdefs.Invalid(field("security"), e.Security, "want starttls, tls or none")
		}
		if e.Security == sender.SecurityNone && e.Password != "" {
			return nil, errdefs.Invalid(field("security"), e.Security, "a password is only sent over TLS: use starttls or tls")
		}
		if err := insecure(e.InsecureSkipVerify, "insecure_skip_verify"); err != nil {
			return nil, err
		}
		s.Email = &e
	default:
		return nil, errdefs.Invalid(ConfigMapName+" "+key, typ, "is not a service type Freshet sends to: use webhook, slack or email")
	}
	return s, nil
}

func checkURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errdefs.Invalid(field, raw, "want an http or https URL")
	}
	return nil
}

func validAddress(a string) bool {
	a = strings.TrimSpace(a)
	if a == "" || len(a) > 254 || strings.ContainsAny(a, "\r\n<>,; ") {
		return false
	}
	at := strings.LastIndexByte(a, '@')
	return at > 0 && at < len(a)-1
}

func parseTrigger(v string) ([]Condition, error) {
	var conds []Condition
	if err := decodeYAML(v, &conds); err != nil {
		return nil, fmt.Errorf("want a list of conditions (when, send, oncePer, description): %v", err)
	}
	if len(conds) == 0 {
		return nil, fmt.Errorf("want at least one condition")
	}
	if len(conds) > maxConditions {
		return nil, fmt.Errorf("has %d conditions, more than %d", len(conds), maxConditions)
	}
	for i := range conds {
		c := &conds[i]
		if strings.TrimSpace(c.When) == "" {
			return nil, fmt.Errorf("[%d].when is required", i)
		}
		if len(c.When) > maxExprLen || len(c.OncePer) > maxExprLen {
			return nil, fmt.Errorf("[%d]: an expression is longer than %d bytes", i, maxExprLen)
		}
		if len(c.Send) == 0 {
			return nil, fmt.Errorf("[%d].send names no template", i)
		}
		p, err := expr.Compile(c.When)
		if err != nil {
			return nil, fmt.Errorf("[%d].when does not compile: %v", i, firstLine(err.Error()))
		}
		c.when = p
		if c.OncePer != "" {
			p, err := expr.Compile(c.OncePer)
			if err != nil {
				return nil, fmt.Errorf("[%d].oncePer does not compile: %v", i, firstLine(err.Error()))
			}
			c.oncePer = p
		}
		c.key = fmt.Sprintf("[%d].%s", i, hashWhen(c.When))
	}
	return conds, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// parseSubscriptions reads the ConfigMap's subscriptions: recipients as <service>:<recipient>,
// triggers (none: the default triggers), selector (key=value,… on the application's labels).
func parseSubscriptions(v string) ([]Subscription, error) {
	var subs []Subscription
	if err := decodeYAML(v, &subs); err != nil {
		return nil, fmt.Errorf("want a list of subscriptions (recipients, triggers, selector): %v", err)
	}
	for i := range subs {
		s := &subs[i]
		if len(s.Recipients) == 0 {
			return nil, fmt.Errorf("[%d].recipients: want at least one <service>:<recipient>", i)
		}
		if len(s.Recipients) > maxRecipients {
			return nil, fmt.Errorf("[%d].recipients: more than %d", i, maxRecipients)
		}
		if strings.TrimSpace(s.Selector) != "" {
			s.selector = map[string]string{}
			for _, part := range strings.Split(s.Selector, ",") {
				k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
				k, val = strings.TrimSpace(k), strings.TrimSpace(strings.TrimPrefix(val, "="))
				if !ok || k == "" {
					return nil, fmt.Errorf("[%d].selector %q: want key=value pairs separated by commas", i, s.Selector)
				}
				s.selector[k] = val
			}
		}
	}
	return subs, nil
}

// matches reports whether labels satisfy the subscription's selector.
func (s Subscription) matches(labels map[string]string) bool {
	for k, v := range s.selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
