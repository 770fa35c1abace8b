// Package notify delivers notifications of CI and CD events — a build finished or failed, a
// deployment, an aborted rollout, an application's health degraded — to an account's channels:
// webhooks (JSON, optionally signed with HMAC-SHA256), Slack-compatible incoming webhooks and
// email over SMTP. Subscriptions route event kinds, optionally narrowed to a pipeline or an
// application, to channels. A durable consumer of the bus turns events into deliveries queued
// in the database (once per channel and event), and a sender works the queue with bounded
// retries and exponential backoff, logging every attempt. Channel secrets are encrypted at rest
// and never returned; channel URLs are tenants' and go through the operator's network policy.
// See docs/notifications.md.
package notify

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/sender"
	"github.com/freshet-dev/freshet/internal/store"
)

// Channel kinds.
const (
	KindWebhook = "webhook"
	KindSlack   = "slack"
	KindEmail   = "email"
)

// Event kinds a subscription may name.
const (
	EventBuildFinished  = "build-finished"  // a build ended, whatever its result
	EventBuildFailed    = "build-failed"    // a build ended failed
	EventDeployment     = "deployment"      // a sync finished (succeeded or failed)
	EventRolloutAborted = "rollout-aborted" // an Argo Rollout's update was aborted
	EventHealthDegraded = "health-degraded" // an application's health became Degraded
	// EventTest is the kind of a delivery the "send test" action makes; no subscription names it.
	EventTest = "test"
)

// EventKinds are the kinds a subscription may name.
var EventKinds = []string{EventBuildFinished, EventBuildFailed, EventDeployment, EventRolloutAborted, EventHealthDegraded}

