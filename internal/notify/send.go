package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/sender"
	"github.com/freshet-dev/freshet/internal/store"
)

// Message is what a notification says, whatever the channel: stored with its delivery when the
// event is queued, so a delivery needs nothing else after a restart.
type Message struct {
	Event   string    `json:"event"`
	Account string    `json:"account"`
	Title   string    `json:"title"`
	Text    string    `json:"text,omitempty"`
	URL     string    `json:"url,omitempty"`
	Fields  []Field   `json:"fields,omitempty"`
	At      time.Time `json:"at"`
}

// Field is a named value of a Message (Pipeline, Branch, Revision, …).
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// WebhookBody is the JSON a webhook channel receives.
type WebhookBody struct {
	ID       string `json:"id"`       // the delivery's ID, the same on every attempt
	EventKey string `json:"eventKey"` // the event's identity
	Message
}

// Headers of a webhook delivery.
const (
	HeaderEvent     = "X-Freshet-Event"
	HeaderDelivery  = "X-Freshet-Delivery"
	HeaderSignature = "X-Freshet-Signature-256" // sha256=<hex HMAC-SHA256 of the body under the secret>
)

var permanentf = sender.Permanentf

// deliver sends d's message to its channel once.
func (s *Service) deliver(ctx context.Context, d store.NotificationDelivery) (int, error) {
	ch, err := s.db.NotificationChannelByID(ctx, d.AccountID, d.ChannelID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return 0, permanentf(0, "the channel was deleted")
	}
	if err != nil {
		return 0, err
	}
	var m Message
	if err := json.Unmarshal([]byte(d.Payload), &m); err != nil {
		return 0, permanentf(0, "the stored message does not decode: %v", err)
	}
	var cfg channelConfig
	if err := json.Unmarshal([]byte(ch.Config), &cfg); err != nil {
		return 0, permanentf(0, "the channel's settings do not decode: %v", err)
	}
	sec, err := s.openSecret(ch)
	if err != nil {
		return 0, permanentf(0, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	switch ch.Kind {
	case KindWebhook:
		body, _ := json.Marshal(WebhookBody{ID: d.ID, EventKey: d.EventKey, Message: m})
		h := http.Header{HeaderEvent: {m.Event}, HeaderDelivery: {d.ID}}
		if sec.WebhookSecret != "" {
			h.Set(HeaderSignature, Sign(sec.WebhookSecret, body))
		}
		return s.post(ctx, sec.WebhookURL, body, h)
	case KindSlack:
		body, _ := json.Marshal(slackBody(m))
		return s.post(ctx, sec.SlackURL, body, nil)
	case KindEmail:
		if cfg.SMTP == nil {
			return 0, permanentf(0, "the channel has no SMTP settings")
		}
		return s.sendMail(ctx, *cfg.SMTP, sec.SMTPPassword, d.ID, m)
	}
	return 0, permanentf(0, "unknown channel kind %q", ch.Kind)
}

// Sign is the X-Freshet-Signature-256 value of body under secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// post sends body as JSON to raw through the operator's policy. Redirects are not followed (a
// signed body goes where it was configured to, or nowhere). 2xx is delivered; 408, 429 and 5xx
// are tried again; other answers are permanent.
func (s *Service) post(ctx context.Context, raw string, body []byte, h http.Header) (int, error) {
	code, _, err := sender.Do(ctx, s.net, sender.Request{URL: raw, Body: body, Header: h})
	return code, err
}

// slackEscape escapes what Slack's mrkdwn reads as markup.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackBody is an incoming webhook's payload: text (the fallback shown in notifications) and
// blocks (a section with the title, linked, and the text; a section with up to 10 fields).
func slackBody(m Message) map[string]any {
	head := "*" + slackEscape(m.Title) + "*"
	if m.URL != "" {
		head = "*<" + m.URL + "|" + slackEscape(m.Title) + ">*"
	}
	if m.Text != "" {
		head += "\n" + slackEscape(truncate(m.Text, 2500))
	}
	blocks := []any{map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": head}}}
	var fields []any
	for i, f := range m.Fields {
		if i == 10 {
			break
		}
		fields = append(fields, map[string]any{"type": "mrkdwn", "text": "*" + slackEscape(f.Name) + "*\n" + slackEscape(truncate(f.Value, 1900))})
	}
	if len(fields) > 0 {
		blocks = append(blocks, map[string]any{"type": "section", "fields": fields})
	}
	return map[string]any{"text": m.Title, "blocks": blocks}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// oneLine makes s fit in a mail header: no CR, LF or other control characters.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
}

// mailBody is the RFC 5322 message of m.
func mailBody(cfg SMTP, id string, m Message) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\n", cfg.From)
	fmt.Fprintf(&b, "To: %s\r\n", strings.Join(cfg.To, ", "))
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", oneLine(truncate(m.Title, 200))))
	fmt.Fprintf(&b, "Date: %s\r\n", m.At.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@freshet>\r\n", id)
	fmt.Fprintf(&b, "%s: %s\r\n", HeaderEvent, m.Event)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n")
	qp := quotedprintable.NewWriter(&b)
	var text strings.Builder
	text.WriteString(m.Title + "\n\n")
	if m.Text != "" {
		text.WriteString(m.Text + "\n\n")
	}
	for _, f := range m.Fields {
		fmt.Fprintf(&text, "%s: %s\n", f.Name, f.Value)
	}
	if m.URL != "" {
		text.WriteString("\n" + m.URL + "\n")
	}
	qp.Write([]byte(strings.ReplaceAll(text.String(), "\n", "\r\n")))
	qp.Close()
	return b.Bytes()
}

// sendMail sends m through cfg's server: connected under the operator's policy, TLS from the
// start or by STARTTLS (refused if the server does not offer it), PLAIN authentication when a
// password is set.
func (s *Service) sendMail(ctx context.Context, cfg SMTP, password, id string, m Message) (int, error) {
	return sendSMTP(ctx, s.net.DialContext, s.rootCAs, cfg, password, mailBody(cfg, id, m))
}

// MailDialer connects to an SMTP server (a net.Dialer's DialContext).
type MailDialer func(ctx context.Context, network, addr string) (net.Conn, error)

// SendMail sends one plain-text message with subject and text from srv.From to srv.To through
// srv (the operator's own server, not a channel: srv is trusted as given), with srv.Password
// when set, connected with dial and its certificate checked against roots (nil: the host's).
// The error names the step that failed and never the password.
func SendMail(ctx context.Context, dial MailDialer, roots *x509.CertPool, srv SMTP, event, subject, text string, at time.Time) error {
	id := crand.Text()
	_, err := sendSMTP(ctx, dial, roots, srv, srv.Password, mailBody(srv, id, Message{Event: event, Title: subject, Text: text, At: at}))
	return err
}

// sendSMTP sends body through cfg's server (see sendMail).
func sendSMTP(ctx context.Context, dial MailDialer, roots *x509.CertPool, cfg SMTP, password string, body []byte) (int, error) {
	srv := sender.Server{Host: cfg.Host, Port: cfg.Port, Username: cfg.Username, Password: password, From: cfg.From, Security: cfg.Security}
	return sender.SendMail(ctx, sender.Dialer(dial), roots, srv, cfg.To, body)
}

// backoff is the wait after the n-th failed attempt: BackoffMin doubling up to BackoffMax,
// less up to a fifth at random so that deliveries failing together spread out.
func (s *Service) backoff(n int) time.Duration {
	d := s.backoffMin
	for i := 1; i < n && d < s.backoffMax; i++ {
		d *= 2
	}
	d = min(d, s.backoffMax)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// Kick asks the sender to look at the queue now.
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// RunSender sends due deliveries until ctx ends: when kicked (an event was queued, a send
// ended) and every Poll. Up to sendParallel deliveries are in flight at once, each in its own
// goroutine, so a slow endpoint holds one of them and nothing else. Every replica runs it; a
// delivery is claimed by one of them. It returns once the sends in flight have ended.
func (s *Service) RunSender(ctx context.Context) error {
	t := time.NewTicker(s.poll)
	defer t.Stop()
	slots := make(chan struct{}, sendParallel)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	var pruned time.Time
	for {
		if err := s.dispatch(ctx, slots, &inflight); err != nil && ctx.Err() == nil {
			s.log.Warn("send notifications", "err", err)
		}
		if time.Since(pruned) >= pruneEvery {
			if _, err := s.Prune(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("prune the notification log", "err", err)
			}
			pruned = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.kick:
		case <-t.C:
		}
	}
}

// Prune deletes delivered and failed deliveries older than the retention (the sender runs it
// every hour) and reports how many.
func (s *Service) Prune(ctx context.Context) (int64, error) {
	return s.db.PruneNotificationDeliveries(ctx, s.now().Add(-s.retention))
}

// sendParallel bounds the deliveries a sender has in flight.
const sendParallel = 4

// dispatch claims as many due deliveries as slots has room for and sends each in a goroutine
// that frees its slot (and kicks the sender) when its attempt is recorded.
func (s *Service) dispatch(ctx context.Context, slots chan struct{}, inflight *sync.WaitGroup) error {
	free := cap(slots) - len(slots)
	if free == 0 {
		return nil
	}
	now := s.now()
	due, err := s.db.DueNotifications(ctx, now, free)
	if err != nil {
		return fmt.Errorf("due notifications: %w", err)
	}
	for _, d := range due {
		if ctx.Err() != nil {
			return nil
		}
		ok, err := s.db.ClaimNotification(ctx, d.ID, d.NextAttemptAt, now.Add(claimFor))
		if err != nil {
			return fmt.Errorf("claim notification %s: %w", d.ID, err)
		}
		if !ok {
			continue // another sender has it
		}
		slots <- struct{}{} // never blocks: only this goroutine fills slots
		inflight.Add(1)
		go func() {
			defer func() { <-slots; inflight.Done(); s.Kick() }()
			if err := s.attempt(ctx, d, false); err != nil {
				s.log.Warn("send notification", "delivery", d.ID, "err", err)
			}
		}()
	}
	return nil
}

// attempt sends d once and records the attempt and d's state after it: delivered; pending with
// its next attempt after the backoff; or failed (a permanent error, the last attempt, or last).
func (s *Service) attempt(ctx context.Context, d store.NotificationDelivery, last bool) error {
	start := s.now()
	code, err := s.deliver(ctx, d)
	a := store.NotificationAttempt{DeliveryID: d.ID, AccountID: d.AccountID, Attempt: d.Attempts + 1, At: start.UTC(), Duration: s.now().Sub(start), StatusCode: code}
	status, next := StatusDelivered, time.Time{}
	if err != nil {
		var se *sender.Error
		permanent := errors.As(err, &se) && se.Permanent
		if ctx.Err() != nil {
			// Shutting down: the claim runs out and another sender (or this one after a
			// restart) tries again; this attempt is not counted.
			return nil
		}
		a.Error = err.Error()
		if se == nil {
			a.Error = "internal error" // a database failure reading the channel: not the tenant's to see
			s.log.Warn("notification delivery", "delivery", d.ID, "err", err)
		}
		status = StatusPending
		next = a.At.Add(a.Duration + s.backoff(a.Attempt))
		if permanent || last || a.Attempt >= s.maxAttempts {
			status, next = StatusFailed, time.Time{}
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.db.RecordNotificationAttempt(rctx, a, status, next); err != nil {
		return fmt.Errorf("record notification attempt %s: %w", d.ID, err)
	}
	return nil
}

// SendTest sends a test notification to p's account's channel name now, once, and returns
// its delivery (delivered or failed, with the attempt) as the delivery log shows it.
func (s *Service) SendTest(ctx context.Context, p rbac.Principal, name string) (Delivery, error) {
	if err := rbac.Allow(p, rbac.ManagePolicy); err != nil {
		return Delivery{}, err
	}
	ch, err := s.db.GetNotificationChannel(ctx, p.AccountID, name)
	if err != nil {
		return Delivery{}, err
	}
	now := s.now().UTC()
	m := Message{Event: EventTest, Account: p.AccountID, Title: "Test notification from Freshet",
		Text: "A test of the channel " + name + ", sent by " + p.Actor() + ".", URL: s.baseURL, At: now}
	d := store.NotificationDelivery{ID: store.NewID(store.PrefixNotificationDelivery), AccountID: p.AccountID, ChannelID: ch.ID,
		EventKey: "test/" + store.NewID("t"), Kind: EventTest, Payload: encodeJSON(m), Status: StatusPending,
		NextAttemptAt: now.Add(claimFor), CreatedAt: now, UpdatedAt: now} // held: no sender takes it
	if _, err := s.enqueueRows(ctx, []store.NotificationDelivery{d}); err != nil {
		return Delivery{}, err
	}
	if err := s.attempt(ctx, d, true); err != nil {
		return Delivery{}, err
	}
	row, err := s.db.GetNotificationDelivery(ctx, p.AccountID, d.ID)
	if err != nil {
		return Delivery{}, err
	}
	out, err := s.withAttempts(ctx, p.AccountID, []store.NotificationDelivery{row})
	if err != nil {
		return Delivery{}, err
	}
	return out[0], nil
}

// enqueueRows queues ds in one transaction and reports how many were new.
func (s *Service) enqueueRows(ctx context.Context, ds []store.NotificationDelivery) (int, error) {
	n := 0
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		n = 0
		for _, d := range ds {
			ok, err := tx.EnqueueNotification(ctx, d)
			if err != nil {
				return err
			}
			if ok {
				n++
			}
		}
		return nil
	})
	return n, err
}
