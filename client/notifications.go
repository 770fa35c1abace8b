package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// NotificationChannel is a notification channel: a webhook, a Slack-compatible incoming webhook
// or email. Its secrets (a webhook's signing secret, a Slack URL's path, an SMTP password) are
// never returned; hasSecret says one is stored.
type NotificationChannel struct {
	Name      string            `json:"name"`
	Kind      string            `json:"kind"` // webhook, slack, email
	URL       string            `json:"url,omitempty"`
	HasSecret bool              `json:"hasSecret"`
	SMTP      *NotificationSMTP `json:"smtp,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
}

// NotificationSMTP is an email channel's server and addresses. Password is only sent.
type NotificationSMTP struct {
	Host     string   `json:"host"`
	Port     int      `json:"port,omitempty"` // 587 when 0
	Username string   `json:"username,omitempty"`
	Password string   `json:"password,omitempty"`
	From     string   `json:"from"`
	To       []string `json:"to"`
	Security string   `json:"security,omitempty"` // starttls (the default), tls, none
}

// CreateNotificationChannelRequest adds a notification channel.
type CreateNotificationChannelRequest struct {
	Name   string            `json:"name"`
	Kind   string            `json:"kind"`
	URL    string            `json:"url,omitempty"`    // webhook and slack
	Secret string            `json:"secret,omitempty"` // webhook: signs bodies (X-Freshet-Signature-256)
	SMTP   *NotificationSMTP `json:"smtp,omitempty"`   // email
}

// NotificationSubscription routes event kinds to a channel.
type NotificationSubscription struct {
	ID          string    `json:"id"`
	Channel     string    `json:"channel"`
	Events      []string  `json:"events"`
	Pipeline    string    `json:"pipeline,omitempty"`
	Application string    `json:"application,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
}

// CreateNotificationSubscriptionRequest subscribes a channel to event kinds: build-finished,
// build-failed, deployment, rollout-aborted, health-degraded.
type CreateNotificationSubscriptionRequest struct {
	Channel     string   `json:"channel"`
	Events      []string `json:"events"`
	Pipeline    string   `json:"pipeline,omitempty"`    // project/pipeline: only its builds
	Application string   `json:"application,omitempty"` // only its deployments, rollouts, health
}

// NotificationDelivery is one event's notification to one channel, with its attempts.
type NotificationDelivery struct {
	ID            string                `json:"id"`
	Channel       string                `json:"channel"`
	Event         string                `json:"event"`
	EventKey      string                `json:"eventKey"`
	Title         string                `json:"title"`
	Status        string                `json:"status"` // pending, delivered, failed
	Attempts      []NotificationAttempt `json:"attempts"`
	NextAttemptAt *time.Time            `json:"nextAttemptAt,omitempty"`
	LastError     string                `json:"lastError,omitempty"`
	CreatedAt     time.Time             `json:"createdAt"`
	UpdatedAt     time.Time             `json:"updatedAt"`
}

// NotificationAttempt is one try at a delivery.
type NotificationAttempt struct {
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	DurationMs int64     `json:"durationMs"`
	StatusCode int       `json:"statusCode,omitempty"` // HTTP status, or SMTP reply code
	Error      string    `json:"error,omitempty"`
}

// NotificationDeliveryFilter narrows the delivery log.
type NotificationDeliveryFilter struct {
	ListOptions
	Channel string
	Status  string
}

// CreateNotificationChannel adds a notification channel.
func (c *Client) CreateNotificationChannel(ctx context.Context, r CreateNotificationChannelRequest) (NotificationChannel, error) {
	var out NotificationChannel
	err := c.do(ctx, http.MethodPost, "/api/v1/notifications/channels", nil, r, &out)
	return out, err
}

// ListNotificationChannels lists the account's notification channels.
func (c *Client) ListNotificationChannels(ctx context.Context) (List[NotificationChannel], error) {
	var out List[NotificationChannel]
	err := c.do(ctx, http.MethodGet, "/api/v1/notifications/channels", nil, nil, &out)
	return out, err
}

// DeleteNotificationChannel removes a channel with its subscriptions and deliveries.
func (c *Client) DeleteNotificationChannel(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/notifications/channels/"+url.PathEscape(name), nil, nil, nil)
}

// TestNotificationChannel sends a test notification to a channel now and returns its delivery.
func (c *Client) TestNotificationChannel(ctx context.Context, name string) (NotificationDelivery, error) {
	var out NotificationDelivery
	err := c.do(ctx, http.MethodPost, "/api/v1/notifications/channels/"+url.PathEscape(name)+"/test", nil, nil, &out)
	return out, err
}

// CreateNotificationSubscription subscribes a channel to event kinds.
func (c *Client) CreateNotificationSubscription(ctx context.Context, r CreateNotificationSubscriptionRequest) (NotificationSubscription, error) {
	var out NotificationSubscription
	err := c.do(ctx, http.MethodPost, "/api/v1/notifications/subscriptions", nil, r, &out)
	return out, err
}

// ListNotificationSubscriptions lists the account's subscriptions.
func (c *Client) ListNotificationSubscriptions(ctx context.Context) (List[NotificationSubscription], error) {
	var out List[NotificationSubscription]
	err := c.do(ctx, http.MethodGet, "/api/v1/notifications/subscriptions", nil, nil, &out)
	return out, err
}

// DeleteNotificationSubscription removes a subscription.
func (c *Client) DeleteNotificationSubscription(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/notifications/subscriptions/"+url.PathEscape(id), nil, nil, nil)
}

// ListNotificationDeliveries reads the delivery log, newest first.
func (c *Client) ListNotificationDeliveries(ctx context.Context, f NotificationDeliveryFilter) (List[NotificationDelivery], error) {
	q := listQuery(f.ListOptions)
	if f.Channel != "" {
		q.Set("channel", f.Channel)
	}
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	var out List[NotificationDelivery]
	err := c.do(ctx, http.MethodGet, "/api/v1/notifications/deliveries", q, nil, &out)
	return out, err
}