// SMTP security modes.
const (
	SecurityStartTLS = sender.SecurityStartTLS // plain connection upgraded with STARTTLS, required (the default)
	SecurityTLS      = sender.SecurityTLS      // TLS from the start (port 465)
	SecurityNone     = sender.SecurityNone     // no TLS: only without a password
)

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Defaults and bounds.
const (
	DefaultMaxAttempts = 6
	DefaultBackoffMin  = 10 * time.Second
	DefaultBackoffMax  = 10 * time.Minute
	DefaultSendTimeout = 15 * time.Second
	DefaultPoll        = time.Second
	DefaultSMTPPort    = 587
	// DefaultRetention is how long delivered and failed deliveries stay in the log.
	DefaultRetention = 30 * 24 * time.Hour
	pruneEvery       = time.Hour
	// claimFor is how long a claimed delivery is held by its sender: one that dies holding it
	// gives it back after this.
	claimFor        = 2 * time.Minute
	maxURL          = 2048
	maxSecret       = 256
	maxRecipients   = 20
	maxFilter       = 255
	maxSubscription = 100
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Channel is a notification channel as it is shown: no secret, a Slack URL masked.
type Channel struct {
	Name      string
	Kind      string
	URL       string // a webhook's URL (its query masked), a Slack URL's origin
	HasSecret bool   // a webhook's signing secret, a Slack URL, an SMTP password is stored
	SMTP      *SMTP  // email channels
	CreatedAt time.Time
}

// SMTP is an email channel's server and addresses. Password is only ever set in a ChannelSpec.
type SMTP struct {
	Host     string   `json:"host"`
	Port     int      `json:"port"`
	Username string   `json:"username,omitempty"`
	Password string   `json:"-"`
	From     string   `json:"from"`
	To       []string `json:"to"`
	Security string   `json:"security"`
}

// ChannelSpec creates a channel.
type ChannelSpec struct {
	Name string
	Kind string
	// URL is a webhook's or a Slack-compatible incoming webhook's URL.
	URL string
	// Secret signs a webhook's bodies (X-Freshet-Signature-256: sha256=HMAC-SHA256 hex).
	Secret string
	SMTP   *SMTP
}

// channelConfig is a channel's stored public settings.
type channelConfig struct {
	URL  string `json:"url,omitempty"` // a webhook's URL as shown (its query masked)
	SMTP *SMTP  `json:"smtp,omitempty"`
}

// channelSecret is a channel's stored secret settings, encrypted as JSON.
type channelSecret struct {
	WebhookURL    string `json:"webhookUrl,omitempty"` // its query may be a credential
	WebhookSecret string `json:"webhookSecret,omitempty"`
	SlackURL      string `json:"slackUrl,omitempty"`
	SMTPPassword  string `json:"smtpPassword,omitempty"`
}

// Subscription routes events to a channel.
type Subscription struct {
	ID          string
	Channel     string
	Events      []string
	Pipeline    string // a pipeline's full name (project/pipeline): only its builds
	Application string // an application's name: only its deployments, rollouts and health
	CreatedAt   time.Time
}

// SubscriptionSpec creates a subscription.
type SubscriptionSpec struct {
	Channel     string
	Events      []string
	Pipeline    string
	Application string
}

// Delivery is one event's notification to one channel with its attempts.
type Delivery struct {
	ID            string
	Channel       string
	Event         string
	EventKey      string
	Title         string
	Status        string
	Attempts      []Attempt
	NextAttemptAt time.Time // pending deliveries
	LastError     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Attempt is one try at delivering.
type Attempt struct {
	Attempt    int
	At         time.Time
	Duration   time.Duration
	StatusCode int // the HTTP status answered; 0 for email or no answer
	Error      string
}

// DeliveryFilter narrows the delivery log.
type DeliveryFilter struct {
	Channel string
	Status  string
}

// Store is the database the Service works on. *store.DB implements it.
type Store interface {
	Tx(ctx context.Context, fn func(tx *store.Tx) error) error
	ListNotificationChannels(ctx context.Context, accountID string) ([]store.NotificationChannel, error)
	GetNotificationChannel(ctx context.Context, accountID, name string) (store.NotificationChannel, error)
	NotificationChannelByID(ctx context.Context, accountID, id string) (store.NotificationChannel, error)
	ListNotificationSubscriptions(ctx context.Context, accountID string) ([]store.NotificationSubscription, error)
	DueNotifications(ctx context.Context, now time.Time, limit int) ([]store.NotificationDelivery, error)
	ClaimNotification(ctx context.Context, id string, was, until time.Time) (bool, error)
	RecordNotificationAttempt(ctx context.Context, a store.NotificationAttempt, status string, next time.Time) error
	ListNotificationDeliveries(ctx context.Context, accountID string, f store.NotificationDeliveryFilter, p paging.Page) ([]store.NotificationDelivery, error)
	GetNotificationDelivery(ctx context.Context, accountID, id string) (store.NotificationDelivery, error)
	NotificationAttempts(ctx context.Context, accountID string, ids []string) ([]store.NotificationAttempt, error)
	GetBuild(ctx context.Context, accountID, id string) (store.Build, error)
	GetPipeline(ctx context.Context, accountID, id string) (store.Pipeline, error)
	PruneNotificationDeliveries(ctx context.Context, before time.Time) (int64, error)
}

var _ Store = (*store.DB)(nil)

// Service manages channels and subscriptions, queues notifications of events and sends them.
type Service struct {
	db          Store
	audit       *audit.Log
	keys        *secrets.Keyring
	net         *netpolicy.Policy
	log         *slog.Logger
	now         func() time.Time
	baseURL     string
	maxAttempts int
	backoffMin  time.Duration
	backoffMax  time.Duration
	timeout     time.Duration
	poll        time.Duration
	rootCAs     *x509.CertPool
	retention   time.Duration
	kick        chan struct{}
}

// Deps are what the Service needs.
type Deps struct {
	Store Store
	// Audit records changes to channels and subscriptions; nil: a log on Store when it can hold one.
	Audit *audit.Log
	// Keys encrypt channels' secrets.
	Keys *secrets.Keyring
	// Net checks channels' URLs and SMTP hosts and connects to them; nil allows every address.
	Net *netpolicy.Policy
	Log *slog.Logger
	// Now is time.Now when nil.
	Now func() time.Time
	// BaseURL is where users reach the control plane, for links in notifications.
	BaseURL string
	// MaxAttempts, BackoffMin, BackoffMax, SendTimeout and Poll default to the Default* constants.
	MaxAttempts int
	BackoffMin  time.Duration
	BackoffMax  time.Duration
	SendTimeout time.Duration
	Poll        time.Duration
	// Retention is DefaultRetention when zero.
	Retention time.Duration
	// SMTPRootCAs are the roots SMTP servers' certificates are checked against (nil: the host's).
	SMTPRootCAs *x509.CertPool
}

// New returns the notification service.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Net == nil {
		d.Net = netpolicy.Unrestricted()
	}
	if d.MaxAttempts <= 0 {
		d.MaxAttempts = DefaultMaxAttempts
	}
	if d.BackoffMin <= 0 {
		d.BackoffMin = DefaultBackoffMin
	}
	if d.BackoffMax < d.BackoffMin {
		d.BackoffMax = max(DefaultBackoffMax, d.BackoffMin)
	}
	if d.SendTimeout <= 0 {
		d.SendTimeout = DefaultSendTimeout
	}
	if d.Poll <= 0 {
		d.Poll = DefaultPoll
	}
	if d.Retention <= 0 {
		d.Retention = DefaultRetention
	}
	if as, ok := d.Store.(audit.Store); ok && d.Audit == nil {
		d.Audit = audit.NewLog(as, d.Log)
	}
	return &Service{db: d.Store, audit: d.Audit, keys: d.Keys, net: d.Net, log: d.Log, now: d.Now, baseURL: strings.TrimSuffix(d.BaseURL, "/"),
		maxAttempts: d.MaxAttempts, backoffMin: d.BackoffMin, backoffMax: d.BackoffMax, timeout: d.SendTimeout, poll: d.Poll,
		rootCAs: d.SMTPRootCAs, retention: d.Retention, kick: make(chan struct{}, 1)}
}

func (s *Service) finish(ctx context.Context, e *audit.Entry, err error) {
	if s.audit != nil {
		s.audit.Finish(ctx, e, err)
	}
}

func secretAAD(accountID, name string) []byte {
	return secrets.AAD("notification-channel", accountID, name)
}

func isControl(r rune) bool { return unicode.IsControl(r) }

// checkHTTPURL checks a webhook's or Slack URL for field.
func checkHTTPURL(field, raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errdefs.Invalid(field, "", "is required: the http(s) URL to post notifications to")
	}
	if len(raw) > maxURL {
		return nil, errdefs.Invalid(field, "(too long)", fmt.Sprintf("is longer than %d characters", maxURL))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "" || u.Fragment != "" || strings.ContainsFunc(raw, isControl) {
		return nil, errdefs.Invalid(field, maskURL(raw), "is not an http(s) URL with a host and no fragment")
	}
	if u.User != nil {
		return nil, errdefs.Invalid(field, "(redacted)", "must not carry credentials in the URL: give a signing secret instead")
	}
	if !validHost(u.Hostname()) {
		return nil, errdefs.Invalid(field, maskURL(raw), "does not name a host: give a host name or an IP address in its usual form")
	}
	return u, nil
}

// validHost reports whether h is a host name or an IP address.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if strings.Contains(h, ":") { // an IPv6 address
		u, err := url.Parse("smtp://[" + h + "]")
		return err == nil && u.Hostname() == h
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	// A name's last label is never all digits: what looks like one is an address in another
	// spelling (2130706433, 0x7f.1, 127.1) that resolvers and browsers read differently.
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" || strings.HasPrefix(strings.ToLower(last), "0x") {
		return false
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// address checks an email address for field: a bare address (no display name).
func address(field, v string) (string, error) {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Name != "" || a.Address != v || strings.ContainsFunc(v, isControl) || len(v) > 254 {
		return "", errdefs.Invalid(field, v, "is not an email address (user@example.com, without a display name)")
	}
	return a.Address, nil
}

// validateChannel checks c and returns its stored settings. Every problem is errdefs.ErrInvalid
// naming the field; a URL or SMTP host the operator's policy refuses is one too.
func validateChannel(c ChannelSpec, net *netpolicy.Policy) (channelConfig, channelSecret, error) {
	var cfg channelConfig
	var sec channelSecret
	if !nameRE.MatchString(c.Name) {
		return cfg, sec, errdefs.Invalid("name", c.Name, "is not a channel name: 1 to 63 lower-case letters, digits and '-', starting with a letter or digit")
	}
	notFor := func(field string) error {
		return errdefs.Invalid(field, "(given)", "is not used by a "+c.Kind+" channel")
	}
	switch c.Kind {
	case KindWebhook, KindSlack:
		if c.SMTP != nil {
			return cfg, sec, notFor("smtp")
		}
		if _, err := checkHTTPURL("url", c.URL); err != nil {
			return cfg, sec, err
		}
		if err := net.CheckServerURL("url", c.URL); err != nil {
			return cfg, sec, err
		}
		if c.Kind == KindSlack {
			if c.Secret != "" {
				return cfg, sec, notFor("secret")
			}
			sec.SlackURL = c.URL // the URL is the credential
			return cfg, sec, nil
		}
		if len(c.Secret) > maxSecret || strings.ContainsFunc(c.Secret, isControl) {
			return cfg, sec, errdefs.Invalid("secret", "(redacted)", fmt.Sprintf("is not a signing secret: at most %d characters, no control characters", maxSecret))
		}
		cfg.URL, sec.WebhookURL, sec.WebhookSecret = maskURL(c.URL), c.URL, c.Secret
		return cfg, sec, nil
	case KindEmail:
		if c.URL != "" {
			return cfg, sec, notFor("url")
		}
		if c.Secret != "" {
			return cfg, sec, notFor("secret")
		}
		m := c.SMTP
		if m == nil {
			return cfg, sec, errdefs.Invalid("smtp", "", "is required for an email channel: host, port, from, to (and username, password)")
		}
		out := SMTP{Host: m.Host, Port: m.Port, Username: m.Username, Security: m.Security}
		if !validHost(m.Host) {
			return cfg, sec, errdefs.Invalid("smtp.host", m.Host, "is not a host name or IP address (smtp.example.com)")
		}
		if out.Port == 0 {
			out.Port = DefaultSMTPPort
		}
		if out.Port < 1 || out.Port > 65535 {
			return cfg, sec, errdefs.Invalid("smtp.port", strconv.Itoa(m.Port), "is not a TCP port (1 to 65535; 587 for STARTTLS, 465 for TLS)")
		}
		if out.Security == "" {
			out.Security = SecurityStartTLS
		}
		if !slices.Contains([]string{SecurityStartTLS, SecurityTLS, SecurityNone}, out.Security) {
			return cfg, sec, errdefs.Invalid("smtp.security", m.Security, "is not starttls, tls or none")
		}
		if len(m.Username) > 254 || strings.ContainsFunc(m.Username, isControl) {
			return cfg, sec, errdefs.Invalid("smtp.username", m.Username, "is not a user name: at most 254 characters, no control characters")
		}
		if len(m.Password) > maxSecret || strings.ContainsFunc(m.Password, isControl) {
			return cfg, sec, errdefs.Invalid("smtp.password", "(redacted)", fmt.Sprintf("is not a password: at most %d characters, no control characters", maxSecret))
		}
		if m.Password != "" && m.Username == "" {
			return cfg, sec, errdefs.Invalid("smtp.username", "", "is required with a password")
		}
		if m.Password != "" && out.Security == SecurityNone {
			return cfg, sec, errdefs.Invalid("smtp.security", "none", "would send the password in clear: use starttls or tls")
		}
		var err error
		if out.From, err = address("smtp.from", m.From); err != nil {
			return cfg, sec, err
		}
		if len(m.To) == 0 || len(m.To) > maxRecipients {
			return cfg, sec, errdefs.Invalid("smtp.to", strconv.Itoa(len(m.To))+" recipients", fmt.Sprintf("must name 1 to %d recipients", maxRecipients))
		}
		for i, t := range m.To {
			a, err := address(fmt.Sprintf("smtp.to[%d]", i), t)
			if err != nil {
				return cfg, sec, err
			}
			out.To = append(out.To, a)
		}
		hostport := "smtp://" + joinHostPort(out.Host, out.Port)
		if err := net.CheckServerURL("smtp.host", hostport); err != nil {
			return cfg, sec, err
		}
		cfg.SMTP, sec.SMTPPassword = &out, m.Password
		return cfg, sec, nil
	}
	return cfg, sec, errdefs.Invalid("kind", c.Kind, "is not a channel kind: use webhook, slack or email")
}

func joinHostPort(host string, port int) string {
	h := strings.Trim(host, "[]")
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(port)
}

// maskURL shows a URL without what may be a credential: its query (and, for userinfo, all of it).
func maskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(redacted)"
	}
	out := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		out += "?…"
	}
	return out
}

// maskSlack shows only a Slack URL's origin: its path is the credential.
func maskSlack(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(redacted)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// CreateChannel adds a channel to p's account. Its URL (or SMTP host) must be one the operator's
// network policy lets tenants reach; its secrets are encrypted with the account and name.
func (s *Service) CreateChannel(ctx context.Context, p rbac.Principal, c ChannelSpec) (_ Channel, err error) {
	e := audit.Start(ctx, p, "notification-channel.create", "notification-channel", c.Name)
	defer func() { s.finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return Channel{}, err
	}
	cfg, sec, err := validateChannel(c, s.net)
	if err != nil {
		return Channel{}, err
	}
	row := store.NotificationChannel{ID: store.NewID(store.PrefixNotificationChannel), AccountID: p.AccountID, Name: c.Name, Kind: c.Kind,
		Config: encodeJSON(cfg), CreatedAt: s.now().UTC()}
	if sec != (channelSecret{}) {
		if s.keys == nil {
			return Channel{}, fmt.Errorf("notification channel %s: no master key to encrypt its secret", c.Name)
		}
		if row.Secret, err = s.keys.Encrypt([]byte(encodeJSON(sec)), secretAAD(p.AccountID, c.Name)); err != nil {
			return Channel{}, fmt.Errorf("notification channel %s: encrypt secret: %w", c.Name, err)
		}
	}
	e.Detail("%s", c.Kind)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateNotificationChannel(ctx, row); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Channel{}, fmt.Errorf("notification channel %s: %w", c.Name, err)
	}
	return s.toChannel(row)
}

func encodeJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// toChannel shows row, its secrets masked. A Slack URL's origin is read from its ciphertext.
func (s *Service) toChannel(row store.NotificationChannel) (Channel, error) {
	var cfg channelConfig
	if err := json.Unmarshal([]byte(row.Config), &cfg); err != nil {
		return Channel{}, fmt.Errorf("notification channel %s: decode config: %w", row.Name, err)
	}
	c := Channel{Name: row.Name, Kind: row.Kind, SMTP: cfg.SMTP, CreatedAt: row.CreatedAt}
	switch row.Kind {
	case KindWebhook:
		c.URL = cfg.URL // masked when stored
		if sec, err := s.openSecret(row); err == nil {
			c.HasSecret = sec.WebhookSecret != ""
		}
	case KindSlack:
		c.URL, c.HasSecret = "(secret)", true
		if sec, err := s.openSecret(row); err == nil {
			c.URL = maskSlack(sec.SlackURL)
		}
	case KindEmail:
		c.HasSecret = row.Secret != ""
	}
	return c, nil
}

func (s *Service) openSecret(row store.NotificationChannel) (channelSecret, error) {
	var sec channelSecret
	if row.Secret == "" {
		return sec, nil
	}
	if s.keys == nil {
		return sec, fmt.Errorf("notification channel %s: no master key to decrypt its secret", row.Name)
	}
	b, err := s.keys.Decrypt(row.Secret, secretAAD(row.AccountID, row.Name))
	if err != nil {
		return sec, fmt.Errorf("notification channel %s: decrypt secret: %w", row.Name, err)
	}
	if err := json.Unmarshal(b, &sec); err != nil {
		return sec, fmt.Errorf("notification channel %s: decode secret: %w", row.Name, err)
	}
	return sec, nil
}

// ListChannels returns p's account's channels by name.
func (s *Service) ListChannels(ctx context.Context, p rbac.Principal) ([]Channel, error) {
	if err := rbac.Allow(p, rbac.ReadAudit); err != nil {
		return nil, err
	}
	rows, err := s.db.ListNotificationChannels(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	out := make([]Channel, 0, len(rows))
	for _, r := range rows {
		c, err := s.toChannel(r)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// DeleteChannel removes p's account's channel name, its subscriptions and its delivery log.
func (s *Service) DeleteChannel(ctx context.Context, p rbac.Principal, name string) (err error) {
	e := audit.Start(ctx, p, "notification-channel.delete", "notification-channel", name)
	defer func() { s.finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteNotificationChannel(ctx, p.AccountID, name); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

// validateSubscription checks sp. Every problem is errdefs.ErrInvalid naming the field.
func validateSubscription(sp SubscriptionSpec) error {
	if !nameRE.MatchString(sp.Channel) {
		return errdefs.Invalid("channel", sp.Channel, "is not a channel name: 1 to 63 lower-case letters, digits and '-'")
	}
	if len(sp.Events) == 0 {
		return errdefs.Invalid("events", "", "is required: one or more of "+strings.Join(EventKinds, ", "))
	}
	if len(sp.Events) > len(EventKinds) {
		return errdefs.Invalid("events", strconv.Itoa(len(sp.Events))+" kinds", fmt.Sprintf("names more than the %d kinds there are", len(EventKinds)))
	}
	for i, ev := range sp.Events {
		if !slices.Contains(EventKinds, ev) {
			return errdefs.Invalid(fmt.Sprintf("events[%d]", i), ev, "is not an event kind: use "+strings.Join(EventKinds, ", "))
		}
		if slices.Contains(sp.Events[:i], ev) {
			return errdefs.Invalid(fmt.Sprintf("events[%d]", i), ev, "is named twice")
		}
	}
	for _, f := range []struct{ field, v string }{{"pipeline", sp.Pipeline}, {"application", sp.Application}} {
		if len(f.v) > maxFilter || strings.ContainsFunc(f.v, isControl) || strings.TrimSpace(f.v) != f.v {
			return errdefs.Invalid(f.field, f.v, fmt.Sprintf("is not a name: at most %d characters, no control characters or surrounding spaces", maxFilter))
		}
	}
	if sp.Pipeline != "" && !strings.Contains(sp.Pipeline, "/") {
		return errdefs.Invalid("pipeline", sp.Pipeline, "is not a pipeline's full name: project/pipeline")
	}
	return nil
}

// CreateSubscription routes events of sp.Events to the channel sp.Channel of p's account.
func (s *Service) CreateSubscription(ctx context.Context, p rbac.Principal, sp SubscriptionSpec) (_ Subscription, err error) {
	e := audit.Start(ctx, p, "notification-subscription.create", "notification-subscription", sp.Channel)
	defer func() { s.finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return Subscription{}, err
	}
	if err := validateSubscription(sp); err != nil {
		return Subscription{}, err
	}
	row := store.NotificationSubscription{ID: store.NewID(store.PrefixNotificationSubscription), AccountID: p.AccountID, Channel: sp.Channel,
		Events: sp.Events, Pipeline: sp.Pipeline, Application: sp.Application, CreatedAt: s.now().UTC()}
	e.Resource(row.ID)
	e.Detail("%s → %s", strings.Join(sp.Events, ","), sp.Channel)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		c, err := tx.GetNotificationChannel(ctx, p.AccountID, sp.Channel)
		if err != nil {
			return errdefs.Invalid("channel", sp.Channel, "is not a notification channel of this account (freshet notification channel list)")
		}
		subs, err := tx.ListNotificationSubscriptions(ctx, p.AccountID)
		if err != nil {
			return err
		}
		if len(subs) >= maxSubscription {
			return errdefs.Invalid("channel", sp.Channel, fmt.Sprintf("cannot take another subscription: the account has the most there may be (%d)", maxSubscription))
		}
		row.ChannelID = c.ID
		if err := tx.CreateNotificationSubscription(ctx, row); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Subscription{}, err
	}
	return toSubscription(row), nil
}

func toSubscription(r store.NotificationSubscription) Subscription {
	return Subscription{ID: r.ID, Channel: r.Channel, Events: r.Events, Pipeline: r.Pipeline, Application: r.Application, CreatedAt: r.CreatedAt}
}

// ListSubscriptions returns p's account's subscriptions, oldest first.
func (s *Service) ListSubscriptions(ctx context.Context, p rbac.Principal) ([]Subscription, error) {
	if err := rbac.Allow(p, rbac.ReadAudit); err != nil {
		return nil, err
	}
	rows, err := s.db.ListNotificationSubscriptions(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	out := make([]Subscription, 0, len(rows))
	for _, r := range rows {
		out = append(out, toSubscription(r))
	}
	return out, nil
}

// DeleteSubscription removes p's account's subscription id.
func (s *Service) DeleteSubscription(ctx context.Context, p rbac.Principal, id string) (err error) {
	e := audit.Start(ctx, p, "notification-subscription.delete", "notification-subscription", id)
	defer func() { s.finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteNotificationSubscription(ctx, p.AccountID, id); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

// Deliveries returns p's account's delivery log, newest first, each with its attempts.
func (s *Service) Deliveries(ctx context.Context, p rbac.Principal, f DeliveryFilter, page paging.Page) ([]Delivery, error) {
	if err := rbac.Allow(p, rbac.ReadAudit); err != nil {
		return nil, err
	}
	if f.Status != "" && !slices.Contains([]string{StatusPending, StatusDelivered, StatusFailed}, f.Status) {
		return nil, errdefs.Invalid("status", f.Status, "is not pending, delivered or failed")
	}
	rows, err := s.db.ListNotificationDeliveries(ctx, p.AccountID, store.NotificationDeliveryFilter{Channel: f.Channel, Status: f.Status}, page)
	if err != nil {
		return nil, err
	}
	return s.withAttempts(ctx, p.AccountID, rows)
}

func (s *Service) withAttempts(ctx context.Context, accountID string, rows []store.NotificationDelivery) ([]Delivery, error) {
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	atts, err := s.db.NotificationAttempts(ctx, accountID, ids)
	if err != nil {
		return nil, err
	}
	by := map[string][]Attempt{}
	for _, a := range atts {
		by[a.DeliveryID] = append(by[a.DeliveryID], Attempt{Attempt: a.Attempt, At: a.At, Duration: a.Duration, StatusCode: a.StatusCode, Error: a.Error})
	}
	out := make([]Delivery, 0, len(rows))
	for _, r := range rows {
		var m Message
		_ = json.Unmarshal([]byte(r.Payload), &m)
		d := Delivery{ID: r.ID, Channel: r.Channel, Event: r.Kind, EventKey: r.EventKey, Title: m.Title, Status: r.Status,
			Attempts: by[r.ID], LastError: r.LastError, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		if d.Attempts == nil {
			d.Attempts = []Attempt{}
		}
		if r.Status == StatusPending {
			d.NextAttemptAt = r.NextAttemptAt
		}
		out = append(out, d)
	}
	return out, nil
}
